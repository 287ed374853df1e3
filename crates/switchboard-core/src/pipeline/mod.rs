//! The path of one call. Every front (stdio, HTTP, library) calls [`Pipeline::call`]; no
//! other path reaches an upstream.
//!
//! The stages, in order, each a small module with one job:
//! [`resolve`] the exposed name within the caller's view → [`validate`] the arguments →
//! pre-call [`hooks`](crate::hooks) (allow, deny, rewrite — rewritten arguments are validated
//! again) → [`approve`] (wait for a human where the rules say so) → [`admit`] under rate limits, concurrency caps and quota → [`execute`] on the
//! upstream under the tool's deadline → post-call hooks → [`envelope`]: cost the call and
//! stamp the result's `_meta` →
//! [`record`] the outcome and its wall time. Recording wraps the whole, so refused calls are
//! recorded too, each exactly once.

pub mod admit;
pub mod approve;
pub mod envelope;
pub mod execute;
pub mod record;
pub mod resolve;
pub mod validate;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::agent::View;
use crate::call_id::new_call_id;
use crate::clock::Clock;
use crate::context::unless_cancelled;
use crate::hooks::{self, HookCall};
use crate::trace::{AttributeValue, TraceContext, stage_span};
use crate::upstream::UpstreamDirectory;
use crate::{CallContext, Catalog, CatalogEntry, ToolCall, ToolOutcome};

pub use admit::Governance;
pub use envelope::{CACHE_META_KEY, CALL_META_KEY, CallEnvelope, Truncation};
pub use record::{
    CHANGE_OUTCOMES, CallRecord, CallStatus, ChangeRecord, LogRecorder, RecordedArguments, Recorder,
};

/// Why a call produced no [`ToolOutcome`]. Everything else — bad arguments, an upstream that is
/// down or slow — is an outcome with `is_error` set, because the model can act on it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No visible tool has this name. Deliberately the same answer whether the tool does not
    /// exist or is not visible to this caller.
    #[error("unknown tool: {name}")]
    UnknownTool { name: String },
    /// The upstream answered with a JSON-RPC error; passed through unchanged.
    #[error("{message}")]
    Upstream {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The caller cancelled the call; no result is owed.
    #[error("the call was cancelled")]
    Cancelled,
    /// The client must answer these requests and send the call again (2026-07-28 era).
    #[error("input required")]
    InputRequired {
        input_requests: Value,
        request_state: Option<String>,
    },
    /// The Host was shut down: its servers are stopped and no call runs any more (an
    /// embedder's mistake, not the model's: no outcome to act on).
    #[error("the Host was shut down: no call runs after Host::shutdown")]
    ShutDown,
}

/// What a stage decided: the answer, and how to record it.
pub(crate) struct Fate {
    pub(crate) result: Result<ToolOutcome, CallError>,
    pub(crate) status: CallStatus,
    /// Whether the call was sent to its server (a call that was not costs nothing).
    pub(crate) sent: bool,
}

impl Fate {
    pub(crate) fn new(result: Result<ToolOutcome, CallError>, status: CallStatus) -> Self {
        Self {
            result,
            status,
            sent: true,
        }
    }

    /// The fate of a call that never reached its server.
    pub(crate) fn unsent(result: Result<ToolOutcome, CallError>, status: CallStatus) -> Self {
        Self {
            result,
            status,
            sent: false,
        }
    }

    /// Whether the call is priced: it reached its server, and its result did not come from
    /// the cache.
    fn priced(&self) -> bool {
        self.sent && !self.result.as_ref().is_ok_and(envelope::served_from_cache)
    }
}

/// The fate of a call its caller cancelled before it ran.
fn cancelled() -> Fate {
    Fate::new(Err(CallError::Cancelled), CallStatus::Cancelled)
}

/// The call pipeline: stateless apart from its collaborators.
pub struct Pipeline {
    recorder: Arc<dyn Recorder>,
    clock: Arc<dyn Clock>,
    /// Swapped whole when a reload changes limits, costs, hooks or approval rules; a call
    /// keeps the governance it started under.
    governance: std::sync::RwLock<Arc<Governance>>,
}

impl Pipeline {
    pub fn new(recorder: Arc<dyn Recorder>, clock: Arc<dyn Clock>) -> Self {
        Self::governed(recorder, clock, Arc::new(Governance::default()))
    }

