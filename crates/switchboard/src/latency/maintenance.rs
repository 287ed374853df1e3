//! The Host's latency housekeeping, every [`TICK`]: promotion of degraded tools nothing
//! called for `recover_after` (those that may not be probed), rechecks of hidden tools nobody
//! calls (`super::recheck`, each in a task of its own), then saving the stats file when
//! something was recorded — or, with `[storage] url`, saving this replica's windows to
//! PostgreSQL and merging the other replicas' in (`latency::shared`).
//!
//! Background probes (tools never measured on a fresh connection when `probe_on_connect` is
//! set, and degraded tools so they can recover without real traffic) run in a loop of their
//! own at the same pace: a probe waits up to its tool's deadline (a minute at most), and a
//! hanging degraded tool must not hold back the saves, the fleet's merge or the rechecks.
//!
//! Both tasks hold the Host weakly between rounds and end when the Host is gone or shut down.

use std::future::Future;
use std::sync::Weak;
use std::time::Duration;

use crate::host::{Host, Inner};

/// How often the housekeeping runs.
pub const TICK: Duration = Duration::from_secs(2);

impl Host {
    /// Starts the housekeeping and probing tasks (when a tokio runtime is running).
    pub(crate) fn start_maintenance(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Inner> = std::sync::Arc::downgrade(&self.inner);
        runtime.spawn(every_tick(weak.clone(), |host| async move {
            host.background_probes().await;
        }));
        runtime.spawn(every_tick(weak, |host| async move {
            host.inner.latency.recover_idle();
            host.start_due_rechecks();
            let latency = host.inner.latency.clone();
            drop(host);
            if let Some(shared) = latency.shared_stats() {
                // Failures are logged by `sync`, once per outage.
                let _ = shared.sync(&latency).await;
            } else if latency.take_dirty() {
                let saved = tokio::task::spawn_blocking(move || latency.save()).await;
                if let Ok(Err(error)) = saved {
                    tracing::warn!(%error, "latency stats were not saved");
                }
            }
        }));
    }
}

/// Runs `round` every [`TICK`] (a round that overruns delays the next) while the Host lives
/// and is not shut down.
async fn every_tick<F, R>(weak: Weak<Inner>, round: F)
where
    F: Fn(Host) -> R,
    R: Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        let host = Host { inner };
        if host.is_shut_down() {
            // Its servers are stopped: nothing to probe, and the stats were saved.
            return;
        }
        round(host).await;
    }
}
