//! Rate limits, concurrency caps and cost quotas: nothing runs away.
//!
//! Every call passes [`Limits::admit`] between approval and execution. It holds the call's
//! concurrency permits (per server, per tool, per agent) while the call runs, spaces requests
//! with GCRA per agent, per tool and globally, and checks the agent's cost quota. An
//! over-limit call waits up to the queue time of the limit that stopped it, then fails with
//! "rate limited, retry after N ms"; while it waits for one cap it holds no other cap's
//! permit (a call queued for a full server takes none of the gateway's). All waiting is on
//! the injected clock's timeline (tokio time), so tests run on paused time.
//!
//! Rates and caps are embedded (per process) unless [`Limits::with_shared`] hands them to a
//! store all replicas share ([`shared`]). Quotas count this replica's spending here, plus,
//! once [`Limits::with_shared_spending`] is given one, the other replicas' spending as last
//! read from their shared store ([`spending`]): the call path never waits on that store.

mod gcra;
mod quota;
pub mod shared;
pub mod spending;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

pub use gcra::{Gcra, MIN_PER_MINUTE};
pub use quota::{CostModel, MAX_QUOTA_WINDOW, MIN_QUOTA_WINDOW, Quota, QuotaExceeded};
pub use shared::{
    Lease, SharedCheck, SharedHealth, SharedLimiter, SharedUnavailable, SharedVerdict,
    WhenUnreachable,
};
pub use spending::{SharedSpending, Spent, Taken, Unsent};

/// How often a call queued behind a full shared cap asks again.
const SHARED_BUSY_POLL: Duration = Duration::from_millis(50);

/// Limits of one scope (an agent, a tool, a server, or everything).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitSpec {
    /// Requests per minute (GCRA); `None` = unlimited.
    pub per_minute: Option<f64>,
    /// Requests allowed back to back above the steady rate (default 1).
    pub burst: Option<u32>,
    /// Calls in flight at once; `None` = unlimited.
    pub max_concurrent: Option<u32>,
    /// How long an over-limit call may wait for its turn (default 0: fail at once).
    pub queue: Option<Duration>,
}

/// Why a call was not admitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("rate limited ({scope}), retry after {} ms", retry_after.as_millis())]
    RateLimited {
        scope: String,
        retry_after: Duration,
    },
    #[error("{0}")]
    Quota(QuotaExceeded),
    /// The shared limiter did not answer and `[shared] redis_unavailable = "fail_closed"`.
    #[error(
        "the shared limiter is unreachable ({0}); limited calls are refused until it is back \
         (shared.redis_unavailable = \"fail_closed\"), retry later"
    )]
    SharedUnavailable(String),
}

/// The scopes one call is limited by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Global,
    Agent(String),
    Server(String),
    Tool(String),
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Global => f.write_str("gateway"),
            Self::Agent(name) => write!(f, "agent {name}"),
            Self::Server(name) => write!(f, "server {name}"),
            Self::Tool(name) => write!(f, "tool {name}"),
        }
    }
}

struct Limiter {
    spec: LimitSpec,
    rate: Option<Gcra>,
    slots: Option<Arc<Semaphore>>,
}

impl Limiter {
    fn new(spec: LimitSpec) -> Self {
        Self {
            spec,
            rate: spec
                .per_minute
                .filter(|rate| *rate > 0.0)
                .map(|rate| Gcra::per_minute(rate, spec.burst.unwrap_or(1))),
            slots: spec
                .max_concurrent
                .map(|n| Arc::new(Semaphore::new(n.max(1) as usize))),
        }
    }
}

/// Permits a call holds while it runs; dropping them frees the slots.
#[derive(Debug, Default)]
pub struct Admission {
    _permits: Vec<OwnedSemaphorePermit>,
    _lease: Option<Box<dyn Lease>>,
}

/// Every limit of the gateway, by scope. Built once from config; cheap to share.
#[derive(Default)]
pub struct Limits {
    local: LocalLimits,
    quotas: HashMap<String, Arc<Quota>>,
    shared: Option<SharedLimits>,
    /// The other replicas' spending, when quotas are shared.
    spending: Option<Arc<SharedSpending>>,
}

/// Rates and caps kept in this process.
#[derive(Default)]
struct LocalLimits {
    specs: HashMap<Scope, LimitSpec>,
    limiters: Mutex<HashMap<Scope, Arc<Limiter>>>,
}

