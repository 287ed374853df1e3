//! The result cache: tools that declare `cacheable_seconds > 0` and are read-only or
//! idempotent have their successful results reused for that long. The key is the agent's
//! scope + the tool + its arguments in canonical form (object keys sorted), so two agents
//! never share a result and `{"a":1,"b":2}` equals `{"b":2,"a":1}`.
//!
//! Concurrent identical calls share one upstream call (coalescing): the first runs it, the
//! others wait for its answer — each at most until its own deadline ([`WaitLimit`]), so a
//! caller with a short deadline is not held by one with a long one. Errors are never cached
//! (the next call runs again), and if the running caller gives up, a waiting one takes over. A hit is marked under
//! [`CACHE_META_KEY`] in the result's `_meta` (its age, and whether it was shared while in
//! flight), which the envelope and the ledger report as `cached`.
//!
//! With `[shared] redis`, a second level the replicas share ([`SharedResults`],
//! `crate::shared::results`) is asked by the one local caller that would run the call: so an
//! answer another replica got is reused, and replicas asked the same thing at once run it
//! once. The local level still coalesces this replica's callers first.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::ToolOutcome;
use switchboard_core::pipeline::CACHE_META_KEY;
use switchboard_core::upstream::UpstreamError;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// Entries kept at most; past it, expired entries go, and if none has expired the call is
/// served uncached.
pub const DEFAULT_CAPACITY: usize = 4_096;
/// The longest a replica waits for the answer another replica is getting for the same call
/// (less when the call's deadline is shorter); then it runs the call itself.
pub const MAX_SHARED_WAIT: Duration = Duration::from_secs(5);

type Answer = Result<ToolOutcome, UpstreamError>;

/// A call's answer still to come.
pub type Pending<'a> = BoxFuture<'a, Answer>;

/// How long a caller waits for another caller's run of the same call: until its own
/// deadline, then it answers `timed_out()`. A caller that runs the call is bounded by its
/// run alone.
pub struct WaitLimit<F> {
    pub until: Instant,
    pub timed_out: F,
}

/// How a shared answer may be reused and waited for.
#[derive(Debug, Clone, Copy)]
pub struct Reuse {
    /// How long an answer stays fresh (the tool's `cacheable_seconds`).
    pub ttl: Duration,
    /// How long a replica waits for the answer another replica is getting.
    pub wait: Duration,
}

/// A level of cached results the replicas share, behind this replica's own.
pub trait SharedResults: Send + Sync {
    /// The answer to the call of `key` ([`cache_key`]) that any replica keeps, fresh for
    /// `reuse.ttl`; else `run`'s, kept for the others. Replicas asking the same key at once
    /// run it once: the others wait for that answer at most `reuse.wait`, then run it
    /// themselves. A store that does not answer only makes the call run here.
    fn get_or_run<'a>(&'a self, key: &'a str, reuse: Reuse, run: Pending<'a>) -> Pending<'a>;
}

struct Slot {
    answer: OnceCell<Answer>,
    filled: OnceLock<Instant>,
}

impl Slot {
    fn expired(&self, now: Instant, ttl: Duration) -> bool {
        self.filled
            .get()
            .is_some_and(|filled| now.saturating_duration_since(*filled) >= ttl)
    }
}

/// Whether a held slot may go: its answer expired, or it never got one and nobody runs or
/// waits for it (its caller gave up), which only the map still holds.
fn stale(slot: &Arc<Slot>, now: Instant, ttl: Duration) -> bool {
    slot.expired(now, ttl) || (slot.answer.get().is_none() && Arc::strong_count(slot) == 1)
}

/// Cached results by key.
pub struct ResultCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    capacity: usize,
    /// Calls answered from a slot (filled or in flight), and calls that ran (the metrics'
    /// hits and misses).
    hits: AtomicU64,
    misses: AtomicU64,
    /// The level the replicas share, once set ([`ResultCache::share`]).
    shared: OnceLock<Arc<dyn SharedResults>>,
}

impl Default for ResultCache {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

/// The cache key of a call: its agent and, for a caller with an OAuth token, the token's
/// user (`sub`) — a server given each user's own token (token exchange) answers each user
/// differently, and many users may share an agent — then the tool and its arguments.
pub fn cache_key(
    agent: Option<&str>,
    subject: Option<&str>,
    tool_key: &str,
    arguments: &Map<String, Value>,
) -> String {
    let mut key = String::with_capacity(64);
    key.push_str(agent.unwrap_or(""));
    if let Some(subject) = subject {
        key.push('\u{1}');
        key.push_str(subject);
    }
    key.push('\u{0}');
    key.push_str(tool_key);
    key.push('\u{0}');
    write_canonical(&mut key, &Value::Object(arguments.clone()));
    key
}

/// JSON with object keys sorted at every level (also what tool pins are hashed over).
pub(crate) fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(value) = map.get(key) {
                    write_canonical(out, value);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl ResultCache {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            slots: Mutex::default(),
            capacity: capacity.max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            shared: OnceLock::new(),
        }
    }

