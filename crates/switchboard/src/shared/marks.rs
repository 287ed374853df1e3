//! [`SharedMarks`]: what must hold on every replica once one replica saw it, kept in Redis —
//! the 2025-era sessions ended by DELETE ([`EndedSessions`]) and the `requestState` nonces
//! already used ([`UsedNonces`]).
//!
//! Keys: `switchboard:{deployment}:ended:<sha256 of the session id>` (set with `PX` until the
//! sealed id's own expiry, so it goes when the id would stop opening anyway) and
//! `switchboard:{deployment}:nonce:<nonce hex>` (`SET … 1 NX PX <until the state expires>`:
//! only the first `SET` of a nonce succeeds, on whichever replica). Every key expires; nothing
//! is scanned.
//!
//! Sessions without a round trip a request: a DELETE sets the key and publishes
//! [`SharedEvent::SessionEnded`] on the event bus in one transaction, and every replica keeps
//! the ends it hears in memory until the id expires. So a replica asks Redis about a session
//! only when it first sees it, and again once after its subscription to the bus was lost and
//! restored (it may have missed an end meanwhile: each answer is kept with the bus's
//! [`EventBus::epoch`], and one of another epoch is asked again); while it is not subscribed
//! every request asks — the policy below then holds as it would without the bus. Ends are
//! kept by a hook on the bus's subscriber ([`EventBus::on_event`]), so none is dropped for a
//! slow reader. Without a bus, every request asks.
//!
//! This process's memory answers first (an id ended or a nonce used here never costs a round
//! trip) and keeps what it learnt. Commands are bounded (`shared::bounded`: 500 ms each, none for
//! 250 ms after a failure); while Redis does not answer, `[shared] redis_unavailable` decides:
//! `fail_open` answers from this replica's memory only (a DELETE or a used state seen by
//! another replica may be missed), `fail_closed` refuses (the session or the state "cannot be
//! checked now", retry later).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use switchboard_core::hex::{decode as decode_hex, encode as hex};
use switchboard_core::limits::WhenUnreachable;
use switchboard_mcp::front::http::{EndedAnswer, EndedSessions, EndedUnavailable};

use super::bounded::Bounded;
use super::events::{EventBus, SharedEvent};
use super::limiter::SharedError;
use crate::approvals::{MemoryNonces, NonceAnswer, UsedNonces};

/// Ended sessions and used nonces shared by the replicas through Redis. Cheap to share
/// (`Arc`): one value serves as both seams.
pub struct SharedMarks {
    redis: Bounded,
    /// `switchboard:{deployment}:`.
    prefix: String,
    policy: WhenUnreachable,
    /// What this replica knows of sessions; also written by the bus's follower.
    sessions: Arc<Mutex<Seen>>,
    /// Where ends are announced and heard; none: every request asks Redis.
    bus: Option<EventBus>,
    nonces: MemoryNonces,
    /// What this replica writes as a used nonce's value: a nonce found used with it was
    /// used here, by a request whose answer from Redis was lost.
    writer: String,
}

type Digest32 = [u8; 32];

/// What a replica knows of sessions, in memory.
#[derive(Default)]
struct Seen {
    /// Sessions Redis said were not ended, by id, with when it was asked.
    checked: HashMap<String, Checked>,
    /// The digests of ids this replica knows were ended (here, or heard from the bus), until
    /// the ids expire.
    ended: HashMap<Digest32, SystemTime>,
    /// The sizes at which each map is swept next: twice what a sweep left, so sweeping
    /// costs a constant per insert however many sessions stay live.
    sweep_checked: usize,
    sweep_ended: usize,
}

/// Redis said a session was not ended (or this replica minted it) in bus epoch `epoch`.
struct Checked {
    digest: Digest32,
    epoch: u64,
    expires: SystemTime,
}

/// Entries kept before the first sweep of what expired.
const SWEEP_ABOVE: usize = 1024;

/// Sweeps `map` with `keep` once it reaches `*at` entries, then sets the next sweep at twice
/// what is left (at least [`SWEEP_ABOVE`]).
fn sweep<K, V>(map: &mut HashMap<K, V>, at: &mut usize, keep: impl FnMut(&K, &mut V) -> bool) {
    if map.len() >= (*at).max(SWEEP_ABOVE) {
        map.retain(keep);
        *at = (map.len() * 2).max(SWEEP_ABOVE);
    }
}

/// What memory says of a session.
enum Known {
    Ended,
    /// Not ended, and every end since it was asked would have been heard.
    Live,
    /// Ask Redis (the id's digest).
    Ask(Digest32),
}

impl Seen {
    fn ended(&self, digest: &Digest32, now: SystemTime) -> bool {
        self.ended.get(digest).is_some_and(|until| *until > now)
    }

