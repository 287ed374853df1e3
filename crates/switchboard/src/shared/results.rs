//! [`RedisResults`]: the result cache's second level ([`SharedResults`]), shared by the
//! replicas in Redis, with coalescing across them.
//!
//! Keys: `switchboard:{deployment}:result:<agent digest>:<call digest>` holds an answer
//! (the result's JSON, at most [`MAX_VALUE_BYTES`]; larger ones stay in the replica's own
//! cache) for the tool's `cacheable_seconds` (`SET … PX`); `…:result-lock:<same>` is the
//! coalescing lock (`SET … <token> NX PX <the call's deadline>`). The agent digest is
//! SHA-256 of the agent's name (with the OAuth caller's subject, when there is one) and the
//! call digest SHA-256 of the tool and its canonical arguments, so an agent — or a user —
//! never meets another's entry. Every key expires; nothing is
//! scanned.
//!
//! A call: `GET` the answer (with `PTTL`, which gives its age on Redis's clock); on a miss,
//! take the lock (looking for the answer again in the same transaction) and run the call, then store the answer and release the lock in one script
//! (only the lock's holder releases it); a replica that finds the lock taken polls for the
//! answer every [`POLL_EVERY`] for at most the wait it was given, runs the call itself when
//! the wait is over or the lock went without an answer (the holder failed, was cancelled or
//! died: its lock expires with its deadline). Errors are never stored.
//!
//! Redis unreachable (`shared::bounded`: 500 ms per command, none for 250 ms after a failure):
//! the call runs on this replica, as without Redis, whatever `redis_unavailable` says — a cache
//! is never a reason to refuse a call.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use sha2::{Digest, Sha256};
use switchboard_core::ToolOutcome;
use switchboard_core::hex::encode as hex;
use switchboard_core::upstream::UpstreamError;
use tokio::time::Instant;

use super::bounded::Bounded;
use super::limiter::SharedError;
use crate::latency::cache::{Pending, Reuse, SharedResults, mark_shared_hit};

/// The largest answer kept in Redis (its JSON); larger ones are kept by each replica alone.
pub const MAX_VALUE_BYTES: usize = 512 * 1024;
/// How often a replica waiting for another's answer looks for it.
pub const POLL_EVERY: Duration = Duration::from_millis(20);
/// The shortest life of a coalescing lock (a call with a shorter deadline still gets it).
const MIN_LOCK: Duration = Duration::from_secs(1);

/// Stores the answer and releases the lock if this replica still holds it.
const STORE: &str = "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) \
    if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end return 1";
/// Releases the lock if this replica still holds it.
const RELEASE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

type Answer = Result<ToolOutcome, UpstreamError>;

/// The replicas' shared result cache in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisResults {
    inner: Arc<Inner>,
}

struct Inner {
    redis: Bounded,
    /// `switchboard:{deployment}:`.
    prefix: String,
    store: redis::Script,
    release: redis::Script,
}

/// The two keys of one call.
struct Keys {
    value: String,
    lock: String,
}

/// What taking the lock found.
enum Locked {
    /// The lock is this replica's, under this token, and no answer is kept.
    Taken(String),
    /// An answer is kept, this old (and the lock was taken under the token, if it was free).
    Answer(Box<ToolOutcome>, Duration, Option<String>),
    /// Another replica holds the lock, and no answer is kept yet.
    Held,
}

/// The answer `value` holds, if it parses, and its age: `ttl` less the `left` milliseconds
/// Redis gave for it.
fn kept(value: Option<Vec<u8>>, left: i64, ttl: Duration) -> Option<(Box<ToolOutcome>, Duration)> {
    let outcome = serde_json::from_slice::<ToolOutcome>(&value?).ok()?;
    let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
    Some((Box::new(outcome), ttl.saturating_sub(left)))
}

/// What a look at the shared level found.
enum Found {
    /// An answer, this old.
    Answer(Box<ToolOutcome>, Duration),
    /// No answer; whether another replica holds the lock.
    Nothing { locked: bool },
}

