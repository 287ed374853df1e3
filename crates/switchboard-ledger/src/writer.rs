//! The writer thread and what it writes to: [`ChainStore`], with two implementations — the
//! SQLite file ([`rusqlite::Connection`], [`crate::store`]) and the shared PostgreSQL
//! ([`crate::postgres::PostgresStore`]).
//!
//! The writer sleeps until rung, then appends everything sent so far, [`BATCH`] rows per
//! transaction. A store that [`ChainStore::retries`] keeps a failed batch and tries it again
//! after a [`Backoff`] wait (a lost connection costs time, never a row); a flush waits until
//! its rows are on record. One that does not (SQLite) leaves a failed batch to the journal,
//! replayed when the ledger is next opened. When the last handle goes, the writer tries its
//! held rows for [`STOP_PATIENCE`] at most, then leaves them to the journal.
//!
//! Every `rotate_every` rows it rolls the journal over ([`Journals::rotate`]: the shards'
//! locks are held to swap file handles and receive what was sent, never for an append nor
//! any file operation) and deletes the retired segments once every row received up to the
//! swap is on record — after the held rows
//! went in, for a store that retries — unless a row was left to the journal meanwhile: then
//! they are kept for the next opener (module `journal`, "Rotation").

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crate::backoff::Backoff;
use crate::journal::{self, Journals};
use crate::{BATCH, GATHER, Journaled, LedgerEntry, LedgerError, Message, Stats};

/// How long a stopping writer keeps trying rows it could not append.
pub const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// Where the ledger's rows go: one hash chain, extended a batch at a time.
pub trait ChainStore: Send + 'static {
    /// Appends the rows (each an entry and its canonical text, which is what is hashed) whose
    /// call ids are not on record yet, extending the chain in order; returns how many were
    /// new. All or nothing: after an error none of them is on record.
    fn append(&mut self, rows: &[(&LedgerEntry, &str)]) -> Result<usize, LedgerError>;

    /// Whether a failed append is worth trying again: the store is across a network and
    /// comes back. Default: no (the rows stay in the journal).
    fn retries(&self) -> bool {
        false
    }
}

impl ChainStore for rusqlite::Connection {
    fn append(&mut self, rows: &[(&LedgerEntry, &str)]) -> Result<usize, LedgerError> {
        crate::store::insert_canonical(
            self,
            rows.iter()
                .map(|(entry, canonical)| (*entry, Cow::Borrowed(*canonical))),
        )
    }
}

fn append_journaled(store: &mut dyn ChainStore, rows: &[Journaled]) -> Result<usize, LedgerError> {
    let rows: Vec<(&LedgerEntry, &str)> = rows
        .iter()
        .map(|row| (&row.entry, row.canonical.as_str()))
        .collect();
    store.append(&rows)
}

/// What the writer thread needs besides its store.
pub(crate) struct Writer {
    pub receiver: Receiver<Message>,
    pub journal: Arc<Journals>,
    /// The journal is rolled over once this many rows were inserted since the last time.
    pub rotate_every: usize,
    pub gather: Arc<AtomicBool>,
    pub stats: Arc<Stats>,
}

/// The writer's state between rounds.
struct Round {
    since_rotation: usize,
    running: bool,
    /// Rows a failed append left and what a rotation received, tried first, a batch at a
    /// time (taken off the front: a rotation may hold a backlog of a hundred thousand).
    held: VecDeque<Journaled>,
    flushes: Vec<Sender<()>>,
    backoff: Backoff,
    /// When a stopping writer gives up on held rows.
    give_up: Option<Instant>,
    /// Retired journal segments to delete once every row received so far is on record.
    retired: Vec<PathBuf>,
    /// A row was left to the journal (its append failed for good) since the last rotation:
    /// the segments retired so far and at the next rotation, one of which holds it, are kept.
    left_to_journal: bool,
}

impl Writer {
    /// The thread's body: ends on [`Message::Stop`] (or when every sender is gone).
    pub fn run(self, mut store: Box<dyn ChainStore>) {
        let mut round = Round {
            since_rotation: 0,
            running: true,
            held: VecDeque::new(),
            flushes: Vec::new(),
            backoff: Backoff::default(),
            give_up: None,
            retired: Vec::new(),
            left_to_journal: false,
        };
        while round.running || !round.held.is_empty() {
            if round.held.is_empty() {
                std::thread::park();
                if self.gather.swap(false, Ordering::SeqCst) {
                    std::thread::sleep(GATHER);
                }
            }
            self.drain(&mut *store, &mut round);
            if !round.running && round.give_up.is_some_and(|at| Instant::now() >= at) {
                break;
            }
        }
        for done in round.flushes.drain(..) {
            let _ = done.send(());
        }
    }

