//! The stdio front's outbox: every line the front writes to its client, and the bounds that
//! keep a client that does not read its output from making the gateway hold ever more.
//!
//! Answers are owed: a request claims an [`Owed`] once it has been read — at most
//! `max_owed_answers` at once ([`MAX_OWED_ANSWERS`] unless the front's options say
//! otherwise) — and gives it back when its answer has been written. Responses to questions
//! relayed to the client and notifications (`notifications/cancelled` among them) claim
//! nothing: they are always read and handled at once, since the calls that hold the owed
//! answers may be waiting on them.
//!
//! When the bound is full, a request's claim waits for room (its call does not start until
//! it is owed), and reading goes on: the client's answers to relayed questions may come
//! after more requests, and the calls holding the owed answers wait on them. Claims are
//! owed in the order their lines were read. At most [`MAX_WAITING_REQUESTS`] requests, of
//! at most [`MAX_WAITING_BYTES`] as read (one alone may be as large as a message may be),
//! wait at once; a request past that is refused at once and never run ([`Refused`]: an
//! error with its id saying how many answers the client is owed and to send fewer requests
//! at once). A line that could not be read (not JSON, not JSON-RPC, over the message limit)
//! claims nothing either: its error is answered like a refusal, so it never holds an owed
//! answer or a place in line that a request needs. A refusal is an answer too, written at
//! once, ahead of requests read before it that still wait; the client's input waits while
//! more than [`REFUSAL_BUDGET_BYTES`] of refusals are unwritten. So the input of a client
//! that reads its output is always read on; it stops being read only while the client
//! leaves that many refusals unread — one that does not read its output at all cannot be
//! sending answers to questions it has not read, and one that reads again is read again. No
//! answer is ever dropped: every request read is answered, or refused, unless the client
//! cancels it (then it gets no answer, as before).
//!
//! Notifications are not owed. Those that only report along the way (progress, an
//! upstream's log messages) are dropped while more than [`NOTE_BUDGET_BYTES`] are unwritten;
//! announcements (list changes, resource updates, task statuses) wait for room instead,
//! while their sources coalesce (a watch channel keeps only the latest version); a question
//! relayed to the client is always queued, since a call waits on it (and calls are bounded
//! by the owed answers).
//!
//! Must never: block a call on a client that does not read (a call's answer is queued, never
//! awaited), nor keep a permit once its line is written or the client is gone (the writer's
//! end dropped drops what was queued, permits and all); nor cost a request more than one
//! atomic claim while the bound has room (waiting and its counts happen only when it is
//! full).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{Message, RequestId, RpcError, code};

/// How many answers a stdio client may be owed at once by default (its requests being
/// answered, and answers written but not yet taken by the client); past this its input waits.
pub const MAX_OWED_ANSWERS: usize = 1024;

/// How many requests may wait for room at once, the owed answers being at their bound; past
/// this a request is refused. A client sends a handful at once between reading its answers
/// (a model's parallel tool calls); 64 leaves it plenty, and what they hold stays small
/// beside the calls of the owed answers.
pub const MAX_WAITING_REQUESTS: usize = 64;

/// How many bytes of requests (as read) may wait for room at once: 4 MiB, 64 KiB a request
/// at the count's bound. A request that would wait alone waits whatever its size (up to the
/// message limit), so a large one is refused only behind others.
pub const MAX_WAITING_BYTES: usize = 4 << 20;

/// How many bytes of refused requests' answers may wait unwritten before the client's input
/// waits: 64 KiB, some 250 refusals. A client that reads its output takes them as they come;
/// one that does not is read no further, so a client that sends far past the bounds before
/// reading has only that many of its requests refused, and the rest are read once it reads.
pub const REFUSAL_BUDGET_BYTES: usize = 64 << 10;

/// How many bytes of notifications may wait unwritten before those that only report are
/// dropped and announcements wait.
pub const NOTE_BUDGET_BYTES: usize = 1 << 20;

/// How many answers are owed, and the wake-up of the claim first in line for room: an
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
        // Only a full bound has a claim waiting for room (the first in line; the others wait
        // for its turn).
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
        /// The turn of the claim read before it, while that one waits too.
        after: Option<oneshot::Receiver<()>>,
        /// Dropped once owed (or given up): the claim read next waits for that.
        _turn: oneshot::Sender<()>,
        _place: Place,
    },
}

