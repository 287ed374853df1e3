//! Answers one client request, in the era the request speaks.
//!
//! Era rules: a request whose `_meta` names protocol version 2026-07-28 is modern (stateless:
//! results carry `resultType`, list results `ttlMs` and `cacheScope`); everything else is
//! legacy and relies on the connection's `initialize`. Tool failures the model should read
//! are results with `isError`; an unknown tool is a JSON-RPC error (-32602), the same for a
//! tool that does not exist and one the caller may not see.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard_core::task::TASKS_EXTENSION;
use switchboard_core::{CallContext, Caller, Principal};

use super::backend::Backend;
use super::modern_caller::{invalid_log_level, invalid_set_level};
use super::parked::{INPUT_WAIT, ParkedCalls};
use super::request_params::{
    LIST_METHODS, invalid_complete, invalid_cursor, invalid_initialize, params_by_position,
};
use super::span::ServerSpan;
use super::tasks::TASK_METHODS;
use super::tool_call::{ToolCallResult, modern_request};
use crate::busy_poll::BusyPoll;
use crate::era::{
    LATEST_LEGACY_VERSION, LEGACY_VERSIONS, META_PROTOCOL_VERSION, META_SERVER_INFO,
    MODERN_VERSION, missing_envelope_keys,
};
use crate::jsonrpc::{Message, RequestId, RpcError, code, params_meta};

/// Delivers notifications that belong to one request (its stream).
pub type Notifier = std::sync::Arc<dyn Fn(Message) + Send + Sync>;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Which era one request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestEra {
    Legacy,
    Modern,
}

impl RequestEra {
    /// Reads the era from a request's `_meta`.
    pub fn of(params: Option<&Value>) -> Self {
        let version = params_meta(params)
            .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str);
        if version == Some(MODERN_VERSION) {
            Self::Modern
        } else {
            Self::Legacy
        }
    }
}

/// Methods of the handshake era that 2026-07-28 removed: the handshake itself, `ping`, the
/// connection-wide log level and per-URI resource subscriptions (`subscriptions/listen`
/// replaces them).
const REMOVED_IN_MODERN: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Answers requests against a backend. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    pub(super) backend: Arc<dyn Backend>,
    /// The agent on whose behalf this front serves (stdio `--agent`, HTTP identity).
    pub(super) agent: Option<String>,
    /// Who the agent's OAuth token named (HTTP with `[auth] mode = "oauth"`), for the ledger.
    pub(super) principal: Option<Arc<Principal>>,
    /// The client session requests come from (stdio connection, HTTP session), if any.
    pub(super) session: Option<String>,
    /// The tier the endpoint or request chose, if any.
    pub(super) tier: Option<String>,
    /// Kicked when a request starts and when it is answered.
    busy_poll: Option<BusyPoll>,
    /// Modern clients' calls waiting on the client's answers (shared by every clone).
    pub(super) parked: Arc<ParkedCalls<ToolCallResult>>,
    /// What carries the requests, for spans: `pipe` (stdio) or `tcp` (HTTP).
    network_transport: &'static str,
}

impl Dispatcher {
    pub fn new(backend: Arc<dyn Backend>, agent: Option<String>) -> Self {
        Self {
            backend,
            agent,
            principal: None,
            session: None,
            tier: None,
            busy_poll: None,
            parked: ParkedCalls::new(INPUT_WAIT),
            network_transport: "pipe",
        }
    }

    /// The same dispatcher, for requests that come over TCP (HTTP).
    pub fn over_tcp(&self) -> Self {
        Self {
            network_transport: "tcp",
            ..self.clone()
        }
    }

    /// The same dispatcher, keeping the runtime polling for a while around every request
    /// (see [`crate::busy_poll`]).
    pub fn with_busy_poll(&self, busy_poll: Option<BusyPoll>) -> Self {
        Self {
            busy_poll,
            ..self.clone()
        }
    }

    /// The same dispatcher, answering in one latency tier.
    pub fn for_tier(&self, tier: Option<String>) -> Self {
        Self {
            tier,
            ..self.clone()
        }
    }

