//! What the replicas of a deployment decide together about new operations: an agent's
//! operation is admitted only while the agent has fewer than its limit open on *every*
//! replica, and one that adds a server only while no other open operation on any replica
//! adds the same server id ([`SharedOperations::admit`]); finished operations are pruned
//! ([`SharedOperations::prune`]).
//!
//! **Admission.** The count and the insert of the new row are one transaction that first
//! takes a transaction-scoped advisory lock on the agent
//! (`pg_advisory_xact_lock(hashtextextended('switchboard_manager_agent:' || agent, 0))`) and
//! one on the server id it adds (`'switchboard_manager_server:' || id`), in that order (so
//! two admissions never wait for each other's second lock). Two replicas admitting the same
//! agent or the same new server at once queue on that lock; the second counts after the
//! first committed (a statement of a READ COMMITTED transaction sees what committed before it
//! began, and the lock is released only after the commit), so they cannot both take the last
//! slot, nor both add the server. A row lock would not do: there is no row to lock while
//! nothing is open, and `SERIALIZABLE` would make every refusal a retry. A unique index on
//! the open operations' `adds` would refuse the second too, but as an error of whichever
//! write came second — also the write-behind's of a later state, which would then retry
//! forever. Agents or ids that hash alike only wait for each other. The locks live as long
//! as one short transaction (at most four statements).
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

/// Why [`SharedOperations::admit`] did not insert an operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    /// The agent has this many operations open on the replicas together.
    TooMany(usize),
    /// Operation `id`, open on `replica`, adds `server` already.
    Adding {
        server: String,
        id: String,
        replica: String,
    },
}

impl SharedOperations {
    /// Inserts `operation` if its `agent` (if any) has fewer than `limit` operations open,
    /// and no open operation adds the server it `adds` (if any), on all replicas together:
    /// `Ok(None)` when it was inserted (and is in the mirror), `Ok(Some(refusal))` when not.
    pub(crate) async fn admit(
        &self,
        operation: &Operation,
        agent: Option<&str>,
        limit: usize,
        adds: Option<&str>,
    ) -> Result<Option<Refusal>, StoreError> {
        let body = serde_json::to_string(operation).map_err(|e| failed("encode", e))?;
        let created = i64::try_from(operation.created_ms).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        // The agent's lock first, then the server's: always in this order.
        for (prefix, key) in [
            ("switchboard_manager_agent:", agent),
            ("switchboard_manager_server:", adds),
        ] {
            let Some(key) = key else { continue };
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1 || $2, 0))",
                &[&prefix, &key],
            )
            .await
            .map_err(pg("lock the operations being counted"))?;
        }
        // One statement: the count and the one adding the server (after the locks: they see
        // every admission before this one), the heartbeat, the row when there is room, the
        // notification. A NULL agent or server matches no row.
        let row = tx
            .query_one(
                "WITH open AS (
                     SELECT count(*) AS n FROM manager_operations
                     WHERE agent = $6 AND state IN ('queued', 'in_progress')
                 ), adding AS (
                     SELECT id, replica FROM manager_operations
                     WHERE adds = $9 AND state IN ('queued', 'in_progress')
                     ORDER BY created_ms, id LIMIT 1
                 ), beat AS (
                     INSERT INTO manager_replicas (replica) VALUES ($5)
                     ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()
                 ), up AS (
                     INSERT INTO manager_operations
                         (id, created_ms, state, body, replica, agent, adds)
                     SELECT $1, $2, $3, $4, $5, $6, $9
                     WHERE (SELECT n FROM open) < $7 AND NOT EXISTS (SELECT 1 FROM adding)
                     RETURNING 1
                 )
                 SELECT (SELECT n FROM open), (SELECT count(*) FROM up),
                     (SELECT id FROM adding), (SELECT replica FROM adding), pg_notify($8, '')",
                &[
                    &operation.id,
                    &created,
                    &operation.state.as_str(),
                    &body,
                    &self.replica,
                    &agent,
                    &limit,
                    &CHANNEL,
                    &adds,
                ],
            )
            .await
            .map_err(pg("admit an operation"))?;
        tx.commit().await.map_err(pg("commit"))?;
        let read = pg("admit an operation");
        let open: i64 = row.try_get(0).map_err(&read)?;
        let inserted: i64 = row.try_get(1).map_err(&read)?;
        let adding: Option<String> = row.try_get(2).map_err(&read)?;
        let adding_on: Option<String> = row.try_get(3).map_err(&read)?;
        if inserted == 0 {
            return Ok(Some(match (adding, adds) {
                (Some(id), Some(server)) => Refusal::Adding {
                    server: server.to_owned(),
                    id,
                    replica: adding_on.unwrap_or_default(),
                },
                _ => Refusal::TooMany(usize::try_from(open).unwrap_or(usize::MAX)),
            }));
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