    fn end(&mut self, digest: Digest32, until: SystemTime, now: SystemTime) {
        sweep(&mut self.ended, &mut self.sweep_ended, |_, until| {
            *until > now
        });
        self.ended.insert(digest, until);
    }

    fn known(&self, id: &str, epoch: u64, now: SystemTime) -> Known {
        let Some(checked) = self.checked.get(id) else {
            let digest = digest(id);
            return if self.ended(&digest, now) {
                Known::Ended
            } else {
                Known::Ask(digest)
            };
        };
        if self.ended(&checked.digest, now) {
            Known::Ended
        } else if epoch != 0 && checked.epoch == epoch {
            Known::Live
        } else {
            Known::Ask(checked.digest)
        }
    }

    fn checked(&mut self, id: &str, checked: Checked, now: SystemTime) {
        if checked.epoch == 0 {
            return; // Asked while ends could be missed: ask again next time.
        }
        let epoch = checked.epoch;
        sweep(&mut self.checked, &mut self.sweep_checked, |_, known| {
            known.expires > now && known.epoch == epoch
        });
        self.checked.insert(id.to_owned(), checked);
    }
}

fn digest(id: &str) -> Digest32 {
    Sha256::digest(id.as_bytes()).into()
}

impl std::fmt::Debug for SharedMarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMarks")
            .field("target", &self.redis.target())
            .field("prefix", &self.prefix)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SharedMarks {
    /// Marks in the Redis at `url`, keys namespaced by `deployment`, `policy` while it does
    /// not answer. Connects lazily (a Redis down now only makes the first requests meet the
    /// policy); needs a tokio runtime.
    ///
    /// With a `bus`, ends are announced on it and heard from it, so a session's requests after
    /// the first ask Redis nothing (module doc).
    pub fn connect(
        url: &str,
        deployment: &str,
        policy: WhenUnreachable,
        bus: Option<EventBus>,
    ) -> Result<Self, SharedError> {
        let sessions = Arc::new(Mutex::new(Seen::default()));
        if let Some(bus) = &bus {
            follow(bus, Arc::downgrade(&sessions));
        }
        Ok(Self {
            redis: Bounded::with_policy(
                url,
                "ended sessions and used approval states",
                policy,
                "ended sessions and used approval states are kept by this replica alone",
                "sessions and approval states that need it are refused",
            )?,
            prefix: format!("switchboard:{{{deployment}}}:"),
            writer: format!("{:032x}", rand::random::<u128>()),
            policy,
            sessions,
            bus,
            nonces: MemoryNonces::default(),
        })
    }

    fn ended_key(&self, digest: &Digest32) -> String {
        format!("{}ended:{}", self.prefix, hex(digest))
    }

    fn epoch(&self) -> u64 {
        self.bus.as_ref().map_or(0, EventBus::epoch)
    }

    /// What a question Redis could not answer gets: this replica's own answer (fail open),
    /// or a refusal that says why (fail closed).
    fn unanswered<T>(&self, why: String, here: impl FnOnce() -> T) -> Result<T, String> {
        match self.policy {
            WhenUnreachable::FailOpen => Ok(here()),
            WhenUnreachable::FailClosed => Err(format!(
                "the shared store is unreachable ({why}; shared.redis_unavailable = \"fail_closed\")"
            )),
        }
    }

    async fn end_shared(
        &self,
        id: &str,
        expires: SystemTime,
        now: SystemTime,
    ) -> Result<(), String> {
        let digest = digest(id);
        let mut transaction = redis::pipe();
        transaction
            .atomic()
            .cmd("SET")
            .arg(self.ended_key(&digest))
            .arg(1)
            .arg("PX")
            .arg(millis_until(expires, now))
            .ignore();
        let announced = self.bus.as_ref().and_then(|bus| {
            let event = SharedEvent::SessionEnded {
                session: hex(&digest),
                until_ms: millis_until(expires, SystemTime::UNIX_EPOCH),
            };
            Some((bus.channel().to_owned(), bus.payload(event)?))
        });
        if let Some((channel, payload)) = announced {
            transaction
                .cmd("PUBLISH")
                .arg(channel)
                .arg(payload)
                .ignore();
        }
        let sent =
            self.redis
                .run(|mut connection| async move {
                    transaction.query_async::<()>(&mut connection).await
                })
                .await;
        let end_here = || lock(&self.sessions).end(digest, expires, now);
        match sent {
            Ok(()) => {
                end_here();
                Ok(())
            }
            Err(why) => self.unanswered(why, end_here),
        }
    }

    async fn is_ended_shared(
        &self,
        id: &str,
        expires: SystemTime,
        now: SystemTime,
    ) -> Result<bool, String> {
        // The epoch before the question: an end published after it is heard in it.
        let epoch = self.epoch();
        let digest = match lock(&self.sessions).known(id, epoch, now) {
            Known::Ended => return Ok(true),
            Known::Live => return Ok(false),
            Known::Ask(digest) => digest,
        };
        let mut command = redis::cmd("PTTL");
        command.arg(self.ended_key(&digest));
        match self.redis.query::<i64>(command).await {
            // -2: no such key.
            Ok(-2) => {
                let checked = Checked {
                    digest,
                    epoch,
                    expires,
                };
                lock(&self.sessions).checked(id, checked, now);
                Ok(false)
            }
            Ok(left) => {
                let until =
                    u64::try_from(left).map_or(expires, |left| now + Duration::from_millis(left));
                let mut seen = lock(&self.sessions);
                seen.checked.remove(id);
                seen.end(digest, until, now);
                Ok(true)
            }
            Err(why) => self.unanswered(why, || false),
        }
    }

    async fn first_use_shared(
        &self,
        nonce: [u8; 16],
        expires_ms: u64,
        now_ms: u64,
    ) -> Result<bool, String> {
        if self.nonces.used_here(&nonce, now_ms) {
            return Ok(false);
        }
        let key = format!("{}nonce:{}", self.prefix, hex(&nonce));
        let mut command = redis::cmd("SET");
        command
            .arg(&key)
            .arg(&self.writer)
            .arg("NX")
            .arg("PX")
            .arg(expires_ms.saturating_sub(now_ms).max(1));
        let first = match self.redis.query::<Option<String>>(command).await {
            Ok(set) if set.is_some() => true,
            // Used already: by this replica, when a request's SET went through but its answer
            // was lost (refused then, under fail_closed, and never used here) — the retry is
            // that use — or by another request, and then never again.
            Ok(_) => {
                let mut get = redis::cmd("GET");
                get.arg(&key);
                match self.redis.query::<Option<String>>(get).await {
                    Ok(writer) => writer.as_deref() == Some(self.writer.as_str()),
                    Err(why) => {
                        return self.unanswered(why, || false);
                    }
                }
            }
            Err(why) => {
                return self.unanswered(why, || self.nonces.use_here(nonce, expires_ms, now_ms));
            }
        };
        // Marked here in one step with its check: of two requests with one nonce at once on
        // this replica, one is the first use.
        let unused_here = self.nonces.use_here(nonce, expires_ms, now_ms);
        Ok(unused_here && first)
    }
}

