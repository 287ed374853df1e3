//! The audit ledger: every call that reached the pipeline, on record in one SQLite file, or
//! — for replicas that share one ledger (`[storage] url`) — in PostgreSQL ([`postgres`]).
//! The writer appends to either through [`ChainStore`] (module `writer`); the journal
//! (module `journal`) and everything below hold for both.
//!
//! A call's row is first appended as one JSON line to a journal next to the database (one
//! `write` on the caller's thread, a few microseconds, to one of the process's shard files:
//! one per core, so cores do not queue on one file's lock), then a writer thread inserts
//! rows in batches, one transaction each, extending a SHA-256 hash chain. The writer sleeps
//! until it is rung; on a tokio runtime the first row of a batch rings it [`GATHER`] later from a task
//! of that runtime, so neither the wake-up nor the writer's turn on the core lands between a
//! call's journal line and its answer. A call made after an idle spell used to pay both; on
//! 2 cores, where the writer was scheduled ahead of the client its answer had just woken,
//! that was 57–105 µs at p50 of a stdio → stdio call 20 ms after the last (docs/bench/history.md,
//! "Sparse calls"). A process killed at any moment loses nothing whose result reached a
//! client: the journal line was written before the result was returned, and opening the
//! ledger replays the journal (call ids make that idempotent). Every so many rows the writer
//! rolls the journal over — under the shards' locks it only swaps each shard's file for a
//! fresh one opened beforehand; after, the old files are renamed to retired segments — and
//! deletes the retired segments once their rows are on record: no call waits for the
//! store's append (module `journal`).
//!
//! Rows carry redacted arguments and their digest ([`redact`]), and `verify` detects an
//! edited or deleted row ([`store::verify`], [`postgres::verify`]).
//!
//! Its metrics ([`Recorder::write_metrics`]): how long a row's append took on the caller's
//! thread, and how many rows wait for the writer.

pub mod backoff;
pub mod browse;
mod entry;
mod journal;
pub mod postgres;
pub mod redact;
pub mod store;
pub mod tally;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::UNIX_EPOCH;

use journal::Journals;
use serde_json::{Map, Value};
use switchboard_core::metrics::{Exposition, Histogram, Kind};
use switchboard_core::pipeline::{CallRecord, ChangeRecord, RecordedArguments, Recorder};

pub use entry::LedgerEntry;
pub use journal::catch_up;
pub use postgres::PostgresStore;
pub use store::{Filter, VerifyReport};
pub use writer::ChainStore;

/// Why the ledger failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger: {0}")]
    Database(String),
    #[error("ledger journal {path}: {reason}")]
    Journal { path: String, reason: String },
    /// PostgreSQL (`[storage] url`) refused or could not be reached.
    #[error("ledger on PostgreSQL: {0}")]
    Postgres(String),
    /// The PostgreSQL schema is not the one this Switchboard needs (`switchboard migrate`).
    #[error("ledger on PostgreSQL: {0}")]
    Schema(String),
}

/// Rows inserted per transaction at most.
const BATCH: usize = 512;
/// After the first row of a batch is recorded on a tokio runtime, the writer is rung this much
/// later: one transaction per window instead of one per call, and no wake-up per call (the
/// journal already made the rows durable). Off a runtime it is rung at once.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);
/// The journal is rolled over once the writer has inserted this many rows since the last time.
const ROTATE_EVERY: usize = 20_000;

/// How a ledger journals: into how many shards, rolled over how often. Tests choose; a gateway
/// takes [`Tuning::for_this_machine`].
#[derive(Debug, Clone, Copy)]
struct Tuning {
    shards: usize,
    rotate_every: usize,
}

impl Tuning {
    /// One shard per core this process may run on, rolled over every [`ROTATE_EVERY`] rows.
    fn for_this_machine() -> Self {
        Self {
            shards: journal::shard_count(),
            rotate_every: ROTATE_EVERY,
        }
    }
}

