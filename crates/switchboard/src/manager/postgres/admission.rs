//! What the replicas of a deployment decide together about new operations: an agent's
//! operation is admitted only while the agent has fewer than its limit open on *every*
//! replica ([`SharedOperations::admit`]), and finished operations are pruned
//! ([`SharedOperations::prune`]).
//!
//! **Admission.** The count and the insert of the new row are one transaction that first
//! takes a transaction-scoped advisory lock on the agent
//! (`pg_advisory_xact_lock(hashtextextended('switchboard_manager_agent:' || agent, 0))`). Two
//! replicas admitting the same agent at once queue on that lock; the second counts after the
//! first committed (a statement of a READ COMMITTED transaction sees what committed before it
//! began, and the lock is released only after the commit), so they cannot both take the last
//! slot. A row lock would not do: there is no row to lock while the agent has nothing open,
//! and `SERIALIZABLE` would make every refusal a retry. Agents that hash alike only wait for
//! each other. The lock lives as long as one short transaction (two statements).
//!
//! **Pruning.** Finished operations (completed, failed, cancelled) older than
//! [`Retention::days`], and those beyond the newest [`Retention::finished`] of the
//! deployment, are deleted; an open operation never is. Any replica may prune (every
//! [`PRUNE_EVERY`], and when it starts): the deletes are idempotent.

use std::time::Duration;

use super::{CHANNEL, SharedOperations, failed, pg};
use crate::manager::operation::Operation;
use crate::manager::store::{Retention, StoreError};

/// How often a replica prunes the finished operations.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

impl SharedOperations {
    /// Inserts `operation` of `agent` if the agent has fewer than `limit` operations open
    /// on all replicas together: `Ok(None)` when it was inserted (and is in the mirror),
    /// `Ok(Some(open))` when it was refused, with the count that refused it.
    pub(crate) async fn admit(
        &self,
        operation: &Operation,
        agent: &str,
        limit: usize,
    ) -> Result<Option<usize>, StoreError> {
        let body = serde_json::to_string(operation).map_err(|e| failed("encode", e))?;
        let created = i64::try_from(operation.created_ms).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('switchboard_manager_agent:' || $1, 0))",
            &[&agent],
        )
        .await
        .map_err(pg("lock the agent's operations"))?;
        // One statement: the count (after the lock: it sees every admission before this
        // one), the heartbeat, the row when there is room, the notification.
        let row = tx
            .query_one(
                "WITH open AS (
                     SELECT count(*) AS n FROM manager_operations
                     WHERE agent = $6 AND state IN ('queued', 'in_progress')
                 ), beat AS (
                     INSERT INTO manager_replicas (replica) VALUES ($5)
                     ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()
                 ), up AS (
                     INSERT INTO manager_operations (id, created_ms, state, body, replica, agent)
                     SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT n FROM open) < $7
                     RETURNING 1
                 )
                 SELECT (SELECT n FROM open), (SELECT count(*) FROM up), pg_notify($8, '')",
                &[
                    &operation.id,
                    &created,
                    &operation.state.as_str(),
                    &body,
                    &self.replica,
                    &agent,
                    &limit,
                    &CHANNEL,
                ],
            )
            .await
            .map_err(pg("admit an agent's operation"))?;
        tx.commit().await.map_err(pg("commit"))?;
        let open: i64 = row.try_get(0).map_err(pg("admit an agent's operation"))?;
        let inserted: i64 = row.try_get(1).map_err(pg("admit an agent's operation"))?;
        if inserted == 0 {
            return Ok(Some(usize::try_from(open).unwrap_or(usize::MAX)));
        }
        self.mirror()
            .operations
            .insert(operation.id.clone(), operation.clone());
        Ok(None)
    }

    /// Deletes the finished operations `retention` does not keep (`now_ms`: the time that
    /// ages them); returns how many.
    pub(crate) async fn prune(&self, retention: Retention, now_ms: u64) -> Result<u64, StoreError> {
        let client = self.client().await?;
        let (before, kept) = retention.bounds(now_ms);
        let deleted = client
            .execute(
                "DELETE FROM manager_operations
                 WHERE state IN ('completed', 'failed', 'cancelled')
                   AND (created_ms < $1 OR id IN (
                       SELECT id FROM manager_operations
                       WHERE state IN ('completed', 'failed', 'cancelled')
                       ORDER BY created_ms DESC, id DESC OFFSET $2))",
                &[&before, &kept],
            )
            .await
            .map_err(pg("prune finished operations"))?;
        self.mirror().prune(retention, now_ms);
        Ok(deleted)
    }
}
