//! A JSON-RPC client over any [`Transport`]: correlates answers with requests, routes progress
//! to the caller that asked for it, tells the server when a caller gives up, and answers the
//! few requests a server may send its client (`ping`, `roots/list`).
//!
//! A request whose future is dropped before its answer arrives (timeout, cancellation) sends
//! `notifications/cancelled` to the server, so abandoned work stops upstream too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::{Map, Value, json};
use switchboard_core::param_headers;
use switchboard_core::{CallerChannel, Progress, ProgressSink, ServerId, ToolDefinition};
use tokio::sync::{mpsc, oneshot, watch};

use super::transport::{Inbound, Opened, Transport};
use crate::era::{Era, add_modern_meta, client_info};
use crate::jsonrpc::{Message, RequestId, RpcError, client_capability_for, code};

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    #[error("{0}")]
    Disconnected(String),
}

/// Something the server told us that is not an answer to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    ToolsChanged,
    ResourcesChanged,
    PromptsChanged,
    /// `notifications/resources/updated` for a subscribed URI.
    ResourceUpdated(String),
}

type Answer = Result<Value, ClientError>;

struct Shared {
    pending: Mutex<HashMap<i64, oneshot::Sender<Answer>>>,
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// Callers of requests in flight, oldest first: where this server's own requests and log
    /// messages are relayed. MCP does not say which request a server request belongs to
    /// (except on an HTTP response stream), so the most recent caller that can answer it does.
    callers: Mutex<Vec<(i64, Arc<dyn CallerChannel>)>>,
}

impl Shared {
    fn caller_for(&self, method: &str) -> Option<Arc<dyn CallerChannel>> {
        let callers = self.callers.lock().ok()?;
        callers
            .iter()
            .rev()
            .find(|(_, caller)| caller.supports(method))
            .map(|(_, caller)| caller.clone())
    }
}

/// One live JSON-RPC connection to one server.
pub struct RpcClient {
    server: ServerId,
    transport: Arc<dyn Transport>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    era: RwLock<Option<Era>>,
    closed: watch::Receiver<Option<String>>,
}