/// The reader's side of the owed answers: claims wait for room one behind the other.
pub(super) struct Claims {
    bound: Arc<Bound>,
    /// The turn of the last claim read that waits: the next claim waits behind it.
    last: Option<oneshot::Receiver<()>>,
    waiting: Arc<WaitingCount>,
}

/// How many requests wait for room, and how many bytes they were as read.
#[derive(Default)]
struct WaitingCount {
    requests: AtomicUsize,
    bytes: AtomicUsize,
}

/// A waiting claim's share of [`WaitingCount`], given back when it stops waiting.
pub(super) struct Place {
    count: Arc<WaitingCount>,
    bytes: usize,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.count.requests.fetch_sub(1, Ordering::Relaxed);
        self.count.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A request refused at once: the most answers are owed and the most requests wait already.
#[derive(Debug)]
pub(super) struct Refused {
    max_owed: usize,
}

impl Refused {
    /// The error that answers the refused request `id`.
    pub(super) fn answer(&self, id: RequestId) -> Message {
        let max_owed = self.max_owed;
        let mut error = RpcError::new(
            code::TOO_MANY_REQUESTS_WAITING,
            format!(
                "this client is owed the most answers the gateway holds for it ({max_owed}) \
                 and the most requests wait for room already; this request was not run: send \
                 fewer requests at once"
            ),
        );
        error.data = Some(json!({ "owedAnswers": max_owed }));
        Message::Error {
            id: Some(id),
            error,
        }
    }
}

struct Queued {
    line: String,
    kind: Kind,
}

/// What a queued line is, and so what its writing pays back.
enum Kind {
    Answer(Owed),
    Unowed(Unowed),
}

/// A line that owes nothing, counted against a budget of unwritten bytes instead.
#[derive(Clone, Copy)]
enum Unowed {
    Note,
    Refusal,
}

struct Shared {
    /// Bytes of notifications queued and not yet written.
    unwritten_notes: AtomicUsize,
    /// Bytes of refusals queued and not yet written.
    unwritten_refusals: AtomicUsize,
    /// Woken whenever a batch has been written.
    room: Notify,
    owed: Arc<Bound>,
}

impl Shared {
    /// The bytes of `unowed` lines unwritten, and how many may be before more wait.
    fn unwritten(&self, unowed: Unowed) -> (&AtomicUsize, usize) {
        match unowed {
            Unowed::Note => (&self.unwritten_notes, NOTE_BUDGET_BYTES),
            Unowed::Refusal => (&self.unwritten_refusals, REFUSAL_BUDGET_BYTES),
        }
    }
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
            unwritten_refusals: AtomicUsize::new(0),
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
            last: None,
            waiting: Arc::default(),
        }
    }

    /// Queues the answer to a request, paying what was owed once it is written.
    pub(super) fn answer(&self, line: String, owed: Owed) {
        let _ = self.lines.send(Queued {
            line,
            kind: Kind::Answer(owed),
        });
    }

    /// Queues a message a call sends along the way: a question relayed to the client always
    /// (the call waits on it), a notification only if the notification budget has room.
    pub(super) fn relay(&self, message: &Message) {
        match message {
            Message::Notification { .. } => self.report(message.to_line()),
            _ => {
                self.queue_unowed(message.to_line(), Unowed::Note);
            }
        }
    }

    /// Queues a notification that only reports (progress, a log message), or drops it if
    /// the client is that far behind.
    pub(super) fn report(&self, line: String) {
        if self.shared.unwritten_notes.load(Ordering::Relaxed) <= NOTE_BUDGET_BYTES {
            self.queue_unowed(line, Unowed::Note);
        }
    }

    /// Queues an announcement once the notification budget has room. False when the client
    /// is gone.
    pub(super) async fn announce(&self, line: String) -> bool {
        self.room_for(Unowed::Note).await && self.queue_unowed(line, Unowed::Note)
    }

    /// Queues the answer to a refused request (or the error that answers a line that could
    /// not be read) once the refusal budget has room. False when the client is gone.
    pub(super) async fn refuse(&self, line: String) -> bool {
        self.room_for(Unowed::Refusal).await && self.queue_unowed(line, Unowed::Refusal)
    }

    /// Waits until no more than the budget of `unowed` lines is unwritten.
    /// False when the client is gone.
    async fn room_for(&self, unowed: Unowed) -> bool {
        let (unwritten, budget) = self.shared.unwritten(unowed);
        loop {
            let room = self.shared.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            if self.lines.is_closed() {
                return false;
            }
            if unwritten.load(Ordering::Relaxed) <= budget {
                return true;
            }
            room.await;
        }
    }

    /// Queues a note or a refusal, counting its bytes until it is written.
    fn queue_unowed(&self, line: String, unowed: Unowed) -> bool {
        let (unwritten, _) = self.shared.unwritten(unowed);
        let len = line.len();
        unwritten.fetch_add(len, Ordering::Relaxed);
        let kind = Kind::Unowed(unowed);
        let sent = self.lines.send(Queued { line, kind }).is_ok();
        if !sent {
            unwritten.fetch_sub(len, Ordering::Relaxed);
        }
        sent
    }
}

