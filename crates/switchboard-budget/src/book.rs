//! The latency book: per-tool windows, declared metadata, health and placement for one
//! environment, and the [`ToolProfile`]s tier views are computed from.
//!
//! The book never reads a clock: every call hands in the time. It is plain data (`&mut self`);
//! the integrator wraps it in the lock of its choice.

use std::sync::Arc;
use std::time::Duration;

use foldhash::{HashMap, HashMapExt};
use tokio::time::Instant;

use crate::effective::{Declared, EffectiveConfig, EffectiveLatency};
use crate::health::{HealthConfig, HealthState, HealthTracker, HealthTransition};
use crate::predict::{MaskingConfig, Prediction};
use crate::tiers::{DEFAULT_PLACEMENT_MARGIN, Placement, TierSet, ToolProfile};
use crate::window::{DEFAULT_WINDOW, LatencyWindow, Sample, WindowSummary};

/// Everything the book is configured with.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetConfig {
    /// Calls kept per tool. Default 100.
    pub window: usize,
    pub effective: EffectiveConfig,
    pub health: HealthConfig,
    pub tiers: TierSet,
    /// Hysteresis margin for moving to a faster tier. Default 0.1.
    pub placement_margin: f64,
    pub masking: MaskingConfig,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            window: DEFAULT_WINDOW,
            effective: EffectiveConfig::default(),
            health: HealthConfig::default(),
            tiers: TierSet::default(),
            placement_margin: DEFAULT_PLACEMENT_MARGIN,
            masking: MaskingConfig::default(),
        }
    }
}

/// One tool's entry.
#[derive(Debug, Clone)]
pub struct ToolBudget {
    name: Arc<str>,
    declared: Declared,
    window: LatencyWindow,
    health: HealthTracker,
    placement: Placement,
    /// When a call was last recorded (not restored: a stored window says nothing of when).
    last_recorded: Option<Instant>,
}

impl ToolBudget {
    pub fn declared(&self) -> &Declared {
        &self.declared
    }

    pub fn window(&self) -> &LatencyWindow {
        &self.window
    }

    pub fn health(&self) -> HealthState {
        self.health.state()
    }

    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// When a call was last recorded here; `None` when none was since the book began.
    pub fn last_recorded(&self) -> Option<Instant> {
        self.last_recorded
    }
}

/// What recording one call changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordOutcome {
    pub health: Option<HealthTransition>,
    /// The tool's placement moved to another tier.
    pub placement_changed: bool,
}

impl RecordOutcome {
    /// Whether tier views may have changed (offer them to the sessions' `VisibleSet`s).
    pub fn views_may_change(&self) -> bool {
        self.health.is_some() || self.placement_changed
    }
}

/// Per-tool latency state of one environment.
#[derive(Debug, Clone, Default)]
pub struct LatencyBook {
    config: BudgetConfig,
    /// By tool name, looked up on every call: hashed with foldhash, not SipHash.
    tools: HashMap<Arc<str>, ToolBudget>,
}

impl LatencyBook {
    pub fn new(config: BudgetConfig) -> Self {
        Self {
            config,
            tools: HashMap::new(),
        }
    }

    pub fn config(&self) -> &BudgetConfig {
        &self.config
    }

