//! Energy: what the manager's work costs the agent that asked for it, in the units of the
//! Effort-Regulation design (add ~5–10, test ~10–20, search ~20–50, modify ~2–5). An
//! operation's cost grows with the time its work took (`per_second`) within its kind's
//! range (`[manager.energy]`), and is charged to the agent's governance quota when the work
//! ends, whatever its outcome. The "background drain" is what the work consumed since it
//! was last asked, per agent — what an agent's own regulator deducts from its pool.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use switchboard_core::config::{EnergyConfig, EnergyRange};

/// The cost of `kind`'s work that took `elapsed`.
pub fn cost(costs: &EnergyConfig, kind: &str, elapsed: Duration) -> f64 {
    let range = range_of(costs, kind);
    let raw = range.min + costs.per_second * elapsed.as_secs_f64();
    (raw.clamp(range.min, range.max) * 100.0).round() / 100.0
}

/// The least an operation of `kind` costs (what a quota must still have room for).
pub fn minimum(costs: &EnergyConfig, kind: &str) -> f64 {
    range_of(costs, kind).min
}

fn range_of<'a>(costs: &'a EnergyConfig, kind: &str) -> &'a EnergyRange {
    match kind {
        "search" => &costs.search,
        "install" | "replicate" => &costs.install,
        "add" => &costs.add,
        "test" => &costs.test,
        "modify" => &costs.modify,
        _ => &costs.remove,
    }
}

/// The key of work no agent asked for (an operator's, a library's).
pub const UNATTRIBUTED: &str = "(unattributed)";

/// Energy consumed since it was last asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Drain {
    /// By agent ([`UNATTRIBUTED`] for work no agent asked for).
    pub by_agent: BTreeMap<String, f64>,
    pub total: f64,
}

/// Accumulates consumed energy until it is drained.
#[derive(Default)]
pub(crate) struct Meter {
    pending: Mutex<Drain>,
}

impl Meter {
    pub(crate) fn add(&self, agent: Option<&str>, energy: f64) {
        if energy <= 0.0 {
            return;
        }
        let mut pending = match self.pending.lock() {
            Ok(pending) => pending,
            Err(poisoned) => poisoned.into_inner(),
        };
        *pending
            .by_agent
            .entry(agent.unwrap_or(UNATTRIBUTED).to_owned())
            .or_default() += energy;
        pending.total += energy;
    }

    pub(crate) fn drain(&self) -> Drain {
        let mut pending = match self.pending.lock() {
            Ok(pending) => pending,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::take(&mut *pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_grows_with_time_within_the_kinds_range() {
        let costs = EnergyConfig::default();
        assert_eq!(cost(&costs, "add", Duration::ZERO), costs.add.min);
        assert_eq!(
            cost(&costs, "add", Duration::from_secs(3600)),
            costs.add.max
        );
        let mid = cost(&costs, "search", Duration::from_secs(5));
        assert!(mid > costs.search.min && mid <= costs.search.max, "{mid}");
    }

    #[test]
    fn the_drain_reports_once_per_agent() {
        let meter = Meter::default();
        meter.add(Some("npc"), 5.0);
        meter.add(Some("npc"), 2.5);
        meter.add(None, 1.0);
        let drain = meter.drain();
        assert_eq!(drain.by_agent.get("npc"), Some(&7.5));
        assert_eq!(drain.by_agent.get(UNATTRIBUTED), Some(&1.0));
        assert_eq!(drain.total, 8.5);
        assert_eq!(meter.drain(), Drain::default());
    }
}
