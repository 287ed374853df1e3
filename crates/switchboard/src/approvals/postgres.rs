//! The operator queue on PostgreSQL (`[storage] url`), shared by every replica of a
//! deployment: a call waiting for an operator is a row of `approvals`, a time-boxed grant a
//! row of `approval_grants` (migration 2, applied by `switchboard migrate`).
//!
//! A row is decided once: every decision — an operator's approval or denial from any
//! replica, the waiting replica's timeout, a caller that gave up — is a compare-and-set
//! (`UPDATE … WHERE id = $1 AND state = 'pending' RETURNING …`), so of two operators
//! answering at once exactly one wins and the other is told who did. Each change sends
//! `NOTIFY switchboard_approvals`; every replica LISTENs on a connection of its own and
//! re-reads the queue when told, when it (re)connects, and every [`POLL`] in any case, so
//! a lost notification or connection delays a wake-up by at most that long and loses
//! nothing.
//!
//! This module only speaks SQL; [`super::PendingApprovals`] keeps the waiting calls' answer
//! channels and the mirror every replica lists from. It never holds a call's unredacted
//! arguments: the row has them with secrets redacted, as the ledger does.

use std::sync::Weak;
use std::time::Duration;

use futures::StreamExt;
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_ledger::postgres::{Pool, connect, describe, pool, read_snapshot};
use tokio_postgres::AsyncMessage;

use super::pending::{AnswerError, Grant, PendingApproval, PendingApprovals};

/// The channel the replicas LISTEN on.
const CHANNEL: &str = "switchboard_approvals";

/// How often a replica re-reads the queue without being told to.
pub const POLL: Duration = Duration::from_millis(500);

/// How long a lost LISTEN connection waits before it connects again.
const RECONNECT: Duration = Duration::from_millis(500);

/// The key of a grant for a call without an agent (the table's key cannot be NULL).
const NO_AGENT: &str = "";

/// The approvals tables of one deployment.
pub(crate) struct ApprovalStore {
    pool: Pool,
    replica: String,
}

/// What one read of the store found.
#[derive(Default)]
pub(crate) struct Snapshot {
    pub pending: Vec<PendingApproval>,
    /// Each grant in force, with when it ends on this replica's clock.
    pub grants: Vec<(Grant, tokio::time::Instant)>,
    /// Decisions of calls that wait on this replica.
    pub decided: Vec<(String, Decision)>,
}

impl Snapshot {
    /// What a listing shows of it, less the times: a change of this is a change of the queue.
    pub fn shape(&self) -> Vec<String> {
        let pending = self.pending.iter().map(|p| p.id.clone());
        let grants = self
            .grants
            .iter()
            .map(|(g, _)| format!("{:?} {} {}", g.agent, g.tool, g.by));
        pending.chain(grants).collect()
    }
}

/// An operator's answer to one approval.
pub(crate) struct Verdict<'a> {
    pub approve: bool,
    pub by: &'a str,
    pub reason: Option<&'a str>,
    /// Also grant the agent's calls of the tool for these minutes.
    pub grant_minutes: Option<u64>,
}

fn failed(what: &'static str) -> impl Fn(tokio_postgres::Error) -> String {
    move |error| format!("{what}: {}", describe(&error))
}

fn store_error(what: &'static str) -> impl Fn(tokio_postgres::Error) -> AnswerError {
    move |error| AnswerError::Store(failed(what)(error))
}

