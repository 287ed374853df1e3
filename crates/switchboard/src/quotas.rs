//! Agents' cost quotas shared by the replicas of a `[storage] url` (`quota_spending`,
//! migration 5): an agent's quota counts what every replica spent.
//!
//! The call path never waits on PostgreSQL. Each replica counts its own spending at once, in
//! memory (`switchboard_core::limits::Quota`), and notes it in a
//! [`SharedSpending`]; every [`REFRESH`] a task of its own sends what was noted since (added to
//! this replica's row of the agent's current time bucket) and, in the same statement, reads
//! the other replicas' rows still in their window, which the next calls count. So a replica
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

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use switchboard_core::limits::{SharedSpending, Spent, Unsent};
use switchboard_ledger::postgres::Pool;
use tokio::time::Instant;

/// How often a replica sends its spending and reads the others'.
pub const REFRESH: Duration = Duration::from_millis(500);

/// How often (in refreshes) rows past their expiry are deleted: about once a minute.
const PRUNE_EVERY: u32 = 120;

/// The longest one exchange may take before it counts as failed.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);

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

/// Adds this replica's spending to its bucket rows and reads the other replicas' rows still
/// in their window, with the milliseconds each has left; one statement, the database's clock.
const EXCHANGE: &str = "
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms),
added AS (
    INSERT INTO quota_spending (agent, replica, start_ms, expires_ms, cost)
    SELECT spent.agent, $1, clock.now_ms / spent.width_ms * spent.width_ms,
           clock.now_ms / spent.width_ms * spent.width_ms + spent.width_ms + spent.window_ms,
           spent.cost
    FROM UNNEST($2::text[], $3::bigint[], $4::bigint[], $5::float8[])
         AS spent (agent, width_ms, window_ms, cost), clock
    ON CONFLICT (agent, replica, start_ms) DO UPDATE
        SET cost = quota_spending.cost + EXCLUDED.cost,
            expires_ms = GREATEST(quota_spending.expires_ms, EXCLUDED.expires_ms)
)
SELECT agent, expires_ms - clock.now_ms, cost FROM quota_spending, clock
WHERE replica <> $1 AND expires_ms > clock.now_ms";

/// The spending table of a `[storage] url`, as one replica sees it.
pub struct QuotaStore {
    pool: Pool,
    replica: String,
}

impl std::fmt::Debug for QuotaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotaStore")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl QuotaStore {
    /// The store on `url` for the replica named `replica` (nothing is connected yet).
    pub fn new(url: &str, replica: String) -> Result<Self, QuotaStoreError> {
        let pool = switchboard_ledger::postgres::pool(url, 1)
            .map_err(|error| QuotaStoreError::Postgres(error.to_string()))?;
        Ok(Self { pool, replica })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, QuotaStoreError> {
        self.pool
            .get()
            .await
            .map_err(|error| QuotaStoreError::Postgres(format!("connect: {error}")))
    }

    /// Adds `unsent` to this replica's rows and returns the other replicas' spending still in
    /// its window, per agent, each piece leaving at the instant this machine's clock gives it.
    pub async fn exchange(
        &self,
        unsent: &[Unsent],
    ) -> Result<HashMap<String, Vec<Spent>>, QuotaStoreError> {
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
                &[&self.replica, &agents, &widths, &windows, &costs],
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
    /// idempotent); how many.
    pub async fn prune(&self) -> Result<u64, QuotaStoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM quota_spending WHERE expires_ms < \
                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000",
                &[],
            )
            .await
            .map_err(pg("delete expired spending"))
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
        let taken = spending.take_unsent();
        let answer = tokio::time::timeout(EXCHANGE_TIMEOUT, store.exchange(&taken.unsent))
            .await
            .unwrap_or_else(|_| {
                Err(QuotaStoreError::Postgres(format!(
                    "no answer within {EXCHANGE_TIMEOUT:?}"
                )))
            });
        match answer {
            Ok(others) => {
                spending.replace_others(others);
                spending.exchanged(Some(taken.number));
                if failing {
                    tracing::info!(
                        target: "switchboard::quotas",
                        "quotas on PostgreSQL: reachable again; the spending kept meanwhile was sent"
                    );
                }
                failing = false;
            }
            Err(error) => {
                spending.restore_unsent(taken.unsent);
                spending.exchanged(None);
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
