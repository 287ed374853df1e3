//! A Streamable HTTP MCP server for the upstream transport tests: it records every request
//! and answers by method (JSON, SSE, 404, 500, a resumable stream, a stream that never ends),
//! offers a session GET stream, and accepts DELETE.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use serde_json::{Value, json};

/// One request the server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub verb: &'static str,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Clone, Default)]
pub struct Server {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Set when the body of a `hang` answer is dropped (the client closed the stream).
    pub hang_closed: Arc<AtomicBool>,
    /// The id of the last `resume` request, answered on the resumed GET stream.
    resume_id: Arc<Mutex<Option<Value>>>,
    /// When set, the next GET is answered with this status instead (503 and 429 with
    /// `Retry-After: 0`).
    pub next_get: Arc<Mutex<Option<StatusCode>>>,
}

impl Server {
    fn record(&self, verb: &'static str, headers: &HeaderMap, body: Value) {
        let seen = Seen {
            verb,
            headers: headers.clone(),
            body,
        };
        self.seen.lock().expect("lock").push(seen);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    pub fn find(&self, verb: &str, method: &str) -> Option<Seen> {
        self.seen()
            .into_iter()
            .find(|s| s.verb == verb && s.body["method"] == method)
    }
}

/// Sets `hang_closed` when the response body holding it is dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn sse(chunks: Vec<String>) -> Response {
    let stream = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, Infallible>(Bytes::from(c))),
    );
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

async fn on_post(State(server): State<Server>, headers: HeaderMap, body: String) -> Response {
    let body: Value = serde_json::from_str(&body).expect("the client posts JSON");
    server.record("POST", &headers, body.clone());
    let (Some(id), Some(method)) = (body.get("id"), body["method"].as_str()) else {
        return StatusCode::ACCEPTED.into_response();
    };
    match method {
        "initialize" => (
            [("mcp-session-id", "sess-1")],
            axum::Json(answer(id, json!({"protocolVersion": "2025-11-25"}))),
        )
            .into_response(),
        "expire" if headers.contains_key("mcp-session-id") => {
            (StatusCode::NOT_FOUND, "no such session").into_response()
        }
        "fail" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "sse" => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "t", "progress": 1}})
            .to_string();
            // Split mid-line and mid-event, with a comment, an id and multi-line data.
            let (head, tail) = note.split_at(10);
            sse(vec![
                format!(": hello\nid: 1\ndata: {head}"),
                format!("{tail}\n\n"),
                format!(
                    "event: message\ndata: {{\"jsonrpc\": \"2.0\",\ndata: \"id\": {id}, \"result\": {{\"done\": true}}}}\n\n"
                ),
            ])
        }
        "resume" => {
            *server.resume_id.lock().expect("lock") = Some(id.clone());
            sse(vec!["id: ev-1\nretry: 10\ndata:\n\n".to_owned()])
        }
        "hang" => {
            let flag = DropFlag(server.hang_closed.clone());
            let stream = futures::stream::unfold(flag, |flag| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Some((Ok::<_, Infallible>(Bytes::from(": waiting\n\n")), flag))
            });
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(stream),
            )
                .into_response()
        }
        "slow" => {
            tokio::time::sleep(Duration::from_millis(400)).await;
            axum::Json(answer(id, json!({"slow": true}))).into_response()
        }
        other => axum::Json(answer(id, json!({"method": other}))).into_response(),
    }
}

async fn on_get(State(server): State<Server>, headers: HeaderMap) -> Response {
    server.record("GET", &headers, Value::Null);
    if let Some(status) = server.next_get.lock().expect("lock").take() {
        return (status, [("retry-after", "0")], "not now").into_response();
    }
    let resume = server.resume_id.lock().expect("lock").clone();
    match (headers.get("last-event-id"), resume) {
        (Some(last), Some(id)) if last == "ev-1" => {
            let done = answer(&id, json!({"resumed": true}));
            sse(vec![format!("id: ev-2\ndata: {done}\n\n")])
        }
        (None, None) if headers.contains_key("mcp-session-id") => {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            sse(vec![format!(": session stream\n\ndata: {note}\n\n")])
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

async fn on_delete(State(server): State<Server>, headers: HeaderMap) -> StatusCode {
    server.record("DELETE", &headers, Value::Null);
    StatusCode::NO_CONTENT
}

pub async fn start() -> (Server, String) {
    let server = Server::default();
    let app = Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (server, format!("http://{address}/mcp"))
}