    /// The same dispatcher, answering for one client session.
    pub fn for_session(&self, session: Option<String>) -> Self {
        Self {
            session,
            ..self.clone()
        }
    }

    /// The same dispatcher, answering for another agent (an authenticated HTTP request).
    pub fn for_agent(&self, agent: Option<String>) -> Self {
        Self {
            agent,
            ..self.clone()
        }
    }

    /// The same dispatcher, for a caller whose OAuth token named this principal.
    pub fn for_principal(&self, principal: Option<Arc<Principal>>) -> Self {
        Self {
            principal,
            ..self.clone()
        }
    }

    /// The session this dispatcher answers for.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Who this dispatcher answers for.
    pub fn caller(&self) -> Caller {
        Caller::new(self.agent.clone(), self.session.clone())
            .with_tier(self.tier.clone())
            .with_principal(self.principal.clone())
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Answers one request. `ctx` carries the caller's cancellation and progress sink.
    pub async fn handle(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        ctx: CallContext,
    ) -> Message {
        self.handle_streaming(id, method, params, ctx, None).await
    }

    /// Like [`Self::handle`], for fronts that can deliver notifications tied to the request
    /// (needed by `subscriptions/listen`, which streams until cancelled). A traced request
    /// runs in a SERVER span of its own (`super::span`); every request but `tools/call`
    /// (which the pipeline measures itself) is timed for [`Backend::request_answered`].
    pub async fn handle_streaming(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        mut ctx: CallContext,
        notify: Option<Notifier>,
    ) -> Message {
        let telemetry = self.backend.telemetry();
        let span = ServerSpan::start(
            telemetry.as_ref(),
            (Some(&id), method, params.as_ref()),
            self.session.as_deref(),
            Some(self.network_transport),
            &mut ctx,
        );
        let answer = self.answer(id, method, params, ctx, notify).await;
        if let Some(span) = span {
            span.finish(&answer);
        }
        answer
    }

    async fn answer(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        ctx: CallContext,
        notify: Option<Notifier>,
    ) -> Message {
        // Every request but `tools/call` (the pipeline measures its own) is timed; a `return`
        // in the block below ends the block with the answer.
        let timed = (method != "tools/call").then(tokio::time::Instant::now);
        let answer = async {
            // Around the request: the upstream's answer and the client's next request are what
            // the gateway then waits for.
            let _activity = self.busy_poll.as_ref().map(BusyPoll::activity);
            if let Some(error) = params_by_position(method, params.as_ref()) {
                return Message::Error {
                    id: Some(id),
                    error,
                };
            }
            let era = RequestEra::of(params.as_ref());
            if era == RequestEra::Modern
                && let Some(missing) = missing_modern_meta(params.as_ref())
            {
                return Message::error(
                    Some(id),
                    code::INVALID_PARAMS,
                    format!(
                        "missing required _meta key '{missing}' for protocol version {MODERN_VERSION}"
                    ),
                );
            }
            if era == RequestEra::Modern
                && let Some(problem) = invalid_log_level(params.as_ref())
            {
                return Message::error(Some(id), code::INVALID_PARAMS, problem);
            }
            if era == RequestEra::Modern && REMOVED_IN_MODERN.contains(&method) {
                return Message::error(
                    Some(id),
                    code::METHOD_NOT_FOUND,
                    format!(
                        "Method not found: {method} is not part of protocol version {MODERN_VERSION}"
                    ),
                );
            }
            if LIST_METHODS.contains(&method)
                && let Some(error) = invalid_cursor(method, params.as_ref())
            {
                return Message::Error {
                    id: Some(id),
                    error,
                };
            }
            if method == "tools/list" {
                return self.list_tools(id, era).await;
            }
            if method == "tools/call" {
                let (id, params, ctx) = match self.task_call(id, params, ctx, era).await {
                    Ok(created) => return created,
                    Err(ordinary) => ordinary,
                };
                return self.call_tool(id, params, ctx, era, notify.as_ref()).await;
            }
            let answer = match method {
                "initialize" => match invalid_initialize(params.as_ref()) {
                    Some(error) => Err(error),
                    None => Ok(self.initialize(params.as_ref())),
                },
                "server/discover" => Ok(self.discover()),
                "ping" => Ok(json!({})),
                "subscriptions/listen" => match &notify {
                    Some(notify) => Ok(self.listen(&id, params.as_ref(), &ctx, notify).await),
                    None => Err(RpcError::new(
                        code::METHOD_NOT_FOUND,
                        "subscriptions/listen needs a streaming transport",
                    )),
                },
                "logging/setLevel" => match invalid_set_level(params.as_ref()) {
                    Some(problem) => Err(RpcError::new(code::INVALID_PARAMS, problem)),
                    None => Ok(json!({})),
                },
                "prompts/list" => Ok(self.listed(
                    "prompts",
                    self.backend.list_prompts(&self.caller()).await,
                    era,
                )),
                "resources/list" => Ok(self.listed(
                    "resources",
                    self.backend.list_resources(&self.caller()).await,
                    era,
                )),
                "resources/templates/list" => Ok(self.listed(
                    "resourceTemplates",
                    self.backend.list_resource_templates(&self.caller()).await,
                    era,
                )),
                "prompts/get" => match string_param(params.as_ref(), "name") {
                    Ok(name) => {
                        let arguments = params.as_ref().and_then(|p| p.get("arguments")).cloned();
                        let mut ctx = CallContext {
                            modern: (era == RequestEra::Modern)
                                .then(|| modern_request(params.as_ref())),
                            ..ctx
                        };
                        self.fill_caller(&mut ctx);
                        let cancel = ctx.cancel.clone();
                        unless_cancelled(&cancel, self.backend.get_prompt(ctx, name, arguments))
                            .await
                    }
                    Err(error) => Err(error),
                },
                "resources/read" => match string_param(params.as_ref(), "uri") {
                    Ok(uri) => {
                        let reading = self.backend.read_resource(self.caller(), uri.clone());
                        let read = unless_cancelled(&ctx.cancel, reading).await;
                        read.map_err(|error| modern_not_found(error, &uri, era))
                    }
                    Err(error) => Err(error),
                },
                "resources/subscribe" | "resources/unsubscribe" => {
                    match string_param(params.as_ref(), "uri") {
                        Ok(uri) => {
                            let subscribing = self.backend.subscribe_resource(
                                self.caller(),
                                uri,
                                method == "resources/subscribe",
                            );
                            unless_cancelled(&ctx.cancel, subscribing).await
                        }
                        Err(error) => Err(error),
                    }
                }
                "completion/complete" => match invalid_complete(params.as_ref()) {
                    Some(error) => Err(error),
                    None => {
                        let completing = self
                            .backend
                            .complete(self.caller(), params.clone().unwrap_or_else(|| json!({})));
                        unless_cancelled(&ctx.cancel, completing).await
                    }
                },
                task if TASK_METHODS.contains(&task) => {
                    self.task_method(task, params.as_ref(), ctx, era).await
                }
                other => Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("Method not found: {other}"),
                )),
            };
            match answer {
                Ok(mut result) => {
                    if era == RequestEra::Modern
                        && let Value::Object(map) = &mut result
                    {
                        map.entry("resultType")
                            .or_insert_with(|| Value::String("complete".into()));
                        // Cacheable results carry freshness hints in the modern era (SEP-2549).
                        if method == "resources/read" {
                            map.entry("ttlMs").or_insert_with(|| json!(0));
                            let scope = if self.agent.is_some() {
                                "private"
                            } else {
                                "public"
                            };
                            map.entry("cacheScope").or_insert_with(|| json!(scope));
                        }
                    }
                    Message::Response { id, result }
                }
                Err(error) => Message::Error {
                    id: Some(id),
                    error,
                },
            }
        }
        .await;
        if let Some(started) = timed {
            let error = match &answer {
                Message::Error { error, .. } => Some(error.code),
                _ => None,
            };
            let agent = self.agent.as_deref();
            self.backend
                .request_answered(method, agent, started.elapsed(), error);
        }
        answer
    }

    /// `subscriptions/listen`: acknowledges the accepted filter, then sends
    /// `notifications/tools/list_changed` on every catalog change (and the prompts' and
    /// resources' `list_changed`, when asked for) until the caller cancels.
    async fn listen(
        &self,
        id: &RequestId,
        params: Option<&Value>,
        ctx: &CallContext,
        notify: &Notifier,
    ) -> Value {
        let requested = params.and_then(|p| p.get("notifications"));
        let asked =
            |key: &str| requested.and_then(|n| n.get(key)).and_then(Value::as_bool) == Some(true);
        let tools = asked("toolsListChanged");
        let lists = self.backend.lists_version();
        let prompts = asked("promptsListChanged") && lists.is_some();
        let resources = asked("resourcesListChanged") && lists.is_some();
        let meta = json!({SUBSCRIPTION_ID: id});
        let mut accepted = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ] {
            if on {
                accepted.insert(key.into(), json!(true));
            }
        }
        let accepted = Value::Object(accepted);
        let mut lists = lists.filter(|_| prompts || resources);
        let mut seen = lists
            .as_mut()
            .map(|lists| *lists.borrow_and_update())
            .unwrap_or_default();
        // Subscribe before acknowledging: a client may change the list as soon as it reads
        // the acknowledgement, and that change must not slip in between.
        let mut version = self.backend.listing_version(&self.caller());
        version.mark_unchanged();
        notify(Message::notification(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": meta, "notifications": accepted}),
        ));
        loop {
            tokio::select! {
                () = ctx.cancel.cancelled() => break,
                changed = version.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    if tools {
                        notify(Message::notification("notifications/tools/list_changed", json!({"_meta": meta})));
                    }
                }
                Some(methods) = async {
                    match lists.as_mut() {
                        Some(lists) => crate::front::ListsVersion::next_change(lists, &mut seen).await,
                        None => std::future::pending().await,
                    }
                } => {
                    for method in methods {
                        let wanted = if method.contains("prompts") { prompts } else { resources };
                        if wanted {
                            notify(Message::notification(method, json!({"_meta": meta})));
                        }
                    }
                }
            }
        }
        json!({"_meta": meta})
    }

    /// The gateway's capabilities in an era's terms: tasks are `capabilities.tasks` before
    /// 2026-07-28 and an extension after.
    fn capabilities(&self, era: RequestEra) -> Value {
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": self.backend.lists_version().is_some()},
            "resources": {"listChanged": self.backend.lists_version().is_some()},
            "completions": {},
            "logging": {},
        });
        // Per-URI subscriptions are the handshake era's (2026-07-28 removed the methods), and
        // only worth announcing when a server behind the gateway takes them.
        if era == RequestEra::Legacy && self.backend.offers_subscriptions() {
            capabilities["resources"]["subscribe"] = json!(true);
        }
        if self.backend.runs_tasks() {
            capabilities[match era {
                RequestEra::Legacy => "tasks",
                RequestEra::Modern => "extensions",
            }] = match era {
                RequestEra::Legacy => {
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
                }
                RequestEra::Modern => json!({TASKS_EXTENSION: {}}),
            };
        }
        capabilities
    }

    /// `ctx` with this dispatcher's agent, principal, session and tier where it names none.
    pub(super) fn fill_caller(&self, ctx: &mut CallContext) {
        if ctx.agent.is_none() {
            ctx.agent = self.agent.clone();
        }
        if ctx.principal.is_none() {
            ctx.principal = self.principal.clone();
        }
        if ctx.session.is_none() {
            ctx.session = self.session.clone();
        }
        if ctx.tier.is_none() {
            ctx.tier = self.tier.clone();
        }
    }

    /// A list result, with the modern era's cache hints.
    fn listed(&self, key: &str, items: Vec<Value>, era: RequestEra) -> Value {
        let mut result = serde_json::Map::new();
        result.insert(key.to_owned(), Value::Array(items));
        if era == RequestEra::Modern {
            result.insert("ttlMs".into(), json!(0));
            let scope = if self.agent.is_some() {
                "private"
            } else {
                "public"
            };
            result.insert("cacheScope".into(), json!(scope));
        }
        Value::Object(result)
    }

    fn initialize(&self, params: Option<&Value>) -> Value {
        let requested = params
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or(LATEST_LEGACY_VERSION);
        let version = if LEGACY_VERSIONS.contains(&requested) {
            requested
        } else {
            LATEST_LEGACY_VERSION
        };
        let identity = self.backend.identity();
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(RequestEra::Legacy),
            "serverInfo": {"name": identity.name, "version": identity.version},
        });
        if let (Some(instructions), Value::Object(map)) = (identity.instructions, &mut result) {
            map.insert("instructions".into(), Value::String(instructions));
        }
        result
    }

    fn discover(&self) -> Value {
        let identity = self.backend.identity();
        let mut versions = vec![MODERN_VERSION];
        versions.extend(LEGACY_VERSIONS);
        let mut result = json!({
            "resultType": "complete",
            "supportedVersions": versions,
            "capabilities": self.capabilities(RequestEra::Modern),
            "ttlMs": 0,
            "cacheScope": "public",
            "_meta": {META_SERVER_INFO: {"name": identity.name, "version": identity.version}},
        });
        if let (Some(instructions), Value::Object(map)) = (identity.instructions, &mut result) {
            map.insert("instructions".into(), Value::String(instructions));
        }
        result
    }

    /// `tools/list` from the backend's serialized listing: one page, spliced, not rebuilt.
    async fn list_tools(&self, id: RequestId, era: RequestEra) -> Message {
        let tools = self.backend.tools_json(&self.caller()).await;
        let mut result = String::with_capacity(tools.len() + 96);
        result.push_str(r#"{"tools":"#);
        result.push_str(&tools);
        if era == RequestEra::Modern {
            let scope = if self.agent.is_some() {
                "private"
            } else {
                "public"
            };
            result.push_str(&format!(
                r#","ttlMs":0,"cacheScope":"{scope}","resultType":"complete""#
            ));
        }
        result.push('}');
        Message::PreparedResponse {
            id,
            result: result.into(),
        }
    }
}

