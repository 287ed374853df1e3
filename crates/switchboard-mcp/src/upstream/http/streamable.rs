//! The Streamable HTTP client transport.
//!
//! Every message is a POST, run on its own task so `send` returns at once. An answer comes
//! back as JSON or as an SSE stream (notifications first, then the answer); 202 means nothing
//! to deliver (see [`super::exchange`]). Legacy era: the session id from the `initialize`
//! answer goes on every later request, a GET stream carries the server's own notifications,
//! and DELETE ends the session. Modern era (2026-07-28): no session, requests carry
//! `Mcp-Method` / `Mcp-Name` headers, and closing a request's response stream is how it is
//! cancelled (no `notifications/cancelled` is sent). An HTTP failure of a request becomes an
//! error answer to that request; an expired session (404) ends the connection so the
//! supervisor reconnects.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use switchboard_core::param_headers::ParamHeader;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::client::{Target, http_client};
use super::header_map;
use super::headers::{SESSION_ID, add_param_headers, add_routing_headers};
use super::held_tasks::{HeldTasks, UNTRACKED_POST_TIMEOUT};
use crate::era::{MODERN_VERSION, VERSION_HEADER};
use crate::jsonrpc::{Message, RequestId};
use crate::upstream::transport::{
    DirectAnswers, Inbound, OfferedAnswers, OnBehalf, Opened, Transport, TransportError,
};
use switchboard_core::trace::{BAGGAGE, TRACEPARENT, TRACESTATE};

/// How long `close` waits for the server to acknowledge the DELETE of its session.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// State shared by the transport and its request tasks.
pub(super) struct Shared {
    pub(super) server: String,
    /// The endpoint as configured, for messages.
    pub(super) url: String,
    /// The endpoint parsed once: parsing it for every request (IDNA included) showed up in
    /// the HTTP → HTTP profile.
    pub(super) endpoint: Target,
    pub(super) headers: HeaderMap,
    /// The tokens the server gets (`[servers.ID.auth]`).
    pub(super) credentials: Option<Arc<super::UpstreamCredentials>>,
    pub(super) max_bytes: usize,
    pub(super) inbound: mpsc::Sender<Inbound>,
    /// The session id and the protocol version, kept as the header values every request
    /// sends (made once, not for each request).
    pub(super) session: RwLock<Option<HeaderValue>>,
    version: RwLock<Option<HeaderValue>>,
    /// Each tool's arguments mirrored into `Mcp-Param-*` headers, by tool name.
    param_headers: RwLock<HashMap<String, Arc<[ParamHeader]>>>,
    /// POSTs in flight by request id (the gateway's own ids, hashed with foldhash: every
    /// call goes in and out), so a cancel can close the stream.
    in_flight: Mutex<foldhash::HashMap<RequestId, AbortHandle>>,
    background: HeldTasks,
    /// The client's requests, for answers that may skip the inbound channel
    /// ([`Transport::answer_directly`]).
    pub(super) answers: OfferedAnswers,
}

struct StreamableHttp {
    shared: Arc<Shared>,
}

/// Opens a Streamable HTTP connection (no I/O until the first message); `public_only` holds
/// every connection to public addresses (`super::public_only`).
pub fn open_streamable_http(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    credentials: Option<Arc<super::UpstreamCredentials>>,
    tls: Option<&super::TlsFiles>,
    public_only: bool,
    max_message_bytes: usize,
) -> Result<Opened, TransportError> {
    let tls = super::tls::load(tls).map_err(TransportError::new)?;
    if let Some(credentials) = &credentials {
        credentials.reach_with(tls.clone());
    }
    let endpoint = Target::parse(url)
        .map(|target| target.with_tls(tls).public_only(public_only))
        .map_err(TransportError::new)?;
    let (inbound_tx, inbound) = mpsc::channel(256);
    let shared = Arc::new(Shared {
        server: server.to_owned(),
        url: url.to_owned(),
        endpoint,
        headers: header_map(headers)?,
        credentials,
        max_bytes: max_message_bytes,
        inbound: inbound_tx,
        session: RwLock::new(None),
        version: RwLock::new(None),
        param_headers: RwLock::default(),
        in_flight: Mutex::default(),
        background: HeldTasks::default(),
        answers: OfferedAnswers::default(),
    });
    Ok(Opened {
        transport: Arc::new(StreamableHttp { shared }),
        inbound,
    })
}

impl Shared {
    fn version(&self) -> Option<HeaderValue> {
        self.version.read().ok().and_then(|v| v.clone())
    }

    pub(super) fn modern(&self) -> bool {
        self.version
            .read()
            .is_ok_and(|v| v.as_ref().map(HeaderValue::as_bytes) == Some(MODERN_VERSION.as_bytes()))
    }

    fn session(&self) -> Option<HeaderValue> {
        self.session.read().ok().and_then(|s| s.clone())
    }

    pub(super) fn has_session(&self) -> bool {
        self.session.read().is_ok_and(|s| s.is_some())
    }

    /// The configured headers plus the version and session ones (for GET and DELETE too),
    /// and the gateway's token when it holds one (a POST makes sure it does:
    /// [`Shared::authorize`]).
    pub(super) fn base_headers(&self) -> HeaderMap {
        let mut headers = self.headers.clone();
        if let Some(token) = self.credentials.as_ref().and_then(|c| c.held()) {
            headers.insert(http::header::AUTHORIZATION, token);
        }
        // Names made at compile time: a `&str` name not among the standard ones is copied
        // into a fresh buffer on every insert.
        if let Some(version) = self.version() {
            headers.insert(const { HeaderName::from_static(VERSION_HEADER) }, version);
        }
        if let Some(session) = self.session() {
            headers.insert(const { HeaderName::from_static(SESSION_ID) }, session);
        }
        headers
    }

