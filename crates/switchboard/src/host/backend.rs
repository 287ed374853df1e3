//! The Host as the fronts see it: the [`Backend`] the stdio and HTTP fronts serve, each
//! request waiting for start-up to settle and then answered by the Host's catalog, pipeline,
//! prompts and resources.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use switchboard_core::param_headers::ParamHeader;
use switchboard_core::pipeline::CallError;
use switchboard_core::task::{StartedTask, TaskError, TaskOwner, TaskSupport, TaskView};
use switchboard_core::{CallContext, Caller, ToolCall, ToolDefinition, ToolOutcome};
use switchboard_mcp::front::{Backend, ServerIdentity};
use switchboard_mcp::jsonrpc::RpcError;
use tokio::sync::watch;

use super::Host;

impl Backend for Host {
    fn identity(&self) -> ServerIdentity {
        self.inner.options.identity.clone()
    }

    fn list_tools<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, Vec<ToolDefinition>> {
        Box::pin(async move {
            self.wait_for_startup().await;
            self.sync_session(caller).await;
            self.note_listed_tier(caller);
            self.listed_tools(caller)
        })
    }

    fn telemetry(&self) -> Option<Arc<dyn switchboard_core::trace::Telemetry>> {
        let exporter = self.inner.options.telemetry.clone()?;
        Some(exporter)
    }

    fn tools_json<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, Arc<str>> {
        Box::pin(async move {
            self.wait_for_startup().await;
            self.sync_session(caller).await;
            self.note_listed_tier(caller);
            let plain = self.listing_mode(caller) == crate::listing_fit::ListingMode::Full
                && self.active_tier(caller).is_none()
                && !self.scope_narrowed(caller)
                && !self
                    .inner
                    .sessions
                    .with(caller, |state| state.read_more_listed);
            if plain {
                return self.listing_json(caller.agent.as_deref());
            }
            let tools = self.listed_tools(caller);
            Arc::from(serde_json::to_string(&tools).unwrap_or_else(|_| "[]".to_owned()))
        })
    }

    fn param_headers(&self, caller: &Caller, name: &str) -> Arc<[ParamHeader]> {
        let catalog = self.catalog();
        match catalog.resolve(name) {
            Some(entry) if self.permitted(caller).contains(entry) => {
                entry.schema.param_headers().clone()
            }
            _ => Arc::from([]),
        }
    }

