//! A JSON-RPC client over any [`Transport`]: correlates answers with requests, routes progress
//! to the caller that asked for it, tells the server when a caller gives up, and answers the
//! few requests a server may send its client (`ping`, `roots/list`).
//!
//! A request whose future is dropped before its answer arrives (timeout, cancellation) sends
//! `notifications/cancelled` to the server, so abandoned work stops upstream too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use serde_json::{Map, Value, json};
use switchboard_core::param_headers;
use switchboard_core::{CallerChannel, Progress, ProgressSink, ServerId, ToolDefinition};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::transport::{DirectAnswers, Inbound, OnBehalf, Opened, Transport};
use super::waiting::Waiting;
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
    /// Requests waiting for their answers, with the callers they run for: where this
    /// server's own requests and log messages are relayed ([`Shared::route`]).
    waiting: Waiting<Answer>,
    progress: Mutex<HashMap<String, ProgressSink>>,
    /// The server's own tasks the gateway follows, by their id, with the caller each
    /// belongs to: a server request tagged with one (`related-task`) goes to that caller.
    tasks: Mutex<HashMap<String, Arc<dyn CallerChannel>>>,
}

/// Where a server's own request or log message goes.
enum Route {
    Caller(Arc<dyn CallerChannel>),
    /// No call in flight can take it.
    Nobody,
    /// Calls of this many clients are in flight and the message does not say whose it is.
    Ambiguous(usize),
}

impl Shared {
    /// The caller of the server's task a message names in its `related-task` `_meta`, if
    /// the gateway follows that task for a caller that can take `method`.
    fn route_task(&self, method: &str, params: Option<&Value>) -> Option<Route> {
        let task = params?
            .get("_meta")?
            .get(switchboard_core::task::RELATED_TASK_META)?
            .get("taskId")?
            .as_str()?;
        let tasks = self.tasks.lock().ok()?;
        let caller = tasks.get(task)?;
        Some(if caller.supports(method) {
            Route::Caller(caller.clone())
        } else {
            Route::Nobody
        })
    }

    /// Routes a server message of `method`. One that came on the response stream of request
    /// `of` (Streamable HTTP) belongs to that request's caller. Elsewhere (a stdio server, a
    /// GET stream) MCP does not say which call it belongs to: it goes to the most recent
    /// caller that can take it only when every call in flight is one client's, since asking
    /// another client's user — or showing them another client's log — would be worse than
    /// asking nobody.
    fn route(&self, method: &str, of: Option<&RequestId>) -> Route {
        if let Some(RequestId::Number(of)) = of {
            return match self.waiting.caller_of(*of) {
                Some(caller) if caller.supports(method) => Route::Caller(caller),
                _ => Route::Nobody,
            };
        }
        let callers = self.waiting.callers();
        let mut clients: Vec<usize> = callers.iter().map(|(_, c)| c.client_key()).collect();
        clients.sort_unstable();
        clients.dedup();
        if clients.len() > 1 {
            return Route::Ambiguous(clients.len());
        }
        callers
            .iter()
            .rev()
            .find(|(_, caller)| caller.supports(method))
            .map_or(Route::Nobody, |(_, caller)| Route::Caller(caller.clone()))
    }
}

/// One live JSON-RPC connection to one server.
pub struct RpcClient {
    server: ServerId,
    /// Its name in logs: the server id, with `#N` for an instance of a pool.
    label: String,
    transport: Arc<dyn Transport>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    era: RwLock<Option<Era>>,
    closed: watch::Receiver<Option<String>>,
    /// Ends the read loop when the client is closed: the transport holds a sender of the
    /// loop's channel, so the channel alone never ends it.
    stop: CancellationToken,
    /// What the server declared of tasks (see [`super::tasks`]).
    tasks: super::tasks::UpstreamTasks,
}

/// Routes a followed server task's requests to its caller while it lives.
pub(super) struct TaskRoute<'a> {
    client: &'a RpcClient,
    id: String,
}

impl Drop for TaskRoute<'_> {
    fn drop(&mut self) {
        if let Ok(mut tasks) = self.client.shared.tasks.lock() {
            tasks.remove(&self.id);
        }
    }
}

/// Who a request is made for: where its progress goes, the channel back to its caller, and
/// on whose behalf it goes (see [`OnBehalf`]).
#[derive(Default)]
pub struct RequestFor {
    pub progress: Option<ProgressSink>,
    pub caller: Option<Arc<dyn CallerChannel>>,
    pub on_behalf: OnBehalf,
}

