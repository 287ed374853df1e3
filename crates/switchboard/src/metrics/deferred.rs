//! Observations held until their thread goes idle, so that counting a call never delays its
//! answer.
//!
//! Counting into a series (finding it by its label values, a few atomic additions) costs a
//! call a few hundred instructions, a measurable part of what the gateway adds to a fast
//! call's latency. On a thread whose runtime runs idle work (`switchboard_core::idle`), an
//! observation is instead copied into that thread's buffer — its label values appended to one
//! string, no allocation once the buffer has grown — and counted when the thread parks, after
//! the answer was written. The buffer's idle work is registered once per thread.
//!
//! Each thread's buffer has its own lock, which only that thread and a scrape take: a scrape
//! first counts every thread's buffer, so it never reads stale figures. A thread that never
//! parks (steady load) counts its buffer itself every [`CAPACITY`] observations.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use thread_local::ThreadLocal;

use super::{Decision, Observation, Target};

/// Observations a thread holds at most before it counts them itself.
pub(super) const CAPACITY: usize = 64;

/// Whether [`Pending::hold`] held the observation in a buffer new to its thread (whose idle
/// work must be registered), in one that was there, or counted the buffer at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    New,
    Buffered,
    Counted,
}

/// Every thread's held observations.
#[derive(Default)]
pub(super) struct Pending {
    threads: ThreadLocal<Mutex<Buffer>>,
}

/// One thread's held observations; their label values are consecutive runs of `text`.
#[derive(Default)]
struct Buffer {
    text: String,
    held: Vec<Stored>,
    /// The thread's idle work was registered (by the observation that found it new).
    registered: bool,
}

/// A held observation, its labels as where each value ends in [`Buffer::text`].
struct Stored {
    family: Target,
    ends: [usize; 5],
    duration: Duration,
    decision: Option<Decision>,
}

impl Pending {
    /// Holds `observation` in this thread's buffer; at [`CAPACITY`] counts the whole buffer
    /// with `count` instead.
    pub(super) fn hold(
        &self,
        observation: &Observation<'_>,
        count: impl Fn(&Observation<'_>),
    ) -> Held {
        let mut buffer = lock(self.threads.get_or_default());
        let new = !std::mem::replace(&mut buffer.registered, true);
        let text = &mut buffer.text;
        let ends = observation.labels.map(|label| {
            text.push_str(label);
            text.len()
        });
        buffer.held.push(Stored {
            family: observation.family,
            ends,
            duration: observation.duration,
            decision: observation.decision,
        });
        if buffer.held.len() >= CAPACITY {
            buffer.count(&count);
            // The thread's idle work may still be queued: it finds the buffer empty.
            return Held::Counted;
        }
        if new { Held::New } else { Held::Buffered }
    }

    /// Counts this thread's buffer.
    pub(super) fn drain_this_thread(&self, count: impl Fn(&Observation<'_>)) {
        if let Some(buffer) = self.threads.get() {
            lock(buffer).count(&count);
        }
    }

    /// Counts every thread's buffer.
    pub(super) fn drain_all(&self, count: impl Fn(&Observation<'_>)) {
        for buffer in self.threads.iter() {
            lock(buffer).count(&count);
        }
    }
}

impl Buffer {
    fn count(&mut self, count: &impl Fn(&Observation<'_>)) {
        // Each observation's values follow the one before's.
        let mut start = 0;
        for held in &self.held {
            let labels = held.ends.map(|end| {
                let value = self.text.get(start..end).unwrap_or("");
                start = end;
                value
            });
            count(&Observation {
                family: held.family,
                labels,
                duration: held.duration,
                decision: held.decision,
            });
        }
        self.held.clear();
        self.text.clear();
    }
}

/// A buffer's lock; a panic while counting loses nothing but that count.
fn lock(buffer: &Mutex<Buffer>) -> MutexGuard<'_, Buffer> {
    buffer.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    fn observation(tool: &str) -> Observation<'_> {
        Observation {
            family: Target::Client,
            labels: ["tools/call", tool, "", "agent", "fx"],
            duration: Duration::from_micros(5),
            decision: None,
        }
    }

    #[test]
    fn held_observations_come_back_whole_and_the_buffer_counts_itself_when_full() {
        let pending = Pending::default();
        let seen = RefCell::new(Vec::new());
        let count = |o: &Observation<'_>| seen.borrow_mut().push(o.labels.map(str::to_owned));
        assert_eq!(pending.hold(&observation("a"), count), Held::New);
        assert_eq!(pending.hold(&observation("bb"), count), Held::Buffered);
        assert!(seen.borrow().is_empty());
        pending.drain_this_thread(count);
        assert_eq!(seen.borrow().len(), 2);
        assert_eq!(seen.borrow()[1], ["tools/call", "bb", "", "agent", "fx"]);
        seen.borrow_mut().clear();
        for i in 0..CAPACITY {
            let held = pending.hold(&observation("c"), count);
            let expected = match i {
                i if i + 1 == CAPACITY => Held::Counted,
                _ => Held::Buffered,
            };
            assert_eq!(held, expected, "observation {i}");
        }
        assert_eq!(seen.borrow().len(), CAPACITY);
        pending.drain_all(count);
        assert_eq!(seen.borrow().len(), CAPACITY);
    }

    #[test]
    fn a_scrape_counts_what_other_threads_hold() {
        let pending = Pending::default();
        std::thread::scope(|scope| {
            for tool in ["x", "y"] {
                let pending = &pending;
                scope.spawn(move || {
                    pending.hold(&observation(tool), |_| panic!("not counted yet"));
                });
            }
        });
        let seen = RefCell::new(Vec::new());
        pending.drain_all(|o| seen.borrow_mut().push(o.labels[1].to_owned()));
        seen.borrow_mut().sort();
        assert_eq!(*seen.borrow(), ["x", "y"]);
    }
}
