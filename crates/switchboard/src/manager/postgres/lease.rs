//! The lease of a replica on its operations: each replica beats its heartbeat in
//! `manager_replicas` every [`super::HEARTBEAT`] on PostgreSQL's clock, and an operation still
//! open whose replica's heartbeat is older than [`LEASE`] (or gone: a clean stop takes it
//! away) is marked failed, once, by the first replica that notices. An open operation of an
//! earlier run of this replica's process (its name but another incarnation) is failed at the
//! first beat, as SQLite's `fail_interrupted` does at start.
//!
//! A stale heartbeat is taken for a dead replica only by a replica that reached PostgreSQL
//! throughout the last lease ([`Continuity`]): after an outage longer than the lease every
//! heartbeat is stale, and the first replica back would otherwise fail the operations the
//! others are still running. An owner that reads that its operation was failed all the same
//! cancels it (`SharedOperations::refresh`).

use std::time::{Duration, Instant};

use super::{CHANNEL, LEASE, SharedOperations, failed, pg};
use crate::manager::now_ms;
use crate::manager::operation::{Operation, State};
use crate::manager::store::StoreError;

/// How old a heartbeat is when its row is deleted.
const FORGOTTEN_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

impl SharedOperations {
    /// Beats this replica's heartbeat, and fails the open operations of replicas whose
    /// heartbeat is gone, or older than [`LEASE`] once this replica has been connected for a
    /// lease ([`Continuity`]), and those of earlier runs of this process. Returns how many it
    /// failed.
    pub(super) async fn beat_and_reap(&self) -> Result<usize, StoreError> {
        let mut client = match self.client().await {
            Ok(client) => client,
            Err(error) => {
                crate::manager::lock(&self.continuity).beat_failed();
                return Err(error);
            }
        };
        let judges = {
            let closed = self.closed.lock().await;
            if *closed {
                return Ok(0);
            }
            let beat = client
                .execute(
                    "INSERT INTO manager_replicas (replica) VALUES ($1)
                     ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()",
                    &[&self.replica],
                )
                .await;
            let mut continuity = crate::manager::lock(&self.continuity);
            if beat.is_err() {
                continuity.beat_failed();
            }
            beat.map_err(pg("heartbeat"))?;
            continuity.beat_succeeded(Instant::now())
        };
        let tx = client.transaction().await.map_err(pg("begin"))?;
        let lease = LEASE.as_secs_f64();
        // An earlier run of this process (same host and process id, another incarnation)
        // has ended, whatever its heartbeat says.
        let predecessors = self.predecessors();
        let orphans = tx
            .query(
                "SELECT o.id, o.body, o.replica,
                     coalesce(starts_with(o.replica, $3), false) AS restarted
                 FROM manager_operations o
                 LEFT JOIN manager_replicas r ON r.replica = o.replica
                 WHERE o.state IN ('queued', 'in_progress') AND o.replica <> $1
                   AND (r.replica IS NULL OR starts_with(o.replica, $3)
                        OR ($4 AND r.heartbeat_at < now() - make_interval(secs => $2)))
                 FOR UPDATE OF o SKIP LOCKED",
                &[&self.replica, &lease, &predecessors, &judges],
            )
            .await
            .map_err(pg("look for abandoned operations"))?;
        let mut count = 0;
        for row in &orphans {
            let (Ok(id), Ok(body), Ok(owner), Ok(restarted)) = (
                row.try_get::<_, String>(0),
                row.try_get::<_, String>(1),
                row.try_get::<_, String>(2),
                row.try_get::<_, bool>(3),
            ) else {
                continue;
            };
            let Ok(mut operation) = serde_json::from_str::<Operation>(&body) else {
                continue;
            };
            let reason = if restarted {
                interrupted(&operation, &owner, &self.replica)
            } else {
                abandoned(&operation, &owner, &self.replica)
            };
            operation.fail_interrupted(now_ms(), reason);
            let body = serde_json::to_string(&operation).map_err(|e| failed("encode", e))?;
            tx.execute(
                "UPDATE manager_operations SET state = 'failed', body = $2, reaped_by = $3,
                     updated_at = now(), seq = nextval('manager_operations_seq')
                 WHERE id = $1",
                &[&id, &body, &self.replica],
            )
            .await
            .map_err(pg("fail an abandoned operation"))?;
            tracing::warn!(
                id,
                owner,
                "operation {id} of replica {owner}, which stopped answering, was marked failed"
            );
            count += 1;
        }
        if count > 0 {
            tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL])
                .await
                .map_err(pg("announce"))?;
        }
        // A heartbeat this old is a replica long gone, whose open operations were failed
        // above: no row means the same, so the table does not grow with every restart (and
        // only as seen by a replica connected throughout, as those failures are).
        tx.execute(
            "DELETE FROM manager_replicas
             WHERE $2 AND heartbeat_at < now() - make_interval(secs => $1)",
            &[&FORGOTTEN_AFTER.as_secs_f64(), &judges],
        )
        .await
        .map_err(pg("forget replicas long gone"))?;
        tx.commit().await.map_err(pg("commit"))?;
        Ok(count)
    }
}