    /// Adds a level the replicas share behind this one (once; later calls are ignored).
    pub fn share(&self, shared: Arc<dyn SharedResults>) {
        let _ = self.shared.set(shared);
    }

    /// The level the replicas share, if any.
    pub fn shared(&self) -> Option<&Arc<dyn SharedResults>> {
        self.shared.get()
    }

    /// Entries now held (answered or in flight).
    pub fn len(&self) -> usize {
        self.slots.lock().map_or(0, |slots| slots.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls answered from the cache, and calls that went upstream, since the start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Drops every entry of `server`'s tools: its answers came from settings or a process
    /// that are gone (the server was replaced or removed). A call still running keeps its
    /// own slot; new calls start afresh.
    pub fn forget_server(&self, server: &str) {
        let prefix = format!("{server}:");
        if let Ok(mut slots) = self.slots.lock() {
            slots.retain(|key, _| {
                key.split('\u{0}')
                    .nth(1)
                    .is_none_or(|tool| !tool.starts_with(&prefix))
            });
        }
    }

    /// The cached answer of `key` if fresh, else the answer of `run` (shared with concurrent
    /// callers of the same key, each waiting for it within `limit`).
    pub async fn get_or_run<F, Fut, T>(
        &self,
        key: String,
        ttl: Duration,
        now: impl Fn() -> Instant,
        limit: WaitLimit<T>,
        run: F,
    ) -> Answer
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Answer>,
        T: FnOnce() -> UpstreamError,
    {
        let Some(slot) = self.slot(&key, ttl, now()) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return run().await;
        };
        let ran_here = AtomicBool::new(false);
        let mut run = Some(run);
        // In a block of its own: the wait borrows `run`, which a waiter may need after it.
        let waited = {
            let init = slot.answer.get_or_init(|| {
                ran_here.store(true, Ordering::Relaxed);
                let run = run.take();
                async move {
                    match run {
                        Some(run) => run().await,
                        None => Err(UpstreamError::Cancelled),
                    }
                }
            });
            // The limit is armed only while this caller waits on another's run: cutting its own
            // run short would lose the attempt's timeout sample and hand the run to a waiter.
            let limit_passed = tokio::time::sleep_until(limit.until);
            tokio::pin!(init, limit_passed);
            std::future::poll_fn(|cx| {
                if let Poll::Ready(answer) = init.as_mut().poll(cx) {
                    return Poll::Ready(Some(answer.clone()));
                }
                if !ran_here.load(Ordering::Relaxed) && limit_passed.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                Poll::Pending
            })
            .await
        };
        let Some(answer) = waited else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return Err((limit.timed_out)());
        };
        let answered_at = now();
        let _ = slot.filled.set(answered_at);
        let reusable = matches!(&answer, Ok(outcome) if !outcome.is_error);
        if !reusable {
            self.forget(&key, &slot);
        }
        if ran_here.load(Ordering::Relaxed) {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return answer;
        }
        // The caller whose run this was cancelled, or its deadline (not this caller's)
        // passed: that fate is its own, and this caller runs the call itself.
        if let (Err(UpstreamError::Cancelled | UpstreamError::Timeout { .. }), Some(run)) =
            (&answer, run)
        {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return run().await;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        answer.map(|outcome| mark_hit(outcome, slot.filled.get().copied(), answered_at))
    }

    /// The slot of `key`: the fresh one, or a new one; `None` when the cache is full.
    fn slot(&self, key: &str, ttl: Duration, now: Instant) -> Option<Arc<Slot>> {
        let mut slots = self.slots.lock().ok()?;
        if let Some(slot) = slots.get(key)
            && !slot.expired(now, ttl)
        {
            return Some(slot.clone());
        }
        if slots.len() >= self.capacity {
            slots.retain(|_, slot| !stale(slot, now, ttl));
            if slots.len() >= self.capacity {
                return None;
            }
        }
        let slot = Arc::new(Slot {
            answer: OnceCell::new(),
            filled: OnceLock::new(),
        });
        slots.insert(key.to_owned(), slot.clone());
        Some(slot)
    }

    fn forget(&self, key: &str, slot: &Arc<Slot>) {
        if let Ok(mut slots) = self.slots.lock()
            && slots.get(key).is_some_and(|held| Arc::ptr_eq(held, slot))
        {
            slots.remove(key);
        }
    }
}

fn mark_hit(outcome: ToolOutcome, filled: Option<Instant>, now: Instant) -> ToolOutcome {
    let age = filled.map_or(Duration::ZERO, |filled| {
        now.saturating_duration_since(filled)
    });
    marked(
        outcome,
        json!({"hit": true, "age_ms": age.as_millis() as u64}),
    )
}

/// `outcome` marked as another replica's answer, `age` old (taken from the shared level).
pub fn mark_shared_hit(outcome: ToolOutcome, age: Duration) -> ToolOutcome {
    let age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX);
    marked(
        outcome,
        json!({"hit": true, "age_ms": age_ms, "shared": true}),
    )
}

