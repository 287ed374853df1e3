//! Tool health: a score from error rate, timeout rate and calls over the declared
//! `max_duration_ms`, and a Healthy/Degraded state machine with hysteresis.
//!
//! **Score.** Each of the three rates is divided by its limit; the worst ratio `w` gives
//! `score = 1 − min(w, 2) / 2`, so 1.0 is perfect, 0.5 is exactly at a limit and below 0.5 some
//! limit is exceeded (the tool is *bad*). The latency component compares the fraction of calls
//! slower than `max_duration_ms` with `max_slow_rate` (default 5%) rather than the window's p99:
//! with 100 samples p99 is in effect the maximum, so one outlier would decide — the issue's
//! "a single slow call must not re-tier a tool".
//!
//! **Hysteresis.** A healthy tool is demoted when the score over the calls since its last
//! transition (at least `min_samples` of them, at most the window) is bad. A degraded tool is
//! promoted after `recover_calls` consecutive healthy calls (ok, and within `max_duration_ms`),
//! or once its current healthy streak has lasted `recover_after` — or when nothing has called
//! it for `recover_after` ([`HealthTracker::recover_when_idle`]): a tool that may not be probed
//! (not idempotent) and that its callers no longer see would otherwise stay degraded until a
//! restart. Because evidence restarts at each transition, a promoted tool is not re-demoted by
//! the bad calls still in its window; new bad calls demote it again.
//! Demotion means one tier down (see [`crate::tiers`]).

use std::time::Duration;

use tokio::time::Instant;

use crate::window::{Outcome, RecentCounts, Sample};

/// Limits and hysteresis of health.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthConfig {
    /// Error rate above which a tool is bad. Default 0.2.
    pub max_error_rate: f64,
    /// Timeout rate above which a tool is bad. Default 0.1.
    pub max_timeout_rate: f64,
    /// Fraction of calls over `max_duration_ms` above which a tool is bad. Default 0.05.
    pub max_slow_rate: f64,
    /// Calls since the last transition before a demotion can happen. Default 10.
    pub min_samples: usize,
    /// Consecutive healthy calls that promote a degraded tool. Default 20.
    pub recover_calls: u32,
    /// Or: how long a healthy streak must last to promote. Default 60 s.
    pub recover_after: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            max_error_rate: 0.2,
            max_timeout_rate: 0.1,
            max_slow_rate: 0.05,
            min_samples: 10,
            recover_calls: 20,
            recover_after: Duration::from_secs(60),
        }
    }
}

/// A health score in `[0, 1]`; below 0.5 the tool is bad.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct HealthScore(pub f64);

impl HealthScore {
    /// The score of recent calls (see the module doc).
    pub fn of(counts: &RecentCounts, config: &HealthConfig) -> Self {
        let ratio = |rate: f64, limit: f64| {
            if limit <= 0.0 {
                if rate > 0.0 { 2.0 } else { 0.0 }
            } else {
                rate / limit
            }
        };
        let worst = ratio(counts.error_rate(), config.max_error_rate)
            .max(ratio(counts.timeout_rate(), config.max_timeout_rate))
            .max(ratio(counts.slow_rate(), config.max_slow_rate));
        HealthScore(1.0 - worst.min(2.0) / 2.0)
    }

    pub fn is_bad(self) -> bool {
        self.0 < 0.5
    }
}

/// Whether a tool is shown at its own tier or one tier down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HealthState {
    Healthy,
    Degraded,
}

/// A change of health state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthTransition {
    Demoted,
    Promoted,
}

/// One tool's health state machine.
#[derive(Debug, Clone)]
pub struct HealthTracker {
    state: HealthState,
    calls_since_transition: usize,
    healthy_streak: u32,
    streak_started: Option<Instant>,
}

impl Default for HealthTracker {
    fn default() -> Self {
        Self {
            state: HealthState::Healthy,
            calls_since_transition: 0,
            healthy_streak: 0,
            streak_started: None,
        }
    }
}