/// Whether this replica has reached PostgreSQL throughout the last [`LEASE`], and so may
/// take another replica's stale heartbeat for that replica's death: after an outage every
/// heartbeat is stale only because PostgreSQL was away, and the replicas, still running
/// their operations, need a whole lease to beat again.
#[derive(Debug, Default)]
pub(super) struct Continuity {
    /// Since when the heartbeats have gone through, each within [`LONGEST_GAP`] of the one
    /// before.
    since: Option<Instant>,
    /// The last heartbeat that went through.
    last: Option<Instant>,
}

/// The longest time between two heartbeats that went through for this replica to count as
/// connected in between (beats hung as long as this could have hidden an outage the others
/// saw).
const LONGEST_GAP: Duration = Duration::from_secs(LEASE.as_secs() / 2);

impl Continuity {
    /// Notes a heartbeat that went through at `now`; returns whether this replica has been
    /// connected for a whole lease.
    pub(super) fn beat_succeeded(&mut self, now: Instant) -> bool {
        let resumed = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) > LONGEST_GAP);
        if resumed {
            self.since = Some(now);
        }
        self.last = Some(now);
        self.since
            .is_some_and(|since| now.saturating_duration_since(since) >= LEASE)
    }

    /// Notes a heartbeat that did not go through: PostgreSQL may be away for the others too.
    pub(super) fn beat_failed(&mut self) {
        *self = Self::default();
    }

    /// As if the heartbeats had gone through since `since`, the last one now.
    #[cfg(test)]
    pub(super) fn connected_since(&mut self, since: Instant) {
        self.since = Some(since);
        self.last = Some(Instant::now());
    }
}

/// Why an abandoned operation failed, naming both replicas.
fn abandoned(operation: &Operation, owner: &str, by: &str) -> String {
    format!(
        "replica {owner} stopped answering {} (no heartbeat for {} s); marked failed by replica {by}",
        when(operation),
        LEASE.as_secs()
    )
}

/// Why an operation of this process's predecessor failed, naming both runs.
fn interrupted(operation: &Operation, predecessor: &str, by: &str) -> String {
    format!(
        "replica {predecessor} stopped {}; marked failed by its restart, replica {by}",
        when(operation)
    )
}

/// When an open operation was interrupted, by its state.
fn when(operation: &Operation) -> &'static str {
    match operation.state {
        State::InProgress => "while this operation was in progress",
        _ => "before this operation started",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_judges_others_only_after_a_whole_lease_of_heartbeats() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut continuity = Continuity::default();
        // Beating every second from the start: not a whole lease yet, then one.
        for second in 0..LEASE.as_secs() {
            assert!(!continuity.beat_succeeded(at(second)), "at {second} s");
        }
        assert!(continuity.beat_succeeded(at(LEASE.as_secs())));
        // A failed beat (PostgreSQL away): a whole lease again from the next one through.
        continuity.beat_failed();
        let back = LEASE.as_secs() + 30;
        assert!(!continuity.beat_succeeded(at(back)));
        assert!(!continuity.beat_succeeded(at(back + LEASE.as_secs() - 1)));
        // A beat that hung longer than the longest gap counts as an outage too.
        let hung = back + LEASE.as_secs() - 1 + LONGEST_GAP.as_secs() + 1;
        assert!(!continuity.beat_succeeded(at(hung)));
        let mut second = hung;
        while second < hung + LEASE.as_secs() {
            second += LONGEST_GAP.as_secs();
            assert_eq!(
                continuity.beat_succeeded(at(second)),
                second - hung >= LEASE.as_secs(),
                "at {second} s"
            );
        }
    }
}