    /// A pipeline with rate limits, quotas and costs.
    pub fn governed(
        recorder: Arc<dyn Recorder>,
        clock: Arc<dyn Clock>,
        governance: Arc<Governance>,
    ) -> Self {
        Self {
            recorder,
            clock,
            governance: std::sync::RwLock::new(governance),
        }
    }

    /// The governance calls start under now.
    pub fn governance(&self) -> Arc<Governance> {
        match self.governance.read() {
            Ok(governance) => governance.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the governance of calls that start from now on.
    pub fn set_governance(&self, governance: Arc<Governance>) {
        match self.governance.write() {
            Ok(mut slot) => *slot = governance,
            Err(poisoned) => *poisoned.into_inner() = governance,
        }
    }

    /// Where configuration changes are recorded (the same recorder as calls).
    pub fn recorder(&self) -> &Arc<dyn Recorder> {
        &self.recorder
    }

    /// Runs one call against a catalog snapshot, as a caller who sees `view` of it.
    pub async fn call(
        &self,
        catalog: &Catalog,
        view: &dyn View,
        upstreams: &dyn UpstreamDirectory,
        ctx: &CallContext,
        call: ToolCall,
    ) -> Result<ToolOutcome, CallError> {
        crate::timer_anchor::keep();
        let started = self.clock.now();
        let started_wall = self.clock.wall();
        let call_id = new_call_id(started_wall);
        let entry = resolve::resolve(catalog, view, &call.name);
        let target = entry
            .as_ref()
            .ok()
            .map(|entry| (entry.spec.server.clone(), entry.upstream_name.clone()));
        // A render's LLM-safe name is the tool's exposed name in another spelling: one tool,
        // one audit trail.
        let name = match &entry {
            Ok(entry) if entry.exposed != call.name && catalog.is_rendered_name(&call.name) => {
                entry.exposed.clone()
            }
            _ => call.name,
        };
        let arguments = self.recorder.capture_arguments(&call.arguments);
        let (fate, cost, approval) = match entry {
            Err(error) => (Fate::new(Err(error), CallStatus::UnknownTool), 0.0, None),
            Ok(entry) => {
                self.run(entry, &call_id, call.arguments, ctx, upstreams)
                    .await
            }
        };
        let duration = self.clock.now().saturating_duration_since(started);
        let mut result = fate.result;
        let cached = result.as_ref().is_ok_and(envelope::served_from_cache);
        if let (Ok(outcome), Some((server, _))) = (&mut result, &target) {
            envelope::stamp(outcome, &call_id, duration, server, cost, cached);
        }
        let record = CallRecord {
            call_id,
            name,
            target,
            agent: ctx.agent.clone(),
            principal: ctx.principal.as_deref().cloned(),
            session: ctx.session.clone(),
            tier: ctx.tier.clone(),
            arguments,
            started: started_wall,
            duration,
            status: fate.status,
            cost,
            approval,
            error: match &result {
                Ok(outcome) if outcome.is_error => Some(outcome.text_content()),
                Ok(_) => None,
                Err(error) => Some(error.to_string()),
            },
            result_bytes: result.as_ref().ok().map(|outcome| {
                outcome
                    .content
                    .iter()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .map(str::len)
                    .sum()
            }),
            cached,
            trace_id: ctx.trace.as_ref().map(TraceContext::trace_id_hex),
        };
        self.recorder.record(&record);
        result
    }
}

impl Pipeline {
    /// The stages after resolution: validate → hooks → approve → admit → execute → hooks →
    /// cost. Returns the fate, the cost and the approval decision (if one was needed).
    async fn run(
        &self,
        entry: &CatalogEntry,
        call_id: &str,
        mut arguments: Map<String, Value>,
        ctx: &CallContext,
        upstreams: &dyn UpstreamDirectory,
    ) -> (Fate, f64, Option<String>) {
        if let Some(refusal) = validate::validate(entry, &mut arguments) {
            return (
                Fate::new(Ok(refusal), CallStatus::InvalidArguments),
                0.0,
                None,
            );
        }
        // The audit record comes first: a call the ledger cannot keep does not run.
        if let Some(why) = self.recorder.unavailable() {
            let refusal =
                ToolOutcome::error(format!("tool '{}' was not run: {why}", entry.exposed));
            return (Fate::new(Ok(refusal), CallStatus::Unavailable), 0.0, None);
        }
        let governance = self.governance();
        let hooks = &governance.hooks;
        // Hooks see the call as a HookCall; without hooks none is built (the hot path).
        let mut hooked = None;
        if !hooks.is_empty() {
            let mut call = HookCall {
                call_id: call_id.to_owned(),
                agent: ctx.agent.clone(),
                session: ctx.session.clone(),
                tool: entry.exposed.clone(),
                server: entry.spec.server.as_str().to_owned(),
                upstream_tool: entry.upstream_name.clone(),
                arguments,
            };
            let started = self.clock.wall();
            let before = hooks::run_before(hooks, &mut call).await;
            self.stage("hooks before", ctx, started, entry);
            match before {
                Err(reason) => {
                    let fate = Fate::new(Ok(ToolOutcome::error(reason)), CallStatus::Denied);
                    return (fate, 0.0, None);
                }
                Ok(true) => {
                    if let Some(refusal) = validate::validate(entry, &mut call.arguments) {
                        let fate = Fate::new(Ok(refusal), CallStatus::InvalidArguments);
                        return (fate, 0.0, None);
                    }
                }
                Ok(false) => {}
            }
            // Post-call hooks see the arguments too.
            arguments = call.arguments.clone();
            hooked = Some(call);
        }
        let started = self.clock.wall();
        let approving = approve::approve(&governance, entry, call_id, &arguments, ctx);
        // A call its caller cancels while it waits for an approver is withdrawn from the
        // approver (the future is dropped) and never runs, whatever is decided later.
        let Some(approval) = unless_cancelled(&ctx.cancel, approving).await else {
            return (cancelled(), 0.0, None);
        };
        if !matches!(approval, Ok(None)) {
            self.stage("approval", ctx, started, entry);
        }
        let approval = match approval {
            Ok(approval) => approval,
            Err((fate, summary)) => return (fate, 0.0, Some(summary)),
        };
        let started = self.clock.wall();
        let Some(admission) =
            unless_cancelled(&ctx.cancel, admit::admit(&governance, entry, ctx)).await
        else {
            return (cancelled(), 0.0, approval);
        };
        if self
            .clock
            .wall()
            .duration_since(started)
            .is_ok_and(|waited| waited >= ADMISSION_SPAN_AFTER)
        {
            self.stage("admission queue", ctx, started, entry);
        }
        let admission = match admission {
            Ok(admission) => admission,
            Err(refusal) => {
                let fate = Fate::new(Ok(refusal), CallStatus::RateLimited);
                return (fate, 0.0, approval);
            }
        };
        let started = self.clock.now();
        let mut fate = execute::execute(upstreams, entry, arguments, ctx).await;
        drop(admission);
        let cost = if fate.priced() {
            governance.cost_of(entry, self.clock.now().saturating_duration_since(started))
        } else {
            0.0
        };
        if cost > 0.0 {
            governance.charge(ctx, cost);
        }
        if let (Some(call), Ok(outcome)) = (&hooked, &mut fate.result) {
            let started = self.clock.wall();
            let withheld = hooks::run_after(hooks, call, outcome).await;
            self.stage("hooks after", ctx, started, entry);
            // The record says what the caller got: a result a hook withheld is denied, one
            // it turned into an error (or out of one) is recorded as it now is.
            fate.status = match (withheld, outcome.is_error, fate.status) {
                (true, _, _) => CallStatus::Denied,
                (false, true, CallStatus::Ok) => CallStatus::ToolError,
                (false, false, CallStatus::ToolError) => CallStatus::Ok,
                (false, _, status) => status,
            };
        }
        (fate, cost, approval)
    }

    /// An INTERNAL span for a stage of a traced call that ran from `started` until now.
    fn stage(
        &self,
        name: &str,
        ctx: &CallContext,
        started: std::time::SystemTime,
        entry: &CatalogEntry,
    ) {
        if ctx.telemetry.is_none() {
            return;
        }
        stage_span(
            ctx.telemetry.as_ref(),
            ctx.trace.as_ref(),
            name,
            (started, self.clock.wall()),
            vec![(
                "gen_ai.tool.name",
                AttributeValue::from(entry.exposed.as_str()),
            )],
        );
    }
}

/// An admission that waited at least this long (a concurrency cap's queue) gets a span.
const ADMISSION_SPAN_AFTER: std::time::Duration = std::time::Duration::from_millis(1);

#[cfg(test)]
mod tests;