fn millis(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The decision a decided row records.
fn decision_of(
    state: &str,
    by: Option<String>,
    reason: Option<String>,
    minutes: Option<i64>,
) -> Decision {
    let by = by.unwrap_or_else(|| "operator".to_owned());
    match (state, minutes) {
        ("approved", Some(minutes)) => Decision::Approved {
            by,
            channel: format!("operator (granted for {minutes} min)"),
        },
        ("approved", None) => Decision::Approved {
            by,
            channel: "operator".to_owned(),
        },
        ("denied", _) => Decision::Denied {
            by,
            channel: "operator".to_owned(),
            reason: reason.unwrap_or_else(|| "no reason given".to_owned()),
        },
        _ => Decision::Denied {
            by,
            channel: "operator".to_owned(),
            reason: reason.unwrap_or_else(|| "no operator answered in time".to_owned()),
        },
    }
}

impl ApprovalStore {
    /// The store at `url` (nothing is opened yet). The URL is never repeated in an error.
    pub fn new(url: &str) -> Result<Self, String> {
        let pool = pool(url, 4).map_err(|error| error.to_string())?;
        Ok(Self {
            pool,
            replica: switchboard_ledger::postgres::replica(),
        })
    }

    async fn client(&self) -> Result<switchboard_ledger::postgres::Pooled, String> {
        connect(&self.pool).await.map_err(|error| error.to_string())
    }

    /// Puts a waiting call in the queue, until `timeout` from now on the database's clock.
    pub async fn insert(
        &self,
        request: &ApprovalRequest,
        tier: Option<&str>,
        timeout: Duration,
    ) -> Result<(), String> {
        let arguments = switchboard_ledger::redact::redact(&request.arguments).to_string();
        let timeout_ms = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
        self.client()
            .await?
            .execute(
                "WITH queued AS (
                     INSERT INTO approvals
                         (id, agent, tool, server, arguments, reason, tier, replica, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
                             now() + make_interval(secs => $9::bigint / 1000.0))
                     RETURNING id)
                 SELECT pg_notify($10, id) FROM queued",
                &[
                    &request.call_id,
                    &request.agent,
                    &request.tool,
                    &request.server,
                    &arguments,
                    &request.reason,
                    &tier,
                    &self.replica,
                    &timeout_ms,
                    &CHANNEL,
                ],
            )
            .await
            .map_err(failed("queue the approval"))?;
        Ok(())
    }

    /// Decides approval `id` if it is still pending (and grants, if asked, in the same
    /// transaction); else says why not.
    pub async fn decide(&self, id: &str, verdict: &Verdict<'_>) -> Result<Grant, AnswerError> {
        let mut client = self.client().await.map_err(AnswerError::Store)?;
        let tx = client.transaction().await.map_err(store_error("begin"))?;
        let state = if verdict.approve {
            "approved"
        } else {
            "denied"
        };
        let minutes = verdict
            .grant_minutes
            .map(|m| i64::try_from(m).unwrap_or(i64::MAX));
        let decided = tx
            .query_opt(
                "UPDATE approvals SET state = $2, decided_by = $3, decided_at = now(),
                     decision_reason = $4, grant_minutes = $5
                 WHERE id = $1 AND state = 'pending' AND expires_at > now()
                 RETURNING agent, tool",
                &[&id, &state, &verdict.by, &verdict.reason, &minutes],
            )
            .await
            .map_err(store_error("decide the approval"))?;
        let Some(row) = decided else {
            let seen = tx
                .query_opt(
                    "SELECT state, coalesce(decided_by, '') FROM approvals WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(store_error("read the approval"))?;
            return Err(match seen {
                Some(row) if row.get::<_, String>(0) != "pending" => AnswerError::AlreadyDecided {
                    id: id.to_owned(),
                    state: row.get(0),
                    by: row.get(1),
                },
                _ => AnswerError::NotPending(id.to_owned()),
            });
        };
        let agent: Option<String> = row.get(0);
        let tool: String = row.get(1);
        if let Some(minutes) = minutes {
            tx.execute(
                "INSERT INTO approval_grants (agent, tool, granted_by, minutes, until)
                 VALUES ($1, $2, $3, $4, now() + $4::bigint * interval '1 minute')
                 ON CONFLICT (agent, tool) DO UPDATE SET granted_by = EXCLUDED.granted_by,
                     minutes = EXCLUDED.minutes, until = EXCLUDED.until",
                &[
                    &agent.as_deref().unwrap_or(NO_AGENT),
                    &tool,
                    &verdict.by,
                    &minutes,
                ],
            )
            .await
            .map_err(store_error("grant"))?;
        }
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &id])
            .await
            .map_err(store_error("notify the replicas"))?;
        tx.commit()
            .await
            .map_err(store_error("commit the decision"))?;
        Ok(Grant {
            agent,
            tool,
            by: verdict.by.to_owned(),
            minutes: verdict.grant_minutes.unwrap_or(0),
            expires_in_ms: verdict.grant_minutes.unwrap_or(0).saturating_mul(60_000),
        })
    }

    /// Ends approval `id` as `state` (`expired`, `withdrawn`) unless it was decided first;
    /// then returns that decision.
    pub async fn close(&self, id: &str, state: &str) -> Result<Option<Decision>, String> {
        let client = self.client().await?;
        let closed = client
            .execute(
                "WITH closed AS (
                     UPDATE approvals SET state = $2, decided_by = 'timeout', decided_at = now()
                     WHERE id = $1 AND state = 'pending' RETURNING id)
                 SELECT pg_notify($3, id) FROM closed",
                &[&id, &state, &CHANNEL],
            )
            .await
            .map_err(failed("close the approval"))?;
        if closed == 1 {
            return Ok(None);
        }
        let row = client
            .query_opt(
                "SELECT state, decided_by, decision_reason, grant_minutes FROM approvals
                 WHERE id = $1 AND state IN ('approved', 'denied')",
                &[&id],
            )
            .await
            .map_err(failed("read the approval"))?;
        Ok(row.map(|row| decision_of(row.get(0), row.get(1), row.get(2), row.get(3))))
    }

    /// Ends a grant before its time; whether one was in force.
    pub async fn revoke_grant(&self, agent: Option<&str>, tool: &str) -> Result<bool, String> {
        let client = self.client().await?;
        let ended = client
            .execute(
                "DELETE FROM approval_grants WHERE agent = $1 AND tool = $2 AND until > now()",
                &[&agent.unwrap_or(NO_AGENT), &tool],
            )
            .await
            .map_err(failed("revoke the grant"))?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &tool])
            .await
            .map_err(failed("notify the replicas"))?;
        Ok(ended > 0)
    }

    /// Reads the pending approvals, the grants in force, and the decisions of `waiting`, in
    /// one snapshot of the database: a decision with its grant (one transaction in
    /// [`Self::decide`]) is seen whole or not at all, never as a grant beside a call still
    /// listed as pending.
    pub async fn read(&self, waiting: &[String]) -> Result<Snapshot, String> {
        let mut client = self.client().await?;
        let read = failed("read the approvals");
        let tx = read_snapshot(&mut client).await.map_err(&read)?;
        let now = tokio::time::Instant::now();
        let pending = tx
            .query(
                "SELECT id, agent, tool, server, arguments, reason, tier,
                        extract(epoch FROM requested_at)::bigint,
                        (extract(epoch FROM expires_at - now()) * 1000)::bigint
                 FROM approvals WHERE state = 'pending' AND expires_at > now()
                 ORDER BY requested_at, id",
                &[],
            )
            .await
            .map_err(&read)?
            .iter()
            .map(|row| PendingApproval {
                id: row.get(0),
                agent: row.get(1),
                tool: row.get(2),
                server: row.get(3),
                arguments: serde_json::from_str(row.get(4)).unwrap_or_default(),
                reason: row.get(5),
                tier: row.get(6),
                since: millis(row.get(7)),
                expires_in_ms: millis(row.get(8)),
            })
            .collect();
        let grants = tx
            .query(
                "SELECT agent, tool, granted_by, minutes,
                        (extract(epoch FROM until - now()) * 1000)::bigint
                 FROM approval_grants WHERE until > now() ORDER BY agent, tool",
                &[],
            )
            .await
            .map_err(&read)?
            .iter()
            .map(|row| {
                let agent: String = row.get(0);
                let left = millis(row.get(4));
                let grant = Grant {
                    agent: Some(agent).filter(|a| a != NO_AGENT),
                    tool: row.get(1),
                    by: row.get(2),
                    minutes: millis(row.get(3)),
                    expires_in_ms: left,
                };
                (grant, now + Duration::from_millis(left))
            })
            .collect();
        let decided = if waiting.is_empty() {
            Vec::new()
        } else {
            tx.query(
                "SELECT id, state, decided_by, decision_reason, grant_minutes FROM approvals
                     WHERE id = ANY($1) AND state <> 'pending'",
                &[&waiting],
            )
            .await
            .map_err(&read)?
            .iter()
            .map(|row| {
                let decision = decision_of(row.get(1), row.get(2), row.get(3), row.get(4));
                (row.get(0), decision)
            })
            .collect()
        };
        tx.commit().await.map_err(&read)?;
        Ok(Snapshot {
            pending,
            grants,
            decided,
        })
    }

    /// Keeps a LISTEN connection open while `queue` lives, waking it at every notification
    /// and after every (re)connect; and re-reads the queue every [`POLL`] besides.
    pub fn follow(
        queue: Weak<PendingApprovals>,
        url: String,
        wake: std::sync::Arc<tokio::sync::Notify>,
    ) {
        let listener_wake = wake.clone();
        let listener_queue = queue.clone();
        tokio::spawn(async move {
            while listener_queue.strong_count() > 0 {
                if let Err(error) = listen(&url, &listener_wake).await {
                    tracing::warn!(
                        target: "switchboard::approvals",
                        "approvals: LISTEN connection lost ({error}); polling every {} ms",
                        POLL.as_millis()
                    );
                }
                tokio::time::sleep(RECONNECT).await;
            }
        });
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(POLL) => {}
                }
                let Some(queue) = queue.upgrade() else { return };
                queue.refresh().await;
            }
        });
    }
}

/// One LISTEN connection, until it ends.
async fn listen(url: &str, wake: &tokio::sync::Notify) -> Result<(), String> {
    let target =
        switchboard_ledger::postgres::Target::parse(url).map_err(|error| error.to_string())?;
    let (client, mut connection) = target.connect().await.map_err(failed("connect"))?;
    let (told, mut notices) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    if told.send(()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(target: "switchboard::approvals", "LISTEN: {error}");
                    return;
                }
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(failed("LISTEN"))?;
    // Whatever was decided while this replica was not listening is read now.
    wake.notify_one();
    while notices.recv().await.is_some() {
        wake.notify_one();
    }
    driver.abort();
    Err("the connection closed".to_owned())
}
