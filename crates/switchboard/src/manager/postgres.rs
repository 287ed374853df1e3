//! The server manager's operations and installs on PostgreSQL (`[storage] url`, migration 7:
//! `manager_operations`, `manager_replicas`, `manager_installs`), shared by every replica of
//! a deployment, so an operation started through one replica is listed, shown and followed
//! through any other.
//!
//! The manager's calls stay synchronous: they read a mirror of the tables, and its writes
//! go to PostgreSQL behind it, in order, on a task of their own (retried while PostgreSQL
//! is away). Each write takes a new `seq` and sends `NOTIFY switchboard_operations`; every
//! replica follows the rows past the last `seq` it saw, and those changed in the last
//! seconds (a `seq` is taken before its commit, so rows can appear out of order) — woken by
//! the notification, and every [`POLL`] in any case. A replica's own operations are never overwritten in its
//! mirror by an older row: its own copy is the newest.
//!
//! Each replica writes a heartbeat (`manager_replicas`, on PostgreSQL's clock) every
//! [`HEARTBEAT`], and with every write of an operation. An operation still queued or in
//! progress whose replica has no heartbeat newer than [`LEASE`] is marked failed, with the
//! reason, by the first replica that notices (`FOR UPDATE SKIP LOCKED`, so once); its row
//! then records who did (`reaped_by`) and refuses its owner's later writes; the owner, once
//! it reads that, cancels the operation. Only a replica that reached PostgreSQL throughout
//! the lease judges others' heartbeats (after an outage all are stale). A live replica
//! beats every second, so its operations are failed only if it cannot reach PostgreSQL for
//! the whole lease. A replica that stops cleanly takes its heartbeat away, so what it left
//! open is failed at once. A replica's name carries a random incarnation besides its host
//! and process id (in a container every restart is process 1 on the same host), and what a
//! predecessor of the same host and process left open is failed as the replica starts. The heartbeat and the failing of abandoned operations are in
//! `lease`; this file is the store, its mirror and the tasks that keep it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use switchboard_ledger::postgres::{Pool, describe};
use tokio::sync::{mpsc, watch};

use super::operation::Operation;
use super::store::{Installed, OperationStore, RETENTION, Retention, StoreError};
use crate::live::shared_store::Wakeups;

/// The channel every write is announced on.
const CHANNEL: &str = "switchboard_operations";

/// How often a replica reads the rows changed since it last looked, without being told.
pub const POLL: Duration = Duration::from_millis(500);

/// How often a replica says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a replica may go without a heartbeat before its open operations are failed.
pub const LEASE: Duration = Duration::from_secs(10);

/// How many operations the mirror keeps (the newest; open ones are never dropped).
const MIRRORED: usize = 2000;

/// How far back each read looks again besides the rows past the last `seq` seen: a
/// sequence value is taken before its transaction commits, so a row can become visible after
/// one with a higher `seq` was read.
const LOOK_BACK_SECS: f64 = 10.0;

/// How long a failed write waits before it is tried again.
const RETRY: Duration = Duration::from_millis(500);

/// What separates a replica's process (host and process id) from its incarnation in its
/// name (no host name holds it).
const INCARNATION: char = '#';

/// The name of this run of `process` (host and process id): in a container every restart
/// is process 1 on the same host name, so a random incarnation tells a restarted replica
/// from its predecessor, whose operations it must not take for its own.
fn incarnation_of(process: &str) -> String {
    format!("{process}{INCARNATION}{:08x}", rand::random::<u32>())
}

/// Where errors say they come from (the URL may hold a password).
const WHERE: &str = "on PostgreSQL ([storage] url)";

/// The operations and installs of a deployment, on PostgreSQL.
pub(crate) struct SharedOperations {
    pool: Pool,
    replica: String,
    mirror: Mutex<Mirror>,
    writes: mpsc::UnboundedSender<Write>,
    /// Writes handed to the writer and not yet on PostgreSQL.
    unwritten: watch::Sender<usize>,
    /// Writes ever handed to the writer: a read of the installs started before one is older
    /// than the mirror, and does not replace it.
    handed: AtomicU64,
    /// True once the mirror was read from PostgreSQL a first time.
    synced: watch::Sender<bool>,
    /// Bumped whenever a read brought rows other replicas wrote (waiters follow it).
    arrived: watch::Sender<u64>,
    /// Cancellations other replicas asked for of this replica's operations.
    cancels: Mutex<CancelRequests>,
    /// Set by [`SharedOperations::close`], under the lock every heartbeat takes: no beat
    /// comes after the one `close` takes away.
    closed: tokio::sync::Mutex<bool>,
    /// Whether this replica has reached PostgreSQL for a whole lease (so may fail others').
    continuity: Mutex<lease::Continuity>,
}

