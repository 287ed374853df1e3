//! Rechecks: re-measuring a tool that the tiers hide and that nobody calls any more.
//!
//! A tool's placement rests on its last calls. A tool placed slower than the fastest tier is
//! hidden from the callers of the faster tiers (and a tool slower than every tier from all
//! tiered callers); when only they are left — a fleet of voice agents in `fast` — it gets no
//! calls, its window stops changing, and one slow spell would hide it for good (the stats
//! file keeps that across restarts too). A recheck is the half-open state of a circuit
//! breaker, for latency:
//!
//! - **Due** when the tool has been measured (`min_samples` calls), is placed slower than the
//!   fastest tier, is not degraded (degraded tools are probed at every tick anyway), and
//!   nothing was recorded for it during the current interval: `after` at first, doubled after
//!   each recheck that changed nothing, up to [`MAX_RECHECK_INTERVAL`]; any call recorded
//!   since the last recheck starts the schedule over.
//! - **One probe first**: unless it answers within a tier faster than the tool's placement
//!   ([`worth_a_burst`]), the recheck ends there — a tool that really is slow costs one call
//!   per interval.
//! - **Then a burst** of `min_samples` probes. When those calls alone place the tool faster
//!   (with the usual hysteresis, [`crate::LatencyBook::placement_of`]), they replace its
//!   window: calls made before a spell without any say less about the tool now than a fresh
//!   burst does. Otherwise they stay recorded like any call.
//!
//! Which tools may be probed at all is [`crate::safety`]'s call; the integrator runs the
//! probes. Nothing here reads a clock.

use std::time::Duration;

use tokio::time::Instant;

use crate::book::ToolBudget;
use crate::health::HealthState;
use crate::tiers::{Placement, TierSet};
use crate::window::{Outcome, Sample};

/// The longest a recheck interval grows to.
pub const MAX_RECHECK_INTERVAL: Duration = Duration::from_secs(3_600);

/// How rechecks are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecheckPolicy {
    /// Time without a call before the first recheck; zero: never recheck.
    pub after: Duration,
    /// The longest interval doubling reaches.
    pub max_interval: Duration,
}

impl RecheckPolicy {
    /// Rechecks after `after` without a call (zero: never), doubling up to
    /// [`MAX_RECHECK_INTERVAL`].
    pub fn after(after: Duration) -> Self {
        Self {
            after,
            max_interval: MAX_RECHECK_INTERVAL.max(after),
        }
    }

    pub fn is_enabled(&self) -> bool {
        !self.after.is_zero()
    }
}

/// One tool's recheck schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecheckSchedule {
    interval: Duration,
    /// When the tool's quiet spell began, as far as this schedule knows: when the schedule
    /// started, or its last recheck ended.
    since: Instant,
    running: bool,
}

impl RecheckSchedule {
    /// A schedule that starts counting at `now`.
    pub fn new(policy: &RecheckPolicy, now: Instant) -> Self {
        Self {
            interval: policy.after,
            since: now,
            running: false,
        }
    }

    /// The current interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Whether `tool` is due a recheck at `now`; a due recheck is marked running (until
    /// [`RecheckSchedule::finish`]).
    pub fn take_due(
        &mut self,
        policy: &RecheckPolicy,
        tool: &ToolBudget,
        min_samples: usize,
        now: Instant,
    ) -> bool {
        if self.running || !policy.is_enabled() {
            return false;
        }
        if let Some(last) = tool.last_recorded()
            && last > self.since
        {
            // Called since: callers still reach it, and the quiet spell starts over.
            self.since = last;
            self.interval = policy.after;
        }
        let hidden = match tool.placement() {
            Placement::Tier(tier) => tier.0 > 0,
            Placement::TooSlow => true,
            Placement::Unknown => false,
        };
        let due = hidden
            && tool.health() != HealthState::Degraded
            && tool.window().len() >= min_samples.max(1)
            && now.saturating_duration_since(self.since) >= self.interval;
        self.running = due;
        due
    }

    /// Ends a recheck at `now`: a tool `promoted` keeps the first interval, one that did not
    /// waits twice as long for the next.
    pub fn finish(&mut self, policy: &RecheckPolicy, promoted: bool, now: Instant) {
        self.running = false;
        self.since = now;
        self.interval = if promoted {
            policy.after
        } else {
            self.interval.saturating_mul(2).min(policy.max_interval)
        };
    }
}

/// Whether one probe's `sample` warrants a burst: it answered within a tier faster than the
/// tool's `placement`.
pub fn worth_a_burst(sample: &Sample, placement: Placement, tiers: &TierSet) -> bool {
    sample.outcome == Outcome::Ok
        && tiers
            .fastest_fitting(sample.latency)
            .is_some_and(|tier| Placement::Tier(tier).is_faster_than(placement))
}

#[cfg(test)]
#[path = "recheck_tests.rs"]
mod tests;
