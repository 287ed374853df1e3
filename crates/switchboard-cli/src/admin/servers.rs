//! The admin endpoint's live-configuration routes: every one goes through the library's one
//! change operation (`Host::apply`), so they answer with the same reports and error codes as
//! the CLI and the library.
//!
//! - `GET /status` — the revision (also as `ETag`), the live state (file, read-only, a bad
//!   file's located problems, settings that need a restart) and every server's report;
//! - `GET /servers/{name}` — one server's report and its entry (secrets redacted);
//! - `POST /changes` — `{"op": "add" | "remove" | "enable" | "disable" | "restart",
//!   "server": NAME, "entry"?: {...}, "base_revision"?: REV, "dry_run"?: bool,
//!   "surface"?: "cli" | "admin", "actor"?: NAME}`; `If-Match: REV` works as `base_revision`;
//! - `POST /servers/{name}/test` — `{"entry"?: {...}}`: connect a copy, list, judge;
//! - `POST /reload` — read the config file again.
//!
//! Errors are `{"error": {"code", "message"}}` with the status of `ChangeError::http_status`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use switchboard::pins::PinError;
use switchboard::{Change, ChangeError, ChangeRequest, Surface};
use switchboard_core::config::edit::ServerEntry;

use super::server::{AdminState, authorized, refuse};

/// A change as the endpoint takes it.
#[derive(Deserialize)]
pub(super) struct ChangeBody {
    #[serde(flatten)]
    change: Change,
    #[serde(default)]
    base_revision: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    surface: Option<Surface>,
    #[serde(default)]
    actor: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct TestBody {
    #[serde(default)]
    entry: Option<ServerEntry>,
}

fn refusal(error: &ChangeError) -> Response {
    let status =
        StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        Json(json!({"error": {"code": error.code(), "message": error.to_string()}})),
    )
        .into_response()
}

pub(super) async fn status(State(state): State<Arc<AdminState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let live = state.host.live_status();
    let problems: Vec<String> = state
        .host
        .catalog_problems()
        .iter()
        .filter(|p| p.server().is_none())
        .map(ToString::to_string)
        .collect();
    let etag = format!("\"{}\"", live.revision);
    (
        [("etag", etag)],
        Json(json!({
            "revision": live.revision,
            "live": live,
            "servers": state.host.status(),
            "problems": problems,
            "shared_limits": state.host.shared_limits(),
        })),
    )
        .into_response()
}

pub(super) async fn show(
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let report = state.host.status().into_iter().find(|r| r.server == name);
    let entry = state.host.server_entry(&name);
    match (report, entry) {
        (Some(report), Some(entry)) => Json(json!({
            "revision": state.host.revision(),
            "server": report,
            "entry": entry,
        }))
        .into_response(),
        _ => refusal(&ChangeError::NotFound(name)),
    }
}

pub(super) async fn change(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    // Parsed only once the caller is known to hold the token.
    let body: ChangeBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": {"code": "invalid", "message": format!("the change is not valid JSON of the documented shape: {error}")}})),
            )
                .into_response();
        }
    };
    // The ledger's word for who changed what: a caller of this endpoint is the CLI or itself,
    // never the manager, a hand edit or another replica.
    let by = match body.surface {
        None | Some(Surface::Admin) => Surface::Admin,
        Some(Surface::Cli) => Surface::Cli,
        Some(other) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": {"code": "invalid", "message": format!("surface '{}' is not the admin endpoint's to give: use \"cli\" or \"admin\"", other.as_str())}})),
            )
                .into_response();
        }
    };
    // RFC 9110: `*` matches any revision (no check); a weak tag `W/"…"` names its value.
    let if_match = headers
        .get("if-match")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| *v != "*")
        .map(|v| v.trim_start_matches("W/").trim_matches('"').to_owned());
    let request = ChangeRequest {
        change: body.change,
        by,
        actor: body.actor,
        base_revision: body.base_revision.or(if_match),
        dry_run: body.dry_run,
    };
    // On a task of its own: a client that goes away mid-change must not cancel it half-way.
    let host = state.host.clone();
    match tokio::spawn(async move { host.apply(request).await }).await {
        Ok(Ok(report)) => Json(report).into_response(),
        Ok(Err(error)) => refusal(&error),
        Err(error) => refusal(&ChangeError::Io(format!("the change failed: {error}"))),
    }
}

pub(super) async fn test(
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Option<Json<TestBody>>,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let body = body.map(|Json(body)| body).unwrap_or_default();
    let host = state.host.clone();
    let test = async move { host.test_server(&name, body.entry.as_ref()).await };
    match tokio::spawn(test).await {
        Ok(Ok(report)) => Json(report).into_response(),
        Ok(Err(error)) => refusal(&error),
        Err(error) => refusal(&ChangeError::Io(format!("the test failed: {error}"))),
    }
}

pub(super) async fn pins(State(state): State<Arc<AdminState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let pinned = state.host.pins_counts();
    Json(json!({"held": state.host.held_tools(), "pinned": pinned})).into_response()
}

#[derive(Deserialize)]
pub(super) struct Approval {
    name: String,
    #[serde(default)]
    actor: Option<String>,
    /// The fingerprint of the definition the operator saw: only that one is approved.
    #[serde(default)]
    fingerprint: Option<String>,
}

pub(super) async fn approve_tool(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    Json(approval): Json<Approval>,
) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    match state.host.approve_tool(
        &approval.name,
        approval.actor.as_deref(),
        approval.fingerprint.as_deref(),
    ) {
        Ok(held) => Json(held).into_response(),
        Err(error @ PinError::ChangedAgain { .. }) => (
            StatusCode::CONFLICT,
            Json(json!({"error": {"code": "conflict", "message": error.to_string()}})),
        )
            .into_response(),
        Err(error) => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"code": "not_found", "message": error.to_string()}})),
        )
            .into_response(),
    }
}

pub(super) async fn reload(State(state): State<Arc<AdminState>>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return refuse();
    }
    let host = state.host.clone();
    match tokio::spawn(async move { host.reload_file(Surface::Reload).await }).await {
        Ok(Ok(report)) => Json(report).into_response(),
        Ok(Err(error)) => refusal(&error),
        Err(error) => refusal(&ChangeError::Io(format!("the reload failed: {error}"))),
    }
}