/// Cancellations asked of this replica: (id, reason) not yet handed to the manager, and the
/// ids already seen (a row is read again while it is recent).
#[derive(Default)]
struct CancelRequests {
    waiting: Vec<(String, String)>,
    seen: std::collections::HashSet<String>,
}

#[derive(Default)]
struct Mirror {
    operations: HashMap<String, Operation>,
    installs: BTreeMap<String, Installed>,
    /// The highest `seq` read.
    seq: i64,
}

enum Write {
    Operation(Box<Operation>),
    Install(Box<Installed>),
    ForgetInstall(String),
}

fn failed(what: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError {
        path: WHERE.to_owned(),
        reason: format!("{what}: {reason}"),
    }
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |error| failed(what, describe(&error))
}

impl SharedOperations {
    /// The store on `url`, followed from now on by tasks that end with it; needs a Tokio
    /// runtime. Nothing is connected yet.
    pub(crate) fn start(url: &str) -> Result<Arc<Self>, StoreError> {
        Self::start_as(
            url,
            incarnation_of(&switchboard_ledger::postgres::replica()),
        )
    }

    /// [`SharedOperations::start`] for the replica named `replica`.
    fn start_as(url: &str, replica: String) -> Result<Arc<Self>, StoreError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(failed(
                "start",
                "the shared operations need a Tokio runtime",
            ));
        }
        let pool = switchboard_ledger::postgres::pool(url, 2).map_err(|e| failed("connect", e))?;
        let config =
            switchboard_ledger::postgres::Target::parse(url).map_err(|e| failed("connect", e))?;
        let (writes, queue) = mpsc::unbounded_channel();
        let store = Arc::new(Self {
            pool,
            replica,
            mirror: Mutex::default(),
            writes,
            unwritten: watch::channel(0).0,
            handed: AtomicU64::new(0),
            synced: watch::channel(false).0,
            arrived: watch::channel(0).0,
            cancels: Mutex::default(),
            closed: tokio::sync::Mutex::new(false),
            continuity: Mutex::default(),
        });
        tokio::spawn(write_behind(Arc::downgrade(&store), queue));
        tokio::spawn(follow(Arc::downgrade(&store), config));
        Ok(store)
    }

    /// This replica's name, as operations and installs record it: host, process id and
    /// incarnation ([`incarnation_of`]).
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// What the names of this process's predecessors start with (host and process id, and
    /// [`INCARNATION`]): a process of that name that is not this one has ended. None when
    /// the name has no incarnation (tests name replicas as they like).
    fn predecessors(&self) -> Option<String> {
        let (process, _) = self.replica.rsplit_once(INCARNATION)?;
        Some(format!("{process}{INCARNATION}"))
    }

    /// Waits (at most `within`) until the mirror was read from PostgreSQL once.
    pub(crate) async fn synced(&self, within: Duration) {
        let mut synced = self.synced.subscribe();
        let _ = tokio::time::timeout(within, synced.wait_for(|done| *done)).await;
    }

    /// Bumped when rows other replicas wrote arrive.
    pub(crate) fn arrivals(&self) -> watch::Receiver<u64> {
        self.arrived.subscribe()
    }

    /// Waits (at most `within`) for the writes handed over so far to reach PostgreSQL;
    /// false when some did not.
    pub(crate) async fn flush(&self, within: Duration) -> bool {
        let mut unwritten = self.unwritten.subscribe();
        tokio::time::timeout(within, unwritten.wait_for(|n| *n == 0))
            .await
            .is_ok()
    }

    /// Asks the replica that runs operation `id` to cancel it, with `reason`; false when it
    /// is not open (any more).
    pub(crate) async fn request_cancel(&self, id: &str, reason: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "WITH asked AS (
                     UPDATE manager_operations SET cancel_requested = $2, updated_at = now(),
                         seq = nextval('manager_operations_seq')
                     WHERE id = $1 AND state IN ('queued', 'in_progress') AND reaped_by IS NULL
                     RETURNING 1
                 )
                 SELECT (SELECT count(*) FROM asked), pg_notify($3, '')",
                &[&id, &reason, &CHANNEL],
            )
            .await
            .map_err(pg("ask for a cancellation"))?;
        Ok(row.try_get::<_, i64>(0).unwrap_or(0) > 0)
    }

    /// How many operations `agent` has open on all the replicas, as the mirror last read
    /// them (a quick check; [`SharedOperations::admit`] decides).
    pub(crate) fn open_of(&self, agent: &str) -> usize {
        self.mirror()
            .operations
            .values()
            .filter(|o| !o.state.is_final() && o.request.agent.as_deref() == Some(agent))
            .count()
    }

    /// The cancellations other replicas asked for since the last look.
    pub(crate) fn cancel_requests(&self) -> Vec<(String, String)> {
        std::mem::take(&mut super::lock(&self.cancels).waiting)
    }

    /// Reads operation `id` from PostgreSQL now (one the mirror has not caught up with yet)
    /// and keeps it in the mirror.
    pub(crate) async fn fetch(&self, id: &str) -> Result<Option<Operation>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT body FROM manager_operations WHERE id = $1", &[&id])
            .await
            .map_err(pg("read an operation"))?;
        let Some(row) = row else { return Ok(None) };
        let body: String = row.try_get(0).map_err(pg("read an operation"))?;
        let operation: Operation =
            serde_json::from_str(&body).map_err(|e| failed("read an operation", e))?;
        let mut mirror = self.mirror();
        let kept = mirror.operations.entry(id.to_owned()).or_insert(operation);
        Ok(Some(kept.clone()))
    }

    /// Waits (at most `within`) for the writes handed over so far to reach PostgreSQL, then
    /// takes this replica's heartbeat away: whatever it left open is failed by the others
    /// at once. Returns false when writes were left unwritten.
    pub(crate) async fn close(&self, within: Duration) -> bool {
        let flushed = self.flush(within).await;
        let mut closed = self.closed.lock().await;
        *closed = true;
        if let Ok(client) = self.pool.get().await {
            let _ = client
                .execute(
                    "DELETE FROM manager_replicas WHERE replica = $1",
                    &[&self.replica],
                )
                .await;
        }
        flushed
    }

    fn mirror(&self) -> std::sync::MutexGuard<'_, Mirror> {
        super::lock(&self.mirror)
    }

    fn hand_over(&self, write: Write) -> Result<(), StoreError> {
        self.unwritten.send_modify(|n| *n += 1);
        self.handed.fetch_add(1, Ordering::SeqCst);
        self.writes.send(write).map_err(|_| {
            self.unwritten.send_modify(|n| *n -= 1);
            failed("write", "the writer has stopped")
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(|e| failed("connect", e))
    }

    /// Writes one change; an operation another replica marked failed is left as it is.
    async fn apply(&self, write: &Write) -> Result<(), StoreError> {
        let client = self.client().await?;
        match write {
            Write::Operation(operation) => {
                let body = serde_json::to_string(operation).map_err(|e| failed("encode", e))?;
                let created = i64::try_from(operation.created_ms).unwrap_or(i64::MAX);
                // One statement: the heartbeat, the row, the notification (sent at commit).
                let row = client
                    .query_one(
                        "WITH beat AS (
                             INSERT INTO manager_replicas (replica) VALUES ($5)
                             ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()
                         ), up AS (
                             INSERT INTO manager_operations
                                 (id, created_ms, state, body, replica, agent, adds)
                             VALUES ($1, $2, $3, $4, $5, $7, $8)
                             ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                                 body = excluded.body, updated_at = now(),
                                 seq = nextval('manager_operations_seq')
                             WHERE manager_operations.reaped_by IS NULL
                             RETURNING 1
                         )
                         SELECT (SELECT count(*) FROM up), pg_notify($6, '')",
                        &[
                            &operation.id,
                            &created,
                            &operation.state.as_str(),
                            &body,
                            &self.replica,
                            &CHANNEL,
                            &operation.request.agent,
                            &operation.request.work.adds(),
                        ],
                    )
                    .await
                    .map_err(pg("write an operation"))?;
                if row.try_get::<_, i64>(0).unwrap_or(0) == 0 {
                    tracing::warn!(
                        id = operation.id,
                        "operation {} was marked failed by another replica while this one ran it (its heartbeat lapsed); this replica's later changes of it are not kept, and it is cancelled once its row is read",
                        operation.id
                    );
                }
            }
            Write::Install(installed) => {
                let body = serde_json::to_string(installed).map_err(|e| failed("encode", e))?;
                client
                    .execute(
                        "WITH up AS (
                             INSERT INTO manager_installs (server, body, replica) VALUES ($1, $2, $3)
                             ON CONFLICT (server) DO UPDATE SET body = excluded.body,
                                 replica = excluded.replica, installed_at = now()
                         )
                         SELECT pg_notify($4, '')",
                        &[&installed.server, &body, &self.replica, &CHANNEL],
                    )
                    .await
                    .map_err(pg("record an install"))?;
            }
            Write::ForgetInstall(server) => {
                client
                    .execute(
                        "WITH gone AS (DELETE FROM manager_installs WHERE server = $1)
                         SELECT pg_notify($2, '')",
                        &[server, &CHANNEL],
                    )
                    .await
                    .map_err(pg("forget an install"))?;
            }
        }
        Ok(())
    }

    /// Reads the operations written since the last look (the newest [`MIRRORED`] the first
    /// time) and, when none of this replica's writes are pending, the installs.
    async fn refresh(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        let seen = self.mirror().seq;
        let rows = if seen == 0 {
            client
                .query(
                    "SELECT id, body, replica, reaped_by, seq, cancel_requested
                     FROM manager_operations ORDER BY seq DESC LIMIT $1",
                    &[&i64::try_from(MIRRORED).unwrap_or(i64::MAX)],
                )
                .await
        } else {
            client
                .query(
                    "SELECT id, body, replica, reaped_by, seq, cancel_requested
                     FROM manager_operations WHERE seq > $1 OR updated_at > now() - make_interval(secs => $2)
                     ORDER BY seq",
                    &[&seen, &LOOK_BACK_SECS],
                )
                .await
        }
        .map_err(pg("read operations"))?;
        let handed = self.handed.load(Ordering::SeqCst);
        let installs = if *self.unwritten.borrow() == 0 {
            let rows = client
                .query("SELECT server, body FROM manager_installs", &[])
                .await
                .map_err(pg("read installs"))?;
            Some(rows)
        } else {
            None
        };
        let mut mirror = self.mirror();
        let mut arrived = false;
        for row in rows {
            let (id, body, replica, reaped_by, seq): (String, String, String, Option<String>, i64) =
                match (
                    row.try_get(0),
                    row.try_get(1),
                    row.try_get(2),
                    row.try_get(3),
                    row.try_get(4),
                ) {
                    (Ok(a), Ok(b), Ok(c), Ok(d), Ok(e)) => (a, b, c, d, e),
                    _ => continue,
                };
            mirror.seq = mirror.seq.max(seq);
            if replica == self.replica {
                let asked = row.try_get::<_, Option<String>>(5).ok().flatten();
                if let Some(reason) = asked.or_else(|| reaped_by.as_deref().map(reaped)) {
                    let mut cancels = super::lock(&self.cancels);
                    if cancels.seen.insert(id.clone()) {
                        cancels.waiting.push((id.clone(), reason));
                    }
                }
            }
            if replica == self.replica && reaped_by.is_none() && mirror.operations.contains_key(&id)
            {
                continue;
            }
            match serde_json::from_str::<Operation>(&body) {
                Ok(operation) => {
                    if mirror.operations.get(&id) != Some(&operation) {
                        mirror.operations.insert(id, operation);
                        arrived = true;
                    }
                }
                Err(error) => tracing::warn!(id, "operation row skipped: {error}"),
            }
        }
        // Only rows read with no write of ours in between: an install recorded or forgotten
        // here meanwhile (the mirror held while it is handed over) is newer than they are.
        let current = handed == self.handed.load(Ordering::SeqCst) && *self.unwritten.borrow() == 0;
        if let Some(rows) = installs.filter(|_| current) {
            mirror.installs = rows
                .iter()
                .filter_map(|row| {
                    let body: String = row.try_get(1).ok()?;
                    let installed: Installed = serde_json::from_str(&body).ok()?;
                    Some((installed.server.clone(), installed))
                })
                .collect();
        }
        mirror.trim();
        drop(mirror);
        if arrived {
            self.arrived.send_modify(|n| *n += 1);
        }
        Ok(())
    }
}

