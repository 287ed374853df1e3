//! [`RedisLimiter`]: GCRA rates and concurrency caps shared by every replica, kept in Redis.
//!
//! One admitted call costs one round trip: `admit.lua` (EVALSHA, loaded again with SCRIPT
//! LOAD on NOSCRIPT after a Redis restart) checks every rate and cap of the call on Redis's
//! clock and takes them all or none. A busy rate costs fewer: the script may grant a few
//! units ahead, which the replica's next calls under only such rates use without a round
//! trip ([`allowance`]; never more than the limit). A cap is a sorted set of leases scored by expiry; the
//! leases a replica holds are renewed together every [`LEASE`]/3 (`renew.lua`, one round
//! trip), each is removed when its call ends, and a dead replica's leases expire on their
//! own after [`LEASE`]. A renewal adds a lease that is gone, so the leases of running calls
//! come back within [`LEASE`]/3 after a Redis restart or failover lost them.
//!
//! Keys: `switchboard:{deployment}:rate:<scope>` and `…:lease:<scope>` (the braces are a
//! Redis Cluster hash tag: one deployment's keys share a slot, so a script may touch them
//! all). Scopes come from the config, so the key set is bounded; rate keys expire when idle.
//!
//! Unreachable Redis: every command is bounded by [`COMMAND_TIMEOUT`]; the first failure of a
//! call's command, or two PINGs in a row unanswered (one every [`HEALTH_EVERY`], the second at
//! once), marks the store down, and from then on
//! calls get [`SharedUnavailable`] at once (the configured policy applies) while a background
//! probe PINGs every [`PROBE_EVERY`] until Redis answers.

mod allowance;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use switchboard_core::limits::{
    Gcra, Lease, Scope, SharedCheck, SharedHealth, SharedLimiter, SharedUnavailable, SharedVerdict,
};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use allowance::Allowances;

/// How long one command may take, connecting included, before the store counts as down.
pub const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a concurrency lease lives without renewal (a dead replica's leases go after this).
pub const LEASE: Duration = Duration::from_secs(15);
/// How often a down store is asked whether it is back.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);
/// How often a store that is up is asked whether it still is.
pub const HEALTH_EVERY: Duration = Duration::from_secs(1);

/// Why the limiter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("shared.redis '{url}' is not a usable Redis URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("the shared limiter needs a tokio runtime (it reconnects in the background)")]
    NoRuntime,
}

/// A client of the Redis at `url` and a connection that connects lazily, reconnects by
/// itself and bounds each command by [`COMMAND_TIMEOUT`]; the runtime it runs on.
pub(crate) fn open(
    url: &str,
) -> Result<(redis::Client, ConnectionManager, tokio::runtime::Handle), SharedError> {
    let bad = |reason: String| SharedError::BadUrl {
        url: redacted(url),
        reason,
    };
    let client = redis::Client::open(url).map_err(|error| bad(error.to_string()))?;
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| SharedError::NoRuntime)?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(COMMAND_TIMEOUT))
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(10))
        .set_max_delay(PROBE_EVERY);
    let connection = {
        let _entered = runtime.enter();
        ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|error| bad(error.to_string()))?
    };
    Ok((client, connection, runtime))
}

/// Rate limits and concurrency caps in Redis. Cheap to clone.
#[derive(Clone)]
pub struct RedisLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    connection: ConnectionManager,
    /// The URL without its password, for messages.
    target: String,
    /// `switchboard:{deployment}:`.
    prefix: String,
    /// This process's part of lease members (`<replica>:<n>`).
    replica: String,
    next_member: AtomicU64,
    /// The leases held now: member → its keys.
    held: Mutex<HashMap<String, Vec<String>>>,
    /// Units of rates taken ahead.
    ahead: Mutex<Allowances>,
    lease: Duration,
    admit: redis::Script,
    renew: redis::Script,
    /// Why the store is down, while it is.
    down: Mutex<Option<String>>,
    /// Wakes the probe when the store goes down (the probe holds it, never `Inner`, while
    /// it waits).
    went_down: Arc<Notify>,
    /// Stops the probe and the renewals when the limiter goes.
    _tasks: DropGuard,
}

