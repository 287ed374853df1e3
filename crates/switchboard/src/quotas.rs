//! Agents' cost quotas shared by the replicas of a `[storage] url` (`quota_spending`,
//! migration 5): an agent's quota counts what every replica spent.
//!
//! The call path never waits on PostgreSQL. Each replica counts its own spending at once, in
//! memory (`switchboard_core::limits::Quota`), and notes it in a
//! [`SharedSpending`]; every [`REFRESH`] a task of its own sends what was noted since (added to
//! this process's row of the agent's current time bucket) and, in the same statement, reads
//! every other process's rows still in their window, which the next calls count. Rows are a
//! process's (the replica's name and a random incarnation, migration 11), not a name's: a
//! replica restarted under the same name — PID 1 of a container restarted in place — reads
//! its predecessor's spending as another's, so a restart forgets nothing. So a replica
//! over-admits by at most what the others spent in the last refresh interval or two (their
//! spending since their last send, and since this replica's last read).
//!
//! Buckets are on the database's clock: a bucket is [`bucket_width`] of the agent's window,
//! and its spending counts until the bucket's end plus the window (so up to one bucket longer
//! than exactly, never shorter). What a replica reads is turned into "leaves the window in
//! N ms" before it reaches this machine's clock, so replicas never compare clocks.
//!
//! When PostgreSQL cannot be reached, the replica keeps enforcing with what it knows — its own
//! spending and the other replicas' as last read, which leaves the window as it would have —
//! says so once in the log, and keeps what it could not send for the next attempt; when the
//! database is back it sends it (counted from then on: later, never lost) and reads again.
//!
//! Sent once: an exchange that timed out or lost its connection may still have been applied
//! (the statement reached the database, the answer did not come back). Each send is numbered
//! ([`Taken::number`]), and the statement adds its spending only when its number is above the
//! highest this process recorded (`quota_sends`, migration 10, keyed by the replica's name and
//! a random incarnation, so a restarted process with the same name starts afresh). A send that
//! failed is sent again as it was, under its number, before anything spent since, so it is
//! applied once whichever of the two attempts reached the database.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_core::limits::{SharedSpending, Spent, Taken};
use switchboard_ledger::postgres::Pool;
use tokio::time::Instant;

/// How often a replica sends its spending and reads the others'.
pub const REFRESH: Duration = Duration::from_millis(500);

/// How often (in refreshes) rows past their expiry are deleted: about once a minute.
const PRUNE_EVERY: u32 = 120;

/// The longest one exchange may take before it counts as failed (by default: see
/// [`QuotaStore::with_exchange_timeout`]).
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);

/// What went wrong with the shared quotas.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QuotaStoreError {
    /// The database could not be reached or refused a statement (the URL is never repeated:
    /// it may hold a password).
    #[error("quotas on PostgreSQL: {0}")]
    Postgres(String),
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> QuotaStoreError {
    move |error| {
        QuotaStoreError::Postgres(format!(
            "{what}: {}",
            switchboard_ledger::postgres::describe(&error)
        ))
    }
}

/// The width of an agent's time buckets: a sixtieth of its window, between 1 s and 1 h.
pub fn bucket_width(window: Duration) -> Duration {
    (window / 60).clamp(Duration::from_secs(1), Duration::from_secs(3600))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Adds this process's spending to its bucket rows, when this send's number (`$7`) is above the
/// highest this process recorded (`gate`), and reads every other process's rows (`$1`, `$6`:
/// this one's replica name and incarnation) still in their window, with the milliseconds each has left; one statement, the database's clock. The
/// gate's upsert locks the process's row, so a send still running from an attempt given up on
/// and its repetition are applied one after the other, the second not at all. A send with
/// nothing to add (most of them, on an idle replica) writes nothing: only a failed send is
/// ever repeated, and repeating an empty one adds nothing either way.
const EXCHANGE: &str = "
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms),
gate AS (
    INSERT INTO quota_sends AS sends (replica, incarnation, sent, at_ms)
    SELECT $1, $6, $7, clock.now_ms FROM clock WHERE cardinality($2::text[]) > 0
    ON CONFLICT (replica, incarnation) DO UPDATE
        SET sent = EXCLUDED.sent, at_ms = EXCLUDED.at_ms
        WHERE sends.sent < EXCLUDED.sent
    RETURNING 1
),
added AS (
    INSERT INTO quota_spending (agent, replica, incarnation, start_ms, expires_ms, cost)
    SELECT spent.agent, $1, $6, clock.now_ms / spent.width_ms * spent.width_ms,
           clock.now_ms / spent.width_ms * spent.width_ms + spent.width_ms + spent.window_ms,
           spent.cost
    FROM UNNEST($2::text[], $3::bigint[], $4::bigint[], $5::float8[])
         AS spent (agent, width_ms, window_ms, cost), clock
    WHERE EXISTS (SELECT 1 FROM gate)
    ON CONFLICT (agent, replica, incarnation, start_ms) DO UPDATE
        SET cost = quota_spending.cost + EXCLUDED.cost,
            expires_ms = GREATEST(quota_spending.expires_ms, EXCLUDED.expires_ms)
)
SELECT agent, expires_ms - clock.now_ms, cost FROM quota_spending, clock
WHERE (replica, incarnation) <> ($1, $6) AND expires_ms > clock.now_ms";