/// Why this replica cancels an operation of its own that replica `by` marked failed.
fn reaped(by: &str) -> String {
    format!(
        "replica {by} marked it failed while this replica ran it (this replica's heartbeat \
         lapsed); stopped so it does not go on unrecorded"
    )
}

impl Mirror {
    /// The finished operations, newest first.
    fn finished(&self) -> Vec<(u64, String)> {
        let mut done: Vec<(u64, String)> = self
            .operations
            .values()
            .filter(|o| o.state.is_final())
            .map(|o| (o.created_ms, o.id.clone()))
            .collect();
        done.sort_by(|a, b| b.cmp(a));
        done
    }

    /// Drops the finished operations `retention` does not keep, as the store does.
    fn prune(&mut self, retention: Retention, now_ms: u64) {
        let cutoff = retention.cutoff_ms(now_ms);
        for (n, (created, id)) in self.finished().into_iter().enumerate() {
            if created < cutoff || n >= retention.finished {
                self.operations.remove(&id);
            }
        }
    }

    /// Drops the oldest operations that are over beyond [`MIRRORED`].
    fn trim(&mut self) {
        let over = self.operations.len().saturating_sub(MIRRORED);
        if over == 0 {
            return;
        }
        for (_, id) in self.finished().into_iter().rev().take(over) {
            self.operations.remove(&id);
        }
    }
}

