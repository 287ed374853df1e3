//! Finished operations do not pile up: those [`RETENTION`] does not keep (older than 30
//! days, or beyond the newest 2,000) are deleted in the background, every [`PRUNE_EVERY`]
//! and once at start — from the SQLite file by the process that owns it (here), from
//! PostgreSQL by every replica's follower (`postgres::admission`). An open operation is never
//! deleted, nor is a database created only to be pruned.

use super::postgres::PRUNE_EVERY;
use super::store::RETENTION;
use super::{Manager, lock, now_ms};

impl Manager {
    /// Prunes the SQLite file now and every [`PRUNE_EVERY`] for as long as the manager
    /// lives (without a Tokio runtime, only now).
    pub(super) fn prune_in_background(&self) {
        self.prune_sqlite();
        self.every(PRUNE_EVERY, |manager| async move {
            manager.prune_sqlite();
        });
    }

    /// Deletes what [`RETENTION`] does not keep from the SQLite file, if it exists and this
    /// process owns it. Returns how many went.
    pub(crate) fn prune_sqlite(&self) -> usize {
        if !self.shared.database.exists() || !self.claim() {
            return 0;
        }
        match self.with_sqlite(|store| store.prune(RETENTION, now_ms())) {
            Ok(0) => 0,
            Ok(count) => {
                tracing::info!(
                    count,
                    "finished operations past their retention were deleted"
                );
                lock(&self.shared.finished)
                    .retain(|o| o.created_ms >= RETENTION.cutoff_ms(now_ms()));
                count
            }
            Err(error) => {
                tracing::warn!("{error}; pruning again in an hour");
                0
            }
        }
    }
}