impl RpcClient {
    /// Starts reading the transport's inbound channel. Events (list changes) go to `events`.
    pub fn start(
        server: ServerId,
        opened: Opened,
        events: mpsc::UnboundedSender<ServerEvent>,
    ) -> Arc<Self> {
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            progress: Mutex::default(),
            callers: Mutex::default(),
        });
        let (closed_tx, closed) = watch::channel(None);
        let client = Arc::new(Self {
            server,
            transport: opened.transport.clone(),
            shared: shared.clone(),
            next_id: AtomicI64::new(1),
            era: RwLock::new(None),
            closed,
        });
        tokio::spawn(read_loop(
            opened.transport,
            opened.inbound,
            shared,
            events,
            closed_tx,
            client.server.clone(),
        ));
        client
    }

    pub fn server(&self) -> &ServerId {
        &self.server
    }

    /// Fixes the era after negotiation; modern requests then carry their context in `_meta`.
    pub fn set_era(&self, era: Era) {
        self.transport.set_protocol_version(era.version());
        if let Ok(mut slot) = self.era.write() {
            *slot = Some(era);
        }
    }

    /// Tells the transport which arguments of which tools to mirror into `Mcp-Param-*`
    /// headers (their `x-mcp-header` declarations). A tool whose declarations are invalid is
    /// left out here; the catalog quarantines it, so it is never called.
    pub fn learn_param_headers(&self, tools: &[ToolDefinition]) {
        let declared = tools
            .iter()
            .filter_map(|tool| {
                let declared = param_headers::declared(&tool.input_schema).ok()?;
                (!declared.is_empty()).then(|| (tool.name.clone(), Arc::from(declared)))
            })
            .collect();
        self.transport.learn_param_headers(declared);
    }

    pub fn era(&self) -> Option<Era> {
        self.era.read().ok().and_then(|era| era.clone())
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> String {
        let mut closed = self.closed.clone();
        loop {
            if let Some(reason) = closed.borrow_and_update().clone() {
                return reason;
            }
            if closed.changed().await.is_err() {
                return "connection ended".to_owned();
            }
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.borrow().is_some()
    }

    /// Sends a request and waits for its answer. Dropping the future cancels it upstream.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Answer {
        self.request_with_progress(method, params, None).await
    }

    /// Like [`Self::request`], with progress reported into `progress` when set.
    pub async fn request_with_progress(
        &self,
        method: &str,
        params: Option<Value>,
        progress: Option<ProgressSink>,
    ) -> Answer {
        self.request_for(method, params, progress, None).await
    }

    /// A request made on behalf of a caller: progress goes to `progress`, and the server's own
    /// requests and log messages while it runs are relayed to `caller`.
    pub async fn request_for(
        &self,
        method: &str,
        params: Option<Value>,
        progress: Option<ProgressSink>,
        caller: Option<Arc<dyn CallerChannel>>,
    ) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let (Some(caller), Ok(mut callers)) = (caller, self.shared.callers.lock()) {
            callers.push((id, caller));
        }
        let mut params = match params {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let token = progress.map(|sink| {
            let token = format!("sb-{id}");
            if let Ok(mut map) = self.shared.progress.lock() {
                map.insert(token.clone(), sink);
            }
            let meta = params
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert("progressToken".into(), Value::String(token.clone()));
            }
            token
        });
        // The discover probe is itself a modern request: servers expect its `_meta` too.
        if matches!(self.era(), Some(Era::Modern)) || method == "server/discover" {
            add_modern_meta(&mut params, &client_info(), &json!({}));
        }
        let (answer_tx, answer_rx) = oneshot::channel();
        if let Ok(mut pending) = self.shared.pending.lock() {
            pending.insert(id, answer_tx);
        }
        let mut guard = InFlight {
            client: self,
            id,
            token,
            answered: false,
        };
        let message = Message::Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params: Some(Value::Object(params)),
        };
        if let Err(error) = self.transport.send(message).await {
            guard.answered = true;
            return Err(ClientError::Disconnected(error.0));
        }
        let answer = answer_rx
            .await
            .unwrap_or_else(|_| Err(ClientError::Disconnected("connection closed".into())));
        guard.answered = true;
        answer
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.transport
            .send(Message::Notification {
                method: method.to_owned(),
                params,
            })
            .await
            .map_err(|error| ClientError::Disconnected(error.0))
    }

    /// What the transport saw that may explain a failure.
    pub fn transport_diagnostics(&self) -> Option<String> {
        self.transport.diagnostics()
    }

    /// Ends the connection.
    pub async fn close(&self) {
        self.transport.close().await;
    }
}

/// Cleans up after a request; if it was abandoned, tells the server.
struct InFlight<'a> {
    client: &'a RpcClient,
    id: i64,
    token: Option<String>,
    answered: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut callers) = self.client.shared.callers.lock() {
            callers.retain(|(id, _)| *id != self.id);
        }
        if let Some(token) = &self.token
            && let Ok(mut map) = self.client.shared.progress.lock()
        {
            map.remove(token);
        }
        if self.answered {
            return;
        }
        if let Ok(mut pending) = self.client.shared.pending.lock() {
            pending.remove(&self.id);
        }
        let transport = self.client.transport.clone();
        let id = self.id;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let params = json!({"requestId": id, "reason": "cancelled by the caller"});
                let _ = transport
                    .send(Message::notification("notifications/cancelled", params))
                    .await;
            });
        }
    }
}

