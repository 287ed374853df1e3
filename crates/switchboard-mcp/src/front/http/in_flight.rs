//! A call an HTTP request is running. The request's own task polls it, so a quick answer costs
//! no task, channel or wake-up of its own. If the request goes away first (the client closed
//! the connection), the call is cancelled and handed to a task of its own to finish, so it
//! still cancels upstream, forgets its request id and reaches the audit ledger (unless the
//! gateway is shutting down meanwhile). An answer that streams moves the call onto a task
//! ([`CallInFlight::on_own_task`]): a stream is polled only as fast as the client reads.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, DropGuard};

type BoxedCall<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A running call, owned by the request that started it. Await it (by `&mut`) for its answer.
pub(super) struct CallInFlight<T: Send + 'static> {
    /// `None` once it answered.
    call: Option<BoxedCall<T>>,
    cancel: CancellationToken,
}

impl<T: Send + 'static> CallInFlight<T> {
    /// `cancel` is the call's own token: it fires if the request goes away before the answer.
    pub(super) fn new(
        call: impl Future<Output = T> + Send + 'static,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            call: Some(Box::pin(call)),
            cancel,
        }
    }

    /// Moves the call onto a task of its own; its answer comes through the handle, and
    /// dropping the handle first cancels the call (which still finishes on its task).
    pub(super) fn on_own_task(mut self) -> AnswerFromTask<T> {
        let (answer_tx, answer) = oneshot::channel();
        let cancel_on_drop = self.cancel.clone().drop_guard();
        if let Some(call) = self.call.take() {
            tokio::spawn(async move {
                let _ = answer_tx.send(call.await);
            });
        }
        AnswerFromTask {
            answer,
            cancel_on_drop: Some(cancel_on_drop),
        }
    }
}

/// The answer of a call that runs on a task of its own.
pub(super) struct AnswerFromTask<T> {
    answer: oneshot::Receiver<T>,
    cancel_on_drop: Option<DropGuard>,
}

impl<T> AnswerFromTask<T> {
    /// The answer; `None` if the call's task ended without one. Not to be awaited again after
    /// it returned.
    pub(super) async fn answer(&mut self) -> Option<T> {
        let answer = (&mut self.answer).await.ok();
        if let Some(guard) = self.cancel_on_drop.take() {
            guard.disarm();
        }
        answer
    }
}

impl<T: Send + 'static> Future for CallInFlight<T> {
    type Output = T;

    /// Polls the call; after it answered this stays pending (callers stop polling it once it
    /// answered).
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(call) = self.call.as_mut() else {
            return Poll::Pending;
        };
        let answer = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for CallInFlight<T> {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        self.cancel.cancel();
        // A call that panicked while polled cannot be polled again.
        if std::thread::panicking() {
            return;
        }
        // Outside a runtime (it is shutting down) there is nothing left to finish the call on.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                call.await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_call_that_answers_is_not_cancelled() {
        let cancel = CancellationToken::new();
        let mut call = CallInFlight::new(async { 7 }, cancel.clone());
        assert_eq!((&mut call).await, 7);
        drop(call);
        assert!(!cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_call_on_its_own_task_answers_and_is_cancelled_when_its_handle_is_dropped() {
        let cancel = CancellationToken::new();
        let mut answered = CallInFlight::new(async { 7 }, cancel.clone()).on_own_task();
        assert_eq!(answered.answer().await, Some(7));
        drop(answered);
        assert!(!cancel.is_cancelled(), "an answered call is not cancelled");

        let cancel = CancellationToken::new();
        let (finished_tx, finished) = oneshot::channel();
        let waiting = {
            let cancelled = cancel.clone();
            CallInFlight::new(
                async move {
                    cancelled.cancelled().await;
                    let _ = finished_tx.send(());
                },
                cancel.clone(),
            )
        };
        drop(waiting.on_own_task());
        assert!(cancel.is_cancelled());
        tokio::time::timeout(Duration::from_secs(5), finished)
            .await
            .expect("the cancelled call finishes on its task")
            .expect("finished");
    }

    #[tokio::test]
    async fn a_dropped_call_is_cancelled_and_still_finishes() {
        let cancel = CancellationToken::new();
        let finished = Arc::new(AtomicBool::new(false));
        let call = {
            let cancelled = cancel.clone();
            let finished = finished.clone();
            CallInFlight::new(
                async move {
                    cancelled.cancelled().await;
                    // The unwinding a cancelled call does (telling the upstream, the ledger).
                    tokio::task::yield_now().await;
                    finished.store(true, Ordering::SeqCst);
                },
                cancel.clone(),
            )
        };
        drop(call);
        assert!(cancel.is_cancelled());
        for _ in 0..100 {
            if finished.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the dropped call was not finished on a task of its own");
    }
}