/// Rates and caps kept in a shared store, and what happens when it is unreachable.
struct SharedLimits {
    store: Arc<dyn SharedLimiter>,
    policy: WhenUnreachable,
    /// Fail open: each scope at limit/replicas, in this process.
    fallback: LocalLimits,
}

impl Limits {
    /// Limits with these specs per scope and cost quotas per agent.
    pub fn new(specs: HashMap<Scope, LimitSpec>, quotas: HashMap<String, Quota>) -> Self {
        Self {
            local: LocalLimits::new(specs),
            quotas: quotas
                .into_iter()
                .map(|(agent, quota)| (agent, Arc::new(quota)))
                .collect(),
            shared: None,
            spending: None,
        }
    }

    /// These limits with quotas that also count the other replicas' spending held in
    /// `spending` (and note this replica's there, to be sent to them).
    pub fn with_shared_spending(mut self, spending: Arc<SharedSpending>) -> Self {
        spending.set_wanted(!self.quotas.is_empty());
        self.spending = Some(spending);
        self
    }

    /// Where the other replicas' spending is held, if quotas are shared.
    pub fn shared_spending(&self) -> Option<Arc<SharedSpending>> {
        self.spending.clone()
    }

    /// Keeps what `previous` counted so far, so a reload of the governance forgets nothing
    /// it still applies: the limiter (permits held by calls in flight, the GCRA schedule) of
    /// every scope whose limits are unchanged, in this process and in the fail-open
    /// fallback, and the spending of every agent that still has a quota.
    pub fn keep_state_of(&mut self, previous: &Limits) {
        self.local.keep_limiters_of(&previous.local);
        if let (Some(shared), Some(old)) = (&mut self.shared, &previous.shared) {
            shared.fallback.keep_limiters_of(&old.fallback);
        }
        self.keep_spending_of(previous);
    }

    /// Keeps the spending counted so far by `previous` for every agent that still has a
    /// quota: an unchanged quota is kept whole, a changed one counts it under its new budget
    /// and window.
    fn keep_spending_of(&mut self, previous: &Limits) {
        for (agent, quota) in &mut self.quotas {
            let Some(old) = previous.quotas.get(agent) else {
                continue;
            };
            *quota = if old.same_budget(quota) {
                old.clone()
            } else {
                Arc::new(quota.counting_spending_of(old))
            };
        }
    }

    /// These limits with rates and caps kept in `store`, shared with the other `replicas`
    /// replicas; `policy` says what calls meet while it is unreachable.
    pub fn with_shared(
        mut self,
        store: Arc<dyn SharedLimiter>,
        policy: WhenUnreachable,
        replicas: u32,
    ) -> Self {
        let fallback = self
            .local
            .specs
            .iter()
            .map(|(scope, spec)| (scope.clone(), shared::scaled(*spec, replicas)))
            .collect();
        self.shared = Some(SharedLimits {
            store,
            policy,
            fallback: LocalLimits::new(fallback),
        });
        self
    }

    /// The shared store, if rates and caps are kept in one.
    pub fn shared_store(&self) -> Option<Arc<dyn SharedLimiter>> {
        self.shared.as_ref().map(|shared| shared.store.clone())
    }

    /// The shared store's state and what calls meet while it is unreachable, if rates and
    /// caps are kept in one.
    pub fn shared_health(&self) -> Option<(SharedHealth, WhenUnreachable)> {
        self.shared
            .as_ref()
            .map(|shared| (shared.store.health(), shared.policy))
    }

    /// Whether any limit is configured (the pipeline skips the stage otherwise).
    pub fn is_empty(&self) -> bool {
        self.local.specs.is_empty() && self.quotas.is_empty()
    }

    /// Admits one call limited by `scopes` (checked in order), waiting up to each limit's
    /// queue time. Quota is checked for `agent`, if it has one.
    pub async fn admit(&self, scopes: &[Scope], agent: Option<&str>) -> Result<Admission, Refusal> {
        if let Some((agent, quota)) = agent.and_then(|a| Some((a, self.quotas.get(a)?))) {
            let others = self.spending.as_deref().map(|spending| (spending, agent));
            quota
                .check_with(Instant::now(), others)
                .map_err(Refusal::Quota)?;
        }
        let Some(shared) = &self.shared else {
            return self.local.admit(scopes).await;
        };
        let checks: Vec<SharedCheck> = scopes
            .iter()
            .filter_map(|scope| {
                let spec = *self.local.specs.get(scope)?;
                let limited =
                    spec.per_minute.is_some_and(|rate| rate > 0.0) || spec.max_concurrent.is_some();
                limited.then(|| SharedCheck {
                    scope: scope.clone(),
                    spec,
                })
            })
            .collect();
        if checks.is_empty() {
            return Ok(Admission::default());
        }
        shared.admit(&checks, scopes).await
    }

