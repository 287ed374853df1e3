//! What the front serves. Implemented by the Host, so this crate never depends on it.

use futures::future::BoxFuture;
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, ToolCall, ToolDefinition, ToolOutcome};
use tokio::sync::watch;

/// How the gateway introduces itself to clients.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerIdentity {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
}

/// The catalog and the pipeline, as the front needs them.
pub trait Backend: Send + Sync + 'static {
    fn identity(&self) -> ServerIdentity;

    /// The tools visible to `agent` (exposed names). May wait briefly at start-up for the
    /// first connection attempts; never waits on the network afterwards.
    fn list_tools(&self, agent: Option<&str>) -> BoxFuture<'_, Vec<ToolDefinition>>;

    /// Runs a call through the pipeline.
    fn call_tool(
        &self,
        ctx: CallContext,
        call: ToolCall,
    ) -> BoxFuture<'_, Result<ToolOutcome, CallError>>;

    /// Bumped whenever the catalog changes (clients are sent `list_changed`).
    fn catalog_version(&self) -> watch::Receiver<u64>;
}
