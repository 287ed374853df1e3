//! Health for load balancers and graceful shutdown: `GET /livez` (200 while the process
//! serves) and `GET /readyz` (200 once the catalog is built and while the gateway is not
//! draining, else 503 saying why), both without a token. When shutdown begins, readyz turns
//! 503 at once, open GET streams end with an SSE `retry:` hint so clients reconnect
//! elsewhere, and calls still running when the drain timeout passes are answered with an
//! error saying the gateway is shutting down.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::HttpState;
use crate::jsonrpc::{Message, RequestId, code};

/// How long a client is told to wait before reconnecting when its stream is closed for a
/// shutdown (SSE `retry:`, milliseconds).
pub const RETRY_AFTER_MS: u64 = 1000;

/// Where the front is in its life: serving, draining (shutdown began), abandoning (the
/// drain timeout passed). Clones share it.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    draining: CancellationToken,
    abandoning: CancellationToken,
    /// Tells this lifecycle apart from others in [`ABANDONING_HERE`].
    id: u64,
}

impl Default for Lifecycle {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            draining: CancellationToken::new(),
            abandoning: CancellationToken::new(),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// How many lifecycles a thread keeps a token of (one per front; tests start many).
const KEPT_HERE: usize = 4;

thread_local! {
    /// This thread's child of recent lifecycles' `abandoning` token. Every call waits on it,
    /// and waiting registers in the token's list of waiters behind a lock: when every call of
    /// every thread waited on the one token, they met on that lock (16 cores).
    static ABANDONING_HERE: RefCell<Vec<(u64, CancellationToken)>> = const { RefCell::new(Vec::new()) };
}

impl Lifecycle {
    /// Shutdown began: refuse readiness, close streams.
    pub fn drain(&self) {
        self.draining.cancel();
    }

    /// The drain timeout passed: calls still running are answered with an error.
    pub fn abandon(&self) {
        self.draining.cancel();
        self.abandoning.cancel();
    }

    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    pub(super) fn draining(&self) -> &CancellationToken {
        &self.draining
    }

    /// The `abandoning` token for a call on this thread: a child of it, made once per
    /// thread, cancelled with it.
    pub(super) fn abandoning_here(&self) -> CancellationToken {
        ABANDONING_HERE.with(|kept| {
            let mut kept = kept.borrow_mut();
            if let Some((_, token)) = kept.iter().find(|(id, _)| *id == self.id) {
                return token.clone();
            }
            let token = self.abandoning.child_token();
            if kept.len() >= KEPT_HERE {
                kept.remove(0);
            }
            kept.push((self.id, token.clone()));
            token
        })
    }
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

pub(super) async fn livez() -> Response {
    json_response(StatusCode::OK, json!({"status": "live"}))
}

pub(super) async fn readyz(State(state): State<Arc<HttpState>>) -> Response {
    if state.options.lifecycle.is_draining() {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "draining", "reason": "the gateway is shutting down"}),
        );
    }
    if state
        .dispatcher
        .backend()
        .settled()
        .now_or_never()
        .is_none()
    {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "starting", "reason": "the catalog is still being built"}),
        );
    }
    json_response(StatusCode::OK, json!({"status": "ready"}))
}

/// The answer of a call still running when the drain timeout passed (the call itself is
/// cancelled, upstream and in the ledger).
pub(super) fn shutting_down(id: RequestId) -> Message {
    Message::error(
        Some(id),
        code::INTERNAL_ERROR,
        "the gateway is shutting down: the call did not finish within the drain timeout",
    )
}

/// The SSE event that ends a stream closed for a shutdown: reconnect after a pause.
pub(super) fn retry_event() -> axum::body::Bytes {
    axum::body::Bytes::from(format!(
        ": the gateway is shutting down\nretry: {RETRY_AFTER_MS}\n\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_abandoning_token_is_its_own_and_cancelled_with_its_lifecycle() {
        let first = Lifecycle::default();
        let second = Lifecycle::default();
        let here = first.abandoning_here();
        assert!(!here.is_cancelled());
        // Made once per thread: the same token again, and another lifecycle's is apart.
        first.abandoning_here().cancel();
        assert!(here.is_cancelled(), "one token per lifecycle and thread");
        let (first, second_here) = (Lifecycle::default(), second.abandoning_here());
        let (made_before, on_another_thread) = (
            first.abandoning_here(),
            std::thread::scope(|scope| {
                scope
                    .spawn(|| first.abandoning_here())
                    .join()
                    .expect("thread")
            }),
        );
        first.abandon();
        assert!(made_before.is_cancelled() && on_another_thread.is_cancelled());
        assert!(
            first.abandoning_here().is_cancelled(),
            "made after: cancelled"
        );
        assert!(!second_here.is_cancelled(), "another lifecycle's is not");
    }
}