/// Deletes spending a minute past its window and the send numbers of processes that sent
/// nothing for 30 days (a process cut off from the database that long could then count a
/// repeated send twice); how many rows.
const PRUNE: &str = "
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms),
spending AS (
    DELETE FROM quota_spending USING clock WHERE expires_ms < clock.now_ms - 60000 RETURNING 1
),
sends AS (
    DELETE FROM quota_sends USING clock WHERE at_ms < clock.now_ms - 2592000000 RETURNING 1
)
SELECT (SELECT count(*) FROM spending) + (SELECT count(*) FROM sends)";

/// The spending table of a `[storage] url`, as one replica sees it.
pub struct QuotaStore {
    pool: Pool,
    replica: String,
    /// This process among those named `replica` (a restarted one numbers its sends afresh).
    incarnation: String,
    timeout: Duration,
}

impl std::fmt::Debug for QuotaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotaStore")
            .field("replica", &self.replica)
            .field("incarnation", &self.incarnation)
            .finish_non_exhaustive()
    }
}

impl QuotaStore {
    /// The store on `url` for the replica named `replica` (nothing is connected yet).
    pub fn new(url: &str, replica: String) -> Result<Self, QuotaStoreError> {
        let pool = switchboard_ledger::postgres::pool(url, 1)
            .map_err(|error| QuotaStoreError::Postgres(error.to_string()))?;
        Ok(Self {
            pool,
            replica,
            incarnation: format!("{:016x}", rand::random::<u64>()),
            timeout: EXCHANGE_TIMEOUT,
        })
    }

    /// The same store, whose exchanges count as failed after `timeout` rather than
    /// [`EXCHANGE_TIMEOUT`].
    pub fn with_exchange_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// This process among those named like it: its rows' `incarnation`.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, QuotaStoreError> {
        self.pool
            .get()
            .await
            .map_err(|error| QuotaStoreError::Postgres(format!("connect: {error}")))
    }

    /// Adds what `sent` holds to this replica's rows, unless a send with its number or a later
    /// one was applied already, and returns the other replicas' spending still in its window,
    /// per agent, each piece leaving at the instant this machine's clock gives it.
    pub async fn exchange(
        &self,
        sent: &Taken,
    ) -> Result<HashMap<String, Vec<Spent>>, QuotaStoreError> {
        let unsent = &sent.unsent;
        let number = i64::try_from(sent.number).unwrap_or(i64::MAX);
        let agents: Vec<&str> = unsent.iter().map(|u| u.agent.as_str()).collect();
        let widths: Vec<i64> = unsent
            .iter()
            .map(|u| millis(bucket_width(u.window)))
            .collect();
        let windows: Vec<i64> = unsent.iter().map(|u| millis(u.window)).collect();
        let costs: Vec<f64> = unsent.iter().map(|u| u.cost).collect();
        let client = self.client().await?;
        let rows = client
            .query(
                EXCHANGE,
                &[
                    &self.replica,
                    &agents,
                    &widths,
                    &windows,
                    &costs,
                    &self.incarnation,
                    &number,
                ],
            )
            .await
            .map_err(pg("send and read the spending"))?;
        let answered = Instant::now();
        let mut others: HashMap<String, Vec<Spent>> = HashMap::new();
        for row in &rows {
            let agent: String = row.try_get(0).map_err(pg("read the spending"))?;
            let left: i64 = row.try_get(1).map_err(pg("read the spending"))?;
            let cost: f64 = row.try_get(2).map_err(pg("read the spending"))?;
            let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
            others.entry(agent).or_default().push(Spent {
                leaves: answered + left,
                cost,
            });
        }
        Ok(others)
    }

    /// Deletes rows that left their window more than a minute ago (any replica's: the work is
    /// idempotent), and the send numbers of processes that sent nothing for 30 days; how many
    /// rows.
    /// An error when PostgreSQL has not answered within the exchange's time limit (that
    /// connection is then closed, not put back in the pool: it may be stalled, and the
    /// exchanges would wait on it next).
    pub async fn prune(&self) -> Result<u64, QuotaStoreError> {
        let client = self.client().await?;
        let pruned = tokio::time::timeout(self.timeout, client.query_one(PRUNE, &[])).await;
        let Ok(row) = pruned else {
            drop(deadpool_postgres::Object::take(client));
            return Err(QuotaStoreError::Postgres(format!(
                "delete expired spending: no answer within {:?}; the connection was closed",
                self.timeout
            )));
        };
        let row = row.map_err(pg("delete expired spending"))?;
        let deleted: i64 = row.try_get(0).map_err(pg("delete expired spending"))?;
        Ok(u64::try_from(deleted).unwrap_or(0))
    }
}