    /// The headers of the POST carrying `message`.
    pub(super) fn post_headers(&self, message: &Message) -> HeaderMap {
        let mut headers = self.base_headers();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        // The discover probe is a modern request before any version is fixed.
        let probe =
            matches!(message, Message::Request { method, .. } if method == "server/discover");
        if probe && self.version().is_none() {
            headers.insert(VERSION_HEADER, HeaderValue::from_static(MODERN_VERSION));
        }
        let modern = self.modern();
        if modern || probe {
            add_routing_headers(&mut headers, message);
        }
        if modern && let Ok(declared) = self.param_headers.read() {
            add_param_headers(&mut headers, message, &declared);
        }
        add_trace_headers(&mut headers, message);
        headers
    }

    fn track(&self, id: RequestId, task: AbortHandle) {
        if let Ok(mut map) = self.in_flight.lock() {
            map.retain(|_, handle| !handle.is_finished());
            map.insert(id, task);
        }
    }

    /// Stops reading the answer of a request the caller gave up on.
    fn abort(&self, id: &RequestId) -> bool {
        let handle = self
            .in_flight
            .lock()
            .ok()
            .and_then(|mut map| map.remove(id));
        handle.is_some_and(|handle| {
            handle.abort();
            true
        })
    }

    fn keep_background(&self, task: AbortHandle) {
        self.background.hold(task);
    }

    fn abort_all(&self) {
        self.background.abort_all();
        let in_flight = self
            .in_flight
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default();
        for handle in in_flight.into_values() {
            handle.abort();
        }
    }
}

/// The request id a `notifications/cancelled` names.
fn cancelled_id(message: &Message) -> Option<RequestId> {
    match message {
        Message::Notification { method, params } if method == "notifications/cancelled" => {
            serde_json::from_value(params.as_ref()?.get("requestId")?.clone()).ok()
        }
        _ => None,
    }
}

impl Transport for StreamableHttp {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>> {
        self.send_on_behalf(message, OnBehalf::Gateway)
    }

    fn send_on_behalf(
        &self,
        message: Message,
        on_behalf: OnBehalf,
    ) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            if let Some(id) = cancelled_id(&message) {
                let aborted = shared.abort(&id);
                // Modern HTTP: closing the response stream is the cancel, nothing is sent.
                if shared.modern() {
                    if !aborted {
                        tracing::debug!(target: "switchboard::upstream", server = %shared.server, "cancel of request {id}, which is no longer in flight");
                    }
                    return Ok(());
                }
            }
            let initialized = matches!(&message, Message::Notification { method, .. } if method == "notifications/initialized");
            let id = match &message {
                Message::Request { id, .. } => Some(id.clone()),
                _ => None,
            };
            if initialized && !shared.modern() {
                // The session's GET stream opens once the server has taken `initialized`.
                let session = shared.clone();
                let task = tokio::spawn(async move {
                    session.clone().post(message, on_behalf).await;
                    session.listen().await;
                });
                shared.keep_background(task.abort_handle());
                return Ok(());
            }
            // Boxed, the exchange's large future is moved into its task once; unboxed, tokio
            // moves it several times on the way (docs/bench/history.md, "Boxed before spawning").
            let Some(id) = id else {
                // No request waits on it: bounded, and held so that closing stops it.
                let post = shared.clone().post(message, on_behalf);
                let server = shared.server.clone();
                let task = tokio::spawn(Box::pin(async move {
                    if tokio::time::timeout(UNTRACKED_POST_TIMEOUT, post)
                        .await
                        .is_err()
                    {
                        tracing::debug!(target: "switchboard::upstream", %server, "a POST no request waits on got no answer within {} s", UNTRACKED_POST_TIMEOUT.as_secs());
                    }
                }));
                shared.keep_background(task.abort_handle());
                return Ok(());
            };
            let task = tokio::spawn(Box::pin(shared.clone().post(message, on_behalf)));
            shared.track(id, task.abort_handle());
            Ok(())
        })
    }

    fn learn_param_headers(&self, declared: HashMap<String, Arc<[ParamHeader]>>) {
        if let Ok(mut slot) = self.shared.param_headers.write() {
            *slot = declared;
        }
    }

    fn answer_directly(&self, answers: Weak<dyn DirectAnswers>) {
        self.shared.answers.offer(answers);
    }

    fn set_protocol_version(&self, version: &str) {
        if let Ok(mut slot) = self.shared.version.write() {
            *slot = HeaderValue::from_str(version).ok();
        }
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let shared = &self.shared;
            shared.abort_all();
            let session = shared.session.write().ok().and_then(|mut s| s.take());
            if let Some(session) = session {
                let mut headers = shared.base_headers();
                headers.insert(SESSION_ID, session);
                let delete =
                    http_client().send(Method::DELETE, &shared.endpoint, headers, Bytes::new());
                let _ = tokio::time::timeout(DELETE_TIMEOUT, delete).await;
            }
        })
    }
}

/// Mirrors a request's `_meta.traceparent`, `tracestate` and `baggage` into the W3C headers, so HTTP
/// middleware in front of the server sees the trace too.
fn add_trace_headers(headers: &mut HeaderMap, message: &Message) {
    let Message::Request {
        params: Some(params),
        ..
    } = message
    else {
        return;
    };
    let Some(meta) = params.get("_meta") else {
        return;
    };
    for name in [TRACEPARENT, TRACESTATE, BAGGAGE] {
        if let Some(value) = meta
            .get(name)
            .and_then(serde_json::Value::as_str)
            .and_then(|value| HeaderValue::from_str(value).ok())
        {
            headers.insert(name, value);
        }
    }
}
