//! A call an HTTP request is running. The request's own task polls it, so a quick answer costs
//! no task, channel or wake-up of its own. If the request goes away first (the client closed
//! the connection or the response stream), the call is cancelled and handed to a task of its
//! own to finish, so it still cancels upstream, forgets its request id and reaches the audit
//! ledger: what was accepted is accounted for.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::CancellationToken;

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

    /// Whether the call has answered (and must not be polled again).
    pub(super) fn answered(&self) -> bool {
        self.call.is_none()
    }
}

impl<T: Send + 'static> Future for CallInFlight<T> {
    type Output = T;

    /// Polls the call; after it answered this stays pending, and callers check
    /// [`CallInFlight::answered`] before polling again.
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
        assert!(call.answered());
        drop(call);
        assert!(!cancel.is_cancelled());
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