impl RedisLimiter {
    /// A limiter on the Redis at `url` (`redis://…` or `unix:///…`), its keys namespaced by
    /// `deployment`. Connects lazily: a Redis that is down now only makes the first calls meet
    /// the configured policy.
    pub fn connect(url: &str, deployment: &str) -> Result<Self, SharedError> {
        Self::with_lease(url, deployment, LEASE)
    }

    /// Like [`RedisLimiter::connect`], with leases of `lease` (tests shorten it).
    pub fn with_lease(url: &str, deployment: &str, lease: Duration) -> Result<Self, SharedError> {
        let (_, connection, runtime) = open(url)?;
        let stop = CancellationToken::new();
        let went_down = Arc::new(Notify::new());
        let inner = Arc::new(Inner {
            connection,
            target: redacted(url),
            prefix: format!("switchboard:{{{deployment}}}:"),
            replica: format!("{:016x}", rand::random::<u64>()),
            next_member: AtomicU64::new(0),
            held: Mutex::default(),
            ahead: Mutex::default(),
            lease,
            admit: redis::Script::new(include_str!("admit.lua")),
            renew: redis::Script::new(include_str!("renew.lua")),
            down: Mutex::new(None),
            went_down: went_down.clone(),
            _tasks: stop.clone().drop_guard(),
        });
        runtime.spawn(renew_leases(Arc::downgrade(&inner), lease, stop.clone()));
        runtime.spawn(probe(Arc::downgrade(&inner), went_down, stop));
        Ok(Self { inner })
    }

    /// The key of `scope`'s rate (`kind` "rate") or leases ("lease").
    fn key(&self, kind: &str, scope: &Scope) -> String {
        let name = match scope {
            Scope::Global => "gateway".to_owned(),
            Scope::Agent(name) => format!("agent:{name}"),
            Scope::Server(name) => format!("server:{name}"),
            Scope::Tool(name) => format!("tool:{name}"),
        };
        format!("{}{kind}:{name}", self.inner.prefix)
    }