pub(crate) enum Message {
    Entry(Box<Journaled>),
    Flush(Sender<()>),
    /// The last handle is gone: insert what is left and end.
    Stop,
}

/// An entry on its way to the database, with the journal line written for it (without its
/// newline), which is its canonical text.
pub(crate) struct Journaled {
    entry: LedgerEntry,
    canonical: String,
}

/// A handle to the ledger; cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    shared: Arc<Shared>,
}

struct Shared {
    /// Calls append to their thread's shard under its lock's shared side (the file is opened
    /// to append, and one `write` of a line is not interleaved with another's); the writer
    /// rolls every shard over holding every lock's exclusive side (module `journal`).
    journal: Arc<Journals>,
    sender: Sender<Message>,
    path: PathBuf,
    /// The writer thread, unparked to ring it.
    writer: Thread,
    /// A ring is on its way: rows recorded meanwhile need none of their own.
    ringing: AtomicBool,
    /// Set with a ring made at once off a runtime: the writer waits [`GATHER`] itself first.
    gather: Arc<AtomicBool>,
    /// How long appends took, and how many rows wait for the writer.
    stats: Arc<Stats>,
    /// Calls are refused while the store's appends fail (`storage.ledger_unavailable`).
    refuse_while_failing: AtomicBool,
}

/// What the ledger's metrics read.
#[derive(Default)]
pub(crate) struct Stats {
    /// Time of [`Ledger::record_entry`] on the caller's thread: serializing, the journal
    /// write and the hand-off to the writer.
    append: Histogram,
    /// Rows handed to the writer and not inserted yet.
    pub(crate) queued: AtomicU64,
    /// The store's last append failed and is being tried again (the store is away).
    pub(crate) failing: AtomicBool,
    /// Why, while `failing`.
    pub(crate) failure: Mutex<String>,
    /// A failed append left rows to the journal (for good: they are the next opener's to
    /// replay), so a clean close keeps the journal.
    pub(crate) left_to_journal: AtomicBool,
}

impl Stats {
    /// An append failed with `why`; it is held and tried again.
    pub(crate) fn append_failed(&self, why: &str) {
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = why.to_owned();
        self.failing.store(true, Ordering::SeqCst);
    }

    /// An append went through: the store is back.
    pub(crate) fn append_succeeded(&self) {
        self.failing.store(false, Ordering::SeqCst);
    }
}

impl Shared {
    /// Wakes the writer now.
    fn ring_now(&self) {
        self.ringing.store(false, Ordering::SeqCst);
        self.writer.unpark();
    }
}

/// Rings the writer when dropped.
struct RingOnDrop(Arc<Shared>);

impl Drop for RingOnDrop {
    fn drop(&mut self) {
        self.0.ring_now();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.sender.send(Message::Stop);
        self.writer.unpark();
    }
}

