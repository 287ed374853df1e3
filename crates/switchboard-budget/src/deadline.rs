//! Call deadlines: every call gets the smallest of
//! - the tool's **hard timeout**: the declared `max_duration_ms` (after operator overrides) when
//!   there is one — the operator's word, or the author's bound; else the measured p99 × a
//!   safety factor (default 2) once there are enough samples; else a fallback (default 30 s);
//! - the **tier ceiling**, when the caller asked for tier deadlines;
//! - the **caller's deadline**, sent in the request's `_meta` under [`CALLER_DEADLINE_META_KEY`]
//!   (milliseconds).
//!
//! The result says which bound decided, for the timeout error and the ledger.

use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

/// The `_meta` key of a caller's deadline, in milliseconds from receipt.
pub const CALLER_DEADLINE_META_KEY: &str = "switchboard.dev/deadline_ms";

/// How hard timeouts are derived.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeadlinePolicy {
    /// Multiplier of the measured p99 when nothing is declared. Default 2.
    pub safety_factor: f64,
    /// The hard timeout of a tool with no figures. Default 30 s.
    pub fallback: Duration,
    /// The smallest hard timeout derived from measurements. Default 100 ms.
    pub floor: Duration,
}

impl Default for DeadlinePolicy {
    fn default() -> Self {
        Self {
            safety_factor: 2.0,
            fallback: Duration::from_secs(30),
            floor: Duration::from_millis(100),
        }
    }
}

/// What a deadline is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeadlineInputs {
    pub declared_max: Option<Duration>,
    /// The measured p99, only when enough samples exist.
    pub measured_p99: Option<Duration>,
    /// The tier's ceiling, only when the caller asked for tier deadlines.
    pub tier_ceiling: Option<Duration>,
    pub caller: Option<Duration>,
}

/// Which bound decided a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineSource {
    DeclaredMax,
    MeasuredP99,
    Fallback,
    TierCeiling,
    Caller,
}

/// A call's time allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDeadline {
    pub budget: Duration,
    pub source: DeadlineSource,
}

impl CallDeadline {
    /// The instant the call must be over by, counted from `start`.
    pub fn at(&self, start: Instant) -> Instant {
        start + self.budget
    }
}

impl DeadlinePolicy {
    /// The hard timeout of a tool.
    pub fn hard_timeout(&self, inputs: &DeadlineInputs) -> CallDeadline {
        if let Some(max) = inputs.declared_max {
            return CallDeadline {
                budget: max,
                source: DeadlineSource::DeclaredMax,
            };
        }
        if let Some(p99) = inputs.measured_p99 {
            return CallDeadline {
                budget: p99.mul_f64(self.safety_factor.max(1.0)).max(self.floor),
                source: DeadlineSource::MeasuredP99,
            };
        }
        CallDeadline {
            budget: self.fallback,
            source: DeadlineSource::Fallback,
        }
    }

    /// The deadline of a call: the smallest bound (see the module doc).
    pub fn deadline(&self, inputs: &DeadlineInputs) -> CallDeadline {
        let mut deadline = self.hard_timeout(inputs);
        let others = [
            (inputs.tier_ceiling, DeadlineSource::TierCeiling),
            (inputs.caller, DeadlineSource::Caller),
        ];
        for (bound, source) in others {
            if let Some(budget) = bound.filter(|bound| *bound < deadline.budget) {
                deadline = CallDeadline { budget, source };
            }
        }
        deadline
    }
}

/// The caller's deadline from a request's `_meta`; absent or malformed values are ignored.
pub fn caller_deadline(meta: Option<&Map<String, Value>>) -> Option<Duration> {
    meta?
        .get(CALLER_DEADLINE_META_KEY)?
        .as_u64()
        .map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn the_smallest_bound_wins() {
        let policy = DeadlinePolicy::default();
        let cases = [
            (
                DeadlineInputs::default(),
                ms(30_000),
                DeadlineSource::Fallback,
            ),
            (
                DeadlineInputs {
                    measured_p99: Some(ms(400)),
                    ..DeadlineInputs::default()
                },
                ms(800),
                DeadlineSource::MeasuredP99,
            ),
            (
                DeadlineInputs {
                    measured_p99: Some(ms(10)),
                    ..DeadlineInputs::default()
                },
                ms(100),
                DeadlineSource::MeasuredP99,
            ),
            (
                DeadlineInputs {
                    declared_max: Some(ms(3_000)),
                    measured_p99: Some(ms(400)),
                    tier_ceiling: Some(ms(1_500)),
                    caller: None,
                },
                ms(1_500),
                DeadlineSource::TierCeiling,
            ),
            (
                DeadlineInputs {
                    declared_max: Some(ms(3_000)),
                    measured_p99: None,
                    tier_ceiling: Some(ms(1_500)),
                    caller: Some(ms(700)),
                },
                ms(700),
                DeadlineSource::Caller,
            ),
            (
                DeadlineInputs {
                    declared_max: Some(ms(300)),
                    tier_ceiling: Some(ms(500)),
                    caller: Some(ms(700)),
                    ..DeadlineInputs::default()
                },
                ms(300),
                DeadlineSource::DeclaredMax,
            ),
        ];
        for (inputs, budget, source) in cases {
            assert_eq!(
                policy.deadline(&inputs),
                CallDeadline { budget, source },
                "{inputs:?}"
            );
        }
    }

    #[test]
    fn reads_the_callers_deadline_from_meta() {
        let meta = json!({CALLER_DEADLINE_META_KEY: 250, "other": 1});
        assert_eq!(caller_deadline(meta.as_object()), Some(ms(250)));
        let bad = json!({CALLER_DEADLINE_META_KEY: "soon"});
        assert_eq!(caller_deadline(bad.as_object()), None);
        assert_eq!(caller_deadline(None), None);
    }
}
