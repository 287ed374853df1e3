//! The Streamable HTTP client transport.
//!
//! Every message is a POST. An answer comes back as JSON or as an SSE stream (notifications
//! first, then the answer); 202 means nothing to deliver. Legacy era: the session id from the
//! `initialize` answer goes on every later request, a GET stream carries the server's own
//! notifications, and DELETE ends the session. Modern era (2026-07-28): no session, requests
//! carry `Mcp-Method` / `Mcp-Name` headers, and closing a request's response stream is how it
//! is cancelled. An HTTP failure of a request becomes an error answer to that request; an
//! expired session (404) ends the connection so the supervisor reconnects.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::sse::SseParser;
use super::{failed_request, header_map, http_client, snippet};
use crate::era::MODERN_VERSION;
use crate::jsonrpc::{Message, RequestId};
use crate::upstream::transport::{Inbound, Opened, Transport, TransportError};

struct Shared {
    server: String,
    url: String,
    headers: HeaderMap,
    max_bytes: usize,
    inbound: mpsc::Sender<Inbound>,
    session: RwLock<Option<String>>,
    version: RwLock<Option<String>>,
    /// POSTs in flight by request id, so a cancel can close the stream (modern era).
    in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
    background: Mutex<Vec<AbortHandle>>,
}

struct StreamableHttp {
    shared: Arc<Shared>,
}

/// Opens a Streamable HTTP connection (no I/O until the first message).
pub fn open_streamable_http(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    max_message_bytes: usize,
) -> Result<Opened, TransportError> {
    http_client()?;
    let (inbound_tx, inbound) = mpsc::channel(256);
    let shared = Arc::new(Shared {
        server: server.to_owned(),
        url: url.to_owned(),
        headers: header_map(headers)?,
        max_bytes: max_message_bytes,
        inbound: inbound_tx,
        session: RwLock::new(None),
        version: RwLock::new(None),
        in_flight: Mutex::default(),
        background: Mutex::default(),
    });
    Ok(Opened {
        transport: Arc::new(StreamableHttp { shared }),
        inbound,
    })
}

impl Shared {
    fn modern(&self) -> bool {
        self.version.read().ok().and_then(|v| v.clone()).as_deref() == Some(MODERN_VERSION)
    }

    fn session(&self) -> Option<String> {
        self.session.read().ok().and_then(|s| s.clone())
    }

    fn request_headers(&self, message: &Message) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let probe =
            matches!(message, Message::Request { method, .. } if method == "server/discover");
        let version = self
            .version
            .read()
            .ok()
            .and_then(|v| v.clone())
            .or_else(|| probe.then(|| MODERN_VERSION.to_owned()));
        if let Some(version) = version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.insert("mcp-protocol-version", version);
        }
        if let Some(session) = self.session().and_then(|s| HeaderValue::from_str(&s).ok()) {
            headers.insert("mcp-session-id", session);
        }
        let modern = self.modern() || probe;
        if let (true, Message::Request { method, params, .. }) = (modern, message) {
            if let Ok(value) = HeaderValue::from_str(method) {
                headers.insert("mcp-method", value);
            }
            let name = match method.as_str() {
                "tools/call" | "prompts/get" => params.as_ref().and_then(|p| p.get("name")),
                "resources/read" => params.as_ref().and_then(|p| p.get("uri")),
                _ => None,
            };
            if let Some(value) = name
                .and_then(Value::as_str)
                .and_then(|n| HeaderValue::from_str(n).ok())
            {
                headers.insert("mcp-name", value);
            }
        }
        headers
    }

    async fn deliver(&self, message: Message) {
        let _ = self.inbound.send(Inbound::Message(message)).await;
    }

    /// One POST and whatever comes back.
    async fn post(self: Arc<Self>, message: Message) {
        let id = match &message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let is_initialize =
            matches!(&message, Message::Request { method, .. } if method == "initialize");
        let had_session = self.session().is_some();
        let request = match http_client() {
            Ok(client) => client
                .post(&self.url)
                .headers(self.request_headers(&message))
                .body(message.to_line()),
            Err(error) => return self.fail(id.as_ref(), error.0).await,
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                let reason = format!("cannot reach {}: {}", self.url, error_chain(&error));
                return self.fail(id.as_ref(), reason).await;
            }
        };
        let status = response.status();
        if is_initialize
            && let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            && let Ok(mut slot) = self.session.write()
        {
            *slot = Some(session.to_owned());
        }
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            let _ = self
                .inbound
                .send(Inbound::Closed(
                    "the server ended the session (HTTP 404)".to_owned(),
                ))
                .await;
            return;
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error body answers the request (servers often leave its id null).
            if let Ok(Message::Error {
                id: answered,
                error,
            }) = Message::parse(body.as_bytes())
            {
                return self
                    .deliver(Message::Error {
                        id: answered.or(id),
                        error,
                    })
                    .await;
            }
            return self
                .fail(
                    id.as_ref(),
                    format!("HTTP {status} from {}{}", self.url, snippet(&body)),
                )
                .await;
        }
        if is_sse {
            self.read_stream(response, id.as_ref()).await;
        } else {
            match read_limited(response, self.max_bytes).await {
                Ok(body) if body.iter().all(u8::is_ascii_whitespace) => {}
                Ok(body) => match Message::parse(&body) {
                    Ok(answer) => self.deliver(answer).await,
                    Err(malformed) => {
                        self.fail(
                            id.as_ref(),
                            format!(
                                "invalid answer from {}: {}",
                                self.url, malformed.error.message
                            ),
                        )
                        .await
                    }
                },
                Err(reason) => self.fail(id.as_ref(), reason).await,
            }
        }
    }

    /// Delivers every message of an SSE response.
    async fn read_stream(&self, response: reqwest::Response, id: Option<&RequestId>) {
        let mut parser = SseParser::default();
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    return self
                        .fail(
                            id,
                            format!("the response stream from {} broke: {error}", self.url),
                        )
                        .await;
                }
            };
            let Ok(events) = parser.feed(&chunk, self.max_bytes) else {
                return self
                    .fail(
                        id,
                        format!(
                            "{} sent a message over the {}-byte limit",
                            self.url, self.max_bytes
                        ),
                    )
                    .await;
            };
            // Events without data (resumability primers) carry no message.
            for event in events
                .into_iter()
                .filter(|e| e.kind == "message" && !e.data.trim().is_empty())
            {
                match Message::parse(event.data.as_bytes()) {
                    Ok(message) => self.deliver(message).await,
                    Err(malformed) => {
                        tracing::warn!(target: "switchboard::upstream", server = %self.server, "ignoring an invalid SSE message: {}", malformed.error.message)
                    }
                }
            }
        }
    }

    async fn fail(&self, id: Option<&RequestId>, reason: String) {
        match id {
            Some(id) => self.deliver(failed_request(id, reason)).await,
            None => {
                tracing::warn!(target: "switchboard::upstream", server = %self.server, "{reason}")
            }
        }
    }

    /// The legacy session's GET stream of server-initiated messages (405: not offered).
    async fn listen(self: Arc<Self>) {
        let Ok(client) = http_client() else { return };
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(session) = self.session().and_then(|s| HeaderValue::from_str(&s).ok()) {
            headers.insert("mcp-session-id", session);
        }
        if let Some(version) = self
            .version
            .read()
            .ok()
            .and_then(|v| v.clone())
            .and_then(|v| HeaderValue::from_str(&v).ok())
        {
            headers.insert("mcp-protocol-version", version);
        }
        match client.get(&self.url).headers(headers).send().await {
            Ok(response) if response.status().is_success() => {
                self.read_stream(response, None).await
            }
            Ok(_) | Err(_) => {}
        }
    }
}