    /// Charges `cost` to `agent`'s quota.
    pub fn charge(&self, agent: Option<&str>, cost: f64) {
        if let Some((agent, quota)) = agent.and_then(|a| Some((a, self.quotas.get(a)?))) {
            quota.charge(Instant::now(), cost);
            if let Some(spending) = &self.spending {
                spending.record(agent, quota.window(), cost);
            }
        }
    }
}

impl SharedLimits {
    async fn admit(&self, checks: &[SharedCheck], scopes: &[Scope]) -> Result<Admission, Refusal> {
        let started = Instant::now();
        loop {
            let verdict = match self.store.admit(checks).await {
                Ok(verdict) => verdict,
                Err(SharedUnavailable(why)) => {
                    return match self.policy {
                        WhenUnreachable::FailOpen => self.fallback.admit(scopes).await,
                        WhenUnreachable::FailClosed => Err(Refusal::SharedUnavailable(why)),
                    };
                }
            };
            match verdict {
                SharedVerdict::Admitted { wait, lease } => {
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                    return Ok(Admission {
                        _permits: Vec::new(),
                        _lease: lease,
                    });
                }
                SharedVerdict::RateLimited { scope, retry_after } => {
                    return Err(Refusal::RateLimited {
                        scope: checks
                            .get(scope)
                            .map_or_else(String::new, |c| c.scope.to_string()),
                        retry_after,
                    });
                }
                SharedVerdict::Busy { scope } => {
                    let Some(check) = checks.get(scope) else {
                        return Err(busy(&Scope::Global, LimitSpec::default(), Duration::ZERO));
                    };
                    let queue = check.spec.queue.unwrap_or_default();
                    if started.elapsed() + SHARED_BUSY_POLL > queue {
                        let retry_after = if queue.is_zero() {
                            SHARED_BUSY_POLL * 2
                        } else {
                            queue
                        };
                        return Err(busy(&check.scope, check.spec, retry_after));
                    }
                    tokio::time::sleep(SHARED_BUSY_POLL).await;
                }
            }
        }
    }
}

/// The refusal of a call that found `scope`'s cap full.
fn busy(scope: &Scope, spec: LimitSpec, retry_after: Duration) -> Refusal {
    Refusal::RateLimited {
        scope: format!(
            "{scope}: {} calls in flight",
            spec.max_concurrent.unwrap_or(0)
        ),
        retry_after,
    }
}

impl LocalLimits {
    fn new(specs: HashMap<Scope, LimitSpec>) -> Self {
        Self {
            specs,
            limiters: Mutex::default(),
        }
    }

    /// Takes over the limiters of `previous` whose scope keeps the same limits here: the
    /// calls admitted there hold their permits here too, and the rates go on where they were.
    fn keep_limiters_of(&mut self, previous: &LocalLimits) {
        let old = match previous.limiters.lock() {
            Ok(limiters) => limiters,
            Err(poisoned) => poisoned.into_inner(),
        };
        let kept = old
            .iter()
            .filter(|(scope, limiter)| self.specs.get(*scope) == Some(&limiter.spec))
            .map(|(scope, limiter)| (scope.clone(), limiter.clone()))
            .collect();
        *self
            .limiters
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = kept;
    }

    fn limiter(&self, scope: &Scope) -> Option<Arc<Limiter>> {
        let spec = *self.specs.get(scope)?;
        let mut limiters = match self.limiters.lock() {
            Ok(limiters) => limiters,
            Err(poisoned) => poisoned.into_inner(),
        };
        Some(
            limiters
                .entry(scope.clone())
                .or_insert_with(|| Arc::new(Limiter::new(spec)))
                .clone(),
        )
    }

