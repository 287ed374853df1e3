//! A backend for front tests: `echo`, `progress` (reports once), `wait` (until cancelled,
//! then reports the cancellation), `ask` (asks the client `roots/list` and answers with the
//! first root's URI, or `(not asked)`), anything else unknown; the resource `wait://forever`
//! never reads, and reports when its read starts and when it is dropped.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, Caller, Progress, ToolCall, ToolDefinition, ToolOutcome};
use switchboard_mcp::front::{Backend, ServerIdentity};
use switchboard_mcp::jsonrpc::{RpcError, code};
use tokio::sync::{mpsc, watch};

pub struct FakeBackend {
    pub version: watch::Sender<u64>,
    pub cancelled: mpsc::UnboundedSender<String>,
}

impl Backend for FakeBackend {
    fn unknown_tier(&self, tier: &str) -> Option<String> {
        (tier != "fast").then(|| format!("unknown tier '{tier}' (the config defines: fast)"))
    }

    fn identity(&self) -> ServerIdentity {
        ServerIdentity {
            name: "fake".into(),
            version: "1".into(),
            instructions: None,
        }
    }

    fn list_tools<'a>(&'a self, _caller: &'a Caller) -> BoxFuture<'a, Vec<ToolDefinition>> {
        Box::pin(async {
            vec![ToolDefinition::new(
                "echo",
                "Echo",
                json!({"type": "object"}),
            )]
        })
    }

    fn call_tool(
        &self,
        ctx: CallContext,
        call: ToolCall,
    ) -> BoxFuture<'_, Result<ToolOutcome, CallError>> {
        Box::pin(async move {
            match call.name.as_str() {
                "echo" => Ok(ToolOutcome::text(
                    call.arguments
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                )),
                "progress" => {
                    if let Some(sink) = &ctx.progress {
                        sink.report(Progress {
                            progress: 1.0,
                            total: Some(2.0),
                            message: Some("half".into()),
                        });
                    }
                    Ok(ToolOutcome::text("done"))
                }
                "ask" => {
                    let roots = match &ctx.caller {
                        Some(caller) => caller.request("roots/list", json!({})).await.ok(),
                        None => None,
                    };
                    let uri = roots
                        .as_ref()
                        .and_then(|roots| roots["roots"][0]["uri"].as_str())
                        .unwrap_or("(not asked)");
                    Ok(ToolOutcome::text(uri))
                }
                "wait" => {
                    ctx.cancel.cancelled().await;
                    let _ = self.cancelled.send("wait".into());
                    Err(CallError::Cancelled)
                }
                name => Err(CallError::UnknownTool { name: name.into() }),
            }
        })
    }

    fn listing_version(&self, _caller: &Caller) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    fn read_resource(
        &self,
        _caller: Caller,
        uri: String,
    ) -> BoxFuture<'_, Result<Value, RpcError>> {
        /// Says "read" when the read it belongs to is dropped.
        struct Told(mpsc::UnboundedSender<String>);
        impl Drop for Told {
            fn drop(&mut self) {
                let _ = self.0.send("read".into());
            }
        }
        Box::pin(async move {
            if uri == "wait://forever" {
                let _ = self.cancelled.send("reading".into());
                let _told = Told(self.cancelled.clone());
                std::future::pending::<()>().await;
            }
            Err(RpcError::new(
                code::RESOURCE_NOT_FOUND,
                format!("Resource not found: {uri}"),
            ))
        })
    }
}

/// A backend, its catalog-version handle, and the channel where cancellations show up.
pub fn fake_backend() -> (
    Arc<FakeBackend>,
    watch::Sender<u64>,
    mpsc::UnboundedReceiver<String>,
) {
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let (version, _) = watch::channel(0);
    (
        Arc::new(FakeBackend {
            version: version.clone(),
            cancelled: cancelled_tx,
        }),
        version,
        cancelled,
    )
}
