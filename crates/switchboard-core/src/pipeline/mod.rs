//! The path of one call. Every front (stdio, HTTP, library) calls [`Pipeline::call`]; no
//! other path reaches an upstream.
//!
//! The stages, in order, each a small module with one job:
//! [`resolve`] the exposed name within the caller's view → [`validate`] the arguments →
//! [`admit`] under rate limits, concurrency caps and quota → [`execute`] on the upstream
//! under the tool's deadline → [`envelope`]: cost the call and stamp the result's `_meta` →
//! [`record`] the outcome and its wall time. Recording wraps the whole, so refused calls are
//! recorded too, each exactly once.

pub mod admit;
pub mod envelope;
pub mod execute;
pub mod record;
pub mod resolve;
pub mod validate;

use std::sync::Arc;

use serde_json::Value;

use crate::agent::View;
use crate::call_id::new_call_id;
use crate::clock::Clock;
use crate::upstream::UpstreamDirectory;
use crate::{CallContext, Catalog, ToolCall, ToolOutcome};

pub use admit::Governance;
pub use envelope::CALL_META_KEY;
pub use record::{CallRecord, CallStatus, LogRecorder, Recorder};

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
}

/// What a stage decided: the answer, and how to record it.
pub(crate) struct Fate {
    pub(crate) result: Result<ToolOutcome, CallError>,
    pub(crate) status: CallStatus,
}

impl Fate {
    pub(crate) fn new(result: Result<ToolOutcome, CallError>, status: CallStatus) -> Self {
        Self { result, status }
    }
}

/// The call pipeline: stateless apart from its collaborators.
pub struct Pipeline {
    recorder: Arc<dyn Recorder>,
    clock: Arc<dyn Clock>,
    governance: Arc<Governance>,
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
            governance,
        }
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
        let started = self.clock.now();
        let started_wall = self.clock.wall();
        let call_id = new_call_id(started_wall);
        let entry = resolve::resolve(catalog, view, &call.name);
        let target = entry
            .as_ref()
            .ok()
            .map(|entry| (entry.spec.server.clone(), entry.upstream_name.clone()));
        let mut cost = 0.0;
        let fate = match entry {
            Err(error) => Fate::new(Err(error), CallStatus::UnknownTool),
            Ok(entry) => match validate::validate(entry, &call.arguments) {
                Some(refusal) => Fate::new(Ok(refusal), CallStatus::InvalidArguments),
                None => match admit::admit(&self.governance, entry, ctx).await {
                    Err(refusal) => Fate::new(Ok(refusal), CallStatus::RateLimited),
                    Ok(admission) => {
                        let fate = execute::execute(upstreams, entry, call.arguments, ctx).await;
                        drop(admission);
                        let wall = self.clock.now().saturating_duration_since(started);
                        cost = self.governance.cost_of(entry, wall);
                        self.governance.charge(ctx, cost);
                        fate
                    }
                },
            },
        };
        let duration = self.clock.now().saturating_duration_since(started);
        let mut result = fate.result;
        if let (Ok(outcome), Some((server, _))) = (&mut result, &target) {
            envelope::stamp(outcome, &call_id, duration, server, cost, false);
        }
        let record = CallRecord {
            call_id,
            name: call.name,
            target,
            agent: ctx.agent.clone(),
            session: ctx.session.clone(),
            started: started_wall,
            duration,
            status: fate.status,
            cost,
            error: match &result {
                Ok(outcome) if outcome.is_error => Some(outcome.text_content()),
                Ok(_) => None,
                Err(error) => Some(error.to_string()),
            },
        };
        self.recorder.record(&record);
        result
    }
}

#[cfg(test)]
mod tests;