    /// Appends batches until the queue is empty (or an append failed and must wait).
    fn drain(&self, store: &mut dyn ChainStore, round: &mut Round) {
        loop {
            // Held rows first (a failed batch, or what a rotation received), a batch at a time.
            let from_held = round.held.len().min(BATCH);
            let mut batch: Vec<Journaled> = round.held.drain(..from_held).collect();
            while batch.len() < BATCH && round.running {
                match self.receiver.try_recv() {
                    Ok(Message::Entry(row)) => batch.push(*row),
                    Ok(Message::Flush(done)) => round.flushes.push(done),
                    Ok(Message::Stop) | Err(TryRecvError::Disconnected) => {
                        round.running = false;
                        round.give_up = Some(Instant::now() + STOP_PATIENCE);
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            if batch.is_empty() && round.flushes.is_empty() {
                return;
            }
            let full = batch.len() >= BATCH;
            match append_journaled(store, &batch) {
                Ok(inserted) => {
                    round.since_rotation += inserted;
                    round.backoff.reset();
                    self.stats.append_succeeded();
                    self.settled(batch.len());
                    round.remove_retired();
                }
                Err(error) if store.retries() && !round.gave_up() => {
                    self.hold(round, batch, &error);
                    return;
                }
                Err(error) => {
                    tracing::error!("{error}; the rows stay in the journal");
                    self.stats.left_to_journal.store(true, Ordering::SeqCst);
                    self.settled(batch.len());
                    round.left_to_journal = true;
                }
            }
            if round.since_rotation >= self.rotate_every {
                round.since_rotation = 0;
                self.rotate(round);
            }
            // A flush is answered once every row sent before it is on record: none held.
            if round.held.is_empty() {
                for done in round.flushes.drain(..) {
                    let _ = done.send(());
                }
            }
            if !round.running || (!full && round.held.is_empty()) {
                return;
            }
        }
    }

    /// Keeps `rows`, whose append failed with `error`, to try them first after a backoff
    /// wait (the retired journal segments wait for them).
    fn hold(&self, round: &mut Round, rows: Vec<Journaled>, error: &LedgerError) {
        let wait = round.backoff.next_wait();
        tracing::warn!(
            rows = rows.len(),
            failures = round.backoff.failures(),
            "{error}; the rows are kept (and journaled), trying again in {wait:?}"
        );
        self.stats.append_failed(&error.to_string());
        // Before the rows still held (a rotation's): the order they were sent in.
        for row in rows.into_iter().rev() {
            round.held.push_front(row);
        }
        std::thread::sleep(wait);
    }

    /// Rows out of the writer's hands (on record, or left to the journal).
    fn settled(&self, rows: usize) {
        self.stats.queued.fetch_sub(rows as u64, Ordering::Relaxed);
    }

    /// Rolls the journal over, receiving (holding every shard's lock) everything sent so
    /// far (module `journal`). What it received is held, to be appended first and a batch
    /// at a time like any other rows — never in one transaction, which on PostgreSQL would
    /// hold the chain's head for as long as a backlog takes — and the retired segments are
    /// deleted once nothing is held ([`Round::remove_retired`]).
    fn rotate(&self, round: &mut Round) {
        let mut rest = Vec::new();
        let retired = self.journal.rotate(|| {
            while let Ok(message) = self.receiver.try_recv() {
                match message {
                    Message::Entry(row) => rest.push(*row),
                    Message::Flush(done) => round.flushes.push(done),
                    Message::Stop => {
                        round.running = false;
                        round.give_up = Some(Instant::now() + STOP_PATIENCE);
                        break;
                    }
                }
            }
        });
        if std::mem::take(&mut round.left_to_journal) {
            tracing::warn!(
                segments = round.retired.len() + retired.len(),
                "ledger: rows were left to the journal; its retired segments are kept for the \
                 next opener to replay"
            );
            round.retired.clear();
        } else {
            round.retired.extend(retired);
        }
        round.held.extend(rest);
        round.remove_retired();
    }
}

impl Round {
    /// Deletes the retired segments if every row received so far is on record: none held,
    /// none left to the journal since they were retired.
    fn remove_retired(&mut self) {
        if self.held.is_empty() && !self.left_to_journal && !self.retired.is_empty() {
            journal::remove_segments(&self.retired);
            self.retired.clear();
        }
    }

    fn gave_up(&self) -> bool {
        self.give_up.is_some_and(|at| Instant::now() >= at)
    }
}