/// Sends and reads the spending every [`REFRESH`], and at once when a flush asks
/// ([`SharedSpending::flush`]: a replica stopping), for as long as `spending` lives (the task
/// ends after the last [`Limits`](switchboard_core::limits::Limits) holding it is gone).
pub fn follow(store: QuotaStore, spending: &Arc<SharedSpending>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(store, Arc::downgrade(spending)))
}

async fn run(store: QuotaStore, spending: Weak<SharedSpending>) {
    let Some(wake) = spending.upgrade().map(|spending| spending.wake_handle()) else {
        return;
    };
    let mut ticks = tokio::time::interval(REFRESH);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    let mut since_prune = 0;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = wake.notified() => {}
        }
        let Some(spending) = spending.upgrade() else {
            break;
        };
        if !spending.is_wanted() {
            // No agent has a quota here: nothing to send, nothing to enforce.
            continue;
        }
        // A send that failed goes again first, as it was; then, once it is through, what was
        // spent since (at once, not at the next tick).
        let failed = loop {
            let (sending, resending) = spending.next_to_send();
            let answer = tokio::time::timeout(store.timeout, store.exchange(&sending))
                .await
                .unwrap_or_else(|_| {
                    Err(QuotaStoreError::Postgres(format!(
                        "no answer within {:?}",
                        store.timeout
                    )))
                });
            match answer {
                Ok(others) => {
                    spending.replace_others(others);
                    spending.exchanged(Some(sending.number));
                    if !resending {
                        break None;
                    }
                }
                Err(error) => {
                    spending.hold_failed(sending);
                    spending.exchanged(None);
                    break Some(error);
                }
            }
        };
        match failed {
            None => {
                if failing {
                    tracing::info!(
                        target: "switchboard::quotas",
                        "quotas on PostgreSQL: reachable again; the spending kept meanwhile was sent"
                    );
                }
                failing = false;
            }
            Some(error) => {
                if !failing {
                    tracing::warn!(
                        target: "switchboard::quotas",
                        "{error}; quotas go on counting this replica's spending and the other \
                         replicas' as last read, and catch up when the database is back"
                    );
                }
                failing = true;
            }
        }
        since_prune += 1;
        if since_prune >= PRUNE_EVERY && !failing {
            since_prune = 0;
            if let Err(error) = store.prune().await {
                tracing::debug!(target: "switchboard::quotas", "{error}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_a_sixtieth_of_the_window_between_a_second_and_an_hour() {
        assert_eq!(
            bucket_width(Duration::from_secs(60)),
            Duration::from_secs(1)
        );
        assert_eq!(
            bucket_width(Duration::from_secs(3600)),
            Duration::from_secs(60)
        );
        assert_eq!(
            bucket_width(Duration::from_secs(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            bucket_width(Duration::from_secs(30 * 86_400)),
            Duration::from_secs(3600)
        );
    }
}
