//! Rechecks at run time: at each housekeeping tick, the tools due one (hidden from a faster
//! tier, quiet for the interval; the rules are `switchboard_budget::recheck`) get a probe
//! each, in a task of their own, and a burst when that probe answers fast enough. A burst
//! that places the tool faster replaces its window — here, in the stats file and in this
//! replica's share of the fleet's statistics — and the change is published like any other
//! (at most once per `list_interval`, then announced).
//!
//! A tool its probe rules forbid (destructive, neither read-only nor idempotent, `probe =
//! false`, no valid probe input) is never probed: its schedule just moves on.

use std::sync::{Arc, Weak};

use serde_json::{Map, Value};
use switchboard_budget::{RecheckSchedule, Sample, worth_a_burst};

use super::calibrate::{probe_input, refusal};
use super::{LatencyBudget, ToolTraits};
use crate::host::{Host, Inner};

impl LatencyBudget {
    /// The catalog's tools due a recheck now, each marked running until
    /// [`LatencyBudget::finish_recheck`]. Forgets the schedules of tools gone from the
    /// catalog.
    pub(crate) fn take_due_rechecks(&self) -> Vec<Arc<ToolTraits>> {
        if !self.recheck_policy.is_enabled() {
            return Vec::new();
        }
        let now = self.clock.now();
        let tools = self.tools();
        let min_samples = self.book().config().effective.min_samples;
        let mut schedules = self
            .rechecks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        schedules.retain(|key, _| tools.contains_key(key));
        let book = self.book();
        tools
            .iter()
            .filter(|(key, _)| {
                let Some(tool) = book.tool(key) else {
                    return false;
                };
                schedules
                    .entry(Arc::clone(key))
                    .or_insert_with(|| RecheckSchedule::new(&self.recheck_policy, now))
                    .take_due(&self.recheck_policy, tool, min_samples, now)
            })
            .map(|(_, traits)| Arc::clone(traits))
            .collect()
    }

    /// Ends the recheck of `key`.
    pub(crate) fn finish_recheck(&self, key: &str, promoted: bool) {
        let now = self.clock.now();
        let mut schedules = self
            .rechecks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(schedule) = schedules.get_mut(key) {
            schedule.finish(&self.recheck_policy, promoted, now);
        }
    }

    /// Whether `sample`, a recheck's first probe, warrants a burst.
    fn worth_a_burst(&self, key: &str, sample: &Sample) -> bool {
        let book = self.book();
        book.tool(key)
            .is_some_and(|tool| worth_a_burst(sample, tool.placement(), &self.tiers))
    }

    /// Adopts a burst's `samples` as `key`'s window when they alone place the tool faster
    /// than it is; says whether they did.
    fn adopt_burst(&self, key: &str, samples: &[Sample]) -> bool {
        let capacity = self.settings.window.max(1);
        {
            let mut book = self.book();
            let Some(before) = book.tool(key).map(|tool| tool.placement()) else {
                return false;
            };
            if !book.placement_of(key, samples).is_faster_than(before) {
                return false;
            }
            book.restore(key, samples.iter().copied());
        }
        if let Some(shared) = self.shared.get() {
            shared.replace(key, samples, capacity);
        }
        self.dirty.store(true, std::sync::atomic::Ordering::Relaxed);
        self.publish(false);
        true
    }
}

impl Host {
    /// Starts the rechecks due now, each in a task of its own (a burst of a slow tool takes a
    /// while, and the housekeeping tick must not wait for it).
    pub(crate) fn start_due_rechecks(&self) {
        let latency = &self.inner.latency;
        let due = latency.take_due_rechecks();
        if due.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            for traits in &due {
                latency.finish_recheck(&traits.key, false);
            }
            return;
        };
        let catalog = self.catalog();
        for traits in due {
            let input = match refusal(traits.safety.probe_verdict()) {
                Some(_) => None,
                None => {
                    let entry = catalog.resolve(&traits.exposed).map(Arc::as_ref);
                    probe_input(&traits, entry).ok()
                }
            };
            let Some(input) = input else {
                latency.finish_recheck(&traits.key, false);
                continue;
            };
            let weak = Arc::downgrade(&self.inner);
            runtime.spawn(async move {
                let promoted = recheck(&weak, &traits, input).await;
                if let Some(inner) = weak.upgrade() {
                    inner.latency.finish_recheck(&traits.key, promoted);
                }
            });
        }
    }
}

/// One recheck of `traits`: a probe, a burst when it answers fast enough, the burst adopted
/// when it places the tool faster. Says whether it did. Holds the Host only for each probe.
async fn recheck(host: &Weak<Inner>, traits: &ToolTraits, input: Map<String, Value>) -> bool {
    let probe = async |input: Map<String, Value>| {
        let host = Host {
            inner: host.upgrade()?,
        };
        host.probe(traits, input).await
    };
    let Some(first) = probe(input.clone()).await else {
        return false;
    };
    let Some(latency) = host.upgrade().map(|inner| Arc::clone(&inner.latency)) else {
        return false;
    };
    if !latency.worth_a_burst(&traits.key, &first) {
        return false;
    }
    let burst = latency.book().config().effective.min_samples.max(1);
    let mut samples = Vec::with_capacity(burst);
    samples.push(first);
    while samples.len() < burst {
        let Some(sample) = probe(input.clone()).await else {
            return false;
        };
        samples.push(sample);
    }
    let promoted = latency.adopt_burst(&traits.key, &samples);
    if promoted {
        tracing::info!(
            target: "switchboard::latency",
            tool = %traits.exposed,
            probes = samples.len(),
            "re-measured after a quiet spell: placed in a faster tier"
        );
    }
    promoted
}