impl RequestFor {
    /// A call's: its progress sink, its caller, its caller's token.
    pub fn of(ctx: &switchboard_core::CallContext) -> Self {
        Self {
            progress: ctx.progress.clone(),
            caller: ctx.caller.clone(),
            on_behalf: OnBehalf::of(ctx),
        }
    }
}

impl RpcClient {
    /// Starts reading the transport's inbound channel. Events (list changes) go to `events`;
    /// `label` names the connection in logs.
    pub fn start(
        server: ServerId,
        label: &str,
        opened: Opened,
        events: mpsc::UnboundedSender<ServerEvent>,
    ) -> Arc<Self> {
        let shared = Arc::new(Shared {
            waiting: Waiting::default(),
            progress: Mutex::default(),
            tasks: Mutex::default(),
        });
        let direct: Weak<dyn DirectAnswers> = Arc::downgrade(&shared) as Weak<dyn DirectAnswers>;
        opened.transport.answer_directly(direct);
        let (closed_tx, closed) = watch::channel(None);
        let stop = CancellationToken::new();
        let client = Arc::new(Self {
            server,
            label: label.to_owned(),
            transport: opened.transport.clone(),
            shared: shared.clone(),
            next_id: AtomicI64::new(1),
            era: RwLock::new(None),
            closed,
            stop: stop.clone(),
            tasks: super::tasks::UpstreamTasks::default(),
        });
        tokio::spawn(read_loop(
            opened.transport,
            opened.inbound,
            shared,
            events,
            closed_tx,
            client.label.clone(),
            stop,
        ));
        client
    }

    pub fn server(&self) -> &ServerId {
        &self.server
    }

    /// Its name in logs: the server id, with `#N` for an instance of a pool.
    pub fn label(&self) -> &str {
        &self.label
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
        self.tasks.learn_tools(tools);
    }

    /// What the server declared of tasks.
    pub fn tasks(&self) -> &super::tasks::UpstreamTasks {
        &self.tasks
    }

    /// Whether the server speaks the modern era (asked on every request: no copy of the
    /// era is made).
    pub fn is_modern(&self) -> bool {
        self.era
            .read()
            .is_ok_and(|era| matches!(*era, Some(Era::Modern)))
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
        let made_for = RequestFor {
            progress,
            ..RequestFor::default()
        };
        self.request_for(method, params, made_for).await
    }

    /// A request made on behalf of a caller: progress goes to its sink, the server's own
    /// requests and log messages while it runs are relayed to its caller, and an HTTP
    /// server that takes the caller's identity gets the caller's exchanged token.
    pub async fn request_for(
        &self,
        method: &str,
        params: Option<Value>,
        made_for: RequestFor,
    ) -> Answer {
        let RequestFor {
            progress,
            caller,
            on_behalf,
        } = made_for;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
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
        if self.is_modern() || method == "server/discover" {
            add_modern_meta(&mut params, &client_info(), &json!({}));
        }
        let (answer_tx, answer_rx) = oneshot::channel();
        self.shared.waiting.insert(id, answer_tx, caller);
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
        if let Err(error) = self.transport.send_on_behalf(message, on_behalf).await {
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

    /// Sends the requests the server tags with its task `id` to `caller` until the guard is
    /// dropped (see [`super::tasks`]).
    pub(super) fn route_task_to(&self, id: &str, caller: Arc<dyn CallerChannel>) -> TaskRoute<'_> {
        if let Ok(mut tasks) = self.shared.tasks.lock() {
            tasks.insert(id.to_owned(), caller);
        }
        TaskRoute {
            client: self,
            id: id.to_owned(),
        }
    }

    /// Sends a request whose answer nobody waits for (and is dropped when it comes), from
    /// code that cannot wait: a drop guard telling a server its task is abandoned.
    pub fn send_detached(&self, method: &str, params: Map<String, Value>, on_behalf: OnBehalf) {
        let mut params = params;
        if self.is_modern() {
            add_modern_meta(&mut params, &client_info(), &json!({}));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = Message::Request {
            id: RequestId::Number(id),
            method: method.to_owned(),
            params: Some(Value::Object(params)),
        };
        let transport = self.transport.clone();
        tokio::spawn(async move {
            let _ = transport.send_on_behalf(message, on_behalf).await;
        });
    }

    /// What the transport saw that may explain a failure.
    pub fn transport_diagnostics(&self) -> Option<String> {
        self.transport.diagnostics()
    }

    /// Ends the connection, and with it every request still waiting on it ("the connection
    /// was closed") and the task reading it.
    pub async fn close(&self) {
        self.transport.close().await;
        self.stop.cancel();
    }
}

/// Cleans up after a request; if it was abandoned, tells the server.
struct InFlight<'a> {
    client: &'a RpcClient,
    id: i64,
    token: Option<String>,
    answered: bool,
}

/// How long the notice that a call was given up may wait to be sent.
const CANCEL_NOTICE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.client.shared.waiting.forget(self.id);
        if let Some(token) = &self.token
            && let Ok(mut map) = self.client.shared.progress.lock()
        {
            map.remove(token);
        }
        if self.answered {
            return;
        }
        let transport = self.client.transport.clone();
        let id = self.id;
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let params = json!({"requestId": id, "reason": "cancelled by the caller"});
                // Bounded: a server that stopped reading would otherwise hold one task per
                // abandoned call, for ever.
                let _ = tokio::time::timeout(
                    CANCEL_NOTICE_PATIENCE,
                    transport.send(Message::notification("notifications/cancelled", params)),
                )
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
    server: String,
    stop: CancellationToken,
) {
    let reason = loop {
        let item = tokio::select! {
            item = inbound.recv() => item,
            () = stop.cancelled() => break "the connection was closed".to_owned(),
        };
        let Some(item) = item else {
            break "connection closed".to_owned();
        };
        let (message, of) = match item {
            Inbound::Message(message) => (message, None),
            Inbound::OnStream { message, of } => (message, Some(of)),
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
                handle_notification(&shared, &events, &server, &method, params, of.as_ref())
            }
            Message::Request { id, method, params } => {
                let transport = transport.clone();
                let route = shared
                    .route_task(&method, params.as_ref())
                    .unwrap_or_else(|| shared.route(&method, of.as_ref()));
                tokio::spawn(async move {
                    let reply = answer_server_request(id, &method, params, route).await;
                    let _ = transport.send(reply).await;
                });
            }
        }
    };
    for waiter in shared.waiting.drain() {
        let _ = waiter.send(Err(ClientError::Disconnected(reason.clone())));
    }
    let _ = closed.send(Some(reason));
}

