//! The admin HTTP server: loopback only, bearer token required.
//!
//! - `GET /approvals` — calls waiting for an operator;
//! - `POST /approvals/{id}` with `{"approve": bool, "reason"?: string, "by"?: string}`;
//! - `POST /tier` with `{"session" | "agent": name, "tier": name | null}` (the "DM command");
//! - live configuration: `GET /status`, `GET /servers/{name}`, `POST /changes`,
//!   `POST /servers/{name}/test`, `POST /reload` (see `super::servers`);
//! - pinned tool definitions: `GET /pins` (held-back tools), `POST /pins/approve` with
//!   `{"name": NAME | "SERVER:TOOL", "actor"?: string}`;
//! - the server manager: `GET /registry/search?query=&limit=`, `POST /operations`,
//!   `GET /operations?state=&limit=`, `GET /operations/{id}?wait_ms=&since=`,
//!   `POST /operations/{id}/cancel`, `POST /operations/{id}/input` (see `super::operations`);
//! - `GET /metrics` — Prometheus text exposition format (0.0.4) of `Host::metrics_text`. It
//!   needs the admin token like every route here (a scraper sends it as a bearer token:
//!   `authorization: {credentials_file: ...}`), because its labels name agents, tools and
//!   servers (docs/metrics.md).
//! - the operator's console under `/console` (`switchboard-console`: its own sign-in, which
//!   exchanges this token for a session; `POST /console/codes` mints a sign-in link).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;
use switchboard::{AnswerError, Host};
use switchboard_mcp::front::http::{ConnectionLimits, serve_router};
use tokio_util::sync::CancellationToken;

pub(super) struct AdminState {
    pub(super) host: Host,
    token: String,
}

#[derive(Deserialize)]
struct TierChange {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    /// None clears.
    #[serde(default)]
    tier: Option<String>,
}

async fn set_tier(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    Json(change): Json<TierChange>,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    if let Some(tier) = &change.tier
        && let Err(unknown) = state.host.check_tier(tier)
    {
        return (StatusCode::BAD_REQUEST, unknown.to_string()).into_response();
    }
    match (&change.session, &change.agent) {
        (Some(session), None) if !state.host.knows_session(session) => {
            return (
                StatusCode::NOT_FOUND,
                format!("no session '{session}' on this gateway (it may have ended)"),
            )
                .into_response();
        }
        (Some(session), None) => {
            if let Err(refused) = state
                .host
                .set_session_tier(session, change.tier.clone())
                .await
            {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("the session's tier cannot be set now: {refused}"),
                )
                    .into_response();
            }
        }
        (None, Some(agent)) if state.host.knows_agent(agent) => {
            state.host.set_agent_tier(agent, change.tier.clone());
        }
        (None, Some(agent)) => {
            return (StatusCode::BAD_REQUEST, format!("unknown agent '{agent}'")).into_response();
        }
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                "name exactly one of session or agent",
            )
                .into_response();
        }
    }
    Json(json!({"session": change.session, "agent": change.agent, "tier": change.tier}))
        .into_response()
}

#[derive(Deserialize)]
struct Answer {
    approve: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

pub(super) fn authorized(state: &AdminState, headers: &HeaderMap) -> bool {
    let expected = format!("Bearer {}", state.token);
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|given| {
            given.len() == expected.len()
                && given
                    .bytes()
                    .zip(expected.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
}

pub(super) fn refuse() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [("www-authenticate", "Bearer realm=\"switchboard-admin\"")],
        "admin token required",
    )
        .into_response()
}

async fn metrics(State(state): State<Arc<AdminState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    (
        [(
            axum::http::header::CONTENT_TYPE,
            switchboard_core::metrics::CONTENT_TYPE,
        )],
        state.host.metrics_text(),
    )
        .into_response()
}

async fn list(State(state): State<Arc<AdminState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let pending = state
        .host
        .pending_approvals()
        .map(|p| p.list())
        .unwrap_or_default();
    Json(json!({"approvals": pending})).into_response()
}

async fn answer(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(answer): Json<Answer>,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let Some(pending) = state.host.pending_approvals() else {
        return (StatusCode::NOT_FOUND, "approvals are not set up").into_response();
    };
    let by = answer.by.as_deref().unwrap_or("operator");
    match pending
        .answer(&id, answer.approve, by, answer.reason.as_deref())
        .await
    {
        Ok(()) => Json(json!({"id": id, "approved": answer.approve})).into_response(),
        // Another operator (perhaps on another replica) answered first.
        Err(error @ AnswerError::AlreadyDecided { .. }) => {
            (StatusCode::CONFLICT, error.to_string()).into_response()
        }
        Err(error @ AnswerError::Store(_)) => {
            (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response()
        }
        Err(error) => (StatusCode::NOT_FOUND, error.to_string()).into_response(),
    }
}

/// Serves the admin endpoint, and `console` under `/console`, on `listener` within its
/// connection limits until `shutdown`.
pub async fn serve(
    host: Host,
    token: String,
    listener: tokio::net::TcpListener,
    limits: ConnectionLimits,
    console: switchboard_console::Console,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let state = Arc::new(AdminState { host, token });
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/approvals", get(list))
        .route("/approvals/{id}", post(answer))
        .route("/tier", post(set_tier))
        .route("/status", get(super::servers::status))
        .route("/servers/{name}", get(super::servers::show))
        .route("/servers/{name}/test", post(super::servers::test))
        .route("/changes", post(super::servers::change))
        .route("/reload", post(super::servers::reload))
        .route("/pins", get(super::servers::pins))
        .route("/pins/approve", post(super::servers::approve_tool))
        .route("/registry/search", get(super::operations::search))
        .route(
            "/operations",
            get(super::operations::list).post(super::operations::queue),
        )
        .route("/operations/{id}", get(super::operations::show))
        .route("/operations/{id}/cancel", post(super::operations::cancel))
        .route("/operations/{id}/input", post(super::operations::input))
        .with_state(state)
        .merge(console.router());
    serve_router(app, listener, limits, shutdown).await
}
