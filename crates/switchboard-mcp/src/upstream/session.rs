//! Bringing a fresh connection up: era negotiation, then the full tool list; and calling a
//! tool on it, with the server's `input_required` rounds passed to a modern client or answered
//! by a legacy one over the call's relay.
//!
//! Negotiation probes `server/discover` first (the 2026-07-28 era). Anything other than a
//! modern answer within the probe timeout — an error of any code, a non-modern result, or
//! silence — falls back to the `initialize` handshake. The era is then fixed for the life of
//! the connection.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{Upstream, UpstreamError};
use switchboard_core::{CallContext, CallerChannel, ModernRequest, ToolDefinition, ToolOutcome};

use super::client::{ClientError, RequestFor, RpcClient};
use super::span::ClientSpan;
use crate::era::{
    Era, LATEST_LEGACY_VERSION, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_SERVER_INFO,
    MODERN_VERSION, client_info,
};
use crate::jsonrpc::client_capability_for;

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

impl Negotiated {
    /// From a `server/discover` or `initialize` answer; the two differ in where the server's
    /// identity is.
    fn from_answer(era: Era, answer: &Value, server_info: Option<&Value>) -> Self {
        Self {
            era,
            server_info: server_info.cloned().unwrap_or(Value::Null),
            capabilities: answer
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({})),
            instructions: answer
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }
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
            Ok(Ok(result)) if supports_modern(&result) => return Ok(adopt_modern(client, &result)),
            Ok(Err(ClientError::Disconnected(reason))) => return Err(reason),
            _ if choice == EraChoice::Modern => {
                return Err("the server does not speak the 2026-07-28 era (server/discover failed) and era = \"modern\" is configured".to_owned());
            }
            _ => {}
        }
    }
    match initialize(client).await {
        // The probe timed out, but the server did see it (late, under load) and now serves
        // the modern era on this connection: ask again, and adopt its answer.
        Err(error)
            if choice != EraChoice::Legacy
                && error.contains(&format!("error {MODERN_REFUSAL}:")) =>
        {
            let again = tokio::time::timeout(
                discover_timeout * 5,
                client.request("server/discover", Some(json!({}))),
            )
            .await;
            match again {
                Ok(Ok(result)) if supports_modern(&result) => Ok(adopt_modern(client, &result)),
                _ => Err(error),
            }
        }
        other => other,
    }
}

/// Switches the connection to the modern era per a `server/discover` answer.
fn adopt_modern(client: &RpcClient, result: &Value) -> Negotiated {
    client.set_era(Era::Modern);
    let server_info = result.get("_meta").and_then(|m| m.get(META_SERVER_INFO));
    let negotiated = Negotiated::from_answer(Era::Modern, result, server_info);
    client
        .tasks()
        .learn_capabilities(&negotiated.era, &negotiated.capabilities);
    negotiated
}

/// The error code a modern server answers `initialize` with once it serves 2026-07-28.
const MODERN_REFUSAL: i64 = -32022;

fn supports_modern(result: &Value) -> bool {
    result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| versions.iter().any(|v| v.as_str() == Some(MODERN_VERSION)))
}

async fn initialize(client: &RpcClient) -> Result<Negotiated, String> {
    let params = json!({
        "protocolVersion": LATEST_LEGACY_VERSION,
        "capabilities": {"roots": {"listChanged": false}, "sampling": {}, "elicitation": {}},
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
    let negotiated = Negotiated::from_answer(era, &result, result.get("serverInfo"));
    client
        .tasks()
        .learn_capabilities(&negotiated.era, &negotiated.capabilities);
    Ok(negotiated)
}

/// Walks a paginated list method (`tools/list`, `prompts/list`, …) to its last page and
/// returns the items under `key`.
pub async fn list_all(client: &RpcClient, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = client
            .request(method, Some(params))
            .await
            .map_err(|error| format!("{method} failed: {error}"))?;
        let Some(Value::Array(page_items)) = page.get(key) else {
            return Err(format!("{method} result has no '{key}' array"));
        };
        items.extend(page_items.iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if Some(next) != cursor.as_deref() => cursor = Some(next.to_owned()),
            Some(_) => return Err(format!("{method} returned the same cursor twice")),
            None => return Ok(items),
        }
    }
    Err(format!("{method} did not end after {MAX_PAGES} pages"))
}

/// Walks `tools/list` to its last page. Tools that cannot be parsed are skipped with a warning.
/// The transport learns which arguments each tool mirrors into headers (`x-mcp-header`).
pub async fn list_tools(client: &RpcClient) -> Result<Vec<ToolDefinition>, String> {
    let items = list_all(client, "tools/list", "tools").await?;
    let tools: Vec<ToolDefinition> = items
        .into_iter()
        .filter_map(
            |item| match serde_json::from_value::<ToolDefinition>(item.clone()) {
                Ok(tool) => Some(tool),
                Err(error) => {
                    tracing::warn!(
                        target: "switchboard::upstream",
                        server = %client.label(),
                        "skipping a tool that is not a valid definition ({error}): {}",
                        item.to_string().chars().take(200).collect::<String>()
                    );
                    None
                }
            },
        )
        .collect();
    client.learn_param_headers(&tools);
    Ok(tools)
}

/// Prompts, resources and resource templates of a server, per its capabilities. A server
/// that advertises a capability but fails to list it is logged, not failed: its tools still
/// work.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub prompts: Arc<[Value]>,
    pub resources: Arc<[Value]>,
    pub resource_templates: Arc<[Value]>,
}