impl OperationStore for SharedOperations {
    fn save(&self, operation: &Operation) -> Result<(), StoreError> {
        self.mirror()
            .operations
            .insert(operation.id.clone(), operation.clone());
        self.hand_over(Write::Operation(Box::new(operation.clone())))
    }

    fn recent(&self, limit: usize) -> Result<Vec<Operation>, StoreError> {
        let mut operations: Vec<Operation> = self.mirror().operations.values().cloned().collect();
        operations.sort_by(|a, b| (b.created_ms, &b.id).cmp(&(a.created_ms, &a.id)));
        operations.truncate(limit);
        Ok(operations)
    }

    fn get(&self, id: &str) -> Result<Option<Operation>, StoreError> {
        Ok(self.mirror().operations.get(id).cloned())
    }

    fn record_install(&self, installed: &Installed) -> Result<(), StoreError> {
        let mut mirror = self.mirror();
        mirror
            .installs
            .insert(installed.server.clone(), installed.clone());
        self.hand_over(Write::Install(Box::new(installed.clone())))
    }

    fn install_of(&self, server: &str) -> Result<Option<Installed>, StoreError> {
        Ok(self.mirror().installs.get(server).cloned())
    }

    fn installs(&self) -> Result<Vec<Installed>, StoreError> {
        Ok(self.mirror().installs.values().cloned().collect())
    }