impl Claims {
    /// Claims an answer for a line of `bytes` just read: owed at once while the bound has
    /// room and no claim waits, else a claim that waits behind those read before it — or
    /// refused, when the most requests wait already.
    pub(super) fn claim(&mut self, bytes: usize) -> Result<Claim, Refused> {
        if let Some(last) = &mut self.last {
            if let Err(oneshot::error::TryRecvError::Empty) = last.try_recv() {
                return self.wait(bytes);
            }
            // The last claim that waited is owed or given up, and every one before it.
            self.last = None;
        }
        match self.bound.try_owe() {
            Some(owed) => Ok(Claim::Owed(owed)),
            None => self.wait(bytes),
        }
    }

    fn wait(&mut self, bytes: usize) -> Result<Claim, Refused> {
        let requests = self.waiting.requests.load(Ordering::Relaxed);
        let held = self.waiting.bytes.load(Ordering::Relaxed);
        if requests > 0
            && (requests >= MAX_WAITING_REQUESTS || held.saturating_add(bytes) > MAX_WAITING_BYTES)
        {
            return Err(Refused {
                max_owed: self.bound.max,
            });
        }
        self.waiting.requests.fetch_add(1, Ordering::Relaxed);
        self.waiting.bytes.fetch_add(bytes, Ordering::Relaxed);
        let (turn, next) = oneshot::channel();
        Ok(Claim::Waiting {
            bound: self.bound.clone(),
            after: self.last.replace(next),
            _turn: turn,
            _place: Place {
                count: self.waiting.clone(),
                bytes,
            },
        })
    }
}

impl Claim {
    /// Waits until the answer is owed, claims being owed in the order they were read; `None`
    /// when `cancel` fires while it waits (an answer owed already is returned as is). A claim
    /// cancelled behind another keeps its place until that one is owed, so those read after
    /// it stay in order.
    pub(super) async fn owed(self, cancel: &CancellationToken) -> Option<Owed> {
        match self {
            Claim::Owed(owed) => Some(owed),
            Claim::Waiting {
                bound,
                after,
                _turn,
                _place,
            } => {
                if let Some(after) = after {
                    // Err only means the claim before is owed or given up: its turn is over.
                    let _ = after.await;
                }
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => None,
                    owed = bound.owe() => Some(owed),
                }
            }
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
            let (mut notes, mut refusals) = (0, 0);
            let mut take = |queued: Queued| {
                buffer.extend_from_slice(queued.line.as_bytes());
                buffer.push(b'\n');
                match queued.kind {
                    Kind::Answer(owed) => paid.push(owed),
                    Kind::Unowed(Unowed::Note) => notes += queued.line.len(),
                    Kind::Unowed(Unowed::Refusal) => refusals += queued.line.len(),
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
            self.shared
                .unwritten_refusals
                .fetch_sub(refusals, Ordering::Relaxed);
            paid.clear();
            let room_made = notes > 0 || refusals > 0;
            if !written {
                // The client is gone (broken pipe): nothing left to say. Closing drops what
                // is queued and everything sent later, so no answer stays owed.
                self.lines.close();
                while self.lines.try_recv().is_ok() {}
                self.shared.room.notify_waiters();
                return;
            }
            // Announcements and refusals wait for their budget's room: only written notes and
            // refusals make any.
            if room_made {
                self.shared.room.notify_waiters();
            }
        }
    }
}

#[cfg(test)]
#[path = "stdio_outbox_tests.rs"]
mod tests;