impl RedisResults {
    /// The shared cache in the Redis at `url`, keys namespaced by `deployment`. Connects
    /// lazily; needs a tokio runtime.
    pub fn connect(url: &str, deployment: &str) -> Result<Self, SharedError> {
        let redis = Bounded::connect(
            url,
            "cached results",
            "cacheable calls run on each replica as without Redis".to_owned(),
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                redis,
                prefix: format!("switchboard:{{{deployment}}}:"),
                store: redis::Script::new(STORE),
                release: redis::Script::new(RELEASE),
            }),
        })
    }

    /// The keys of the local cache key `key` (`agent \0 tool \0 arguments`).
    fn keys(&self, key: &str) -> Keys {
        let (agent, call) = key.split_once('\u{0}').unwrap_or(("", key));
        let agent = hex(&Sha256::digest(agent.as_bytes()));
        let call = hex(&Sha256::digest(call.as_bytes()));
        let prefix = &self.inner.prefix;
        Keys {
            value: format!("{prefix}result:{agent}:{call}"),
            lock: format!("{prefix}result-lock:{agent}:{call}"),
        }
    }

    /// The answer kept for `keys` and its age, or whether the lock is held; `ttl` is what
    /// the answer was kept for (its age is `ttl` less what is left). One transaction: the
    /// holder's script (answer kept, lock released) is seen whole or not at all, never as a
    /// lock gone without its answer.
    async fn look(&self, keys: &Keys, ttl: Duration) -> Result<Found, String> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("GET")
            .arg(&keys.value)
            .cmd("PTTL")
            .arg(&keys.value)
            .cmd("EXISTS")
            .arg(&keys.lock);
        let (value, left, locked): (Option<Vec<u8>>, i64, i64) = self
            .inner
            .redis
            .run(|mut connection| async move { pipe.query_async(&mut connection).await })
            .await?;
        Ok(match kept(value, left, ttl) {
            Some((outcome, age)) => Found::Answer(outcome, age),
            None => Found::Nothing { locked: locked > 0 },
        })
    }

    /// Takes the lock of `keys` for `hold` and, in the same transaction, looks for the
    /// answer once more: the holder before us may have kept one and let go between our look
    /// and this lock.
    async fn lock(&self, keys: &Keys, ttl: Duration, hold: Duration) -> Result<Locked, String> {
        let token = format!("{:016x}", rand::random::<u64>());
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(&keys.lock)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(millis(hold.max(MIN_LOCK)))
            .cmd("GET")
            .arg(&keys.value)
            .cmd("PTTL")
            .arg(&keys.value);
        let (taken, value, left): (Option<String>, Option<Vec<u8>>, i64) = self
            .inner
            .redis
            .run(|mut connection| async move { pipe.query_async(&mut connection).await })
            .await?;
        let token = taken.map(|_| token);
        Ok(match (kept(value, left, ttl), token) {
            (Some((outcome, age)), token) => Locked::Answer(outcome, age, token),
            (None, Some(token)) => Locked::Taken(token),
            (None, None) => Locked::Held,
        })
    }

    /// Keeps `answer` for `ttl` when it may be reused by others, and releases the lock
    /// `token` holds, in one round trip.
    async fn keep(&self, keys: &Keys, answer: &Answer, ttl: Duration, token: Option<&str>) {
        let value = match answer {
            Ok(outcome) if !outcome.is_error => serde_json::to_vec(outcome)
                .ok()
                .filter(|bytes| bytes.len() <= MAX_VALUE_BYTES),
            _ => None,
        };
        let result = match (value, token) {
            (Some(value), token) => {
                let mut invocation = self.inner.store.prepare_invoke();
                invocation
                    .key(&keys.value)
                    .key(&keys.lock)
                    .arg(value)
                    .arg(millis(ttl))
                    .arg(token.unwrap_or(""));
                self.inner
                    .redis
                    .run(|mut connection| async move {
                        invocation.invoke_async::<i64>(&mut connection).await
                    })
                    .await
            }
            (None, Some(token)) => self.release(keys, token).await,
            (None, None) => Ok(0),
        };
        if let Err(error) = result {
            tracing::debug!(target: "switchboard::shared", "a result was not shared: {error}");
        }
    }

    async fn release(&self, keys: &Keys, token: &str) -> Result<i64, String> {
        let mut invocation = self.inner.release.prepare_invoke();
        invocation.key(&keys.lock).arg(token);
        self.inner.redis.invoke(invocation).await
    }

    async fn shared_get_or_run(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
        run: BoxFuture<'_, Answer>,
    ) -> Answer {
        let keys = self.keys(key);
        match self.look(&keys, ttl).await {
            Ok(Found::Answer(outcome, age)) => return Ok(mark_shared_hit(*outcome, age)),
            Ok(Found::Nothing { .. }) => {}
            Err(_) => return run.await,
        }
        let token = match self.lock(&keys, ttl, wait).await {
            Ok(Locked::Taken(token)) => token,
            Ok(Locked::Answer(outcome, age, token)) => {
                if let Some(token) = token {
                    let _ = self.release(&keys, &token).await;
                }
                return Ok(mark_shared_hit(*outcome, age));
            }
            Ok(Locked::Held) => match self.wait_for(&keys, ttl, wait).await {
                Some(hit) => return Ok(hit),
                None => {
                    // Nothing came in time: run it here (and share what comes back).
                    let answer = run.await;
                    self.keep(&keys, &answer, ttl, None).await;
                    return answer;
                }
            },
            Err(_) => return run.await,
        };
        let mut held = Held {
            results: Some(self.clone()),
            keys: Some(keys),
            token,
        };
        let answer = run.await;
        if let (Some(results), Some(keys)) = (held.results.take(), held.keys.take()) {
            results.keep(&keys, &answer, ttl, Some(&held.token)).await;
        }
        answer
    }

    /// Polls for the answer another replica is getting, for at most `wait`: `None` when it
    /// did not come, or the lock went without one.
    async fn wait_for(&self, keys: &Keys, ttl: Duration, wait: Duration) -> Option<ToolOutcome> {
        let until = Instant::now() + wait;
        loop {
            tokio::time::sleep(POLL_EVERY).await;
            match self.look(keys, ttl).await {
                Ok(Found::Answer(outcome, age)) => return Some(mark_shared_hit(*outcome, age)),
                Ok(Found::Nothing { locked: true }) if Instant::now() < until => {}
                _ => return None,
            }
        }
    }
}

impl SharedResults for RedisResults {
    fn get_or_run<'a>(&'a self, key: &'a str, reuse: Reuse, run: Pending<'a>) -> Pending<'a> {
        Box::pin(self.shared_get_or_run(key, reuse.ttl, reuse.wait, run))
    }
}

/// A coalescing lock held while the call runs: a call dropped before its answer (cancelled)
/// releases it in the background, so the replicas waiting run the call at once rather than
/// at the end of their wait.
struct Held {
    results: Option<RedisResults>,
    keys: Option<Keys>,
    token: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let (Some(results), Some(keys)) = (self.results.take(), self.keys.take()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // The lock expires with the call's deadline.
        };
        let token = std::mem::take(&mut self.token);
        runtime.spawn(async move {
            let _ = results.release(&keys, &token).await;
        });
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests;