    fn forget_install(&self, server: &str) -> Result<(), StoreError> {
        let mut mirror = self.mirror();
        mirror.installs.remove(server);
        self.hand_over(Write::ForgetInstall(server.to_owned()))
    }
}

/// Writes the changes in the order they were made, each tried until PostgreSQL takes it.
async fn write_behind(store: Weak<SharedOperations>, mut queue: mpsc::UnboundedReceiver<Write>) {
    while let Some(write) = queue.recv().await {
        let mut failing = false;
        loop {
            let Some(store) = store.upgrade() else { return };
            match store.apply(&write).await {
                Ok(()) => {
                    store.unwritten.send_modify(|n| *n = n.saturating_sub(1));
                    break;
                }
                Err(error) => {
                    if !failing {
                        tracing::warn!("{error}; retrying");
                        failing = true;
                    }
                }
            }
            drop(store);
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// Follows the tables for as long as the store lives: reads what changed at every
/// notification and poll, beats the heartbeat and looks for abandoned operations every
/// [`HEARTBEAT`].
async fn follow(store: Weak<SharedOperations>, config: switchboard_ledger::postgres::Target) {
    let wakeups = Wakeups::start(config, CHANNEL, POLL);
    let mut beat = tokio::time::Instant::now();
    let mut pruned: Option<tokio::time::Instant> = None;
    let mut first = true;
    let mut failing = false;
    loop {
        if !first {
            wakeups.next().await;
        }
        let Some(store) = store.upgrade() else { return };
        let mut outcome = Ok(());
        if first || beat.elapsed() >= HEARTBEAT {
            beat = tokio::time::Instant::now();
            outcome = store.beat_and_reap().await.map(|_| ());
        }
        if outcome.is_ok() {
            outcome = store.refresh().await;
        }
        if outcome.is_ok() && pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            pruned = Some(tokio::time::Instant::now());
            match store.prune(RETENTION, super::now_ms()).await {
                Ok(0) => {}
                Ok(count) => tracing::info!(
                    count,
                    "finished operations past their retention were deleted"
                ),
                Err(error) => tracing::warn!("{error}; pruning again in an hour"),
            }
        }
        match outcome {
            Ok(()) => {
                failing = false;
                if first {
                    store.synced.send_replace(true);
                    first = false;
                }
            }
            Err(error) if !failing => {
                failing = true;
                tracing::warn!("{error}; following again at the next poll");
            }
            Err(_) => {}
        }
        if first {
            drop(store);
            tokio::time::sleep(POLL).await;
        }
    }
}

mod admission;
mod lease;
pub use admission::PRUNE_EVERY;
pub(crate) use admission::Refusal;
#[cfg(test)]
mod tests;
