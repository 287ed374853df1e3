//! What the front serves. Implemented by the Host, so this crate never depends on it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use switchboard_core::param_headers::ParamHeader;
use switchboard_core::pipeline::CallError;
use switchboard_core::task::{StartedTask, TaskError, TaskOwner, TaskSupport, TaskView};
use switchboard_core::{CallContext, Caller, ToolCall, ToolDefinition, ToolOutcome};
use tokio::sync::watch;

use crate::jsonrpc::{RpcError, code};

/// How the gateway introduces itself to clients.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerIdentity {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
}

/// Counts of changes to the exposed prompts and resources, announced separately.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListsVersion {
    pub prompts: u64,
    pub resources: u64,
}

impl ListsVersion {
    /// The `list_changed` notifications that take a client from `seen` to `self`.
    pub fn announcements(&self, seen: &Self) -> impl Iterator<Item = &'static str> + use<> {
        let prompts =
            (self.prompts != seen.prompts).then_some("notifications/prompts/list_changed");
        let resources =
            (self.resources != seen.resources).then_some("notifications/resources/list_changed");
        prompts.into_iter().chain(resources)
    }

    /// Waits for the next change after `seen` and returns its notifications' methods (None
    /// when the Host is gone).
    pub async fn next_change(
        lists: &mut watch::Receiver<Self>,
        seen: &mut Self,
    ) -> Option<Vec<&'static str>> {
        lists.changed().await.ok()?;
        let now = *lists.borrow_and_update();
        let methods = now.announcements(seen).collect();
        *seen = now;
        Some(methods)
    }
}