fn string_param(params: Option<&Value>, key: &str) -> Result<String, RpcError> {
    params
        .and_then(|p| p.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!("params.{key} must be a string"),
            )
        })
}

fn missing_modern_meta(params: Option<&Value>) -> Option<&'static str> {
    missing_envelope_keys(params_meta(params)?).first().copied()
}

/// A missing resource is `-32602` with the URI in `data` from 2026-07-28 on (SEP-2164);
/// earlier versions, and upstreams, may still say `-32002`.
fn modern_not_found(mut error: RpcError, uri: &str, era: RequestEra) -> RpcError {
    if era == RequestEra::Modern && error.code == code::RESOURCE_NOT_FOUND {
        error.code = code::INVALID_PARAMS;
        error.data = Some(json!({"uri": uri}));
    }
    error
}

/// The client's progress token of a request, if it asked for progress.
pub fn progress_token(params: Option<&Value>) -> Option<Value> {
    params_meta(params)?
        .get("progressToken")
        .filter(|token| token.is_string() || token.is_number())
        .cloned()
}

/// The `notifications/progress` message for a client's token.
pub fn progress_notification(token: &Value, progress: &switchboard_core::Progress) -> Message {
    let mut params = json!({"progressToken": token, "progress": progress.progress});
    if let Value::Object(map) = &mut params {
        if let Some(total) = progress.total {
            map.insert("total".into(), json!(total));
        }
        if let Some(message) = &progress.message {
            map.insert("message".into(), json!(message));
        }
    }
    Message::notification("notifications/progress", params)
}

/// What `work` answers, unless the client cancels the request first: `work` is then dropped
/// — which tells the server upstream (`notifications/cancelled`) — and the request ends with
/// an error no front sends (a cancelled request gets no answer).
async fn unless_cancelled(
    cancel: &tokio_util::sync::CancellationToken,
    work: impl std::future::Future<Output = Result<Value, RpcError>>,
) -> Result<Value, RpcError> {
    switchboard_core::context::unless_cancelled(cancel, work)
        .await
        .unwrap_or_else(|| {
            Err(RpcError::new(
                code::INTERNAL_ERROR,
                "the request was cancelled",
            ))
        })
}
