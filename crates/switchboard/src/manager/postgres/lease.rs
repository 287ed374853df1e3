//! The lease of a replica on its operations: each replica beats its heartbeat in
//! `manager_replicas` every [`super::HEARTBEAT`] on PostgreSQL's clock, and an operation still
//! open whose replica's heartbeat is older than [`LEASE`] (or gone: a clean stop takes it
//! away) is marked failed, once, by the first replica that notices. An open operation of an
//! earlier run of this replica's process (its name but another incarnation) is failed at the
//! first beat, as SQLite's `fail_interrupted` does at start.

use super::{CHANNEL, LEASE, SharedOperations, failed, pg};
use crate::manager::now_ms;
use crate::manager::operation::{Operation, State};
use crate::manager::store::StoreError;

/// How old a heartbeat is when its row is deleted.
const FORGOTTEN_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

impl SharedOperations {
    /// Beats this replica's heartbeat, and fails the open operations of replicas whose
    /// heartbeat is older than [`LEASE`]. Returns how many it failed.
    pub(super) async fn beat_and_reap(&self) -> Result<usize, StoreError> {
        let mut client = self.client().await?;
        {
            let closed = self.closed.lock().await;
            if *closed {
                return Ok(0);
            }
            client
                .execute(
                    "INSERT INTO manager_replicas (replica) VALUES ($1)
                     ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()",
                    &[&self.replica],
                )
                .await
                .map_err(pg("heartbeat"))?;
        }
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
                   AND (r.replica IS NULL OR r.heartbeat_at < now() - make_interval(secs => $2)
                        OR starts_with(o.replica, $3))
                 FOR UPDATE OF o SKIP LOCKED",
                &[&self.replica, &lease, &predecessors],
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
        // above: no row means the same, so the table does not grow with every restart.
        tx.execute(
            "DELETE FROM manager_replicas WHERE heartbeat_at < now() - make_interval(secs => $1)",
            &[&FORGOTTEN_AFTER.as_secs_f64()],
        )
        .await
        .map_err(pg("forget replicas long gone"))?;
        tx.commit().await.map_err(pg("commit"))?;
        Ok(count)
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
