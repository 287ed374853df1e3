//! Stopping a Host, and what it answers afterwards: once [`Host::shutdown`] has begun, a
//! call is `CallError::ShutDown`; once the server manager's operations have ended (their
//! undoing may still change the config), a change or reload is `ChangeError::ShutDown` and
//! a manager request `ManagerError::Gone`. Nothing starts a server again, nothing hangs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Host;

/// What a shutdown refuses so far.
#[derive(Debug, Default)]
pub(crate) struct ShutDown {
    /// Set when the shutdown begins.
    calls: AtomicBool,
    /// Set, in the change operation's turn, once the manager's operations have ended.
    changes: AtomicBool,
}

impl ShutDown {
    /// Calls are refused: the shutdown has begun.
    pub(crate) fn refuses_calls(&self) -> bool {
        self.calls.load(Ordering::Acquire)
    }

    /// Changes and reloads are refused: no server may be started again.
    pub(crate) fn refuses_changes(&self) -> bool {
        self.changes.load(Ordering::Acquire)
    }
}

impl Host {
    /// Whether [`Host::shutdown`] was called: calls, changes and manager requests are
    /// refused from then on.
    pub fn is_shut_down(&self) -> bool {
        self.inner.shut_down.refuses_calls()
    }

    /// Stops every server (killing child process groups), those still draining too, after
    /// cancelling the tasks still running and saving latency stats (the stats file, or this
    /// replica's windows on PostgreSQL) and sending its quota spending not yet sent. From
    /// its start, calls are refused (`CallError::ShutDown`); once the manager's operations
    /// have ended, changes and reloads too (`ChangeError::ShutDown`). Calling it again
    /// stops nothing more.
    pub async fn shutdown(&self) {
        self.inner.shut_down.calls.store(true, Ordering::Release);
        // No managed change is reconciled while (or after) the servers stop.
        self.inner.live.stop_managed();
        // Tasks' calls first, while their servers still answer the cancellation.
        self.inner.tasks.cancel_all(Duration::from_secs(2)).await;
        if let Some(manager) = self.manager() {
            manager.shutdown().await;
        }
        // A change under way (an operation's undoing included) ends first; every later one
        // finds the Host shut down.
        {
            let _turn = self.inner.live.turn().await;
            self.inner.shut_down.changes.store(true, Ordering::Release);
        }
        // SQLite writes: off the runtime's threads.
        let latency = self.inner.latency.clone();
        if let Ok(Err(error)) = tokio::task::spawn_blocking(move || latency.save()).await {
            tracing::warn!(%error, "latency stats were not saved");
        }
        self.sync_latency_stats().await;
        if let Some(spending) = self.inner.pipeline.governance().limits.shared_spending()
            && !spending.flush(Duration::from_secs(2)).await
        {
            tracing::warn!(
                target: "switchboard::quotas",
                "quota spending of this replica's last moments was not sent to PostgreSQL"
            );
        }
        let fleet = self.inner.fleet.load_full();
        futures::future::join_all(fleet.members.iter().map(|m| m.supervisor().stop())).await;
        self.inner.draining.close_all().await;
        if let Some(telemetry) = &self.inner.options.telemetry {
            telemetry.flush(Duration::from_secs(2)).await;
        }
    }
}
