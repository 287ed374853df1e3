//! The path of one call. Every front (stdio, HTTP, library) calls [`Pipeline::call`]; no
//! other path reaches an upstream.
//!
//! The stages, in order, each a small module with one job:
//! [`resolve`] the exposed name within the caller's view → [`validate`] the arguments → [`execute`] on the upstream
//! under the tool's deadline → [`record`] the outcome and its wall time. Recording wraps the
//! whole, so refused calls are recorded too. Later stages (policy, approval, rate limits,
//! cache) slot in between validate and execute.

pub mod execute;
pub mod record;
pub mod resolve;
pub mod validate;

use std::sync::Arc;

use serde_json::Value;

use crate::agent::View;
use crate::clock::Clock;
use crate::upstream::UpstreamDirectory;
use crate::{CallContext, Catalog, ToolCall, ToolOutcome};

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

/// The call pipeline: stateless apart from its collaborators.
pub struct Pipeline {
    recorder: Arc<dyn Recorder>,
    clock: Arc<dyn Clock>,
}

impl Pipeline {
    pub fn new(recorder: Arc<dyn Recorder>, clock: Arc<dyn Clock>) -> Self {
        Self { recorder, clock }
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
        let entry = resolve::resolve(catalog, view, &call.name);
        let target = entry
            .as_ref()
            .ok()
            .map(|entry| (entry.spec.server.clone(), entry.upstream_name.clone()));
        let result = match entry {
            Err(error) => Err(error),
            Ok(entry) => match validate::validate(entry, &call.arguments) {
                Some(refusal) => Ok(refusal),
                None => execute::execute(upstreams, entry, call.arguments, ctx).await,
            },
        };
        let record = CallRecord {
            name: call.name,
            target,
            agent: ctx.agent.clone(),
            started: started_wall,
            duration: self.clock.now().saturating_duration_since(started),
            status: CallStatus::of(&result),
        };
        self.recorder.record(&record);
        result
    }
}

#[cfg(test)]
mod tests;