    async fn try_admit(&self, checks: &[SharedCheck]) -> Result<SharedVerdict, SharedUnavailable> {
        if let Some(why) = self.inner.down_reason() {
            return Err(SharedUnavailable(why));
        }
        let rate_keys: Vec<String> = checks
            .iter()
            .filter(|check| check.spec.per_minute.is_some_and(|rate| rate > 0.0))
            .map(|check| self.key("rate", &check.scope))
            .collect();
        let capped = checks
            .iter()
            .any(|check| check.spec.max_concurrent.is_some());
        if !capped && lock(&self.inner.ahead).take_all(&rate_keys, Instant::now()) {
            return Ok(SharedVerdict::Admitted {
                wait: Duration::ZERO,
                lease: None,
            });
        }
        let member = format!(
            "{}:{}",
            self.inner.replica,
            self.inner.next_member.fetch_add(1, Ordering::Relaxed)
        );
        let mut invocation = self.inner.admit.prepare_invoke();
        // What this round trip asked for is counted as asked until it is over, however it
        // ends (answered, failed, or the call dropped).
        let mut asking = Asking(&self.inner, Vec::new());
        invocation.arg(micros(self.inner.lease)).arg(&member);
        // Which check each key belongs to, the rates' keys by their place, the lease keys.
        let mut owners = Vec::new();
        let mut rates = Vec::new();
        let mut lease_keys = Vec::new();
        let mut rate_keys = rate_keys.into_iter();
        for (index, check) in checks.iter().enumerate() {
            let spec = check.spec;
            if let Some(rate) = spec.per_minute.filter(|rate| *rate > 0.0) {
                // Bounded like the embedded limiter's: no rate or burst an embedder hands
                // in makes this overflow.
                let interval = Gcra::interval(rate);
                let tolerance = Gcra::tolerance(interval, spec.burst.unwrap_or(1));
                let key = rate_keys.next().unwrap_or_default();
                let wanted = lock(&self.inner.ahead).asked(&key, rate / 60.0, Instant::now());
                asking.1.push((key.clone(), wanted));
                invocation
                    .key(&key)
                    .arg("r")
                    .arg(micros(interval))
                    .arg(micros(tolerance))
                    .arg(micros(spec.queue.unwrap_or_default()))
                    .arg(wanted);
                rates.push((owners.len(), key));
                owners.push(index);
            }
            if let Some(cap) = spec.max_concurrent {
                let key = self.key("lease", &check.scope);
                invocation
                    .key(&key)
                    .arg("c")
                    .arg(cap.max(1))
                    .arg(0)
                    .arg(0)
                    .arg(1);
                lease_keys.push(key);
                owners.push(index);
            }
        }
        let mut connection = self.inner.connection.clone();
        let reply: Vec<i64> =
            match tokio::time::timeout(COMMAND_TIMEOUT, invocation.invoke_async(&mut connection))
                .await
            {
                Ok(Ok(reply)) => reply,
                Ok(Err(error)) => return Err(self.inner.mark_down(&error.to_string())),
                Err(_) => {
                    let why = format!("no answer within {} ms", COMMAND_TIMEOUT.as_millis());
                    return Err(self.inner.mark_down(&why));
                }
            };
        let owner = |i: i64| {
            usize::try_from(i - 1)
                .ok()
                .and_then(|key| owners.get(key).copied())
                .unwrap_or(0)
        };
        let number = |at: usize| reply.get(at).copied().unwrap_or(0);
        let after = |us: i64| Duration::from_micros(u64::try_from(us).unwrap_or(0));
        if number(0) == 0 {
            let now = Instant::now();
            let mut ahead = lock(&self.inner.ahead);
            for (place, key) in &rates {
                let granted = u64::try_from(number(2 + place)).unwrap_or(1);
                ahead.granted(key, granted, now);
            }
        }
        Ok(match number(0) {
            0 => SharedVerdict::Admitted {
                wait: after(number(1)),
                lease: (!lease_keys.is_empty()).then(|| {
                    Box::new(RedisLease::hold(self.inner.clone(), lease_keys, member))
                        as Box<dyn Lease>
                }),
            },
            1 => SharedVerdict::RateLimited {
                scope: owner(number(1)),
                retry_after: after(number(2)),
            },
            _ => SharedVerdict::Busy {
                scope: owner(number(1)),
            },
        })
    }
}

/// Units asked for by one round trip, given back to [`Allowances::answered`] when dropped.
struct Asking<'a>(&'a Inner, Vec<(String, u64)>);

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let mut ahead = lock(&self.0.ahead);
        for (key, wanted) in &self.1 {
            ahead.answered(key, *wanted);
        }
    }
}

impl SharedLimiter for RedisLimiter {
    fn admit<'a>(
        &'a self,
        checks: &'a [SharedCheck],
    ) -> BoxFuture<'a, Result<SharedVerdict, SharedUnavailable>> {
        Box::pin(self.try_admit(checks))
    }

    fn health(&self) -> SharedHealth {
        let error = self.inner.down_reason();
        SharedHealth {
            backend: "redis",
            target: self.inner.target.clone(),
            reachable: error.is_none(),
            error,
        }
    }
}

impl Inner {
    fn down_reason(&self) -> Option<String> {
        lock(&self.down).clone()
    }

    /// Marks the store down (the probe takes over) and says why, naming where.
    fn mark_down(&self, error: &str) -> SharedUnavailable {
        let why = format!("redis at {}: {error}", self.target);
        let mut down = lock(&self.down);
        if down.is_none() {
            tracing::warn!(
                target: "switchboard::shared",
                "{why}; limits follow shared.redis_unavailable until it answers again"
            );
            self.went_down.notify_one();
        }
        *down = Some(why.clone());
        SharedUnavailable(why)
    }

    /// Whether Redis answers a PING now (within [`COMMAND_TIMEOUT`]).
    async fn answers(&self) -> bool {
        let mut connection = self.connection.clone();
        let command = redis::cmd("PING");
        let ping = command.query_async::<String>(&mut connection);
        matches!(tokio::time::timeout(COMMAND_TIMEOUT, ping).await, Ok(Ok(_)))
    }
}