impl Extras {
    /// Lists all three, per `capabilities`, prompts and resources each within `bound`: what
    /// fails or takes longer is empty (and logged), and never fails the server.
    pub async fn list(client: &RpcClient, capabilities: &Value, bound: Duration) -> Self {
        let late = |what: &str| {
            tracing::warn!(target: "switchboard::upstream", server = %client.label(), "listing {what} took over {} ms: none are shown until the server announces a change", bound.as_millis());
        };
        // Both at once: a slow one costs one bound, not two.
        let (prompts, resources) = tokio::join!(
            tokio::time::timeout(bound, list_prompts(client, capabilities)),
            tokio::time::timeout(bound, list_resources(client, capabilities))
        );
        let prompts = prompts.unwrap_or_else(|_| {
            late("prompts");
            None
        });
        let (resources, resource_templates) = resources.unwrap_or_else(|_| {
            late("resources");
            (None, None)
        });
        Self {
            prompts: prompts.unwrap_or_default(),
            resources: resources.unwrap_or_default(),
            resource_templates: resource_templates.unwrap_or_default(),
        }
    }
}

/// A server's prompts; none when it offers none, `None` when listing them failed (logged).
pub async fn list_prompts(client: &RpcClient, capabilities: &Value) -> Option<Arc<[Value]>> {
    if capabilities.get("prompts").is_none() {
        return Some(Arc::from([]));
    }
    logged(client, list_all(client, "prompts/list", "prompts").await)
}

/// A server's resources and resource templates, each as [`list_prompts`].
pub async fn list_resources(
    client: &RpcClient,
    capabilities: &Value,
) -> (Option<Arc<[Value]>>, Option<Arc<[Value]>>) {
    if capabilities.get("resources").is_none() {
        return (Some(Arc::from([])), Some(Arc::from([])));
    }
    let resources = logged(
        client,
        list_all(client, "resources/list", "resources").await,
    );
    let templates = logged(
        client,
        list_all(client, "resources/templates/list", "resourceTemplates").await,
    );
    (resources, templates)
}

fn logged(client: &RpcClient, items: Result<Vec<Value>, String>) -> Option<Arc<[Value]>> {
    match items {
        Ok(items) => Some(items.into()),
        Err(reason) => {
            tracing::warn!(target: "switchboard::upstream", server = %client.label(), "{reason}");
            None
        }
    }
}

impl Upstream for RpcClient {
    /// A tool's answer may be a request for the client's input: see
    /// [`RpcClient::request_with_rounds`].
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            if let Some(answer) = self.call_as_task(tool, &arguments, ctx).await {
                return answer;
            }
            let mut params = Map::new();
            params.insert("name".into(), Value::String(tool.to_owned()));
            params.insert("arguments".into(), Value::Object(arguments));
            match self
                .request_with_rounds("tools/call", tool, params, ctx)
                .await
                .map_err(|error| self.upstream_error(error))?
            {
                Rounds::Answered(result) => self.outcome(result),
                Rounds::InputRequired {
                    input_requests,
                    request_state,
                } => Err(UpstreamError::InputRequired {
                    server: self.server().clone(),
                    input_requests,
                    request_state,
                }),
                Rounds::NotAsked(why) => Ok(ToolOutcome::error(why)),
            }
        })
    }
}

/// How a request whose server may ask for the client's input ended.
#[derive(Debug)]
pub enum Rounds {
    /// The server's answer, without its `resultType` (the front sets each era's own).
    Answered(Value),
    /// The server asks a modern client, which gets this as the answer and retries.
    InputRequired {
        input_requests: Value,
        request_state: Option<String>,
    },
    /// The server asked, and the legacy client could not be asked: why.
    NotAsked(String),
}

