//! The boundary between the pipeline and whatever runs a tool: an MCP server over some
//! transport ([`Upstream`], implemented in `switchboard-mcp`), or a tool written in Rust and
//! served in-process ([`ToolProvider`], implemented in `switchboard-tools`).

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::{CallContext, ServerId, ToolDefinition, ToolOutcome};

/// Why an upstream could not produce an outcome.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The server is not connected (failed to start, crashed, reconnecting).
    #[error("server '{server}' is unavailable: {reason}")]
    Unavailable { server: ServerId, reason: String },
    /// The server answered with a JSON-RPC error.
    #[error("server '{server}' returned error {code}: {message}")]
    Protocol {
        server: ServerId,
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The connection broke while the call was in flight.
    #[error("connection to server '{server}' was lost: {reason}")]
    Disconnected { server: ServerId, reason: String },
    /// The call did not finish within its deadline.
    #[error("server '{server}' did not answer within {}ms", after.as_millis())]
    Timeout { server: ServerId, after: Duration },
    /// The caller cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The server's answer could not be understood.
    #[error("server '{server}' sent an invalid result: {reason}")]
    InvalidResult { server: ServerId, reason: String },
    /// The server needs the client to answer these requests first, and the call to be sent
    /// again with the answers (2026-07-28 `input_required`).
    #[error("server '{server}' asked the client for input")]
    InputRequired {
        server: ServerId,
        input_requests: Value,
        request_state: Option<String>,
    },
}

/// One connected MCP server, as the pipeline sees it.
pub trait Upstream: Send + Sync {
    /// Calls `tool` (the upstream's own name) with `arguments`. Must honour `ctx.cancel`
    /// (and tell the server), and report progress into `ctx.progress` when set.
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>>;
}

/// Finds the upstream that serves a server id.
pub trait UpstreamDirectory: Send + Sync {
    fn upstream(&self, server: &ServerId) -> Option<std::sync::Arc<dyn Upstream>>;
}

/// A set of tools implemented in Rust and served in-process (the built-in tools).
///
/// Returning `Err` means the tool failed in a way the model should read: it becomes an
/// `isError` outcome. Providers never panic on bad arguments (the pipeline validates them
/// against the input schema first, but a provider must still not trust them).
pub trait ToolProvider: Send + Sync {
    /// The server id this provider is known by when the config does not name one.
    fn name(&self) -> &str;
    /// Human-readable description of the provider, for `initialize`/`server/discover`.
    fn description(&self) -> &str {
        ""
    }
    /// The tools this provider serves.
    fn tools(&self) -> Vec<ToolDefinition>;
    /// Runs one tool.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>>;
}

/// A tool failure the model should see as text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}
