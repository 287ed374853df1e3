//! The latency budget at run time: what each tool measurably costs here, which tools fit each
//! tier right now, and how calls are bounded, retried, hedged and cached. The rules live in
//! `switchboard-budget`; this module feeds them the catalog and every real call, and gives the
//! Host the answers.
//!
//! - [`LatencyBudget`] (here): the book of windows, health and placements; the placements the
//!   tier views read, republished only on transitions and at most once per `list_interval`
//!   (a changed listing breaks clients' prompt caches); the stats file.
//! - [`execute`]: the layer every upstream call goes through: cache → deadline → retries →
//!   hedging → measure.
//! - [`cache`]: results of cacheable read-only or idempotent tools, with coalescing.
//! - [`report`]: the operator's view (`switchboard tools --stats`).
//! - [`calibrate`]: probes, on demand, at connect time and for degraded tools.
//! - [`recheck`]: probes that re-measure a hidden tool nobody calls any more.
//! - [`persist`]: loading and saving windows per environment (the stats file).
//! - [`shared`]: with `[storage] url`, every replica's windows on PostgreSQL instead, merged.

pub mod api;
pub mod cache;
pub mod calibrate;
pub mod execute;
mod maintenance;
mod persist;
mod recheck;
pub mod report;
pub mod shared;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use switchboard_budget::{
    BudgetConfig, DeadlineInputs, DeadlinePolicy, Declared, EffectiveConfig, ExtraRequestBudget,
    HealthConfig, HedgePolicy, LatencyBook, MaskingConfig, Prediction, Quantile, RetryPolicy,
    SafetyOverride, Sample, TierId, TierSet, ToolSafety,
};
use switchboard_core::clock::Clock;
use switchboard_core::config::LatencyConfig;
use switchboard_core::latency_meta::RequestedDeadline;
use switchboard_core::{CallContext, Catalog, ServerId};
use tokio::time::Instant;

pub use persist::Persistence;

/// The operator's word on one tool, from the config (`[servers.S.tools.T]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSettings {
    pub safety: SafetyOverride,
    /// What probes call the tool with.
    pub probe_arguments: Option<Map<String, Value>>,
}

/// What the budget knows of one catalog tool.
#[derive(Debug, Clone)]
pub struct ToolTraits {
    /// `server:tool` (the upstream's name): the key of its stats.
    pub key: Arc<str>,
    pub exposed: String,
    pub server: ServerId,
    pub upstream_name: String,
    pub category: String,
    pub declared: Declared,
    pub safety: ToolSafety,
    pub call_timeout: Duration,
    pub input_schema: Arc<Value>,
    pub probe_arguments: Option<Map<String, Value>>,
    /// Where its stats are kept apart (see [`LatencyBudget::environment_of`]).
    pub environment: switchboard_budget::Environment,
}

impl ToolTraits {
    /// Results may be reused for this long (read-only or idempotent tools only).
    pub fn cache_ttl(&self) -> Option<Duration> {
        let ttl = self.declared.cacheable.filter(|ttl| !ttl.is_zero())?;
        (self.safety.read_only || self.safety.idempotent).then_some(ttl)
    }
}

/// The stats key of a server's tool.
pub fn tool_key(server: &str, tool: &str) -> String {
    format!("{server}:{tool}")
}

/// How one call is to be run, decided when it starts.
#[derive(Debug, Clone, Copy)]
pub struct CallPlan {
    pub deadline: Duration,
    /// The deadline as a timeout states it: the caller's whole budget when the caller's
    /// deadline decided (counted from the request's receipt, so `deadline` may be less),
    /// else `deadline`.
    pub stated: Duration,
    pub idempotent: bool,
    /// Send a second request after this long (idempotent tools with enough samples).
    pub hedge_after: Option<Duration>,
    pub cache_ttl: Option<Duration>,
    /// Predicted slow, and the caller asked for progress: an early notification is due.
    pub mask: bool,
}

/// The least hard timeout derived from measurements (p99 × 2): a tool measured at 10 ms is
/// not cut at 20 ms by the first hiccup of the machine. Declared bounds, tier deadlines and
/// callers' deadlines may be tighter.
pub const MEASURED_DEADLINE_FLOOR: Duration = Duration::from_secs(1);

