//! Latency statistics of every replica on PostgreSQL (`latency_windows`, migration 6), for
//! replicas that share a `[storage] url`: each replica saves the window of calls *it*
//! measured under its own name, and reads the others', so its book — tiers, `tools --stats`,
//! the console — holds the fleet's figures, and a fresh replica starts with them.
//!
//! **The merge is of samples.** A tool's window in the book becomes the union of every
//! replica's samples (the others' first, this replica's last, so the newest are its own); it
//! holds them all, so p50/p90/p99 are quantiles over the fleet's calls, never an average of
//! each replica's quantiles. New calls are recorded into that window as before, and into this
//! replica's own window, which is what it saves: samples read from another replica are never
//! saved again under this one's name, so nothing is counted twice.
//!
//! **When.** The Host's housekeeping (every `maintenance::TICK`, 2 s) saves the own windows
//! that changed and reads the others' rows saved within [`KEEP`]; the gateway saves once more
//! as it stops. Replicas are named as the ledger names them (host and process id), so the
//! rows of a replica that stopped keep counting for [`KEEP`] after its last save, as a stats
//! file outlives its gateway; older rows are deleted. A recheck's burst (`super::recheck`)
//! is fresher evidence than any window saved before it: the other replicas' rows of that
//! tool saved before the burst was (by the database's clock, `saved_at`) are left out of the
//! merge — else a stopped replica's slow spell would undo the recheck at the next tick, for a
//! day.
//!
//! **Environment.** Stats are kept per environment; with shared stats the default is
//! `<deployment>/<transport>` (`[shared] deployment`) rather than this machine's host name,
//! so replicas on different machines merge (`[latency] environment` still names one).
//!
//! When PostgreSQL cannot be reached, the book keeps the figures it has and goes on
//! recording; the failure is logged once, and the next save after it is back sends the own
//! windows that changed meanwhile. Nothing on a call's path touches the database.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use switchboard_budget::{Environment, LatencyWindow, Outcome, Sample};
use switchboard_ledger::postgres::Pool;

use super::LatencyBudget;

/// How long a replica's saved window counts for the others after its last save.
pub const KEEP: Duration = Duration::from_secs(24 * 3600);

/// What went wrong with the shared statistics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SharedStatsError {
    /// The database could not be reached or refused a statement (the URL is never repeated:
    /// it may hold a password).
    #[error("latency statistics on PostgreSQL: {0}")]
    Postgres(String),
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> SharedStatsError {
    move |error| {
        SharedStatsError::Postgres(format!(
            "{what}: {}",
            switchboard_ledger::postgres::describe(&error)
        ))
    }
}

/// One own window as it is saved: its tool, environment and the table's two columns.
struct Saved {
    key: Arc<str>,
    environment: Environment,
    latencies: Vec<i64>,
    outcomes: Vec<i16>,
}

/// A window this replica measured, and whether it changed since it was last saved.
struct Own {
    window: LatencyWindow,
    changed: bool,
    /// Whether a recheck's burst replaced it: other replicas' rows saved before are older.
    rechecked: Recheck,
}

/// A recheck's burst in an own window, timed by the database's clock (the other replicas'
/// rows carry its `saved_at`, so no machine's clock is compared with another's).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Recheck {
    Never,
    /// Replaced, not saved yet.
    Unsaved,
    /// Saved at this database time (Unix seconds).
    SavedAt(f64),
}

/// This replica's share of the fleet's latency statistics.
pub struct SharedStats {
    pool: Pool,
    replica: String,
    deployment: String,
    own: Mutex<HashMap<Arc<str>, Own>>,
    /// The tools whose book window holds other replicas' samples now.
    merged: Mutex<HashSet<Arc<str>>>,
    failing: AtomicBool,
    /// Held through one exchange: of two at once (the housekeeping tick, a sync asked for,
    /// the one at shutdown) the older windows would otherwise be saved, or merged, last.
    exchanging: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for SharedStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStats")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// Windows handed to a save, marked changed again unless [`Unsaved::saved`] is called.
struct Unsaved<'a> {
    own: &'a Mutex<HashMap<Arc<str>, Own>>,
    keys: Vec<Arc<str>>,
}

