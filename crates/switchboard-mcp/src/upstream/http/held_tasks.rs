//! [`HeldTasks`]: the tasks a transport spawned that no request tracks — a notification's
//! POST, an answer to the server's request, the session's stream — held so that closing the
//! transport stops them. Finished ones are swept as new ones come, when the list has doubled
//! since the last sweep, so holding costs a constant per task however long the transport
//! lives.

use std::sync::Mutex;
use std::time::Duration;

use tokio::task::AbortHandle;

/// How long a POST that no request waits on may take (a notification, an answer to the
/// server): servers answer those at once (202), and one that never does must not hold a
/// task and a connection for the session's life.
pub(super) const UNTRACKED_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// Tasks held until they finish or the transport closes.
#[derive(Debug, Default)]
pub(super) struct HeldTasks(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    handles: Vec<AbortHandle>,
    /// The length at which finished handles are swept next.
    sweep_at: usize,
}

/// Handles kept before the first sweep.
const SWEEP_ABOVE: usize = 16;

impl HeldTasks {
    /// Holds `task` until it finishes or [`HeldTasks::abort_all`].
    pub(super) fn hold(&self, task: AbortHandle) {
        let mut held = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if held.handles.len() >= held.sweep_at.max(SWEEP_ABOVE) {
            held.handles.retain(|handle| !handle.is_finished());
            held.sweep_at = held.handles.len() * 2;
        }
        held.handles.push(task);
    }

    /// Stops every task held.
    pub(super) fn abort_all(&self) {
        let handles = std::mem::take(
            &mut self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .handles,
        );
        for handle in handles {
            handle.abort();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .handles
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finished tasks do not pile up; closing stops those still running.
    #[tokio::test]
    async fn finished_tasks_are_swept_and_running_ones_aborted() {
        let held = HeldTasks::default();
        for _ in 0..1000 {
            let task = tokio::spawn(async {});
            let handle = task.abort_handle();
            let _ = task.await;
            held.hold(handle);
        }
        assert!(held.len() <= 2 * SWEEP_ABOVE, "{} held", held.len());
        let running = tokio::spawn(std::future::pending::<()>());
        held.hold(running.abort_handle());
        held.abort_all();
        assert!(running.await.expect_err("aborted").is_cancelled());
    }
}
