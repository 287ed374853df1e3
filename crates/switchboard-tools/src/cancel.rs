//! Cancellation of blocking work whose caller has gone: the built-ins that write (`files`,
//! `memory`, `sessions`, `rules`' reindex) run each call on a blocking thread, which keeps running when the call's future is
//! dropped at its deadline. So that the outcome matches what the caller is told ("did not
//! answer within …": nothing happened), the work runs through [`spawn_blocking_cancellable`],
//! whose future holds a [`CancelOnDrop`] guard that raises the call's flag when dropped, and
//! the work checks the flag with [`ensure_running`] right before the step that makes it
//! visible (a file's rename into place, a transaction's commit: `crate::sqlite::commit`).
//!
//! The flag travels to those steps through a thread-local set for the length of the work by
//! [`run_cancellable`], so the stores' own functions keep their signatures. Work run outside it
//! (embedders calling a store directly) is never cancelled.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Raises its flag when dropped: hold it in the call's future across the blocking work.
struct CancelOnDrop {
    flag: Arc<AtomicBool>,
}

impl CancelOnDrop {
    fn new() -> Self {
        Self {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag to hand to the blocking work.
    fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::SeqCst);
    }
}

/// Runs `work` on a blocking thread, cancelled (see the module doc) when the returned future
/// is dropped before it ends.
pub(crate) async fn spawn_blocking_cancellable<R: Send + 'static>(
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R, tokio::task::JoinError> {
    let cancel = CancelOnDrop::new();
    let flag = cancel.flag();
    let answer = tokio::task::spawn_blocking(move || run_cancellable(flag, work)).await;
    drop(cancel);
    answer
}

/// Runs `work` on this thread with `flag` as its cancellation flag; the thread's flag before
/// is back afterwards, also when `work` panics (a pool thread runs other work next).
pub(crate) fn run_cancellable<R>(flag: Arc<AtomicBool>, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            CURRENT.with(|current| *current.borrow_mut() = before);
        }
    }
    let _restore = Restore(CURRENT.with(|current| current.borrow_mut().replace(flag)));
    work()
}

/// `Err` when the running call was cancelled (its caller has already been answered), for the
/// last check before a change becomes visible.
pub(crate) fn ensure_running() -> Result<(), String> {
    let cancelled = CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::SeqCst))
    });
    if cancelled {
        Err("the call was cancelled (its deadline passed) before the change was made; nothing was written".to_owned())
    } else {
        Ok(())
    }
}
