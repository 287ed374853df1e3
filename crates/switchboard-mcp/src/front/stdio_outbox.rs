//! The stdio front's outbox: every line the front writes to its client, and the bounds that
//! keep a client that does not read its output from making the gateway hold ever more.
//!
//! Answers are owed: a line that will be answered (a request, or a line that could not be
//! read) claims an [`Owed`] once it has been read — at most `max_owed_answers` at once
//! ([`MAX_OWED_ANSWERS`] unless the front's options say otherwise) — and gives it back when
//! its answer has been written. Responses to questions relayed to the client and
//! notifications (`notifications/cancelled` among them) claim nothing: they are always read
//! and handled at once, since the calls that hold the owed answers may be waiting on them.
//! When the bound is full, a request's claim waits (its call does not start until it is
//! owed), and reading goes on past it, to the next line that will be answered, which waits
//! until the claim before it is owed. So once that many answers wait to be written (or are
//! being worked out), the client's input stops being read with at most two requests held:
//! backpressure, and no answer is ever dropped. Notifications are not owed. Those that only
//! report along the way (progress, an upstream's log messages) are dropped while more than
//! [`NOTE_BUDGET_BYTES`] are unwritten; announcements (list changes, resource updates, task
//! statuses) wait for room instead, while their sources coalesce (a watch channel keeps only
//! the latest version); a question relayed to the client is always queued, since a call
//! waits on it (and calls are bounded by the owed answers).
//!
//! Must never: block a call on a client that does not read (a call's answer is queued, never
//! awaited), nor keep a permit once its line is written or the client is gone (the writer's
//! end dropped drops what was queued, permits and all).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::jsonrpc::Message;

/// How many answers a stdio client may be owed at once by default (its requests being
/// answered, and answers written but not yet taken by the client); past this its input waits.
pub const MAX_OWED_ANSWERS: usize = 1024;

/// How many bytes of notifications may wait unwritten before those that only report are
/// dropped and announcements wait.
pub const NOTE_BUDGET_BYTES: usize = 1 << 20;

/// How many answers are owed, and the wake-up of the one claim that may wait for room: an
/// atomic count rather than a semaphore, whose every release takes a lock — this is paid on
/// every request.
pub(super) struct Bound {
    owed: AtomicUsize,
    max: usize,
    room: Notify,
}

impl Bound {
    /// An answer owed now, if the bound has room.
    fn try_owe(self: &Arc<Self>) -> Option<Owed> {
        self.owed
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |owed| {
                (owed < self.max).then_some(owed + 1)
            })
            .ok()
            .map(|_| Owed {
                bound: self.clone(),
            })
    }

    /// An answer owed once the bound has room.
    async fn owe(self: &Arc<Self>) -> Owed {
        loop {
            let room = self.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if let Some(owed) = self.try_owe() {
                return owed;
            }
            room.await;
        }
    }
}

/// One answer owed to the client: held from its request's claim until its answer is written.
/// Dropping it pays what was owed.
pub(super) struct Owed {
    bound: Arc<Bound>,
}

impl Drop for Owed {
    fn drop(&mut self) {
        // Only a full bound has a claim waiting for room (one at a time).
        if self.bound.owed.fetch_sub(1, Ordering::AcqRel) == self.bound.max {
            self.bound.room.notify_one();
        }
    }
}

/// The claim of a line that will be answered: its answer owed already, or its place in line
/// to be owed one ([`Claim::owed`]).
pub(super) enum Claim {
    Owed(Owed),
    Waiting {
        bound: Arc<Bound>,
        /// Dropped once owed (or given up): the reader's next claim waits for that.
        _turn: oneshot::Sender<()>,
    },
}

/// The reader's side of the owed answers: at most one claim waits for room at a time.
pub(super) struct Claims {
    bound: Arc<Bound>,
    waiting: Option<oneshot::Receiver<()>>,
}

struct Queued {
    line: String,
    owed: Option<Owed>,
}

struct Shared {
    /// Bytes of notifications queued and not yet written.
    unwritten_notes: AtomicUsize,
    /// Woken whenever a batch has been written.
    room: Notify,
    owed: Arc<Bound>,
}

/// The sending side, one per connection, cloned into every task that writes.
#[derive(Clone)]
pub(super) struct Outbox {
    lines: mpsc::UnboundedSender<Queued>,
    shared: Arc<Shared>,
}

/// The writing side: [`Writer::run`] on a task of its own.
pub(super) struct Writer {
    lines: mpsc::UnboundedReceiver<Queued>,
    shared: Arc<Shared>,
}

