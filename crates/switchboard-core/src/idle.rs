//! Work a thread puts off until its runtime has nothing else to do.
//!
//! Some bookkeeping on a call's path must happen, but not before the answer: the metrics of a
//! call, which would otherwise cost the answer their instructions. Such work registers once
//! per thread with [`register`] and is run by [`on_thread_park`], which a tokio
//! runtime calls just before its thread parks (goes idle): after the answer was written and
//! nothing else was ready. Registered work is held weakly: work that is dropped stops being
//! run. It runs at a park only when something on the thread said there is work due
//! ([`work_is_due`]): a thread parks several times a call, and those parks cost one flag.
//!
//! A runtime runs it only when built with the hook:
//! `tokio::runtime::Builder::on_thread_park(switchboard_core::idle::on_thread_park)` (the
//! gateway's runtimes are; an embedder's may be). Until a thread has parked once through the
//! hook, [`parks_here`] is false and callers do their work at once, as if there were no
//! hook: a runtime without it never strands work.

use std::cell::{Cell, RefCell};
use std::sync::Weak;

/// Work run when a thread that registered it goes idle.
pub trait IdleWork: Send + Sync {
    /// Runs on the thread that registered the work, inside its runtime, just before it parks
    /// after [`work_is_due`] was called there; cheap when there is nothing to do (another
    /// piece of work may have been the one due).
    fn run_idle(&self);
}

thread_local! {
    /// This thread's runtime calls [`on_thread_park`] (seen at its first park).
    static PARKS: Cell<bool> = const { Cell::new(false) };
    /// Something was queued on this thread since it last parked.
    static DUE: Cell<bool> = const { Cell::new(false) };
    /// Work registered on this thread.
    static REGISTERED: RefCell<Vec<Weak<dyn IdleWork>>> = const { RefCell::new(Vec::new()) };
}

/// The park hook: runs the work registered on this thread, forgetting work that was dropped.
pub fn on_thread_park() {
    PARKS.set(true);
    if !DUE.replace(false) {
        return;
    }
    // Taken out first, so work that registers more while it runs neither deadlocks nor
    // loops: what it registers runs from the next park.
    let mut registered = REGISTERED.take();
    if registered.is_empty() {
        return;
    }
    registered.retain(|work| match work.upgrade() {
        Some(work) => {
            work.run_idle();
            true
        }
        None => false,
    });
    REGISTERED.with_borrow_mut(|added| {
        registered.append(added);
        *added = registered;
    });
}

/// Whether work registered on this thread will run when it parks: its runtime has called
/// [`on_thread_park`]. When false, do the work now.
pub fn parks_here() -> bool {
    PARKS.get()
}

/// Tells this thread's next park that registered work has something to do.
pub fn work_is_due() {
    DUE.set(true);
}

/// Registers `work` to run at this thread's parks when work is due, until it is dropped. Register a
/// piece of work once per thread (the caller knows whether it has), having checked
/// [`parks_here`].
pub fn register(work: Weak<dyn IdleWork>) {
    REGISTERED.with_borrow_mut(|registered| registered.push(work));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    struct Count(AtomicUsize);

    impl IdleWork for Count {
        fn run_idle(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn registered_work_runs_at_every_park_until_it_is_dropped() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_park(on_thread_park)
            .build()
            .expect("a runtime");
        let count = Arc::new(Count(AtomicUsize::new(0)));
        runtime.block_on(async {
            // Parks once (the sleep) before anything is registered: the hook is now known.
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert!(parks_here());
            let weak: Weak<Count> = Arc::downgrade(&count);
            register(weak);
            // Nothing due: a park does not run it.
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(count.0.load(Ordering::SeqCst), 0);
            work_is_due();
            // Busy without parking: the work waits.
            tokio::task::yield_now().await;
            assert_eq!(count.0.load(Ordering::SeqCst), 0);
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(count.0.load(Ordering::SeqCst), 1, "ran at the park");
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(count.0.load(Ordering::SeqCst), 1, "once");
            work_is_due();
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert_eq!(
                count.0.load(Ordering::SeqCst),
                2,
                "and again when due again"
            );
        });
        // Dropped: forgotten at the next park, nothing runs it.
        let weak = Arc::downgrade(&count);
        drop(count);
        work_is_due();
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
        assert!(weak.upgrade().is_none());
        assert!(
            REGISTERED.with_borrow(Vec::is_empty),
            "a dropped work is forgotten"
        );
    }

    #[test]
    fn a_thread_whose_runtime_has_no_hook_is_told_to_work_at_once() {
        let outcome = std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                tokio::time::sleep(Duration::from_millis(1)).await;
                parks_here()
            })
        })
        .join()
        .expect("the thread");
        assert!(!outcome);
    }
}