    /// Admits one call limited by `scopes`: a slot of every rate, waiting for the latest of
    /// them (each at most its queue time), then a permit of every cap ([`take_permits`]).
    /// A call that is not admitted — one limit refused it, or it was dropped while it
    /// waited (its caller cancelled it) — gives back the rate slots it took: a call that
    /// does not run uses up no one's rate.
    async fn admit(&self, scopes: &[Scope]) -> Result<Admission, Refusal> {
        let limiters: Vec<(&Scope, Arc<Limiter>)> = scopes
            .iter()
            .filter_map(|scope| Some((scope, self.limiter(scope)?)))
            .collect();
        // No limit applies to this call: no clock is read.
        if limiters.is_empty() {
            return Ok(Admission::default());
        }
        let mut reserved = Reserved::default();
        let wait = reserve_rates(&limiters, &mut reserved.0)?;
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let permits = take_permits(&limiters).await?;
        reserved.keep();
        Ok(Admission {
            _permits: permits,
            _lease: None,
        })
    }
}

/// The limiters whose rate slot a call took before it is admitted: the slots go back when
/// this is dropped, unless [`Reserved::keep`] says the call was admitted.
#[derive(Default)]
struct Reserved(Vec<Arc<Limiter>>);

impl Reserved {
    /// The call was admitted: it keeps its slots.
    fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let now = Instant::now();
        for limiter in &self.0 {
            if let Some(rate) = &limiter.rate {
                rate.give_back(now);
            }
        }
    }
}

/// Takes a slot of every rate among `limiters` at `now`, noting each in `reserved`, and says
/// how long the call waits for the last of them; refuses when one would wait longer than its
/// scope's queue time.
fn reserve_rates(
    limiters: &[(&Scope, Arc<Limiter>)],
    reserved: &mut Vec<Arc<Limiter>>,
) -> Result<Duration, Refusal> {
    let mut wait = Duration::ZERO;
    // Read once, and only when a rate applies.
    let mut now = None;
    for (scope, limiter) in limiters {
        let Some(rate) = &limiter.rate else {
            continue;
        };
        let now = *now.get_or_insert_with(Instant::now);
        match rate.reserve(now, limiter.spec.queue.unwrap_or_default()) {
            Ok(until) => {
                reserved.push(limiter.clone());
                wait = wait.max(until);
            }
            Err(retry_after) => {
                return Err(Refusal::RateLimited {
                    scope: scope.to_string(),
                    retry_after,
                });
            }
        }
    }
    Ok(wait)
}

/// A permit of every cap among `limiters`, all taken together: a call never holds one cap's
/// permit while it waits for another's, so calls queued behind one full cap (a slow server)
/// take none of a broader cap's slots (the gateway's). When a cap is full the call lets go
/// of what it took, waits for that cap — up to its queue time, counted from the first try —
/// and tries them all again; refused when the queue time of the cap it waits for runs out.
async fn take_permits(
    limiters: &[(&Scope, Arc<Limiter>)],
) -> Result<Vec<OwnedSemaphorePermit>, Refusal> {
    let caps: Vec<(&Scope, LimitSpec, &Arc<Semaphore>)> = limiters
        .iter()
        .filter_map(|(scope, limiter)| Some((*scope, limiter.spec, limiter.slots.as_ref()?)))
        .collect();
    // When the call first found a cap full (its queue time counts from then).
    let mut started = None;
    // The permit the call waited for last, and whose cap it is.
    let mut waited: Option<(usize, OwnedSemaphorePermit)> = None;
    loop {
        let mut held = waited.take();
        let mut permits = Vec::with_capacity(caps.len());
        let mut full = None;
        for (index, (_, _, slots)) in caps.iter().enumerate() {
            let taken = match held.take_if(|(cap, _)| *cap == index) {
                Some((_, permit)) => Some(permit),
                None => Arc::clone(slots).try_acquire_owned().ok(),
            };
            match taken {
                Some(permit) => permits.push(permit),
                None => {
                    full = Some(index);
                    break;
                }
            }
        }
        let Some(index) = full else {
            return Ok(permits);
        };
        // Nothing is held while waiting.
        drop((held, permits));
        let (scope, spec, slots) = caps[index];
        let queue = spec.queue.unwrap_or_default();
        if queue.is_zero() {
            return Err(busy(scope, spec, Duration::from_millis(100)));
        }
        let started = *started.get_or_insert_with(Instant::now);
        let left = queue.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, Arc::clone(slots).acquire_owned()).await {
            Ok(Ok(permit)) => waited = Some((index, permit)),
            _ => return Err(busy(scope, spec, queue)),
        }
    }
}

#[cfg(test)]
mod tests;