impl Outbox {
    /// An outbox that owes at most `max_owed_answers` answers at once (at least one).
    pub(super) fn new(max_owed_answers: usize) -> (Outbox, Writer) {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            unwritten_notes: AtomicUsize::new(0),
            room: Notify::new(),
            owed: Arc::new(Bound {
                owed: AtomicUsize::new(0),
                max: max_owed_answers.max(1),
                room: Notify::new(),
            }),
        });
        let outbox = Outbox {
            lines: tx,
            shared: shared.clone(),
        };
        (outbox, Writer { lines: rx, shared })
    }

    /// The reader's claims on this outbox's owed answers.
    pub(super) fn claims(&self) -> Claims {
        Claims {
            bound: self.shared.owed.clone(),
            waiting: None,
        }
    }

    /// Queues the answer to a request (or to a line that could not be read), paying what
    /// was owed once it is written.
    pub(super) fn answer(&self, line: String, owed: Owed) {
        let _ = self.lines.send(Queued {
            line,
            owed: Some(owed),
        });
    }

    /// Queues a message a call sends along the way: a question relayed to the client always
    /// (the call waits on it), a notification only if the notification budget has room.
    pub(super) fn relay(&self, message: &Message) {
        match message {
            Message::Notification { .. } => self.report(message.to_line()),
            _ => {
                self.queue_note(message.to_line());
            }
        }
    }

    /// Queues a notification that only reports (progress, a log message), or drops it if
    /// the client is that far behind.
    pub(super) fn report(&self, line: String) {
        if self.shared.unwritten_notes.load(Ordering::Relaxed) <= NOTE_BUDGET_BYTES {
            self.queue_note(line);
        }
    }

    /// Queues an announcement once the notification budget has room. False when the client
    /// is gone.
    pub(super) async fn announce(&self, line: String) -> bool {
        loop {
            let room = self.shared.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if self.lines.is_closed() {
                return false;
            }
            if self.shared.unwritten_notes.load(Ordering::Relaxed) <= NOTE_BUDGET_BYTES {
                break;
            }
            room.await;
        }
        self.queue_note(line)
    }

    fn queue_note(&self, line: String) -> bool {
        let len = line.len();
        self.shared
            .unwritten_notes
            .fetch_add(len, Ordering::Relaxed);
        let sent = self.lines.send(Queued { line, owed: None }).is_ok();
        if !sent {
            self.shared
                .unwritten_notes
                .fetch_sub(len, Ordering::Relaxed);
        }
        sent
    }
}

impl Claims {
    /// Claims an answer for a line just read: owed at once while the bound has room, else a
    /// claim that waits for it. Returns once the claim before it, if it waited, is owed (or
    /// given up), so only one claim waits at a time.
    pub(super) async fn claim(&mut self) -> Claim {
        if let Some(previous) = self.waiting.take() {
            // Err only means the previous claim is gone: nothing left to wait for.
            let _ = previous.await;
        }
        match self.bound.try_owe() {
            Some(owed) => Claim::Owed(owed),
            None => {
                let (turn, waiting) = oneshot::channel();
                self.waiting = Some(waiting);
                Claim::Waiting {
                    bound: self.bound.clone(),
                    _turn: turn,
                }
            }
        }
    }
}

impl Claim {
    /// Waits until the answer is owed.
    pub(super) async fn owed(self) -> Owed {
        match self {
            Claim::Owed(owed) => owed,
            Claim::Waiting { bound, _turn } => bound.owe().await,
        }
    }
}

impl Writer {
    /// Writes what is queued, a burst at a time, until every [`Outbox`] is dropped or the
    /// client is gone.
    pub(super) async fn run(mut self, mut output: impl AsyncWrite + Unpin) {
        let mut buffer = Vec::with_capacity(8192);
        let mut paid = Vec::new();
        while let Some(first) = self.lines.recv().await {
            buffer.clear();
            let mut notes = 0;
            let mut take = |queued: Queued| {
                buffer.extend_from_slice(queued.line.as_bytes());
                buffer.push(b'\n');
                match queued.owed {
                    Some(owed) => paid.push(owed),
                    None => notes += queued.line.len(),
                }
            };
            take(first);
            while let Ok(more) = self.lines.try_recv() {
                take(more);
            }
            let written = output.write_all(&buffer).await.is_ok() && output.flush().await.is_ok();
            self.shared
                .unwritten_notes
                .fetch_sub(notes, Ordering::Relaxed);
            paid.clear();
            let room_made = notes > 0;
            if !written {
                // The client is gone (broken pipe): nothing left to say. Closing drops what
                // is queued and everything sent later, so no answer stays owed.
                self.lines.close();
                while self.lines.try_recv().is_ok() {}
                self.shared.room.notify_waiters();
                return;
            }
            // Announcements wait for notes' room: only written notes make any.
            if room_made {
                self.shared.room.notify_waiters();
            }
        }
    }
}
