//! Health for load balancers and graceful shutdown: `GET /livez` (200 while the process
//! serves) and `GET /readyz` (200 once the catalog is built and while the gateway is not
//! draining, else 503 saying why), both without a token. When shutdown begins, readyz turns
//! 503 at once, open GET streams end with an SSE `retry:` hint so clients reconnect
//! elsewhere, and calls still running when the drain timeout passes are answered with an
//! error saying the gateway is shutting down.

use std::sync::Arc;

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
/// drain timeout passed).
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    draining: CancellationToken,
    abandoning: CancellationToken,
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

    pub(super) fn abandoning(&self) -> &CancellationToken {
        &self.abandoning
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