impl HealthTracker {
    pub fn state(&self) -> HealthState {
        self.state
    }

    /// Calls recorded since the last transition (the evidence a demotion looks at).
    pub fn calls_since_transition(&self) -> usize {
        self.calls_since_transition
    }

    /// Whether one call counts as healthy: it answered, within `max_duration` when declared.
    pub fn call_is_healthy(sample: &Sample, max_duration: Option<Duration>) -> bool {
        sample.outcome == Outcome::Ok && max_duration.is_none_or(|max| sample.latency <= max)
    }

    /// Takes one call into account. `recent` yields the counts over the last `n` calls
    /// (the window, already holding this call); it is only asked when a demotion is possible.
    pub fn observe(
        &mut self,
        sample: &Sample,
        max_duration: Option<Duration>,
        config: &HealthConfig,
        now: Instant,
        recent: impl FnOnce(usize) -> RecentCounts,
    ) -> Option<HealthTransition> {
        self.calls_since_transition = self.calls_since_transition.saturating_add(1);
        if Self::call_is_healthy(sample, max_duration) {
            self.healthy_streak = self.healthy_streak.saturating_add(1);
            self.streak_started.get_or_insert(now);
        } else {
            self.healthy_streak = 0;
            self.streak_started = None;
        }
        match self.state {
            HealthState::Healthy => {
                if self.calls_since_transition < config.min_samples.max(1) {
                    return None;
                }
                let counts = recent(self.calls_since_transition);
                if HealthScore::of(&counts, config).is_bad() {
                    self.transition(HealthState::Degraded);
                    return Some(HealthTransition::Demoted);
                }
                None
            }
            HealthState::Degraded => {
                let by_calls = self.healthy_streak >= config.recover_calls.max(1);
                let by_time = self.streak_started.is_some_and(|start| {
                    now.saturating_duration_since(start) >= config.recover_after
                });
                if by_calls || by_time {
                    self.transition(HealthState::Healthy);
                    return Some(HealthTransition::Promoted);
                }
                None
            }
        }
    }

    /// Promotes a degraded tool whose last call was `recover_after` or longer before `now`:
    /// the evidence against it is that old (see the module doc).
    pub fn recover_when_idle(
        &mut self,
        last_call: Instant,
        config: &HealthConfig,
        now: Instant,
    ) -> Option<HealthTransition> {
        let idle = now.saturating_duration_since(last_call) >= config.recover_after;
        if self.state == HealthState::Degraded && idle {
            self.transition(HealthState::Healthy);
            return Some(HealthTransition::Promoted);
        }
        None
    }