/// What hears which tiers' tools changed.
type TiersChanged = Box<dyn Fn(&[String]) + Send + Sync>;

/// Which tier each exposed tool fits first, as the views see it. The tables a call looks its
/// tool up in are hashed with foldhash, not SipHash.
pub(crate) type Fits = foldhash::HashMap<String, Option<TierId>>;

/// The tools of the current catalog, by stats key.
pub(crate) type ToolTable = foldhash::HashMap<Arc<str>, Arc<ToolTraits>>;

/// The Host's latency state. See the module doc.
pub struct LatencyBudget {
    settings: LatencyConfig,
    book: Mutex<LatencyBook>,
    tiers: TierSet,
    tools: ArcSwap<ToolTable>,
    fits: ArcSwap<Fits>,
    last_change: Mutex<Option<Instant>>,
    /// Held from computing the placements to storing them: placements computed from an older
    /// catalog never replace those of a newer one.
    publishing: Mutex<()>,
    republish_scheduled: AtomicBool,
    /// The operator's per-tool settings; a reload replaces them.
    overrides: std::sync::RwLock<Arc<HashMap<String, ToolSettings>>>,
    pub(crate) deadlines: DeadlinePolicy,
    pub(crate) retry_policy: RetryPolicy,
    /// The retry budget of upstreams outside the fleet (a fleet's server has its own, on its
    /// connection).
    pub(crate) retries: ExtraRequestBudget,
    pub(crate) hedge_policy: Option<HedgePolicy>,
    /// The hedge budget of upstreams outside the fleet, as `retries`.
    pub(crate) hedges: ExtraRequestBudget,
    pub(crate) cache: cache::ResultCache,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) persistence: Option<Persistence>,
    /// With `[storage] url`: the fleet's windows on PostgreSQL (set once, before the first
    /// catalog).
    shared: OnceLock<Arc<shared::SharedStats>>,
    dirty: AtomicBool,
    /// Called with the tiers whose visible tools changed (the Host announces `list_changed`
    /// to the sessions listing in them).
    on_change: OnceLock<TiersChanged>,
    recheck_policy: switchboard_budget::RecheckPolicy,
    /// Each catalog tool's recheck schedule, by stats key ([`recheck`]).
    rechecks: Mutex<foldhash::HashMap<Arc<str>, switchboard_budget::RecheckSchedule>>,
    me: Weak<Self>,
}

/// The quantile of a config fraction (0.9 → p90).
pub fn quantile_of(fraction: f64) -> Quantile {
    match fraction {
        f if f <= 0.5 => Quantile::P50,
        f if f <= 0.9 => Quantile::P90,
        f if f <= 0.95 => Quantile::P95,
        _ => Quantile::P99,
    }
}