impl EndedSessions for SharedMarks {
    fn started(&self, id: &str, expires: SystemTime, now: SystemTime) {
        let checked = Checked {
            digest: digest(id),
            epoch: self.epoch(),
            expires,
        };
        lock(&self.sessions).checked(id, checked, now);
    }

    fn end<'a>(&'a self, id: &'a str, expires: SystemTime, now: SystemTime) -> EndedAnswer<'a, ()> {
        Box::pin(async move {
            self.end_shared(id, expires, now)
                .await
                .map_err(EndedUnavailable)
        })
    }

    fn is_ended<'a>(
        &'a self,
        id: &'a str,
        expires: SystemTime,
        now: SystemTime,
    ) -> EndedAnswer<'a, bool> {
        Box::pin(async move {
            self.is_ended_shared(id, expires, now)
                .await
                .map_err(EndedUnavailable)
        })
    }
}

impl UsedNonces for SharedMarks {
    fn first_use(&self, nonce: [u8; 16], expires_ms: u64, now_ms: u64) -> NonceAnswer<'_> {
        Box::pin(self.first_use_shared(nonce, expires_ms, now_ms))
    }
}

/// Keeps the ends other replicas announce on `bus` in `sessions` (while they exist), as the
/// subscriber hears them.
fn follow(bus: &EventBus, sessions: Weak<Mutex<Seen>>) {
    bus.on_event(Box::new(move |event| {
        let SharedEvent::SessionEnded { session, until_ms } = event else {
            return;
        };
        let Some(digest) =
            decode_hex(session).and_then(|bytes| <Digest32>::try_from(bytes.as_slice()).ok())
        else {
            return;
        };
        if let Some(sessions) = sessions.upgrade() {
            let until = SystemTime::UNIX_EPOCH + Duration::from_millis(*until_ms);
            lock(&sessions).end(digest, until, SystemTime::now());
        }
    }));
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Milliseconds from `now` to `until`, at least one (`PX 0` is an error).
fn millis_until(until: SystemTime, now: SystemTime) -> u64 {
    until
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .try_into()
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests;