/// PINGs the store every [`HEALTH_EVERY`] while it is up (so `status` and the next call
/// learn of an outage without a call paying for it) and every [`PROBE_EVERY`] while it is
/// down, until it answers again.
async fn probe(inner: std::sync::Weak<Inner>, went_down: Arc<Notify>, stop: CancellationToken) {
    loop {
        let pause = match inner.upgrade() {
            Some(strong) if strong.down_reason().is_some() => PROBE_EVERY,
            Some(_) => HEALTH_EVERY,
            None => return,
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
            // A call found it down: probe at the down pace from now.
            () = went_down.notified(), if pause == HEALTH_EVERY => continue,
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let was_down = strong.down_reason().is_some();
        // A store that is up is marked down by the probe only when a second PING, sent at
        // once, goes unanswered too: one late answer on a busy runtime (every worker thread
        // taken for a moment) is not an outage, and calls' own commands still find a real
        // one at their first failure.
        let answers = strong.answers().await || (!was_down && strong.answers().await);
        if answers && was_down {
            *lock(&strong.down) = None;
            tracing::info!(
                target: "switchboard::shared",
                "redis at {} answers again: limits are shared again",
                strong.target
            );
        } else if !answers && !was_down {
            strong.mark_down("no answer to PING");
        }
    }
}

/// One call's concurrency leases, renewed with every other lease this replica holds (one
/// round trip every lease/3, [`renew_leases`]) and removed when dropped.
struct RedisLease {
    inner: Arc<Inner>,
    member: String,
}

impl std::fmt::Debug for RedisLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLease")
            .field("member", &self.member)
            .finish()
    }
}

impl Lease for RedisLease {}

impl RedisLease {
    fn hold(inner: Arc<Inner>, keys: Vec<String>, member: String) -> Self {
        lock(&inner.held).insert(member.clone(), keys);
        Self { inner, member }
    }
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        let Some(keys) = lock(&self.inner.held).remove(&self.member) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // No runtime: the lease expires on its own.
        };
        let mut release = redis::pipe();
        for key in &keys {
            release.cmd("ZREM").arg(key).arg(&self.member).ignore();
        }
        let mut connection = self.inner.connection.clone();
        runtime.spawn(async move {
            let released = release.query_async::<()>(&mut connection);
            let _ = tokio::time::timeout(COMMAND_TIMEOUT, released).await;
        });
    }
}

/// Every lease/3, renews all the leases this replica holds in one script call.
async fn renew_leases(inner: std::sync::Weak<Inner>, lease: Duration, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(lease / 3) => {}
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let held: Vec<(String, String)> = lock(&strong.held)
            .iter()
            .flat_map(|(member, keys)| keys.iter().map(|key| (key.clone(), member.clone())))
            .collect();
        if held.is_empty() || strong.down_reason().is_some() {
            continue;
        }
        let mut invocation = strong.renew.prepare_invoke();
        invocation.arg(micros(lease));
        for (key, member) in &held {
            invocation.key(key).arg(member);
        }
        let mut connection = strong.connection.clone();
        let renewed = invocation.invoke_async::<i64>(&mut connection);
        if let Ok(Err(error)) = tokio::time::timeout(COMMAND_TIMEOUT, renewed).await {
            tracing::debug!(target: "switchboard::shared", "leases not renewed: {error}");
        }
        release_again_if_dropped(&strong, held).await;
    }
}

/// Removes again the leases of `renewed` whose calls ended while their renewal was on its
/// way: the renewal adds a lease that is gone, so one landing after the release (a script
/// loaded again after a Redis restart runs after it) would hold a slot for a lease length.
async fn release_again_if_dropped(inner: &Inner, renewed: Vec<(String, String)>) {
    let ended: Vec<(String, String)> = {
        let held = lock(&inner.held);
        renewed
            .into_iter()
            .filter(|(_, member)| !held.contains_key(member))
            .collect()
    };
    if ended.is_empty() {
        return;
    }
    let mut release = redis::pipe();
    for (key, member) in &ended {
        release.cmd("ZREM").arg(key).arg(member).ignore();
    }
    let mut connection = inner.connection.clone();
    let released = release.query_async::<()>(&mut connection);
    let _ = tokio::time::timeout(COMMAND_TIMEOUT, released).await;
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// `url` without the password between `://` and `@`.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests;
