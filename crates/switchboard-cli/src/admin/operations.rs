//! The admin endpoint's server-manager routes: the operator's side of the manager
//! (`switchboard search-servers`, `install`, `operations`). Every operation queued here is
//! the operator's (`by = "operator"`), whatever the body says.
//!
//! - `GET /registry/search?query=Q&limit=N` — queues a search (high priority), waits for it
//!   (60 s at most) and answers the operation; its `result` is `{query, servers: [...]}`;
//! - `POST /operations` with a `Request` (`{"work": {"op": "install", ...}, "priority"?}`)
//!   → `{"id": ID}` at once (202);
//! - `GET /operations?state=S&limit=N` → `{"operations": [...]}`, newest first;
//! - `GET /operations/{id}?wait_ms=N&since=K` → the operation; with `wait_ms`, once it is over
//!   or N ms (60000 at most) passed — or, with `since`, as soon as it has more than K steps;
//! - `POST /operations/{id}/cancel` with `{"reason"?: TEXT}` → the operation;
//! - `POST /operations/{id}/input` with `{"values": {NAME: VALUE}}` → the operation. Values are
//!   never logged: secret ones go to the gateway's secrets file and nowhere else.
//!
//! Errors are `{"error": {"code", "message"}}` with the code of `ManagerError::code`: 404 for
//! `not_found`, 409 for `finished` and `not_waiting`, 403 for `refused`, 400 for `invalid`,
//! 500 otherwise.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use switchboard::manager::{self, Priority, Request, Requester, Work};
use switchboard::{Manager, manager::ManagerError};

use super::server::{AdminState, authorized, refuse};

/// The longest a request may wait for an operation.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Operations listed when no limit is asked for.
const DEFAULT_LIST: usize = 50;
/// Servers a search returns when no limit is asked for.
const DEFAULT_SEARCH: usize = 20;

/// Why a request was not answered with what it asked for: `{"error": {"code", "message"}}`.
pub(super) struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Problem {
    fn invalid(message: impl std::fmt::Display) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid",
            message: message.to_string(),
        }
    }
}

impl From<ManagerError> for Problem {
    fn from(failure: ManagerError) -> Self {
        let status = match failure.code() {
            "not_found" => StatusCode::NOT_FOUND,
            "finished" | "not_waiting" | "elsewhere" => StatusCode::CONFLICT,
            "refused" => StatusCode::FORBIDDEN,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self {
            status,
            code: failure.code(),
            message: failure.to_string(),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}

type Answer = Result<Response, Problem>;

fn manager_of(state: &AdminState) -> Result<Manager, Problem> {
    state.host.manager().ok_or_else(|| Problem {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        code: "unavailable",
        message: "this gateway runs no server manager".to_owned(),
    })
}

/// The query string's parameters, percent-decoded (`+` is a space).
fn query_params(uri: &Uri) -> BTreeMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let hex = |byte: u8| char::from(byte).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'+', _, _) => out.push(b' '),
            (b'%', Some(&high), Some(&low)) if hex(high).is_some() && hex(low).is_some() => {
                let value = hex(high).unwrap_or(0) * 16 + hex(low).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 2;
            }
            (byte, _, _) => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A numeric parameter: `default` when absent, an answer saying so when not a number.
fn number(
    params: &BTreeMap<String, String>,
    key: &str,
    default: Option<u64>,
) -> Result<Option<u64>, Problem> {
    match params.get(key).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| Problem::invalid(format!("{key} must be a whole number, not '{text}'"))),
    }
}

pub(super) async fn search(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    let params = query_params(&uri);
    let limit = number(&params, "limit", Some(DEFAULT_SEARCH as u64))?.unwrap_or(0);
    let limit = usize::try_from(limit.clamp(1, 100)).unwrap_or(100);
    let manager = manager_of(&state)?;
    let query = params.get("query").cloned().unwrap_or_default();
    let mut request = Request::new(Work::Search { query, limit });
    request.by = Requester::Operator;
    request.priority = Priority::High;
    let id = manager.queue(request).await?;
    let operation = manager.wait(&id, MAX_WAIT, |_| {}).await?;
    Ok(Json(operation).into_response())
}

