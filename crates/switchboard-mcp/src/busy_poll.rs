//! Busy polling for a short window after activity, instead of sleeping at once.
//!
//! A one-at-a-time call through the gateway crosses two extra process hops (client → gateway
//! → upstream → gateway → client). When the gateway's runtime sleeps in `epoll_wait` between
//! them, each hop that lands on an idle core pays that core's wake-up: on a virtual machine an
//! inter-processor interrupt and a halt exit, measured at ~20 µs per hop on a 2-core KVM guest
//! (BENCHMARKS.md). For `window` after each request it starts or answers, the gateway instead
//! keeps polling the reactor without blocking — the idea of Linux's `SO_BUSY_POLL` — so an
//! upstream's quick answer or a client's next request is picked up without a wake-up.
//!
//! Each turn of the loop also yields the thread to the OS (`sched_yield`). When the upstream
//! or the client is woken onto the gateway's own core, the scheduler would otherwise let the
//! spinning gateway finish its time slice first, and the very process it waits for would
//! wait out the window: a sequential stdio → stdio call's added p90 was 149–208 µs that way
//! with one busy process on the machine, and 43–77 µs with the yield (BENCHMARKS.md).
//! With nothing else runnable on the core the yield returns at once.
//!
//! The cost is bounded: at most about two windows of CPU per call (one while the upstream
//! answers, one after the answer), nothing once the gateway is idle. It only works where
//! the polling task owns the reactor, which is a current-thread runtime (the stdio gateway,
//! and the HTTP gateway on machines of 1–2 cores); on a multi-thread runtime it stays off.
//! `gateway.busy_poll = "0"` turns it off.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

/// A handle to the polling task: cheap to clone; [`BusyPoll::kick`] marks activity. The
/// task ends with the last handle.
#[derive(Clone)]
pub struct BusyPoll {
    shared: Arc<Shared>,
    _stop: Arc<DropGuard>,
}

struct Shared {
    /// Time zero of `until`.
    base: Instant,
    window_nanos: u64,
    /// Nanoseconds after `base` until which the task polls.
    until: AtomicU64,
    wake: Notify,
    /// Reactor polls made while spinning (what the tests observe).
    polls: AtomicU64,
}

impl BusyPoll {
    /// Starts the polling task on the current runtime. `None` when `window` is zero or the
    /// runtime is multi-threaded (where the task could not poll the reactor itself).
    pub fn start(window: Duration) -> Option<Self> {
        if window.is_zero() {
            return None;
        }
        let handle = Handle::try_current().ok()?;
        if handle.runtime_flavor() != RuntimeFlavor::CurrentThread {
            tracing::debug!("busy polling stays off on a multi-thread runtime");
            return None;
        }
        let shared = Arc::new(Shared {
            base: Instant::now(),
            window_nanos: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            until: AtomicU64::new(0),
            wake: Notify::new(),
            polls: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        handle.spawn(spin(shared.clone(), stop.clone()));
        Some(Self {
            shared,
            _stop: Arc::new(stop.drop_guard()),
        })
    }

    /// Marks activity: the runtime keeps polling for the window from now.
    pub fn kick(&self) {
        let shared = &self.shared;
        let until = shared.now().saturating_add(shared.window_nanos);
        shared.until.fetch_max(until, Ordering::Relaxed);
        shared.wake.notify_one();
    }

    /// Kicks now and again when the returned guard is dropped: polling covers what follows
    /// the start of a piece of work and what follows its end.
    pub fn activity(&self) -> Activity<'_> {
        self.kick();
        Activity(self)
    }

    /// Reactor polls made while spinning so far.
    pub fn polls(&self) -> u64 {
        self.shared.polls.load(Ordering::Relaxed)
    }
}

/// See [`BusyPoll::activity`].
pub struct Activity<'a>(&'a BusyPoll);

impl Drop for Activity<'_> {
    fn drop(&mut self) {
        self.0.kick();
    }
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Waits for a kick, then yields until the window has passed: a yielding task makes a
/// current-thread runtime poll the reactor with a zero timeout instead of blocking on it,
/// and the OS-level yield hands the core to any process waiting for it.
async fn spin(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = shared.wake.notified() => {}
            () = stop.cancelled() => return,
        }
        while shared.now() < shared.until.load(Ordering::Relaxed) && !stop.is_cancelled() {
            shared.polls.fetch_add(1, Ordering::Relaxed);
            tokio::task::yield_now().await;
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn polls_for_the_window_after_a_kick_then_sleeps() {
        current_thread().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(5)).expect("current-thread runtime");
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(poll.polls(), 0, "no polling before any activity");
            poll.kick();
            tokio::time::sleep(Duration::from_millis(2)).await;
            let during = poll.polls();
            assert!(during > 0, "a kick starts polling");
            tokio::time::sleep(Duration::from_millis(30)).await;
            let after = poll.polls();
            tokio::time::sleep(Duration::from_millis(30)).await;
            assert_eq!(
                poll.polls(),
                after,
                "polling stops once the window has passed"
            );
            poll.kick();
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(poll.polls() > after, "a later kick polls again");
        });
    }

    #[test]
    fn other_tasks_run_while_it_polls() {
        current_thread().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(50)).expect("current-thread runtime");
            poll.kick();
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let _ = tx.send(7);
            });
            let got = tokio::time::timeout(Duration::from_millis(20), rx).await;
            assert_eq!(got.ok().and_then(Result::ok), Some(7));
        });
    }

    #[test]
    fn stays_off_when_zero_or_multi_threaded() {
        assert!(
            current_thread()
                .block_on(async { BusyPoll::start(Duration::ZERO) })
                .is_none()
        );
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        assert!(
            multi
                .block_on(async { BusyPoll::start(Duration::from_micros(100)) })
                .is_none()
        );
    }

    #[test]
    fn the_task_ends_with_its_last_handle() {
        current_thread().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(1)).expect("current-thread runtime");
            let weak = Arc::downgrade(&poll.shared);
            drop(poll);
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(weak.strong_count(), 0, "the polling task has ended");
        });
    }
}