impl LatencyBudget {
    /// A budget over `tiers` (name, ceiling), configured by `[latency]`, with per-tool
    /// settings keyed by [`tool_key`].
    pub fn new(
        settings: LatencyConfig,
        tiers: TierSet,
        overrides: HashMap<String, ToolSettings>,
        clock: Arc<dyn Clock>,
        persistence: Option<Persistence>,
    ) -> Arc<Self> {
        let quantile = quantile_of(settings.quantile);
        let config = BudgetConfig {
            window: settings.window.max(1),
            effective: EffectiveConfig {
                quantile,
                min_samples: settings.min_samples,
            },
            tiers: tiers.clone(),
            health: HealthConfig {
                recover_calls: settings.recover_calls.max(1),
                recover_after: settings.recover_after,
                ..HealthConfig::default()
            },
            masking: MaskingConfig {
                threshold: settings.mask_after,
                mask_unknown: false,
                ..MaskingConfig::default()
            },
            ..BudgetConfig::default()
        };
        let hedge_policy = settings.hedging.then(|| HedgePolicy {
            min_samples: settings.min_samples.max(1),
            ..HedgePolicy::default()
        });
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            retry_policy: RetryPolicy {
                max_attempts: settings.max_attempts.max(1),
                ..RetryPolicy::default()
            },
            recheck_policy: switchboard_budget::RecheckPolicy::after(settings.recheck_after),
            rechecks: Mutex::default(),
            settings,
            book: Mutex::new(LatencyBook::new(config)),
            tiers,
            tools: ArcSwap::default(),
            fits: ArcSwap::default(),
            last_change: Mutex::new(None),
            publishing: Mutex::new(()),
            republish_scheduled: AtomicBool::new(false),
            overrides: std::sync::RwLock::new(Arc::new(overrides)),
            deadlines: DeadlinePolicy {
                floor: MEASURED_DEADLINE_FLOOR,
                ..DeadlinePolicy::default()
            },
            retries: ExtraRequestBudget::retries(),
            hedge_policy,
            hedges: ExtraRequestBudget::hedges(),
            cache: cache::ResultCache::default(),
            clock,
            persistence,
            shared: OnceLock::new(),
            dirty: AtomicBool::new(false),
            on_change: OnceLock::new(),
        })
    }

    /// Sets what is called, with the tiers whose tools changed, when placements change (once).
    pub fn on_change(&self, notify: impl Fn(&[String]) + Send + Sync + 'static) {
        let _ = self.on_change.set(Box::new(notify));
    }

    /// Keeps this replica's windows in the fleet's statistics on PostgreSQL and merges the
    /// other replicas' in (once, before the first catalog; see [`shared`]).
    pub fn share_stats(&self, stats: Arc<shared::SharedStats>) {
        let _ = self.shared.set(stats);
    }

    /// The fleet's statistics, when they are shared.
    pub fn shared_stats(&self) -> Option<Arc<shared::SharedStats>> {
        self.shared.get().cloned()
    }

    pub fn tiers(&self) -> &TierSet {
        &self.tiers
    }

    pub fn settings(&self) -> &LatencyConfig {
        &self.settings
    }

    pub(crate) fn book(&self) -> MutexGuard<'_, LatencyBook> {
        self.book
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The tools of the current catalog, by stats key.
    pub fn tools(&self) -> Arc<ToolTable> {
        self.tools.load_full()
    }

    /// Takes a new catalog: declares its tools (loading their stored windows the first time
    /// each is seen) and publishes placements at once — a catalog change is announced anyway.
    pub fn refresh(&self, catalog: &Catalog, transports: &HashMap<ServerId, &'static str>) {
        let overrides = self.overrides();
        let mut tools =
            ToolTable::with_capacity_and_hasher(catalog.entries().len(), Default::default());
        for entry in catalog.entries() {
            let key: Arc<str> =
                Arc::from(tool_key(entry.spec.server.as_str(), &entry.upstream_name));
            let declared = Declared::resolve(Some(&entry.latency), None);
            let settings = overrides.get(&*key).cloned().unwrap_or_default();
            let safety = ToolSafety::resolve(
                entry.spec.definition.annotations.as_ref(),
                &declared,
                &settings.safety,
            );
            let transport = transports
                .get(&entry.spec.server)
                .copied()
                .unwrap_or("stdio");
            let traits = ToolTraits {
                environment: self.environment_of(transport),
                key: key.clone(),
                exposed: entry.exposed.clone(),
                server: entry.spec.server.clone(),
                upstream_name: entry.upstream_name.clone(),
                category: entry.category.clone(),
                declared,
                safety,
                call_timeout: entry.call_timeout,
                input_schema: Arc::new(entry.spec.definition.input_schema.clone()),
                probe_arguments: settings.probe_arguments,
            };
            tools.insert(key, Arc::new(traits));
        }
        {
            let mut book = self.book();
            for (key, traits) in &tools {
                if book.tool(key).is_none()
                    && let Some(persistence) = &self.persistence
                {
                    let samples = persistence.load(&traits.environment, key);
                    if !samples.is_empty() {
                        book.restore(key, samples);
                    }
                }
                book.declare(key, traits.declared);
            }
        }
        self.tools.store(Arc::new(tools));
        self.publish(true);
    }

    /// The environment a server's stats are kept under.
    pub(crate) fn environment_of(&self, transport: &str) -> switchboard_budget::Environment {
        match (&self.settings.environment, self.shared.get()) {
            (Some(name), _) => switchboard_budget::Environment::named(name),
            (None, Some(shared)) => shared.environment(transport),
            (None, None) => switchboard_budget::Environment::default_for(transport),
        }
    }

    /// Records one upstream call of `key`.
    pub fn record(&self, key: &str, sample: Sample) {
        let now = self.clock.now();
        let outcome = self.book().record(key, sample, now);
        if let Some(shared) = self.shared.get() {
            shared.record(key, sample, self.settings.window.max(1));
        }
        // Read first: a store on every call would pull the flag's cache line from the core
        // that last wrote it, on every core.
        if !self.dirty.load(Ordering::Relaxed) {
            self.dirty.store(true, Ordering::Relaxed);
        }
        if outcome.views_may_change() {
            self.publish(false);
        }
    }

    /// Gives degraded tools nothing has called for the health's `recover_after` another
    /// chance (see `switchboard_budget::health`), announcing the listings that change.
    pub(crate) fn recover_idle(&self) {
        let now = self.clock.now();
        if self.book().recover_idle(now) {
            self.publish(false);
        }
    }

    /// Whether something was recorded since the last save (and clears the mark).
    pub(crate) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// Recomputes which tier each tool fits. A catalog refresh (`forced`) adopts the result at
    /// once; a measurement-driven change waits until `list_interval` has passed since the last
    /// one, then is announced.
    pub(crate) fn publish(&self, forced: bool) {
        let _publishing = self
            .publishing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let fits = self.compute_fits();
        if **self.fits.load() == fits {
            return;
        }
        if forced {
            // A new catalog is announced as such; it does not count against the interval.
            self.fits.store(Arc::new(fits));
            return;
        }
        let now = self.clock.now();
        let mut last = self
            .last_change
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(previous) = *last {
            let due = previous + self.settings.list_interval;
            if now < due {
                drop(last);
                self.schedule_republish(due);
                return;
            }
        }
        *last = Some(now);
        drop(last);
        let changed = self.tiers_changed(&self.fits.load(), &fits);
        self.fits.store(Arc::new(fits));
        if let Some(notify) = self.on_change.get() {
            notify(&changed);
        }
    }

    fn schedule_republish(&self, due: Instant) {
        if self.republish_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.republish_scheduled.store(false, Ordering::Release);
            return;
        };
        let me = self.me.clone();
        runtime.spawn(async move {
            tokio::time::sleep_until(due).await;
            if let Some(budget) = me.upgrade() {
                budget.republish_scheduled.store(false, Ordering::Release);
                budget.publish(false);
            }
        });
    }

    /// The tiers whose visible tools differ between two placements: a tool moving from
    /// fitting first in `a` to first in `b` changes every tier between them.
    fn tiers_changed(&self, old: &Fits, new: &Fits) -> Vec<String> {
        self.tiers
            .iter()
            .filter(|(tier, _)| {
                let sees = |fits: &Fits, name: &String| {
                    fits.get(name)
                        .copied()
                        .flatten()
                        .is_some_and(|fastest| fastest <= *tier)
                };
                old.keys()
                    .chain(new.keys())
                    .any(|name| sees(old, name) != sees(new, name))
            })
            .map(|(_, tier)| tier.name.clone())
            .collect()
    }

    fn compute_fits(&self) -> Fits {
        let tools = self.tools.load();
        let book = self.book();
        tools
            .values()
            .map(|traits| {
                let profile = book.profile(&traits.key);
                (traits.exposed.clone(), profile.fastest_tier(&self.tiers))
            })
            .collect()
    }

    /// The exposed names of `catalog` that fit `tier` now (what a tier view keeps; the Host's
    /// views also apply the caller's permissions).
    pub fn visible_in(&self, catalog: &Catalog, tier: &str) -> Vec<String> {
        let Some(tier) = self.tier_id(tier) else {
            return Vec::new();
        };
        let fits = self.fits.load();
        catalog
            .entries()
            .iter()
            .filter(|entry| {
                fits.get(&entry.exposed)
                    .copied()
                    .flatten()
                    .is_some_and(|fastest| fastest <= tier)
            })
            .map(|entry| entry.exposed.clone())
            .collect()
    }

    /// Replaces the operator's per-tool settings; the next [`LatencyBudget::refresh`] reads
    /// them.
    pub fn set_overrides(&self, overrides: HashMap<String, ToolSettings>) {
        match self.overrides.write() {
            Ok(mut slot) => *slot = Arc::new(overrides),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(overrides),
        }
    }

    fn overrides(&self) -> Arc<HashMap<String, ToolSettings>> {
        match self.overrides.read() {
            Ok(slot) => slot.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Recomputes every tool's placement and adopts it now (what a catalog change does).
    pub fn refresh_placements(&self) {
        self.publish(true);
    }

    /// The placements the views read now.
    pub(crate) fn fits(&self) -> Arc<Fits> {
        self.fits.load_full()
    }

    /// The tier of this name.
    pub fn tier_id(&self, name: &str) -> Option<TierId> {
        self.tiers.find(name)
    }

    /// The names of the tiers calls are placed in, fastest first (the configured ones, or the
    /// defaults where none are).
    pub fn tier_names(&self) -> Vec<String> {
        self.tiers
            .iter()
            .map(|(_, tier)| tier.name.clone())
            .collect()
    }

    /// How to run one call of `traits` for `ctx` in `tier` (the caller's active tier).
    pub(crate) fn plan(
        &self,
        traits: &ToolTraits,
        ctx: &CallContext,
        tier: Option<TierId>,
    ) -> CallPlan {
        // The caller's deadline left now, and the whole of it as the caller gave it.
        let (caller, given) = match ctx.deadline {
            Some(RequestedDeadline::Within(budget)) => (Some(budget), budget),
            Some(RequestedDeadline::By { at, budget }) => {
                (Some(at.saturating_duration_since(self.clock.now())), budget)
            }
            _ => (None, Duration::ZERO),
        };
        if ctx.caller.as_ref().is_some_and(|caller| caller.is_task()) {
            // A task's call: nobody waits on it, so no tier or measured deadline, no hedge
            // and no filler; the caller's own deadline, else the task's TTL, bounds it.
            let deadline = caller.unwrap_or(switchboard_core::task::TASK_CALL_LIMIT);
            return CallPlan {
                deadline,
                stated: if caller.is_some() { given } else { deadline },
                idempotent: traits.safety.idempotent,
                hedge_after: None,
                cache_ttl: traits.cache_ttl(),
                mask: false,
            };
        }
        let tier_ceiling = match ctx.deadline {
            Some(RequestedDeadline::Tier) => tier
                .and_then(|tier| self.tiers.get(tier))
                .map(|tier| tier.ceiling),
            _ => None,
        };
        // Only what this call can use is computed (each figure is a quantile of the window).
        let book = self.book();
        let measured_p99 = traits
            .declared
            .max
            .is_none()
            .then(|| book.measured_p99(&traits.key))
            .flatten();
        let hedge_after = match (&self.hedge_policy, book.tool(&traits.key)) {
            (Some(policy), Some(tool)) if traits.safety.idempotent => {
                policy.delay(true, tool.window())
            }
            _ => None,
        };
        let mask = ctx.progress.is_some() && book.predict(&traits.key).mask;
        drop(book);
        let deadline = self
            .deadlines
            .deadline(&DeadlineInputs {
                declared_max: traits.declared.max,
                measured_p99,
                tier_ceiling,
                caller,
            })
            .budget
            .min(traits.call_timeout);
        CallPlan {
            deadline,
            stated: if caller == Some(deadline) {
                given
            } else {
                deadline
            },
            idempotent: traits.safety.idempotent,
            hedge_after,
            cache_ttl: traits.cache_ttl(),
            mask,
        }
    }

    /// The latency prediction of a tool by stats key.
    pub fn predict(&self, key: &str) -> Prediction {
        self.book().predict(key)
    }

    /// The traits of a tool by stats key.
    pub fn traits(&self, key: &str) -> Option<Arc<ToolTraits>> {
        self.tools.load().get(key).cloned()
    }

    /// The traits of a tool by exposed name.
    pub fn traits_of_exposed(&self, exposed: &str) -> Option<Arc<ToolTraits>> {
        self.tools
            .load()
            .values()
            .find(|traits| traits.exposed == exposed)
            .cloned()
    }
}
