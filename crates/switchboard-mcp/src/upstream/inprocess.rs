//! In-process upstreams: a [`ToolProvider`] written in Rust, called directly — no process, no
//! serialization — but through the same pipeline as every other upstream.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use switchboard_core::upstream::{ToolProvider, Upstream, UpstreamError};
use switchboard_core::{CallContext, ToolOutcome};

/// Adapts a provider to the [`Upstream`] trait.
pub struct InProcess {
    provider: Arc<dyn ToolProvider>,
}

impl InProcess {
    pub fn new(provider: Arc<dyn ToolProvider>) -> Self {
        Self { provider }
    }
}

impl Upstream for InProcess {
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            match self.provider.call(tool, arguments, ctx).await {
                Ok(outcome) => Ok(outcome),
                Err(error) => Ok(ToolOutcome::error(error.0)),
            }
        })
    }
}
