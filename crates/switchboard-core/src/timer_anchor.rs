//! A timer kept armed a short way ahead while a thread serves calls, so that arming a call's
//! own timers does not wake the runtime's driver.
//!
//! tokio's time driver wakes itself (a write to its eventfd: a system call, then one more turn
//! of the event loop to read it) whenever a timer is armed earlier than the earliest one it
//! parked with — and always when it parked with none. A call arms several timers (the call's
//! deadline, the attempt's deadline, the answer stream's keep-alive), each at least a second
//! ahead in the default configuration, so on a thread with no other timer each call woke its
//! driver about once, for nothing: the timers were armed from the driver's own thread, which
//! was running. With a timer armed every [`PERIOD`] on the thread's runtime, the driver parks
//! with a wake-up at most that far ahead, and later timers leave it asleep.
//!
//! [`keep`] is called as each call starts: it counts the call and, when none runs on this
//! thread, spawns the anchor, which re-arms itself every [`PERIOD`] as long as calls came
//! since its last turn and then ends: an idle gateway is not woken by it.

use std::cell::Cell;
use std::time::Duration;

/// How far ahead the anchor's timer is armed: shorter than the deadlines calls arm (at least
/// a second unless a tier's ceiling is shorter), long enough to cost nothing while it runs.
pub const PERIOD: Duration = Duration::from_millis(250);

thread_local! {
    /// Calls started on this thread (wrapping).
    static CALLS: Cell<u64> = const { Cell::new(0) };
    /// An anchor was spawned from this thread and has not ended.
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// Notes a call starting on this thread, and keeps an anchor armed on the current runtime
/// while calls come. Outside a runtime it does nothing.
pub fn keep() {
    CALLS.set(CALLS.get().wrapping_add(1));
    if ARMED.get() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    ARMED.set(true);
    runtime.spawn(anchor(Armed));
}

/// Re-arms every [`PERIOD`] while calls came on this thread since the last turn.
/// `_armed` disarms the thread however the task ends: also when its runtime drops it, polled
/// or not, so that a later runtime on this thread gets an anchor of its own.
async fn anchor(_armed: Armed) {
    let mut seen = CALLS.get();
    loop {
        tokio::time::sleep(PERIOD).await;
        let now = CALLS.get();
        if now == seen {
            break;
        }
        seen = now;
    }
}

/// Clears [`ARMED`] when dropped.
struct Armed;

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED.set(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_anchor_runs_while_calls_come_and_ends_when_they_stop() {
        keep();
        assert!(ARMED.get(), "the first call arms the anchor");
        // Calls keep coming: the anchor stays.
        for _ in 0..4 {
            tokio::time::sleep(PERIOD / 2).await;
            keep();
        }
        assert!(ARMED.get());
        // No call for two periods: it has ended, and the next call arms it again.
        tokio::time::sleep(PERIOD * 3).await;
        assert!(!ARMED.get(), "an idle thread keeps no anchor");
        keep();
        assert!(ARMED.get());
    }

    #[test]
    fn a_runtime_dropped_with_its_anchor_leaves_the_next_one_an_anchor() {
        std::thread::spawn(|| {
            let runtime = || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .expect("runtime")
            };
            runtime().block_on(async { keep() });
            assert!(!ARMED.get(), "the anchor went with its runtime");
            runtime().block_on(async {
                keep();
                assert!(ARMED.get());
            });
        })
        .join()
        .expect("the thread");
    }

    #[test]
    fn outside_a_runtime_nothing_is_armed() {
        std::thread::spawn(|| {
            keep();
            assert!(!ARMED.get());
        })
        .join()
        .expect("the thread");
    }
}