/// The catalog and the pipeline, as the front needs them.
pub trait Backend: Send + Sync + 'static {
    fn identity(&self) -> ServerIdentity;

    /// The tools listed to `caller` (exposed names). May wait briefly at start-up for the
    /// first connection attempts; never waits on the network afterwards.
    fn list_tools<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, Vec<ToolDefinition>>;

    /// The same tools as one serialized JSON array. Backends with a snapshot cache it; the
    /// default serializes [`Backend::list_tools`].
    fn tools_json<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, Arc<str>> {
        Box::pin(async move {
            let tools = self.list_tools(caller).await;
            std::sync::Arc::from(serde_json::to_string(&tools).unwrap_or_else(|_| "[]".to_owned()))
        })
    }

    /// The `x-mcp-header` declarations of the tool `name` as `caller` may call it: an HTTP
    /// front checks a modern call's `Mcp-Param-*` headers against them. Default: none.
    fn param_headers(&self, _caller: &Caller, _name: &str) -> Arc<[ParamHeader]> {
        Arc::from([])
    }

    /// Runs a call through the pipeline.
    fn call_tool(
        &self,
        ctx: CallContext,
        call: ToolCall,
    ) -> BoxFuture<'_, Result<ToolOutcome, CallError>>;

    /// Bumped whenever the tools listed to `caller` may have changed (the client is sent
    /// `notifications/tools/list_changed`): catalog changes, and the caller's own changes
    /// such as a loaded category.
    fn listing_version(&self, caller: &Caller) -> watch::Receiver<u64>;

    /// Bumped, each on its own, when the exposed prompts or resources (or resource
    /// templates) change (the client is sent `notifications/prompts/list_changed` or
    /// `notifications/resources/list_changed`). Default: none (they never change).
    fn lists_version(&self) -> Option<watch::Receiver<ListsVersion>> {
        None
    }

    /// The session ended (stdio connection closed, HTTP session deleted): drop its state.
    fn session_closed(&self, _session: &str) {}

    /// A request other than `tools/call` was answered, for the metrics: its method, the
    /// caller's agent, how long it took, and the JSON-RPC error code it was answered with.
    fn request_answered(
        &self,
        _method: &str,
        _agent: Option<&str>,
        _elapsed: std::time::Duration,
        _error: Option<i64>,
    ) {
    }

    /// The prompts `caller` may see, names as exposed. Default: none.
    fn list_prompts(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let _ = caller;
        Box::pin(async { Vec::new() })
    }

    /// `prompts/get` for an exposed prompt name; the result as the upstream sent it. `ctx`
    /// carries the caller: a modern request's input round goes with it (`input_required`
    /// works here too), and a legacy client is asked what the server asks, as in a call.
    fn get_prompt(
        &self,
        ctx: CallContext,
        name: String,
        arguments: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        let _ = (ctx, arguments);
        Box::pin(async move {
            Err(RpcError::new(
                code::INVALID_PARAMS,
                format!("Unknown prompt: {name}"),
            ))
        })
    }

    /// The resources `caller` may see (URIs unchanged). Default: none.
    fn list_resources(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let _ = caller;
        Box::pin(async { Vec::new() })
    }

    /// The resource templates `caller` may see. Default: none.
    fn list_resource_templates(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let _ = caller;
        Box::pin(async { Vec::new() })
    }

    /// `resources/read` for `caller`, routed to the server that owns the URI among those it
    /// may see.
    fn read_resource(&self, caller: Caller, uri: String) -> BoxFuture<'_, Result<Value, RpcError>> {
        let _ = caller;
        Box::pin(async move {
            Err(RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("Resource not found: {uri}"),
            ))
        })
    }

    /// `resources/subscribe` (`subscribe`) or `resources/unsubscribe` of `caller`, routed to
    /// the owner.
    fn subscribe_resource(
        &self,
        caller: Caller,
        uri: String,
        subscribe: bool,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        let _ = (caller, uri, subscribe);
        Box::pin(async { Ok(Value::Object(serde_json::Map::new())) })
    }

    /// Whether a server behind the backend may take `resources/subscribe` (the handshake's
    /// `resources.subscribe` capability says so). Default: no.
    fn offers_subscriptions(&self) -> bool {
        false
    }

    /// Whether `caller`'s session subscribed to `uri` in a way the front did not see: through
    /// another replica that shares the session's state with this one. Default: never (the
    /// front's own record of the session's subscriptions is the whole truth).
    fn resource_subscribed(&self, caller: &Caller, uri: &str) -> bool {
        let _ = (caller, uri);
        false
    }

    /// Every URI `caller` is subscribed to through another replica (what
    /// [`Backend::resource_subscribed`] answers one by one): a stream that fell behind
    /// reports each updated. Default: none.
    fn resource_subscriptions(&self, caller: &Caller) -> Vec<String> {
        let _ = caller;
        Vec::new()
    }

    /// A stream (a GET stream, a stdio connection) is opening for `caller`: state the
    /// backend shares with other replicas about its session is brought up to date first.
    fn refresh_session<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, ()> {
        let _ = caller;
        Box::pin(async {})
    }

    /// URIs of resources that changed (`notifications/resources/updated` from upstreams).
    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }

    /// `completion/complete` for `caller`, routed to the server that owns the prompt or
    /// resource referred to. Default: no suggestions.
    fn complete(&self, caller: Caller, params: Value) -> BoxFuture<'_, Result<Value, RpcError>> {
        let _ = (caller, params);
        Box::pin(async { Ok(serde_json::json!({"completion": {"values": [], "hasMore": false}})) })
    }

    /// Whether this backend runs tasks (see [`super::tasks`]). Default: no — no task
    /// capability is declared and task requests are refused.
    fn runs_tasks(&self) -> bool {
        false
    }

    /// Whether the tool `name` may only run as a task, judged from the catalog alone (no
    /// view): a cheap first look before [`Backend::task_support`]. Default: no.
    fn may_require_task(&self, _name: &str) -> bool {
        false
    }

    /// How a task-augmented call of the tool `name` would run for `caller`; `None` when the
    /// caller may not call it.
    fn task_support(&self, _caller: &Caller, _name: &str) -> Option<TaskSupport> {
        None
    }

    /// Starts a call as a task of `ctx`'s caller; answers at once.
    fn start_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let _ = (ctx, ttl);
        Box::pin(async move { Err(TaskError::UnknownTool(call.name)) })
    }

    /// Whether the tool `name` belongs to a server that runs tasks itself.
    fn relays_tasks(&self, _name: &str) -> bool {
        false
    }

    /// Starts a 2026-07-28 call whose server decides whether it becomes a task.
    fn start_relayed_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> BoxFuture<'_, Result<StartedTask, TaskError>> {
        let _ = (ctx, ttl);
        Box::pin(async move { Err(TaskError::UnknownTool(call.name)) })
    }

    /// The caller's task as it stands; `with_result`: with its result, error or questions
    /// (a 2026-07-28 `tasks/get` inlines them, which counts as the result fetched).
    fn task(
        &self,
        owner: &TaskOwner,
        id: &str,
        with_result: bool,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let _ = (owner, with_result);
        let id = id.to_owned();
        Box::pin(async move { Err(TaskError::UnknownTask(id)) })
    }

    /// Waits for the caller's task to end; its questions go to `ctx`'s caller meanwhile.
    fn task_result(
        &self,
        ctx: CallContext,
        id: String,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let _ = ctx;
        Box::pin(async move { Err(TaskError::UnknownTask(id)) })
    }

    /// The client's answers to the caller's task's questions.
    fn update_task(
        &self,
        owner: &TaskOwner,
        id: &str,
        responses: Map<String, Value>,
    ) -> BoxFuture<'_, Result<(), TaskError>> {
        let _ = (owner, responses);
        let id = id.to_owned();
        Box::pin(async move { Err(TaskError::UnknownTask(id)) })
    }

    /// Cancels the caller's task.
    fn cancel_task(
        &self,
        owner: &TaskOwner,
        id: &str,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let _ = owner;
        let id = id.to_owned();
        Box::pin(async move { Err(TaskError::UnknownTask(id)) })
    }

    /// The caller's tasks, newest first.
    fn list_tasks(&self, owner: &TaskOwner) -> BoxFuture<'_, Result<Vec<TaskView>, TaskError>> {
        let _ = owner;
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Every task's status changes, with its owner (a front passes on its callers').
    fn task_events(&self) -> Option<tokio::sync::broadcast::Receiver<(TaskOwner, TaskView)>> {
        None
    }

    /// Where the spans of traced requests go (none: requests are not traced, and a
    /// caller's trace context passes through unchanged).
    fn telemetry(&self) -> Option<Arc<dyn switchboard_core::trace::Telemetry>> {
        None
    }

    /// Why a latency tier a request names (the `/mcp/tiers/{tier}` endpoint, the
    /// `switchboard-tier` header) cannot serve it — it is not one the gateway defines —
    /// saying which are; `None` when it can. Default: every name is taken.
    fn unknown_tier(&self, tier: &str) -> Option<String> {
        let _ = tier;
        None
    }

    /// Resolves once start-up is over (first connection attempts done, bounded), so a front
    /// announces real changes only, not the catalog filling up. Default: at once.
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