    fn entry<'a>(
        tools: &'a mut HashMap<Arc<str>, ToolBudget>,
        capacity: usize,
        name: &str,
    ) -> &'a mut ToolBudget {
        if !tools.contains_key(name) {
            let name: Arc<str> = Arc::from(name);
            let tool = ToolBudget {
                name: Arc::clone(&name),
                declared: Declared::default(),
                window: LatencyWindow::new(capacity),
                health: HealthTracker::default(),
                placement: Placement::Unknown,
                last_recorded: None,
            };
            tools.insert(Arc::clone(&name), tool);
        }
        let Some(tool) = tools.get_mut(name) else {
            unreachable!("inserted above")
        };
        tool
    }

    /// Sets a tool's declared metadata (after overrides), adding the tool if new.
    pub fn declare(&mut self, name: &str, declared: Declared) {
        let config = &self.config;
        let tool = Self::entry(&mut self.tools, config.window, name);
        tool.declared = declared;
        let effective = EffectiveLatency::of(&config.effective, &tool.window, &tool.declared);
        tool.placement = Placement::update(
            tool.placement,
            effective,
            &config.tiers,
            config.placement_margin,
        );
    }

    /// Replaces a tool's window (restoring persisted stats), re-placing it.
    pub fn restore(&mut self, name: &str, samples: impl IntoIterator<Item = Sample>) {
        let capacity = self.config.window;
        let tool = Self::entry(&mut self.tools, capacity, name);
        tool.window = LatencyWindow::from_samples(capacity, samples);
        let declared = tool.declared;
        self.declare(name, declared);
    }

    /// Replaces a tool's window with the union of several windows' samples (the replicas of a
    /// deployment), re-placing it: the window holds them all (at least the configured size),
    /// so quantiles are over every sample — never an average of each window's quantiles.
    pub fn restore_merged(&mut self, name: &str, samples: Vec<Sample>) {
        let capacity = self.config.window.max(samples.len());
        let tool = Self::entry(&mut self.tools, capacity, name);
        tool.window = LatencyWindow::from_samples(capacity, samples);
        let declared = tool.declared;
        self.declare(name, declared);
    }

    /// Records one call at `now`; says what changed.
    pub fn record(&mut self, name: &str, sample: Sample, now: Instant) -> RecordOutcome {
        let config = &self.config;
        let tool = Self::entry(&mut self.tools, config.window, name);
        tool.window.record(sample);
        tool.last_recorded = Some(now);
        let max = tool.declared.max;
        let window = &tool.window;
        let health = tool.health.observe(&sample, max, &config.health, now, |n| {
            window.recent_counts(n, max)
        });
        let effective = EffectiveLatency::of(&config.effective, &tool.window, &tool.declared);
        let placement = Placement::update(
            tool.placement,
            effective,
            &config.tiers,
            config.placement_margin,
        );
        let placement_changed = placement != tool.placement;
        tool.placement = placement;
        RecordOutcome {
            health,
            placement_changed,
        }
    }

    /// Promotes the degraded tools nothing has called for the health's `recover_after`;
    /// says whether any was.
    pub fn recover_idle(&mut self, now: Instant) -> bool {
        let config = &self.config.health;
        let mut promoted = false;
        for tool in self.tools.values_mut() {
            if let Some(last) = tool.last_recorded {
                promoted |= tool.health.recover_when_idle(last, config, now).is_some();
            }
        }
        promoted
    }

    /// Where `samples` alone would place the tool, from its placement now (the hysteresis of
    /// [`Placement::update`] applies): what a fresh measurement says, without recording it.
    pub fn placement_of(&self, name: &str, samples: &[Sample]) -> Placement {
        let config = &self.config;
        let (previous, declared) = self
            .tools
            .get(name)
            .map_or((Placement::Unknown, Declared::default()), |tool| {
                (tool.placement, tool.declared)
            });
        let window =
            LatencyWindow::from_samples(config.window.max(samples.len()), samples.iter().copied());
        let effective = EffectiveLatency::of(&config.effective, &window, &declared);
        Placement::update(previous, effective, &config.tiers, config.placement_margin)
    }

    pub fn tool(&self, name: &str) -> Option<&ToolBudget> {
        self.tools.get(name)
    }

    /// Tool names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(|name| &**name)
    }

    pub fn summary(&self, name: &str) -> Option<WindowSummary> {
        self.tools.get(name)?.window.summary()
    }

    pub fn effective(&self, name: &str) -> EffectiveLatency {
        self.tools
            .get(name)
            .map_or(EffectiveLatency::Unknown, |tool| {
                EffectiveLatency::of(&self.config.effective, &tool.window, &tool.declared)
            })
    }

    /// The profile of one tool; an unknown name is an unknown, healthy tool.
    pub fn profile(&self, name: &str) -> ToolProfile {
        match self.tools.get(name) {
            Some(tool) => ToolProfile {
                name: Arc::clone(&tool.name),
                effective: EffectiveLatency::of(
                    &self.config.effective,
                    &tool.window,
                    &tool.declared,
                ),
                placement: tool.placement,
                health: tool.health.state(),
            },
            None => ToolProfile {
                name: Arc::from(name),
                effective: EffectiveLatency::Unknown,
                placement: Placement::Unknown,
                health: HealthState::Healthy,
            },
        }
    }

    /// Profiles of `names` in that order (the catalog's order), for tier views.
    pub fn profiles<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<ToolProfile> {
        names.into_iter().map(|name| self.profile(name)).collect()
    }

    /// The latency masking prediction for one tool.
    pub fn predict(&self, name: &str) -> Prediction {
        let declared = self
            .tools
            .get(name)
            .map(|tool| (&tool.window, &tool.declared));
        Prediction::of(
            &self.config.masking,
            self.config.effective.min_samples,
            declared,
        )
    }

    /// The measured p99 for deadlines, once enough calls were measured. While timeouts are
    /// rare (at most the health's `max_timeout_rate` of the window), of the calls that
    /// finished: a timeout is recorded at the deadline it was cut at and would raise the next
    /// one each time a call hangs (see `window`). Past that rate the tool has got slower, and
    /// every call counts, timeouts at their deadline: the deadline doubles until calls finish
    /// again, instead of cutting every call at a deadline the finished calls no longer move.
    pub fn measured_p99(&self, name: &str) -> Option<Duration> {
        let tool = self.tools.get(name)?;
        let window = &tool.window;
        let min_samples = self.config.effective.min_samples.max(1);
        if window.timeout_rate() > self.config.health.max_timeout_rate {
            return (window.len() >= min_samples)
                .then(|| window.quantile(0.99))
                .flatten();
        }
        if window.finished_len() < min_samples {
            return None;
        }
        window.finished_quantile(0.99)
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
