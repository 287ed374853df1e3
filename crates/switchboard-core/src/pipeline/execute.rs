//! Stage: execute the call on its upstream, bounded by the tool's deadline (a task's call:
//! by its TTL) and the caller's cancellation.
//!
//! Failures the model can act on (server down, deadline passed, garbled result) become
//! `isError` outcomes; a JSON-RPC error from the upstream passes through as a
//! [`CallError::Upstream`], an upstream's request for the client's input as
//! [`CallError::InputRequired`], and a cancelled call as [`CallError::Cancelled`].

use serde_json::{Map, Value};

use super::{CallError, CallStatus, Fate};
use crate::upstream::{UpstreamDirectory, UpstreamError};
use crate::{CallContext, CatalogEntry, ToolOutcome};

pub(crate) async fn execute(
    upstreams: &dyn UpstreamDirectory,
    entry: &CatalogEntry,
    arguments: Map<String, Value>,
    ctx: &CallContext,
) -> Fate {
    let server = &entry.spec.server;
    let Some(upstream) = upstreams.upstream(server) else {
        let outcome = ToolOutcome::error(format!("server '{server}' is not connected"));
        return Fate::unsent(Ok(outcome), CallStatus::UpstreamDown);
    };
    // Cancelled before it got here (while it waited for an approval or a slot): never sent.
    if ctx.cancel.is_cancelled() {
        return Fate::unsent(Err(CallError::Cancelled), CallStatus::Cancelled);
    }
    // A task's call is bounded by the task's TTL (its runner cancels it then), not by the
    // tool's deadline: a task exists for calls longer than that.
    let deadline = if ctx.caller.as_ref().is_some_and(|caller| caller.is_task()) {
        crate::task::TASK_CALL_LIMIT
    } else {
        entry.call_timeout
    };
    let call = upstream.call_tool(&entry.upstream_name, arguments, ctx);
    // Biased, the cancel first: a call cancelled before it got here (while it waited for an
    // approval or a slot) is never sent, rather than sent half the time.
    let result = tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(UpstreamError::Cancelled),
        result = tokio::time::timeout(deadline, call) => {
            result.unwrap_or(Err(UpstreamError::Timeout { server: server.clone(), after: deadline }))
        }
    };
    let status = match &result {
        Ok(outcome) if outcome.is_error => CallStatus::ToolError,
        Ok(_) => CallStatus::Ok,
        Err(UpstreamError::Cancelled) => CallStatus::Cancelled,
        Err(UpstreamError::Protocol { .. }) => CallStatus::UpstreamError,
        Err(UpstreamError::Timeout { .. }) => CallStatus::TimedOut,
        Err(UpstreamError::InputRequired { .. }) => CallStatus::InputRequired,
        Err(UpstreamError::Unavailable { .. } | UpstreamError::Disconnected { .. }) => {
            CallStatus::UpstreamDown
        }
        Err(_) => CallStatus::UpstreamError,
    };
    let result = match result {
        Ok(outcome) => Ok(outcome),
        Err(UpstreamError::Cancelled) => Err(CallError::Cancelled),
        Err(UpstreamError::Protocol {
            code,
            message,
            data,
            ..
        }) => Err(CallError::Upstream {
            code,
            message,
            data,
        }),
        Err(UpstreamError::InputRequired {
            input_requests,
            request_state,
            ..
        }) => Err(CallError::InputRequired {
            input_requests,
            request_state,
        }),
        Err(other) => Ok(ToolOutcome::error(format!(
            "tool '{}' failed: {other}",
            entry.exposed
        ))),
    };
    Fate::new(result, status)
}