impl Unsaved<'_> {
    fn saved(mut self) {
        self.keys.clear();
    }
}

impl Drop for Unsaved<'_> {
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let mut own = lock(self.own);
        for key in &self.keys {
            if let Some(entry) = own.get_mut(key) {
                entry.changed = true;
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What one [`SharedStats::sync`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Synced {
    /// Own windows saved.
    pub saved: usize,
    /// Tools whose window now holds other replicas' samples.
    pub merged: usize,
}

impl SharedStats {
    /// The statistics on `url` of the replica named `replica` in `deployment` (nothing is
    /// connected yet).
    pub fn new(url: &str, replica: String, deployment: &str) -> Result<Self, SharedStatsError> {
        let pool = switchboard_ledger::postgres::pool(url, 1)
            .map_err(|error| SharedStatsError::Postgres(error.to_string()))?;
        Ok(Self {
            pool,
            replica,
            deployment: deployment.to_owned(),
            own: Mutex::default(),
            merged: Mutex::default(),
            failing: AtomicBool::new(false),
            exchanging: tokio::sync::Mutex::new(()),
        })
    }

    /// The default environment of a server of `transport`: the deployment's, not a host's.
    pub fn environment(&self, transport: &str) -> Environment {
        Environment::from_host(&self.deployment, transport)
    }

    /// Whether the last exchange with the database failed.
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    /// Notes one call this replica measured (its window holds `capacity` calls).
    pub(crate) fn record(&self, key: &str, sample: Sample, capacity: usize) {
        let mut own = lock(&self.own);
        if let Some(entry) = own.get_mut(key) {
            entry.window.record(sample);
            entry.changed = true;
            return;
        }
        let mut window = LatencyWindow::new(capacity);
        window.record(sample);
        own.insert(
            Arc::from(key),
            Own {
                window,
                changed: true,
                rechecked: Recheck::Never,
            },
        );
    }

    /// Replaces the window this replica measured of `key` with `samples` (a recheck's burst,
    /// `super::recheck`); the other replicas' windows are theirs to recheck.
    pub(crate) fn replace(&self, key: &str, samples: &[Sample], capacity: usize) {
        let window = LatencyWindow::from_samples(capacity, samples.iter().copied());
        lock(&self.own).insert(
            Arc::from(key),
            Own {
                window,
                changed: true,
                rechecked: Recheck::Unsaved,
            },
        );
    }

    /// Saves the own windows that changed, reads the other replicas' and puts the union in
    /// `budget`'s book, for the tools of its catalog. Logs the first failure of a run of them
    /// and the recovery after.
    pub async fn sync(&self, budget: &LatencyBudget) -> Result<Synced, SharedStatsError> {
        let result = self.exchange(budget).await;
        match &result {
            Ok(_) if self.failing.swap(false, Ordering::AcqRel) => tracing::info!(
                target: "switchboard::latency",
                "latency statistics on PostgreSQL: reachable again"
            ),
            Err(error) if !self.failing.swap(true, Ordering::AcqRel) => tracing::warn!(
                target: "switchboard::latency",
                "{error}; the figures read before stay and calls go on being measured here"
            ),
            _ => {}
        }
        result
    }

    async fn exchange(&self, budget: &LatencyBudget) -> Result<Synced, SharedStatsError> {
        let _exchanging = self.exchanging.lock().await;
        let tools = budget.tools();
        let changed: Vec<Saved> = {
            let mut own = lock(&self.own);
            tools
                .iter()
                .filter_map(|(key, traits)| {
                    let entry = own.get_mut(key).filter(|entry| entry.changed)?;
                    entry.changed = false;
                    let (latencies, outcomes) = columns(&entry.window);
                    Some(Saved {
                        key: key.clone(),
                        environment: traits.environment.clone(),
                        latencies,
                        outcomes,
                    })
                })
                .collect()
        };
        // Until saved, the windows stay to be sent: also when this exchange is dropped
        // (a sync asked for with a time limit) before the save ends.
        let unsaved = Unsaved {
            own: &self.own,
            keys: changed.iter().map(|saved| saved.key.clone()).collect(),
        };
        let saved_at = self.save(&changed).await?;
        unsaved.saved();
        // A burst saved just now (its window was taken from `changed`, so it is no longer
        // marked changed) is timed by that save; every timed one is compared with the rows.
        let rechecked: HashMap<Arc<str>, f64> = lock(&self.own)
            .iter_mut()
            .filter_map(|(key, entry)| {
                if let (Recheck::Unsaved, false, Some(at)) =
                    (entry.rechecked, entry.changed, saved_at)
                {
                    entry.rechecked = Recheck::SavedAt(at);
                }
                match entry.rechecked {
                    Recheck::SavedAt(at) => Some((key.clone(), at)),
                    Recheck::Never | Recheck::Unsaved => None,
                }
            })
            .collect();
        let (environments, keys): (Vec<String>, Vec<String>) = tools
            .iter()
            .map(|(key, traits)| (traits.environment.as_str().to_owned(), key.to_string()))
            .unzip();
        let others = self.read_others(&environments, &keys, &rechecked).await?;
        let merged = self.merge_into(budget, &tools, others);
        budget.publish(false);
        Ok(Synced {
            saved: changed.len(),
            merged,
        })
    }

    /// Saves `windows` in one transaction; says when (the database's time, Unix seconds, the
    /// `saved_at` of every row it wrote), `None` when there was nothing to save.
    async fn save(&self, windows: &[Saved]) -> Result<Option<f64>, SharedStatsError> {
        if windows.is_empty() {
            return Ok(None);
        }
        let mut client = self
            .pool
            .get()
            .await
            .map_err(|error| SharedStatsError::Postgres(format!("connect: {error}")))?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        let upsert = tx
            .prepare(
                "INSERT INTO latency_windows (environment, tool, replica, latencies_us, outcomes) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (environment, tool, replica) DO UPDATE SET \
                 latencies_us = EXCLUDED.latencies_us, outcomes = EXCLUDED.outcomes, \
                 saved_at = now()",
            )
            .await
            .map_err(pg("prepare the save"))?;
        // now() is the transaction's start: the saved_at of every row below.
        let when: f64 = tx
            .query_one("SELECT EXTRACT(EPOCH FROM now())::float8", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(pg("read the time of the save"))?;
        for saved in windows {
            tx.execute(
                &upsert,
                &[
                    &saved.environment.as_str(),
                    &&*saved.key,
                    &self.replica,
                    &saved.latencies,
                    &saved.outcomes,
                ],
            )
            .await
            .map_err(pg("save a window"))?;
        }
        tx.execute(
            "DELETE FROM latency_windows WHERE saved_at < now() - make_interval(secs => $1)",
            &[&(KEEP.as_secs_f64())],
        )
        .await
        .map_err(pg("delete old windows"))?;
        tx.commit().await.map_err(pg("commit the windows"))?;
        Ok(Some(when))
    }

    /// The other replicas' samples per tool key (of these environments and keys, pairwise),
    /// each replica's oldest first, replicas in name order; of a tool `rechecked` here (Unix
    /// seconds), only rows saved since.
    async fn read_others(
        &self,
        environments: &[String],
        keys: &[String],
        rechecked: &HashMap<Arc<str>, f64>,
    ) -> Result<HashMap<String, Vec<Sample>>, SharedStatsError> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let client = self
            .pool
            .get()
            .await
            .map_err(|error| SharedStatsError::Postgres(format!("connect: {error}")))?;
        let rows = client
            .query(
                "SELECT w.tool, w.latencies_us, w.outcomes, \
                 EXTRACT(EPOCH FROM w.saved_at)::float8 FROM latency_windows w \
                 JOIN UNNEST($2::text[], $3::text[]) AS t (environment, tool) \
                   ON w.environment = t.environment AND w.tool = t.tool \
                 WHERE w.replica <> $1 AND w.saved_at > now() - make_interval(secs => $4) \
                 ORDER BY w.tool, w.replica",
                &[&self.replica, &environments, &keys, &(KEEP.as_secs_f64())],
            )
            .await
            .map_err(pg("read the windows"))?;
        let mut others: HashMap<String, Vec<Sample>> = HashMap::new();
        for row in &rows {
            let tool: String = row.try_get(0).map_err(pg("read a window"))?;
            let latencies: Vec<i64> = row.try_get(1).map_err(pg("read a window"))?;
            let outcomes: Vec<i16> = row.try_get(2).map_err(pg("read a window"))?;
            let saved_at: f64 = row.try_get(3).map_err(pg("read a window"))?;
            if rechecked
                .get(tool.as_str())
                .is_some_and(|at| saved_at < *at)
            {
                continue;
            }
            others
                .entry(tool)
                .or_default()
                .extend(samples_of(&latencies, &outcomes));
        }
        Ok(others)
    }

    /// Puts the union of `others` and this replica's own samples into the book; a tool that
    /// has no other replica's samples any more goes back to its own. How many are merged.
    fn merge_into(
        &self,
        budget: &LatencyBudget,
        tools: &super::ToolTable,
        mut others: HashMap<String, Vec<Sample>>,
    ) -> usize {
        let own = lock(&self.own);
        let mut merged = lock(&self.merged);
        let mut book = budget.book();
        let mut count = 0;
        for key in tools.keys() {
            let mine = own.get(key).map(|entry| entry.window.samples());
            match others.remove(&**key) {
                Some(mut samples) => {
                    samples.extend(mine.into_iter().flatten());
                    book.restore_merged(key, samples);
                    merged.insert(key.clone());
                    count += 1;
                }
                None if merged.remove(key) => {
                    book.restore(key, mine.into_iter().flatten().collect::<Vec<_>>());
                }
                None => {}
            }
        }
        count
    }
}

/// A window as the table's two columns.
fn columns(window: &LatencyWindow) -> (Vec<i64>, Vec<i16>) {
    window
        .samples()
        .map(|sample| {
            (
                i64::try_from(sample.latency.as_micros()).unwrap_or(i64::MAX),
                i16::from(sample.outcome.code()),
            )
        })
        .unzip()
}

/// The samples of the table's columns; a pair with a negative latency or an unknown outcome
/// (a row written by hand, or by a newer Switchboard) is skipped.
fn samples_of<'a>(latencies: &'a [i64], outcomes: &'a [i16]) -> impl Iterator<Item = Sample> + 'a {
    latencies.iter().zip(outcomes).filter_map(|(micros, code)| {
        Some(Sample {
            latency: Duration::from_micros(u64::try_from(*micros).ok()?),
            outcome: Outcome::from_code(u8::try_from(*code).ok()?)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_travels_as_two_columns_and_bad_pairs_are_skipped() {
        let window = LatencyWindow::from_samples(
            10,
            [
                Sample::ok(Duration::from_millis(12)),
                Sample::error(Duration::from_micros(7)),
                Sample::timeout(Duration::from_secs(2)),
            ],
        );
        let (latencies, outcomes) = columns(&window);
        assert_eq!(latencies, [12_000, 7, 2_000_000]);
        assert_eq!(outcomes, [0, 1, 2]);
        let back: Vec<Sample> = samples_of(&latencies, &outcomes).collect();
        assert_eq!(back, window.samples().collect::<Vec<_>>());
        let bad: Vec<Sample> = samples_of(&[-1, 5, 6], &[0, 9, 0]).collect();
        assert_eq!(bad, [Sample::ok(Duration::from_micros(6))]);
    }
}