fn marked(mut outcome: ToolOutcome, mark: Value) -> ToolOutcome {
    outcome
        .meta
        .get_or_insert_with(Map::new)
        .insert(CACHE_META_KEY.to_owned(), mark);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A wait longer than any test's.
    fn no_limit() -> WaitLimit<fn() -> UpstreamError> {
        WaitLimit {
            until: Instant::now() + Duration::from_secs(3600),
            timed_out: || UpstreamError::Cancelled,
        }
    }

    /// A caller waiting on another's run waits until its own deadline, not the runner's:
    /// then it answers its timeout, and the run goes on for the caller that started it.
    #[tokio::test(start_paused = true)]
    async fn a_waiter_gives_up_at_its_own_deadline() {
        let cache = ResultCache::default();
        let ttl = Duration::from_secs(10);
        let slow = || async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(ToolOutcome::text("slow"))
        };
        let started = Instant::now();
        let short = WaitLimit {
            until: started + Duration::from_secs(1),
            timed_out: || UpstreamError::Timeout {
                server: switchboard_core::ServerId::new("fs"),
                after: Duration::from_secs(1),
            },
        };
        let (first, second) = tokio::join!(
            cache.get_or_run("k".into(), ttl, Instant::now, no_limit(), slow),
            async {
                let answer = cache
                    .get_or_run("k".into(), ttl, Instant::now, short, slow)
                    .await;
                (answer, started.elapsed())
            },
        );
        assert_eq!(first.expect("the runner's answer").text_content(), "slow");
        let (answer, waited) = second;
        assert!(
            matches!(answer, Err(UpstreamError::Timeout { .. })),
            "{answer:?}"
        );
        assert_eq!(
            waited,
            Duration::from_secs(1),
            "waited until its own deadline"
        );
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn keys_ignore_key_order_but_not_agents_or_values() {
        let a = cache_key(
            Some("a"),
            None,
            "s:t",
            &args(json!({"x": 1, "y": {"b": 2, "a": [1, {"d": 0, "c": 1}]}})),
        );
        let b = cache_key(
            Some("a"),
            None,
            "s:t",
            &args(json!({"y": {"a": [1, {"c": 1, "d": 0}], "b": 2}, "x": 1})),
        );
        assert_eq!(a, b);
        assert_ne!(a, cache_key(Some("b"), None, "s:t", &args(json!({"x": 1}))));
        // Two users of one agent (OAuth tokens with other subjects) never share an entry.
        let x = args(json!({"x": 1}));
        let alice = cache_key(Some("a"), Some("alice"), "s:t", &x);
        assert_ne!(alice, cache_key(Some("a"), Some("bob"), "s:t", &x));
        assert_ne!(alice, cache_key(Some("a"), None, "s:t", &x));
        assert_eq!(alice, cache_key(Some("a"), Some("alice"), "s:t", &x));
        assert_ne!(
            cache_key(None, None, "s:t", &args(json!({"x": 1}))),
            cache_key(None, None, "s:t", &args(json!({"x": 2})))
        );
    }

    /// A caller waiting on another's run does not take that caller's cancellation (or
    /// deadline) for its own: it runs the call itself.
    #[tokio::test(start_paused = true)]
    async fn a_waiter_runs_the_call_itself_when_the_run_it_waited_on_was_cancelled() {
        let cache = ResultCache::default();
        let ttl = Duration::from_secs(10);
        let cancelled = || async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(UpstreamError::Cancelled)
        };
        let mine = || async { Ok(ToolOutcome::text("mine")) };
        let (first, second) = tokio::join!(
            cache.get_or_run("k".into(), ttl, Instant::now, no_limit(), cancelled),
            async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                cache
                    .get_or_run("k".into(), ttl, Instant::now, no_limit(), mine)
                    .await
            },
        );
        assert!(matches!(first, Err(UpstreamError::Cancelled)));
        assert_eq!(second.expect("its own run").text_content(), "mine");
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_identical_calls_share_one_run_and_hits_expire() {
        let cache = ResultCache::default();
        let runs = AtomicUsize::new(0);
        let run = || async {
            runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(ToolOutcome::text("fresh"))
        };
        let ttl = Duration::from_secs(10);
        let (first, second) = tokio::join!(
            cache.get_or_run("k".into(), ttl, Instant::now, no_limit(), run),
            cache.get_or_run("k".into(), ttl, Instant::now, no_limit(), run),
        );
        assert_eq!(runs.load(Ordering::SeqCst), 1, "coalesced into one run");
        let first = first.expect("answer");
        let second = second.expect("answer");
        assert!(
            first.meta.is_none(),
            "the caller that ran it gets the plain answer"
        );
        assert_eq!(
            second
                .meta
                .as_ref()
                .and_then(|m| m.get(CACHE_META_KEY))
                .and_then(|c| c["hit"].as_bool()),
            Some(true)
        );

        tokio::time::advance(Duration::from_secs(5)).await;
        let hit = cache
            .get_or_run("k".into(), ttl, Instant::now, no_limit(), run)
            .await
            .expect("answer");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            hit.meta
                .as_ref()
                .and_then(|m| m.get(CACHE_META_KEY))
                .and_then(|c| c["age_ms"].as_u64()),
            Some(5_000)
        );

        tokio::time::advance(Duration::from_secs(6)).await;
        let fresh = cache
            .get_or_run("k".into(), ttl, Instant::now, no_limit(), run)
            .await
            .expect("answer");
        assert_eq!(runs.load(Ordering::SeqCst), 2, "expired after the ttl");
        assert!(fresh.meta.is_none());
    }

    /// Calls whose callers gave up before an answer leave no slot behind that would fill
    /// the cache: a full cache of such slots still takes a new key.
    #[tokio::test(start_paused = true)]
    async fn slots_of_calls_given_up_do_not_fill_the_cache() {
        let cache = ResultCache::with_capacity(2);
        let ttl = Duration::from_secs(60);
        let never = || std::future::pending::<Answer>();
        for key in ["a", "b"] {
            let gave_up = tokio::time::timeout(
                Duration::from_millis(10),
                cache.get_or_run(key.into(), ttl, Instant::now, no_limit(), never),
            )
            .await;
            assert!(gave_up.is_err());
        }
        let runs = AtomicUsize::new(0);
        let ok = || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutcome::text("c"))
        };
        for _ in 0..2 {
            cache
                .get_or_run("c".into(), ttl, Instant::now, no_limit(), ok)
                .await
                .expect("answer");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1, "the second call was a hit");
    }

    #[tokio::test(start_paused = true)]
    async fn errors_are_not_cached() {
        let cache = ResultCache::default();
        let runs = AtomicUsize::new(0);
        let failing = || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutcome::error("nope"))
        };
        let ttl = Duration::from_secs(60);
        for _ in 0..3 {
            let answer = cache
                .get_or_run("k".into(), ttl, Instant::now, no_limit(), failing)
                .await;
            assert!(answer.expect("answer").is_error);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert!(cache.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_serves_uncached() {
        let cache = ResultCache::with_capacity(1);
        let ttl = Duration::from_secs(60);
        let ok = || async { Ok(ToolOutcome::text("x")) };
        cache
            .get_or_run("a".into(), ttl, Instant::now, no_limit(), ok)
            .await
            .expect("answer");
        let other = cache
            .get_or_run("b".into(), ttl, Instant::now, no_limit(), ok)
            .await
            .expect("answer");
        assert!(other.meta.is_none());
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn forgetting_a_server_drops_its_entries_only() {
        let cache = ResultCache::default();
        let ttl = Duration::from_secs(60);
        let ok = || async { Ok(ToolOutcome::text("x")) };
        let arguments = Map::new();
        for tool_key in ["fs:read", "fs2:read", "git:log"] {
            cache
                .get_or_run(
                    cache_key(Some("npc"), None, tool_key, &arguments),
                    ttl,
                    Instant::now,
                    no_limit(),
                    ok,
                )
                .await
                .expect("answer");
        }
        cache.forget_server("fs");
        assert_eq!(cache.len(), 2, "fs2 and git stay");
        let again = cache
            .get_or_run(
                cache_key(Some("npc"), None, "fs:read", &arguments),
                ttl,
                Instant::now,
                no_limit(),
                ok,
            )
            .await
            .expect("answer");
        assert!(
            again.meta.is_none(),
            "fs's answer was served from the cache"
        );
    }
}
