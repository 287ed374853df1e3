//! A task's changes on their way to the replicas' shared store (`tasks::shared`): the latest
//! change of each task waits in its [`PendingChange`], and the [`Mirror`] is told when one
//! arrives in an empty one, so a task that changes faster than the mirror writes has one
//! write waiting, not one per change.

use std::sync::{Arc, Mutex};

use switchboard_core::task::{TaskError, TaskOwner, TaskView};
use tokio::sync::oneshot;

/// A task's state as it changed, for the replicas' shared store (`tasks::shared`): its
/// fields, its open questions, and its result or error once it ended. `acks` are told how
/// the write went.
pub struct Mirrored {
    pub owner: TaskOwner,
    pub tool: String,
    pub view: TaskView,
    pub acks: Vec<oneshot::Sender<Result<(), TaskError>>>,
}

/// A task's change waiting for the mirror: the latest one only. A newer change replaces it
/// (and takes its acks), so a task that changes faster than the mirror writes — a burst of
/// progress messages — has one write waiting, not one per change.
#[derive(Default)]
pub struct PendingChange(Mutex<Option<Mirrored>>);

impl PendingChange {
    /// Puts `change` in place of the one waiting; whether none was waiting (the mirror is
    /// then told, once).
    pub(super) fn put(&self, mut change: Mirrored) -> bool {
        let mut waiting = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let was_empty = match waiting.take() {
            Some(replaced) => {
                change.acks.extend(replaced.acks);
                false
            }
            None => true,
        };
        *waiting = Some(change);
        was_empty
    }

    /// The change waiting, if any (the next change tells the mirror again).
    pub fn take(&self) -> Option<Mirrored> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

/// Where a store's tasks' changes are mirrored: each task's [`PendingChange`], sent when a
/// change arrives in an empty one (so at most one message per task waits).
pub type Mirror = tokio::sync::mpsc::UnboundedSender<Arc<PendingChange>>;