/// The causes of a reqwest error on one line ("connection refused" is deep inside).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

async fn read_limited(response: reqwest::Response, max_bytes: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| format!("reading the answer failed: {error}"))?;
        body.extend_from_slice(&chunk);
        if body.len() > max_bytes {
            return Err(format!("the answer exceeds the {max_bytes}-byte limit"));
        }
    }
    Ok(body)
}

impl Transport for StreamableHttp {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if let Message::Notification { method, params } = &message {
                if method == "notifications/cancelled" && shared.modern() {
                    // Modern HTTP has no client notifications: closing the stream is the cancel.
                    let id = params
                        .as_ref()
                        .and_then(|p| p.get("requestId"))
                        .cloned()
                        .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
                    let handle = id.and_then(|id| {
                        shared
                            .in_flight
                            .lock()
                            .ok()
                            .and_then(|mut map| map.remove(&id))
                    });
                    if let Some(handle) = handle {
                        handle.abort();
                    }
                    return Ok(());
                }
                if method == "notifications/initialized" {
                    let listener = tokio::spawn(shared.clone().listen());
                    if let Ok(mut background) = shared.background.lock() {
                        background.push(listener.abort_handle());
                    }
                }
            }
            let id = match &message {
                Message::Request { id, .. } => Some(id.clone()),
                _ => None,
            };
            let task = tokio::spawn(shared.clone().post(message));
            if let (Some(id), Ok(mut map)) = (id, shared.in_flight.lock()) {
                map.retain(|_, handle| !handle.is_finished());
                map.insert(id, task.abort_handle());
            }
            Ok(())
        })
    }

    fn set_protocol_version(&self, version: &str) {
        if let Ok(mut slot) = self.shared.version.write() {
            *slot = Some(version.to_owned());
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            for handle in shared
                .background
                .lock()
                .map(|mut b| std::mem::take(&mut *b))
                .unwrap_or_default()
            {
                handle.abort();
            }
            for (_, handle) in shared
                .in_flight
                .lock()
                .map(|mut m| std::mem::take(&mut *m))
                .unwrap_or_default()
            {
                handle.abort();
            }
            if let (Some(session), Ok(client)) = (shared.session(), http_client()) {
                let _ = client
                    .delete(&shared.url)
                    .headers(shared.headers.clone())
                    .header("mcp-session-id", session)
                    .send()
                    .await;
            }
        })
    }
}