    fn transition(&mut self, state: HealthState) {
        self.state = state;
        self.calls_since_transition = 0;
        self.healthy_streak = 0;
        self.streak_started = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::LatencyWindow;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    struct Tool {
        window: LatencyWindow,
        tracker: HealthTracker,
        config: HealthConfig,
        max: Option<Duration>,
    }

    impl Tool {
        fn new(config: HealthConfig) -> Self {
            Self {
                window: LatencyWindow::new(100),
                tracker: HealthTracker::default(),
                config,
                max: Some(ms(300)),
            }
        }

        fn call(&mut self, sample: Sample, now: Instant) -> Option<HealthTransition> {
            self.window.record(sample);
            let (window, max) = (&self.window, self.max);
            self.tracker.observe(&sample, max, &self.config, now, |n| {
                window.recent_counts(n, max)
            })
        }
    }

    #[test]
    fn score_is_half_at_a_limit() {
        let config = HealthConfig::default();
        let at_limit = RecentCounts {
            samples: 10,
            errors: 2,
            ..RecentCounts::default()
        };
        assert_eq!(HealthScore::of(&at_limit, &config), HealthScore(0.5));
        assert!(!HealthScore::of(&at_limit, &config).is_bad());
        let over = RecentCounts {
            samples: 10,
            timeouts: 2,
            ..RecentCounts::default()
        };
        assert!(HealthScore::of(&over, &config).is_bad());
        assert_eq!(
            HealthScore::of(&RecentCounts::default(), &config),
            HealthScore(1.0)
        );
    }

    #[test]
    fn one_slow_call_does_not_demote_but_a_pattern_does() {
        let mut tool = Tool::new(HealthConfig::default());
        let now = Instant::now();
        for _ in 0..50 {
            assert_eq!(tool.call(Sample::ok(ms(100)), now), None);
        }
        assert_eq!(tool.call(Sample::ok(ms(900)), now), None);
        let mut transitions = Vec::new();
        for _ in 0..10 {
            transitions.extend(tool.call(Sample::ok(ms(900)), now));
        }
        assert_eq!(transitions, vec![HealthTransition::Demoted]);
        assert_eq!(tool.tracker.state(), HealthState::Degraded);
    }

    #[test]
    fn promotes_after_k_healthy_calls_and_does_not_flap_back() {
        let config = HealthConfig::default();
        let mut tool = Tool::new(config);
        let now = Instant::now();
        for _ in 0..30 {
            tool.call(Sample::error(ms(10)), now);
        }
        assert_eq!(tool.tracker.state(), HealthState::Degraded);
        for call in 1..=config.recover_calls {
            let transition = tool.call(Sample::ok(ms(100)), now);
            let expected = (call == config.recover_calls).then_some(HealthTransition::Promoted);
            assert_eq!(transition, expected, "call {call}");
        }
        // The window still holds the errors, but evidence restarted at the promotion.
        for _ in 0..100 {
            assert_eq!(tool.call(Sample::ok(ms(100)), now), None);
        }
    }

    #[test]
    fn a_degraded_tool_nothing_calls_recovers_after_recover_after() {
        let config = HealthConfig::default();
        let mut tool = Tool::new(config);
        let start = Instant::now();
        for _ in 0..30 {
            tool.call(Sample::error(ms(10)), start);
        }
        assert_eq!(tool.tracker.state(), HealthState::Degraded);
        let last = start;
        assert_eq!(
            tool.tracker
                .recover_when_idle(last, &config, start + ms(59_000)),
            None
        );
        assert_eq!(
            tool.tracker
                .recover_when_idle(last, &config, start + ms(60_000)),
            Some(HealthTransition::Promoted)
        );
        assert_eq!(tool.tracker.state(), HealthState::Healthy);
        // Healthy already: nothing to do; new bad calls demote it again.
        assert_eq!(
            tool.tracker
                .recover_when_idle(last, &config, start + ms(120_000)),
            None
        );
        let mut transitions = Vec::new();
        for _ in 0..10 {
            transitions.extend(tool.call(Sample::error(ms(10)), start + ms(121_000)));
        }
        assert_eq!(transitions, vec![HealthTransition::Demoted]);
    }

    #[test]
    fn promotes_after_a_healthy_streak_lasts_long_enough() {
        let config = HealthConfig::default();
        let mut tool = Tool::new(config);
        let start = Instant::now();
        for _ in 0..30 {
            tool.call(Sample::timeout(ms(300)), start);
        }
        assert_eq!(tool.tracker.state(), HealthState::Degraded);
        assert_eq!(tool.call(Sample::ok(ms(50)), start), None);
        assert_eq!(tool.call(Sample::ok(ms(50)), start + ms(59_000)), None);
        // A bad call restarts the streak.
        assert_eq!(tool.call(Sample::error(ms(50)), start + ms(59_500)), None);
        assert_eq!(tool.call(Sample::ok(ms(50)), start + ms(61_000)), None);
        assert_eq!(
            tool.call(Sample::ok(ms(50)), start + ms(121_000)),
            Some(HealthTransition::Promoted)
        );
    }
}
