//! Bringing a fresh connection up: era negotiation, then the full tool list.
//!
//! Negotiation probes `server/discover` first (the 2026-07-28 era). Anything other than a
//! modern answer within the probe timeout — an error of any code, a non-modern result, or
//! silence — falls back to the `initialize` handshake. The era is then fixed for the life of
//! the connection.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{Upstream, UpstreamError};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

use super::client::{ClientError, RpcClient};
use crate::era::{Era, LATEST_LEGACY_VERSION, META_SERVER_INFO, MODERN_VERSION, client_info};

/// Which era to speak with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    /// Probe `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
    Legacy,
    Modern,
}

/// What a server said about itself during negotiation.
#[derive(Debug, Clone, PartialEq)]
pub struct Negotiated {
    pub era: Era,
    pub server_info: Value,
    pub capabilities: Value,
    pub instructions: Option<String>,
}

/// Most pages a `tools/list` walk follows before deciding the server loops.
const MAX_PAGES: usize = 10_000;

/// Negotiates the era with a server.
pub async fn negotiate(
    client: &RpcClient,
    choice: EraChoice,
    discover_timeout: Duration,
) -> Result<Negotiated, String> {
    if choice != EraChoice::Legacy {
        let probe = tokio::time::timeout(
            discover_timeout,
            client.request("server/discover", Some(json!({}))),
        );
        match probe.await {
            Ok(Ok(result)) if supports_modern(&result) => {
                client.set_era(Era::Modern);
                return Ok(Negotiated {
                    era: Era::Modern,
                    server_info: result
                        .get("_meta")
                        .and_then(|m| m.get(META_SERVER_INFO))
                        .cloned()
                        .unwrap_or(Value::Null),
                    capabilities: result
                        .get("capabilities")
                        .cloned()
                        .unwrap_or_else(|| json!({})),
                    instructions: result
                        .get("instructions")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
            Ok(Err(ClientError::Disconnected(reason))) => return Err(reason),
            _ if choice == EraChoice::Modern => {
                return Err("the server does not speak the 2026-07-28 era (server/discover failed) and era = \"modern\" is configured".to_owned());
            }
            _ => {}
        }
    }
    initialize(client).await
}

fn supports_modern(result: &Value) -> bool {
    result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(MODERN_VERSION)))
}

async fn initialize(client: &RpcClient) -> Result<Negotiated, String> {
    let params = json!({
        "protocolVersion": LATEST_LEGACY_VERSION,
        "capabilities": {"roots": {"listChanged": false}},
        "clientInfo": client_info(),
    });
    let result = client
        .request("initialize", Some(params))
        .await
        .map_err(|error| match error {
            ClientError::Rpc(error) => {
                format!("initialize failed: error {}: {}", error.code, error.message)
            }
            ClientError::Disconnected(reason) => reason,
        })?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if !Era::is_legacy_version(&version) {
        return Err(format!(
            "the server chose protocol version '{version}', which Switchboard does not speak"
        ));
    }
    let era = Era::Legacy { version };
    client.set_era(era.clone());
    client
        .notify("notifications/initialized", None)
        .await
        .map_err(|error| error.to_string())?;
    Ok(Negotiated {
        era,
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        capabilities: result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// Walks `tools/list` to its last page. Tools that cannot be parsed are skipped with a warning.
pub async fn list_tools(client: &RpcClient) -> Result<Vec<ToolDefinition>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = client
            .request("tools/list", Some(params))
            .await
            .map_err(|error| format!("tools/list failed: {error}"))?;
        let Some(items) = page.get("tools").and_then(Value::as_array) else {
            return Err("tools/list result has no 'tools' array".to_owned());
        };
        for item in items {
            match serde_json::from_value::<ToolDefinition>(item.clone()) {
                Ok(tool) => tools.push(tool),
                Err(error) => tracing::warn!(
                    target: "switchboard::upstream",
                    server = %client.server(),
                    "skipping a tool that is not a valid definition ({error}): {}",
                    item.to_string().chars().take(200).collect::<String>()
                ),
            }
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if Some(next) != cursor.as_deref() => cursor = Some(next.to_owned()),
            Some(_) => return Err("tools/list returned the same cursor twice".to_owned()),
            None => return Ok(tools),
        }
    }
    Err(format!("tools/list did not end after {MAX_PAGES} pages"))
}

impl Upstream for RpcClient {
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            let params = json!({"name": tool, "arguments": arguments});
            let result = self
                .request_with_progress("tools/call", Some(params), ctx.progress.clone())
                .await;
            match result {
                Ok(mut value) => {
                    if value.get("resultType").and_then(Value::as_str) == Some("input_required") {
                        return Ok(ToolOutcome::error(format!(
                            "tool '{tool}' asked for input from the user, which Switchboard cannot relay yet"
                        )));
                    }
                    if let Value::Object(map) = &mut value {
                        map.remove("resultType");
                    }
                    serde_json::from_value(value).map_err(|error| UpstreamError::InvalidResult {
                        server: self.server().clone(),
                        reason: error.to_string(),
                    })
                }
                Err(ClientError::Rpc(error)) => Err(UpstreamError::Protocol {
                    server: self.server().clone(),
                    code: error.code,
                    message: error.message,
                    data: error.data,
                }),
                Err(ClientError::Disconnected(reason)) => Err(UpstreamError::Disconnected {
                    server: self.server().clone(),
                    reason,
                }),
            }
        })
    }
}