pub(super) async fn queue(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    // Parsed only once the caller is known to hold the token.
    let mut request: Request = serde_json::from_slice(&body).map_err(|failure| {
        Problem::invalid(format!(
            "the body is not an operation request of the documented shape: {failure}"
        ))
    })?;
    request.by = Requester::Operator;
    let id = manager_of(&state)?.queue(request).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"id": id}))).into_response())
}

pub(super) async fn list(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    uri: Uri,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    let params = query_params(&uri);
    let wanted = match params.get("state").filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(manager::State::parse(text).ok_or_else(|| {
            Problem::invalid(format!(
                "unknown state '{text}' (queued, in_progress, completed, failed, cancelled)"
            ))
        })?),
    };
    let limit = number(&params, "limit", Some(DEFAULT_LIST as u64))?.unwrap_or(0);
    let limit = usize::try_from(limit.clamp(1, 1000)).unwrap_or(1000);
    let operations = manager_of(&state)?.list(wanted, limit)?;
    Ok(Json(json!({"operations": operations})).into_response())
}

pub(super) async fn show(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    let params = query_params(&uri);
    let wait_ms = number(&params, "wait_ms", None)?;
    let since = number(&params, "since", None)?;
    let manager = manager_of(&state)?;
    let operation = match wait_ms {
        None | Some(0) => manager.status_anywhere(&id).await?,
        Some(ms) => {
            let timeout = Duration::from_millis(ms).min(MAX_WAIT);
            match since.map(|k| usize::try_from(k).unwrap_or(usize::MAX)) {
                None => manager.wait(&id, timeout, |_| {}).await?,
                Some(seen) => wait_for_step(&manager, &id, timeout, seen).await?,
            }
        }
    };
    Ok(Json(operation).into_response())
}

/// The operation once it is over, has more than `seen` steps, or `timeout` passed.
pub(crate) async fn wait_for_step(
    manager: &Manager,
    id: &str,
    timeout: Duration,
    seen: usize,
) -> Result<manager::Operation, ManagerError> {
    let moved = Arc::new(tokio::sync::Notify::new());
    let signal = moved.clone();
    let waiting = manager.wait(id, timeout, move |operation| {
        if operation.steps.len() > seen {
            signal.notify_one();
        }
    });
    tokio::select! {
        answer = waiting => answer,
        () = moved.notified() => manager.status(id),
    }
}

#[derive(Deserialize, Default)]
pub(super) struct CancelBody {
    #[serde(default)]
    reason: Option<String>,
}

pub(super) async fn cancel(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    let body: CancelBody = if body.is_empty() {
        CancelBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|failure| {
            Problem::invalid(format!("the body must be {{\"reason\"?: TEXT}}: {failure}"))
        })?
    };
    let reason = body
        .reason
        .unwrap_or_else(|| "cancelled by the operator".to_owned());
    let operation = manager_of(&state)?.cancel_anywhere(&id, &reason).await?;
    Ok(Json(operation).into_response())
}

#[derive(Deserialize)]
pub(super) struct InputBody {
    values: BTreeMap<String, String>,
}

pub(super) async fn input(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Answer {
    if !authorized(&state, &headers) {
        return Ok(refuse());
    }
    // The parser's message is left out: it could quote a value, which may be a secret.
    let body = serde_json::from_slice::<InputBody>(&body).map_err(|_| {
        Problem::invalid("the body must be {\"values\": {NAME: VALUE}} with string values")
    })?;
    let manager = manager_of(&state)?;
    let names: Vec<&str> = body.values.keys().map(String::as_str).collect();
    tracing::info!(id, ?names, "input given for an operation");
    let operation = manager.input(&id, body.values.clone())?;
    Ok(Json(operation).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_percent_decoded() {
        let uri: Uri = "/registry/search?query=a%20b+c%2Fd&limit=5&x=%zz&y=%4"
            .parse()
            .expect("uri");
        let params = query_params(&uri);
        assert_eq!(params["query"], "a b c/d");
        assert_eq!(params["limit"], "5");
        assert_eq!(params["x"], "%zz");
        assert_eq!(params["y"], "%4");
        assert!(query_params(&"/operations".parse().expect("uri")).is_empty());
    }
}