    fn call_tool(
        &self,
        ctx: CallContext,
        call: ToolCall,
    ) -> BoxFuture<'_, Result<ToolOutcome, CallError>> {
        Box::pin(async move {
            self.wait_for_startup().await;
            // Built once for the call: the session, the pipeline and the shaping ask alike.
            let caller = Caller::of(&ctx);
            self.sync_session(&caller).await;
            let mut answer = match self.call_meta(&ctx, &call.name, &call.arguments).await {
                Some(answer) => answer,
                None => {
                    self.call_as(&ctx, &caller, &call.name, call.arguments)
                        .await
                }
            };
            if let Ok(outcome) = &mut answer {
                self.shape_result(&caller, outcome).await;
            }
            answer
        })
    }

    fn runs_tasks(&self) -> bool {
        true
    }

    fn may_require_task(&self, name: &str) -> bool {
        self.catalog()
            .resolve(name)
            .is_some_and(|entry| TaskSupport::of(&entry.spec.definition) == TaskSupport::Required)
    }

    fn task_support(&self, caller: &Caller, name: &str) -> Option<TaskSupport> {
        Host::task_support(self, caller, name)
    }

    fn start_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        Box::pin(async move {
            self.sync_session(&Caller::of(&ctx)).await;
            Host::start_task(self, ctx, call, ttl).await
        })
    }

    fn relays_tasks(&self, name: &str) -> bool {
        Host::relays_tasks(self, name)
    }

    fn start_relayed_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> BoxFuture<'_, Result<StartedTask, TaskError>> {
        Box::pin(async move {
            self.sync_session(&Caller::of(&ctx)).await;
            Host::start_relayed_task(self, ctx, call, ttl).await
        })
    }

    fn task(
        &self,
        owner: &TaskOwner,
        id: &str,
        with_result: bool,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let (owner, id) = (owner.clone(), id.to_owned());
        Box::pin(async move { self.find_task(&owner, &id, with_result).await })
    }

    fn task_result(
        &self,
        ctx: CallContext,
        id: String,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        Box::pin(async move { self.await_task(&ctx, &id).await })
    }

    fn update_task(
        &self,
        owner: &TaskOwner,
        id: &str,
        responses: Map<String, Value>,
    ) -> BoxFuture<'_, Result<(), TaskError>> {
        let (owner, id) = (owner.clone(), id.to_owned());
        Box::pin(async move { self.update_any_task(&owner, &id, responses).await })
    }

    fn cancel_task(
        &self,
        owner: &TaskOwner,
        id: &str,
    ) -> BoxFuture<'_, Result<TaskView, TaskError>> {
        let (owner, id) = (owner.clone(), id.to_owned());
        Box::pin(async move { self.cancel_any_task(&owner, &id).await })
    }

    fn list_tasks(&self, owner: &TaskOwner) -> BoxFuture<'_, Result<Vec<TaskView>, TaskError>> {
        let owner = owner.clone();
        Box::pin(async move { self.list_all_tasks(&owner).await })
    }

    fn task_events(&self) -> Option<tokio::sync::broadcast::Receiver<(TaskOwner, TaskView)>> {
        Some(self.tasks().events())
    }

    fn listing_version(&self, caller: &Caller) -> watch::Receiver<u64> {
        self.inner.sessions.subscribe(caller)
    }

    fn lists_version(&self) -> Option<watch::Receiver<switchboard_mcp::front::ListsVersion>> {
        Some(self.inner.lists.subscribe())
    }

    fn session_closed(&self, session: &str) {
        self.inner.sessions.close(session);
        self.forget_shared_session(session);
        self.forget_subscriptions_of(session);
        // Nobody can reach the session's tasks any more: their calls stop.
        self.inner.tasks.close_session(session);
    }

    fn request_answered(
        &self,
        method: &str,
        agent: Option<&str>,
        elapsed: Duration,
        error: Option<i64>,
    ) {
        self.inner
            .metrics
            .record_request(method, agent, elapsed, error);
    }

    fn list_prompts(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let caller = caller.clone();
        Box::pin(async move {
            self.wait_for_startup().await;
            self.prompts_for(&caller)
                .into_iter()
                .map(|prompt| prompt.definition)
                .collect()
        })
    }

    fn get_prompt(
        &self,
        ctx: CallContext,
        name: String,
        arguments: Option<Value>,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move { Host::get_prompt(self, &ctx, &name, arguments).await })
    }

    fn list_resources(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let caller = caller.clone();
        Box::pin(async move {
            self.wait_for_startup().await;
            self.resources(&caller)
        })
    }

    fn list_resource_templates(&self, caller: &Caller) -> BoxFuture<'_, Vec<Value>> {
        let caller = caller.clone();
        Box::pin(async move {
            self.wait_for_startup().await;
            self.resource_templates(&caller)
        })
    }

    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.wait_for_startup())
    }

    fn unknown_tier(&self, tier: &str) -> Option<String> {
        self.check_tier(tier)
            .err()
            .map(|unknown| unknown.to_string())
    }

    fn complete(&self, caller: Caller, params: Value) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move { Host::complete(self, &caller, params).await })
    }

    fn subscribe_resource(
        &self,
        caller: Caller,
        uri: String,
        subscribe: bool,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move { Host::subscribe_resource(self, &caller, &uri, subscribe).await })
    }

    /// A server still starting may take them: only a fleet that answered without them is
    /// known not to.
    fn offers_subscriptions(&self) -> bool {
        self.inner.fleet.load().members.iter().any(|member| {
            let status = member.supervisor().status();
            !status.settled
                || crate::resource_subscriptions::takes_subscriptions(&status.capabilities)
        })
    }

    fn resource_subscribed(&self, caller: &Caller, uri: &str) -> bool {
        Host::resource_subscribed(self, caller, uri)
    }

    fn resource_subscriptions(&self, caller: &Caller) -> Vec<String> {
        Host::resource_subscriptions(self, caller)
    }

    fn refresh_session<'a>(&'a self, caller: &'a Caller) -> BoxFuture<'a, ()> {
        Box::pin(self.sync_session(caller))
    }

    fn resource_updates(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.inner.resource_updates.subscribe())
    }

    fn read_resource(&self, caller: Caller, uri: String) -> BoxFuture<'_, Result<Value, RpcError>> {
        Box::pin(async move { Host::read_resource(self, &caller, &uri).await })
    }
}