/// The 2026-07-28 answer that asks the client for input: what the server asks, and the state
/// the client's retried request must echo.
pub fn input_required_result(input_requests: Value, request_state: Option<String>) -> Value {
    let mut result = json!({
        "resultType": "input_required",
        "inputRequests": input_requests,
    });
    if let Some(state) = request_state {
        result["requestState"] = Value::String(state);
    }
    result
}

impl RpcClient {
    /// Sends `method` (`tools/call`, `prompts/get`) for `ctx`'s caller. The server's answer
    /// may be a request for the client's input (2026-07-28 `input_required`). A modern client
    /// gets it as the answer and sends the request again with its answers, which go on to
    /// the server with the state it gave. A legacy client is asked here, request by request,
    /// over its relay, and the request is sent again with the answers, for at most
    /// [`MAX_INPUT_ROUNDS`]. `name` (the tool's or prompt's) is for messages only.
    /// A traced call runs in a CLIENT span (`super::span`).
    pub async fn request_with_rounds(
        &self,
        method: &str,
        name: &str,
        mut params: Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Rounds, ClientError> {
        let span = ClientSpan::start(ctx, (method, name), self.label(), &mut params);
        let rounds = self.rounds(method, name, params, ctx).await;
        if let Some(span) = span {
            span.finish(&rounds);
        }
        rounds
    }

    async fn rounds(
        &self,
        method: &str,
        name: &str,
        mut params: Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Rounds, ClientError> {
        // Formatted only on the way to a message: the usual call never needs it.
        let what = || match method {
            "prompts/get" => format!("prompt '{name}'"),
            _ => format!("tool '{name}'"),
        };
        if let Some(modern) = &ctx.modern {
            add_input_round(&mut params, modern);
        } else if let Some(caller) = &ctx.caller
            && self.is_modern()
        {
            declare_for_legacy_caller(&mut params, caller.as_ref());
        }
        let cannot_be_asked = || {
            Ok(Rounds::NotAsked(format!(
                "{} asked for input from the user, and this client cannot be asked",
                what()
            )))
        };
        // Only a legacy client that can answer something gets another round, so only then
        // is a copy of the request kept for it: the usual call sends its arguments as they are.
        let relays = ctx.modern.is_none()
            && ctx
                .caller
                .as_ref()
                .is_some_and(|caller| INPUT_METHODS.iter().any(|method| caller.supports(method)));
        for _round in 0..=MAX_INPUT_ROUNDS {
            let next = relays.then(|| params.clone());
            let mut result = self
                .request_for(method, Some(Value::Object(params)), RequestFor::of(ctx))
                .await?;
            let Some(round) = InputRound::of(&result) else {
                if let Value::Object(map) = &mut result {
                    map.remove("resultType");
                }
                return Ok(Rounds::Answered(result));
            };
            if ctx.modern.is_some() {
                return Ok(Rounds::InputRequired {
                    input_requests: round.requests,
                    request_state: round.state,
                });
            }
            let Some(caller) = &ctx.caller else {
                return cannot_be_asked();
            };
            let responses = match round.answer(caller.as_ref()).await {
                Ok(responses) => responses,
                Err(why) => return Ok(Rounds::NotAsked(format!("{} {why}", what()))),
            };
            let Some(next) = next else {
                return cannot_be_asked();
            };
            params = next;
            params.insert("inputResponses".into(), responses);
            match round.state {
                Some(state) => params.insert("requestState".into(), Value::String(state)),
                None => params.remove("requestState"),
            };
        }
        Ok(Rounds::NotAsked(format!(
            "{} kept asking for input after {MAX_INPUT_ROUNDS} rounds of answers",
            what()
        )))
    }
}

/// How many times a legacy client's answers are sent back for one call before the gateway
/// gives up on a server that keeps asking.
pub const MAX_INPUT_ROUNDS: usize = 8;

/// The requests a server's input round may make of the client.
const INPUT_METHODS: [&str; 3] = crate::jsonrpc::CLIENT_REQUEST_METHODS;

impl RpcClient {
    pub(super) fn upstream_error(&self, error: ClientError) -> UpstreamError {
        match error {
            ClientError::Rpc(error) => UpstreamError::Protocol {
                server: self.server().clone(),
                code: error.code,
                message: error.message,
                data: error.data,
            },
            ClientError::Disconnected(reason) => UpstreamError::Disconnected {
                server: self.server().clone(),
                reason,
            },
        }
    }

    pub(super) fn outcome(&self, result: Value) -> Result<ToolOutcome, UpstreamError> {
        ToolOutcome::from_result(result).map_err(|reason| UpstreamError::InvalidResult {
            server: self.server().clone(),
            reason,
        })
    }
}

/// What a modern client's request brings for the server's input round: its answers and the
/// server's state (unless they answer the gateway's own approval question), the client's
/// capabilities, so the server asks only for what the client can answer, and the log level
/// it asked for, so the server logs only what the client wants.
fn add_input_round(params: &mut Map<String, Value>, modern: &ModernRequest) {
    if !modern.answers_an_approval() {
        if let Some(responses) = &modern.input_responses {
            params.insert("inputResponses".into(), responses.clone());
        }
        if let Some(state) = &modern.request_state {
            params.insert("requestState".into(), Value::String(state.clone()));
        }
    }
    let passed_on = [
        (META_CLIENT_CAPABILITIES, modern.client_capabilities.clone()),
        (META_LOG_LEVEL, modern.log_level.clone().map(Value::String)),
    ];
    for (key, value) in passed_on {
        let Some(value) = value else { continue };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(key.into(), value);
        }
    }
}

/// What a legacy client can be asked, declared to a modern server in the call's `_meta`: the
/// server may then ask by `input_required`, and the gateway asks the client in its turn.
fn declare_for_legacy_caller(params: &mut Map<String, Value>, caller: &dyn CallerChannel) {
    let declared: Map<String, Value> = INPUT_METHODS
        .iter()
        .filter(|method| caller.supports(method))
        .filter_map(|method| client_capability_for(method))
        .map(|capability| (capability.to_owned(), json!({})))
        .collect();
    if declared.is_empty() {
        return;
    }
    // Merged: a task's call already declares the tasks extension there.
    super::tasks::merge_client_capabilities(params, declared);
}

/// A server's `input_required` answer: the requests for the client, and its state.
struct InputRound {
    requests: Value,
    state: Option<String>,
}

impl InputRound {
    fn of(result: &Value) -> Option<InputRound> {
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return None;
        }
        Some(InputRound {
            requests: result
                .get("inputRequests")
                .cloned()
                .unwrap_or_else(|| json!({})),
            state: result
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Asks a legacy client each request (elicitation, sampling, roots) and gathers its
    /// answers under the server's keys; `Err` says why that could not be done.
    async fn answer(&self, caller: &dyn CallerChannel) -> Result<Value, String> {
        let Some(requests) = self.requests.as_object() else {
            return Err("asked for input with inputRequests that is not an object".to_owned());
        };
        let mut responses = Map::new();
        for (key, request) in requests {
            let Some(method) = request.get("method").and_then(Value::as_str) else {
                return Err(format!("asked for input '{key}' without a method"));
            };
            if !caller.supports(method) {
                return Err(format!(
                    "asked for input by {method}, which the client did not declare"
                ));
            }
            let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
            let answer = caller.request(method, params).await.map_err(|error| {
                format!(
                    "asked for input by {method}, and the client answered error {}: {}",
                    error.code, error.message
                )
            })?;
            responses.insert(key.clone(), answer);
        }
        Ok(Value::Object(responses))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modern(responses: Value) -> ModernRequest {
        ModernRequest {
            elicitation: true,
            input_responses: Some(responses),
            request_state: Some("state".into()),
            client_capabilities: Some(json!({"sampling": {}})),
            log_level: Some("warning".into()),
        }
    }

    #[test]
    fn a_round_goes_on_to_the_server_unless_it_answers_the_gateways_approval() {
        let mut params = Map::new();
        add_input_round(
            &mut params,
            &modern(json!({"user_name": {"action": "accept"}})),
        );
        assert_eq!(params["inputResponses"]["user_name"]["action"], "accept");
        assert_eq!(params["requestState"], "state");
        assert_eq!(
            params["_meta"][META_CLIENT_CAPABILITIES],
            json!({"sampling": {}})
        );
        assert_eq!(params["_meta"][META_LOG_LEVEL], "warning");

        let approval =
            json!({switchboard_core::approval::APPROVAL_INPUT_KEY: {"action": "accept"}});
        let mut params = Map::new();
        add_input_round(&mut params, &modern(approval));
        assert!(params.get("inputResponses").is_none() && params.get("requestState").is_none());
        assert_eq!(
            params["_meta"][META_CLIENT_CAPABILITIES],
            json!({"sampling": {}})
        );
    }
}