impl Ledger {
    /// Opens (creating) the ledger at `path`, replays what a crash left in the journal, and
    /// starts the writer thread.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        let conn = store::open(path)?;
        Self::start(Box::new(conn), path, Tuning::for_this_machine())
    }

    /// [`Ledger::open`], then the retention rules: rows older than `older_than_ms` and past
    /// the newest `max_rows` go (the chain stays verifiable from its anchor); how many went.
    /// In this order: pruned before the journals are replayed, rows a gone process left in
    /// its journal (its files stay until then, even after a clean stop) would come back at the
    /// end of the chain, and the next prune take the newest rows for the oldest.
    pub fn open_keeping(
        path: &Path,
        older_than_ms: Option<i64>,
        max_rows: Option<i64>,
    ) -> Result<(Self, usize), LedgerError> {
        let ledger = Self::open(path)?;
        if older_than_ms.is_none() && max_rows.is_none() {
            return Ok((ledger, 0));
        }
        let mut conn = store::open(path)?;
        let pruned = store::prune(&mut conn, older_than_ms, max_rows)?;
        Ok((ledger, pruned))
    }

    /// Opens the ledger on PostgreSQL (`[storage] url`), journaling at `journal_base`
    /// (`<journal_base>.journal-<pid>`, its shards and their segments): connects, checks the
    /// schema is current (it is `switchboard migrate`'s to change), replays what gone
    /// processes left in their journals there, and starts the writer. Connecting happens on a
    /// thread of its own, so this may be called on an async runtime (it blocks until then).
    pub fn open_postgres(url: &str, journal_base: &Path) -> Result<Self, LedgerError> {
        let url = url.to_owned();
        let store = std::thread::Builder::new()
            .name("switchboard-ledger-connect".to_owned())
            .spawn(move || PostgresStore::open(&url))
            .map_err(|e| LedgerError::Postgres(format!("cannot start connecting: {e}")))?
            .join()
            .map_err(|_| LedgerError::Postgres("connecting panicked".to_owned()))??;
        Self::start(Box::new(store), journal_base, Tuning::for_this_machine())
    }

    /// [`catch_up`] into PostgreSQL: every journal at `journal_base` (running gateways'
    /// too) appended where its rows are missing, for readers such as `audit verify`. Runs
    /// on a thread of its own, so it may be called on an async runtime.
    pub fn catch_up_postgres(url: &str, journal_base: &Path) -> Result<usize, LedgerError> {
        let (url, base) = (url.to_owned(), journal_base.to_owned());
        std::thread::Builder::new()
            .name("switchboard-ledger-catch-up".to_owned())
            .spawn(move || catch_up(&mut PostgresStore::open(&url)?, &base))
            .map_err(|e| LedgerError::Postgres(format!("cannot start catching up: {e}")))?
            .join()
            .map_err(|_| LedgerError::Postgres("catching up panicked".to_owned()))?
    }

    /// Replays gone processes' journals into `store` (before this process's own journal is
    /// opened: its name may be a gone process's, whose rows it then takes over), opens the
    /// journal's shards and starts the writer thread.
    fn start(store: Box<dyn ChainStore>, path: &Path, tuning: Tuning) -> Result<Self, LedgerError> {
        // The replay runs on the writer's side: a store with a runtime of its own must not
        // be driven from the caller's async runtime.
        let path_owned = path.to_owned();
        let store = std::thread::Builder::new()
            .name("switchboard-ledger-replay".to_owned())
            .spawn(move || {
                let mut store = store;
                journal::replay(&mut *store, &path_owned).map(|replayed| (store, replayed))
            })
            .map_err(|e| LedgerError::Database(format!("cannot start the replay: {e}")))?
            .join()
            .map_err(|_| LedgerError::Database("the journal's replay panicked".to_owned()))?;
        let (store, replayed) = store?;
        if replayed > 0 {
            tracing::info!(replayed, "ledger: recovered rows from the journal");
        }
        let journal = Arc::new(Journals::open(path, tuning.shards)?);
        let (sender, receiver) = channel();
        let gather = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        let writer = writer::Writer {
            receiver,
            journal: journal.clone(),
            rotate_every: tuning.rotate_every,
            gather: gather.clone(),
            stats: stats.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("switchboard-ledger".to_owned())
            .spawn(move || writer.run(store))
            .map_err(|e| LedgerError::Database(format!("cannot start the writer: {e}")))?;
        Ok(Self {
            shared: Arc::new(Shared {
                journal,
                sender,
                path: path.to_owned(),
                writer: writer.thread().clone(),
                ringing: AtomicBool::new(false),
                gather,
                stats,
                refuse_while_failing: AtomicBool::new(false),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Whether calls are refused while the store's appends fail (PostgreSQL away;
    /// `storage.ledger_unavailable = "refuse"`): [`Recorder::unavailable`] then says why.
    /// Off, calls go on being journaled and reach the store when it is back.
    pub fn refuse_calls_while_unreachable(&self, refuse: bool) {
        self.shared
            .refuse_while_failing
            .store(refuse, Ordering::SeqCst);
    }

    /// Makes sure the writer will come for what was just sent: on a tokio runtime, a task
    /// rings it [`GATHER`] from now (one per batch: a ring on its way covers later rows);
    /// elsewhere it is rung at once.
    fn ring(&self) {
        // Read before written: while a ring is on its way (most calls, under load) every
        // core only reads the flag, and its cache line stays shared.
        if self.shared.ringing.load(Ordering::SeqCst)
            || self.shared.ringing.swap(true, Ordering::SeqCst)
        {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // Rung when the window has passed, or when the runtime drops the task first
                // (it is shutting down): a ring on its way is never lost.
                let ring = RingOnDrop(self.shared.clone());
                runtime.spawn(async move {
                    tokio::time::sleep(GATHER).await;
                    drop(ring);
                });
            }
            Err(_) => {
                self.shared.gather.store(true, Ordering::SeqCst);
                self.shared.ring_now();
            }
        }
    }

    /// Records one entry: journaled now, inserted by the writer soon.
    pub fn record_entry(&self, entry: LedgerEntry) {
        // Real time, not an injected clock: this is the append's own cost on this thread.
        let started = std::time::Instant::now();
        // The journal line is the entry's canonical text, handed to the writer with the
        // entry so it is serialized once.
        let mut line = entry.canonical();
        if line.is_empty() {
            return;
        }
        line.push('\n');
        // Sent still holding the shard's lock, so a rotation (which holds every shard's)
        // never retires a journaled entry the writer has not received.
        self.shared.journal.record(line, |mut line| {
            line.pop();
            self.shared.stats.queued.fetch_add(1, Ordering::Relaxed);
            let _ = self.shared.sender.send(Message::Entry(Box::new(Journaled {
                entry,
                canonical: line,
            })));
        });
        self.ring();
        self.shared.stats.append.observe(started.elapsed());
    }

    /// Rows handed to the writer and not inserted yet.
    pub fn queue_depth(&self) -> u64 {
        self.shared.stats.queued.load(Ordering::Relaxed)
    }

    /// Waits until everything recorded so far is in the database.
    pub fn flush(&self) {
        let (done, wait) = channel();
        if self.shared.sender.send(Message::Flush(done)).is_ok() {
            self.shared.ring_now();
            let _ = wait.recv();
        }
    }

    /// The close of a clean stop: [`Ledger::flush_within`], then this process's journal
    /// files removed if every row journaled is on record (none left to the journal by a
    /// failed append, none waiting for the store); whether everything got there. What did
    /// not stays in the journal, for the next opener to replay; so does a row recorded
    /// after the close.
    pub fn close_within(&self, patience: std::time::Duration) -> bool {
        if !self.flush_within(patience) {
            return false;
        }
        let stats = &self.shared.stats;
        self.shared.journal.close(|| {
            stats.queued.load(Ordering::SeqCst) == 0
                && !stats.left_to_journal.load(Ordering::SeqCst)
        })
    }

    /// [`Ledger::flush`], waiting `patience` at most (a shared store may be unreachable);
    /// whether everything got there. What did not stays in the journal.
    pub fn flush_within(&self, patience: std::time::Duration) -> bool {
        let (done, wait) = channel();
        if self.shared.sender.send(Message::Flush(done)).is_err() {
            return true;
        }
        self.shared.ring_now();
        wait.recv_timeout(patience).is_ok()
    }
}

fn millis(time: std::time::SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl LedgerEntry {
    /// The ledger row of a pipeline record.
    pub fn from_record(record: &CallRecord) -> Self {
        let (server, tool) = match &record.target {
            Some((server, tool)) => (Some(server.as_str().to_owned()), Some(tool.clone())),
            None => (None, None),
        };
        Self {
            call_id: record.call_id.clone(),
            started_ms: millis(record.started),
            agent: record.agent.clone(),
            subject: record.principal.as_ref().and_then(|p| p.subject.clone()),
            client_id: record.principal.as_ref().and_then(|p| p.client_id.clone()),
            session: record.session.clone(),
            tier: record.tier.clone(),
            exposed: record.name.clone(),
            server,
            tool,
            args_digest: record.arguments.as_ref().map(|a| a.digest.clone()),
            args_redacted: record.arguments.as_ref().map(|a| a.redacted.clone()),
            outcome: record.status.as_str().to_owned(),
            error: record.error.clone(),
            duration_us: i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX),
            cost: record.cost,
            approval: record.approval.clone(),
            result_bytes: record
                .result_bytes
                .map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
            cached: record.cached,
            trace_id: record.trace_id.clone(),
        }
    }
}

impl LedgerEntry {
    /// The ledger row of a configuration change: exposed as `switchboard.config/ACTION`,
    /// outcome `config_applied`, `config_failed` or `config_refused`, the actor as the agent,
    /// and the surface with the server's entry before and after (secrets already redacted,
    /// and redacted again here by the arguments' rules) as the arguments.
    pub fn from_change(change: &ChangeRecord) -> Self {
        let mut details = serde_json::Map::new();
        details.insert("surface".into(), change.surface.clone().into());
        details.insert(
            "before".into(),
            change.before.clone().unwrap_or(serde_json::Value::Null),
        );
        details.insert(
            "after".into(),
            change.after.clone().unwrap_or(serde_json::Value::Null),
        );
        Self {
            call_id: change.change_id.clone(),
            started_ms: millis(change.at),
            agent: change.actor.clone(),
            subject: None,
            client_id: None,
            session: None,
            tier: None,
            exposed: format!("switchboard.config/{}", change.action),
            server: Some(change.server.clone()),
            tool: None,
            args_digest: Some(redact::digest(&details)),
            args_redacted: Some(Arc::new(redact::redact(&details))),
            outcome: format!("config_{}", change.outcome),
            error: change.error.clone(),
            duration_us: 0,
            cost: 0.0,
            approval: None,
            result_bytes: None,
            cached: false,
            trace_id: None,
        }
    }
}

impl Recorder for Ledger {
    fn record(&self, record: &CallRecord) {
        self.record_entry(LedgerEntry::from_record(record));
    }

    fn record_change(&self, change: &ChangeRecord) {
        self.record_entry(LedgerEntry::from_change(change));
    }

    fn capture_arguments(&self, arguments: &Map<String, Value>) -> Option<RecordedArguments> {
        Some(RecordedArguments {
            digest: redact::digest(arguments),
            redacted: Arc::new(redact::redact(arguments)),
        })
    }

    fn unavailable(&self) -> Option<String> {
        let shared = &self.shared;
        if !shared.refuse_while_failing.load(Ordering::Relaxed)
            || !shared.stats.failing.load(Ordering::Relaxed)
        {
            return None;
        }
        let why = shared
            .stats
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Some(format!(
            "the audit ledger cannot reach its database ({why}); calls are refused until it \
             is back (storage.ledger_unavailable = \"refuse\"), and every call already \
             answered is kept in this replica's journal"
        ))
    }

    fn write_metrics(&self, out: &mut Exposition) {
        let stats = &self.shared.stats;
        out.family(
            "switchboard_ledger_append_seconds",
            Kind::Histogram,
            "Time to append one row to the audit ledger's journal on the caller's thread.",
        );
        out.histogram(
            "switchboard_ledger_append_seconds",
            &[],
            &stats.append.snapshot(),
        );
        out.family(
            "switchboard_ledger_queue_depth",
            Kind::Gauge,
            "Ledger rows journaled and waiting for the writer's insert.",
        );
        out.sample(
            "switchboard_ledger_queue_depth",
            &[],
            stats.queued.load(Ordering::Relaxed) as f64,
        );
    }
}

#[cfg(test)]
pub(crate) mod tests;