async fn read_loop(
    transport: Arc<dyn Transport>,
    mut inbound: mpsc::Receiver<Inbound>,
    shared: Arc<Shared>,
    events: mpsc::UnboundedSender<ServerEvent>,
    closed: watch::Sender<Option<String>>,
    server: ServerId,
) {
    let reason = loop {
        let Some(item) = inbound.recv().await else {
            break "connection closed".to_owned();
        };
        let message = match item {
            Inbound::Message(message) => message,
            Inbound::Closed(reason) => break reason,
        };
        match message {
            Message::Response {
                id: RequestId::Number(id),
                result,
            } => answer(&shared, id, Ok(result)),
            Message::Error {
                id: Some(RequestId::Number(id)),
                error,
            } => answer(&shared, id, Err(ClientError::Rpc(error))),
            Message::Response { .. } | Message::Error { .. } | Message::PreparedResponse { .. } => {
                tracing::debug!(target: "switchboard::upstream", server = %server, "ignoring an answer to no request of ours");
            }
            Message::Notification { method, params } => {
                handle_notification(&shared, &events, &server, &method, params)
            }
            Message::Request { id, method, params } => {
                let transport = transport.clone();
                let caller = shared.caller_for(&method);
                tokio::spawn(async move {
                    let reply = answer_server_request(id, &method, params, caller).await;
                    let _ = transport.send(reply).await;
                });
            }
        }
    };
    let pending: Vec<_> = shared
        .pending
        .lock()
        .map(|mut map| map.drain().collect())
        .unwrap_or_default();
    for (_, waiter) in pending {
        let _ = waiter.send(Err(ClientError::Disconnected(reason.clone())));
    }
    let _ = closed.send(Some(reason));
}

/// Answers a request the server sent us: relayed to the caller when one can answer it.
async fn answer_server_request(
    id: RequestId,
    method: &str,
    params: Option<Value>,
    caller: Option<Arc<dyn CallerChannel>>,
) -> Message {
    if method == "ping" {
        return Message::Response {
            id,
            result: json!({}),
        };
    }
    let Some(capability) = client_capability_for(method) else {
        return Message::error(
            Some(id),
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        );
    };
    match caller {
        Some(caller) => match caller
            .request(method, params.unwrap_or_else(|| json!({})))
            .await
        {
            Ok(result) => Message::Response { id, result },
            Err(error) => Message::Error {
                id: Some(id),
                error: RpcError {
                    code: error.code,
                    message: error.message,
                    data: error.data,
                },
            },
        },
        // A client without roots has none to offer: an empty list, as before the capability.
        None if method == "roots/list" => Message::Response {
            id,
            result: json!({"roots": []}),
        },
        None => Message::Error {
            id: Some(id),
            error: RpcError::missing_capability(capability),
        },
    }
}

fn answer(shared: &Shared, id: i64, answer: Answer) {
    let waiter = shared
        .pending
        .lock()
        .ok()
        .and_then(|mut map| map.remove(&id));
    if let Some(waiter) = waiter {
        let _ = waiter.send(answer);
    }
}

fn handle_notification(
    shared: &Shared,
    events: &mpsc::UnboundedSender<ServerEvent>,
    server: &ServerId,
    method: &str,
    params: Option<Value>,
) {
    match method {
        "notifications/progress" => {
            let Some(params) = params else { return };
            let token = match params.get("progressToken") {
                Some(Value::String(token)) => token.clone(),
                Some(other) => other.to_string(),
                None => return,
            };
            let sink = shared
                .progress
                .lock()
                .ok()
                .and_then(|map| map.get(&token).cloned());
            if let (Some(sink), Some(progress)) =
                (sink, params.get("progress").and_then(Value::as_f64))
            {
                sink.report(Progress {
                    progress,
                    total: params.get("total").and_then(Value::as_f64),
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
        }
        "notifications/tools/list_changed" => {
            let _ = events.send(ServerEvent::ToolsChanged);
        }
        "notifications/resources/list_changed" => {
            let _ = events.send(ServerEvent::ResourcesChanged);
        }
        "notifications/prompts/list_changed" => {
            let _ = events.send(ServerEvent::PromptsChanged);
        }
        "notifications/message" => {
            let params = params.unwrap_or(Value::Null);
            match shared.caller_for(method) {
                Some(caller) => caller.notify(method, params),
                None => {
                    tracing::info!(target: "switchboard::upstream::log", server = %server, "{params}")
                }
            }
        }
        "notifications/resources/updated" => {
            if let Some(uri) = params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
            {
                let _ = events.send(ServerEvent::ResourceUpdated(uri.to_owned()));
            }
        }
        _ => {}
    }
}