/// Answers a request the server sent us: relayed to the caller it belongs to when that
/// caller can answer it.
async fn answer_server_request(
    id: RequestId,
    method: &str,
    params: Option<Value>,
    route: Route,
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
    let caller = match route {
        Route::Caller(caller) => Some(caller),
        Route::Nobody => None,
        Route::Ambiguous(clients) => {
            return Message::error(
                Some(id),
                code::INTERNAL_ERROR,
                format!(
                    "calls of {clients} clients are in flight on this server and the request \
                     does not say which one it is for: Switchboard asks none of them rather \
                     than the wrong one"
                ),
            );
        }
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

impl DirectAnswers for Shared {
    fn answer(&self, message: Message) -> Option<Message> {
        match message {
            Message::Response {
                id: RequestId::Number(id),
                result,
            } => answer(self, id, Ok(result)),
            Message::Error {
                id: Some(RequestId::Number(id)),
                error,
            } => answer(self, id, Err(ClientError::Rpc(error))),
            other => return Some(other),
        }
        None
    }
}

fn answer(shared: &Shared, id: i64, answer: Answer) {
    if let Some(waiter) = shared.waiting.take(id) {
        let _ = waiter.send(answer);
    }
}

fn handle_notification(
    shared: &Shared,
    events: &mpsc::UnboundedSender<ServerEvent>,
    server: &str,
    method: &str,
    params: Option<Value>,
    of: Option<&RequestId>,
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
            match shared.route(method, of) {
                Route::Caller(caller) => caller.notify(method, params),
                Route::Nobody | Route::Ambiguous(_) => {
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

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use switchboard_core::CallerError;

    use super::*;

    /// Takes every message and answers none; holds a sender of the inbound channel, as the
    /// HTTP transports do, so the channel never ends by itself.
    struct Silent(std::sync::Mutex<Option<mpsc::Sender<Inbound>>>);

    impl Transport for Silent {
        fn send(
            &self,
            _message: Message,
        ) -> BoxFuture<'_, Result<(), super::super::transport::TransportError>> {
            Box::pin(async { Ok(()) })
        }

        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    /// Closing a client ends the requests still waiting on it, at once, rather than at their
    /// timeout, and its reading task.
    #[tokio::test]
    async fn closing_a_client_ends_the_requests_waiting_on_it() {
        let (sender, inbound) = mpsc::channel(8);
        let transport = Arc::new(Silent(std::sync::Mutex::new(Some(sender))));
        let opened = Opened {
            transport: transport.clone(),
            inbound,
        };
        let (events, _) = mpsc::unbounded_channel();
        let client = RpcClient::start(ServerId::new("s"), "s", opened, events);
        let waiting = tokio::spawn({
            let client = client.clone();
            async move { client.request("tools/list", None).await }
        });
        tokio::task::yield_now().await;
        client.close().await;
        let answer = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("ended at once")
            .expect("joined");
        assert!(
            matches!(&answer, Err(ClientError::Disconnected(why)) if why.contains("closed")),
            "{answer:?}"
        );
        assert!(
            transport.0.lock().expect("lock").is_some(),
            "the sender was held"
        );
    }

    /// A caller of client `key` that can answer elicitation only.
    #[derive(Debug)]
    struct Client {
        key: usize,
        name: &'static str,
    }

    impl CallerChannel for Client {
        fn supports(&self, method: &str) -> bool {
            method == "elicitation/create"
        }

        fn request(
            &self,
            _method: &str,
            _params: Value,
        ) -> BoxFuture<'_, Result<Value, CallerError>> {
            Box::pin(async move { Ok(json!({"answered_by": self.name})) })
        }

        fn notify(&self, _method: &str, _params: Value) {}

        fn client_key(&self) -> usize {
            self.key
        }
    }

    fn shared(callers: &[(i64, usize, &'static str)]) -> Shared {
        let waiting = Waiting::default();
        for &(id, key, name) in callers {
            let caller: Arc<dyn CallerChannel> = Arc::new(Client { key, name });
            waiting.insert(id, oneshot::channel().0, Some(caller));
        }
        Shared {
            waiting,
            progress: Mutex::default(),
            tasks: Mutex::default(),
        }
    }

    fn routed_to(route: Route) -> String {
        match route {
            Route::Caller(caller) => format!("{caller:?}"),
            Route::Nobody => "nobody".to_owned(),
            Route::Ambiguous(clients) => format!("ambiguous among {clients}"),
        }
    }

    #[test]
    fn a_server_request_goes_to_its_stream_or_to_the_one_client_in_flight() {
        let one_client = shared(&[(1, 7, "first call"), (2, 7, "second call")]);
        let route = one_client.route("elicitation/create", None);
        assert!(
            routed_to(route).contains("second call"),
            "the most recent call of the client"
        );
        assert_eq!(
            routed_to(one_client.route("sampling/createMessage", None)),
            "nobody"
        );

        let two_clients = shared(&[(1, 7, "alice"), (2, 8, "bob")]);
        assert_eq!(
            routed_to(two_clients.route("elicitation/create", None)),
            "ambiguous among 2"
        );
        let on_stream = two_clients.route("elicitation/create", Some(&RequestId::Number(1)));
        assert!(
            routed_to(on_stream).contains("alice"),
            "its own stream says whose it is"
        );
        let unknown = two_clients.route("elicitation/create", Some(&RequestId::Number(9)));
        assert_eq!(routed_to(unknown), "nobody");
        assert_eq!(
            routed_to(shared(&[]).route("elicitation/create", None)),
            "nobody"
        );
    }

    #[test]
    fn a_request_tagged_with_a_followed_task_goes_to_that_tasks_caller() {
        let two_clients = shared(&[(1, 7, "alice"), (2, 8, "bob")]);
        let bob: Arc<dyn CallerChannel> = Arc::new(Client {
            key: 8,
            name: "bob's task",
        });
        if let Ok(mut tasks) = two_clients.tasks.lock() {
            tasks.insert("t-1".to_owned(), bob);
        }
        let tagged = |task: &str| json!({"_meta": {switchboard_core::task::RELATED_TASK_META: {"taskId": task}}});
        let route = two_clients.route_task("elicitation/create", Some(&tagged("t-1")));
        assert!(
            route.is_some_and(|route| routed_to(route).contains("bob's task")),
            "the task says whose it is"
        );
        assert!(
            two_clients
                .route_task("elicitation/create", Some(&tagged("t-2")))
                .is_none(),
            "a task the gateway does not follow: routed as any request"
        );
        assert!(two_clients.route_task("elicitation/create", None).is_none());
    }

    #[tokio::test]
    async fn an_ambiguous_request_is_refused_saying_why() {
        let reply = answer_server_request(
            RequestId::Number(5),
            "elicitation/create",
            None,
            Route::Ambiguous(2),
        )
        .await;
        let Message::Error { error, .. } = reply else {
            panic!("expected an error, got {reply:?}");
        };
        assert!(
            error.message.contains("calls of 2 clients"),
            "{}",
            error.message
        );
    }
}
