//! The `manager` built-in (`builtin = "manager"`): the server manager's tools for a model —
//! the seed's sub-agent interface (`mcp_request_server_addition`, `mcp_check_subagent_status`,
//! `mcp_cancel_subagent_work`, `mcp_list_available_tools`) under MCP names. Each call goes
//! through the pipeline like any other (permissions, approvals, limits, the ledger); the work
//! itself runs as an operation, paid for from the calling agent's quota.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{
    CallContext, Caller, Progress, ToolAnnotations, ToolDefinition, ToolOutcome,
};

use super::operation::{Activation, Operation, Priority, Request, Requester, State, Work};
use super::{Manager, ManagerSlot, inputs};

/// How long a tool follows an operation before it answers with the operation as it is then
/// (the work goes on; `operation_status` follows it): well within a call's deadline.
const LONGEST_WAIT: Duration = Duration::from_secs(20);

/// The provider; it finds the Host's manager once the Host runs.
pub struct ManagerTools {
    slot: ManagerSlot,
}

impl ManagerTools {
    pub(crate) fn new(slot: ManagerSlot) -> Self {
        Self { slot }
    }

    fn manager(&self) -> Result<&Manager, ToolError> {
        self.slot
            .get()
            .ok_or_else(|| ToolError::new("the server manager is not running in this process"))
    }
}

fn annotations(read_only: bool, destructive: bool) -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(read_only),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

fn tool(
    name: &str,
    description: &str,
    schema: Value,
    read_only: bool,
    destructive: bool,
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, schema);
    definition.annotations = Some(annotations(read_only, destructive));
    definition
}

fn string_arg<'a>(arguments: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn required<'a>(arguments: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolError> {
    string_arg(arguments, key).ok_or_else(|| ToolError::new(format!("'{key}' is required")))
}

fn refused(error: super::ManagerError) -> ToolError {
    ToolError::new(error.to_string())
}

/// An operation as a model sees it: the fields that help it decide, not the step log.
fn compact(operation: &Operation) -> Value {
    let mut value = json!({
        "id": operation.id,
        "kind": operation.kind,
        "state": operation.state.as_str(),
        "progress": operation.progress,
        "message": operation.message,
        "energy": operation.energy,
    });
    if let Some(server) = operation.request.work.server() {
        value["server"] = json!(server);
    }
    if let Some(waiting) = &operation.waiting {
        value["waiting"] = serde_json::to_value(waiting).unwrap_or(Value::Null);
    }
    if let Some(error) = &operation.error {
        value["error"] = json!(error);
    }
    if let Some(result) = &operation.result {
        value["result"] = result.clone();
    }
    value
}

impl ManagerTools {
    /// Queues `work` for the caller and, when it asked for progress (or `wait` is set),
    /// follows it for a while, reporting each step.
    async fn queue_and_follow(
        &self,
        work: Work,
        arguments: &Map<String, Value>,
        ctx: &CallContext,
        wait: bool,
    ) -> Result<ToolOutcome, ToolError> {
        let manager = self.manager()?;
        let priority = match string_arg(arguments, "priority") {
            None => Priority::Medium,
            Some(text) => Priority::parse(text)
                .ok_or_else(|| ToolError::new("priority must be one of low, medium, high"))?,
        };
        let request = Request {
            work,
            priority,
            agent: ctx.agent.clone(),
            purpose: string_arg(arguments, "purpose").map(str::to_owned),
            by: Requester::Model,
        };
        let id = manager.queue(request).await.map_err(refused)?;
        let operation = if wait || ctx.progress.is_some() {
            follow(manager, &id, ctx, LONGEST_WAIT).await?
        } else {
            manager.status(&id).map_err(refused)?
        };
        Ok(answer(&operation))
    }

    async fn request_server(
        &self,
        arguments: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<ToolOutcome, ToolError> {
        let manager = self.manager()?;
        let name = required(arguments, "name")?;
        required(arguments, "purpose")?;
        // Refused before anything is asked of the user or written.
        manager
            .admit(ctx.agent.as_deref(), "install")
            .await
            .map_err(refused)?;
        let version = string_arg(arguments, "version");
        let server = string_arg(arguments, "server")
            .map_or_else(|| super::work::server_id_for(name), str::to_owned);
        // Ask the client for the server's required inputs now, while it is on the line.
        let mut values = BTreeMap::new();
        let settings = manager
            .host()
            .and_then(|host| host.config())
            .map(|config| config.manager.clone())
            .unwrap_or_default();
        if let Ok(listing) = manager.registry(&settings).get(name, version).await
            && let Ok(resolution) = switchboard_registry::resolve(&listing.server)
        {
            // No operation exists yet, so no stored secret is this request's: every required
            // one is asked for, even if a key of this server id is in the secrets file.
            let missing = inputs::missing(&server, &resolution.inputs, &values, &[]);
            if !missing.is_empty()
                && let Some(given) = inputs::elicit(&server, &resolution.inputs, &missing, ctx)
                    .await
                    .map_err(ToolError::new)?
            {
                values = given;
            }
        }
        let work = Work::Install {
            name: name.to_owned(),
            version: version.map(str::to_owned),
            server: Some(server),
            values,
            activation: Activation::Policy,
        };
        self.queue_and_follow(work, arguments, ctx, false).await
    }

    fn available_tools(
        &self,
        arguments: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<ToolOutcome, ToolError> {
        let manager = self.manager()?;
        let host = manager
            .host()
            .ok_or_else(|| ToolError::new("the gateway is shutting down"))?;
        let query = string_arg(arguments, "query").map(str::to_lowercase);
        let tools: Vec<Value> = host
            .entries_in(host.permitted(&Caller::of(ctx)).as_ref())
            .iter()
            .filter(|entry| {
                query.as_deref().is_none_or(|q| {
                    entry.exposed.to_lowercase().contains(q)
                        || entry
                            .spec.definition
                            .description
                            .as_deref()
                            .is_some_and(|d| d.to_lowercase().contains(q))
                })
            })
            .map(|entry| {
                let description = entry.spec.definition.description.as_deref().unwrap_or("");
                let first_line = description.lines().next().unwrap_or("");
                json!({"name": entry.exposed, "server": entry.spec.server.as_str(), "description": first_line})
            })
            .collect();
        Ok(ToolOutcome::structured(
            json!({"count": tools.len(), "tools": tools}),
        ))
    }

    fn list_servers(&self, ctx: &CallContext) -> Result<ToolOutcome, ToolError> {
        let manager = self.manager()?;
        let visible = visible_servers(manager, ctx)?;
        let host = manager
            .host()
            .ok_or_else(|| ToolError::new("the gateway is shutting down"))?;
        let installed: BTreeMap<String, super::Installed> = manager
            .installed()
            .map_err(refused)?
            .into_iter()
            .map(|i| (i.server.clone(), i))
            .collect();
        let servers: Vec<Value> = host
            .status()
            .iter()
            .filter(|report| visible.contains(&report.server))
            .map(|report| {
                let mut value = json!({
                    "server": report.server,
                    "state": report.state,
                    "tools": report.tools,
                });
                if let Some(installed) = installed.get(&report.server) {
                    value["installed"] =
                        json!({"name": installed.name, "version": installed.version});
                }
                value
            })
            .collect();
        Ok(ToolOutcome::structured(json!({"servers": servers})))
    }
}

/// Operation `id`, if the caller's agent asked for it: a model sees and cancels only its
/// own agent's work (another agent's, or an operator's, is as if it did not exist).
fn own_operation(manager: &Manager, id: &str, ctx: &CallContext) -> Result<Operation, ToolError> {
    match manager.status(id) {
        Ok(operation) if operation.request.agent == ctx.agent => Ok(operation),
        Ok(_) | Err(super::ManagerError::NotFound(_)) => Err(ToolError::new(format!(
            "no operation '{id}' of yours (list_operations shows them)"
        ))),
        Err(error) => Err(refused(error)),
    }
}

/// The servers the caller can see a tool of.
fn visible_servers(manager: &Manager, ctx: &CallContext) -> Result<BTreeSet<String>, ToolError> {
    let host = manager
        .host()
        .ok_or_else(|| ToolError::new("the gateway is shutting down"))?;
    Ok(host
        .entries_in(host.permitted(&Caller::of(ctx)).as_ref())
        .iter()
        .map(|entry| entry.spec.server.as_str().to_owned())
        .collect())
}

/// Follows operation `id` for at most `limit`, reporting its progress to the caller when it
/// asked for it; stops early when the caller gives up.
async fn follow(
    manager: &Manager,
    id: &str,
    ctx: &CallContext,
    limit: Duration,
) -> Result<Operation, ToolError> {
    let mut last = None;
    let report = |operation: &Operation| {
        if let Some(sink) = &ctx.progress {
            let step = (operation.progress, operation.message.clone());
            if last.as_ref() != Some(&step) {
                sink.report(Progress {
                    progress: f64::from(operation.progress),
                    total: Some(100.0),
                    message: Some(step.1.clone()),
                });
                last = Some(step);
            }
        }
    };
    // Until it ends, or waits for someone other than the caller (an input, an approval).
    let settled = |operation: &Operation| operation.state.is_final() || operation.waiting.is_some();
    tokio::select! {
        followed = manager.wait_until(id, limit, report, settled) => followed.map_err(refused),
        () = ctx.cancel.cancelled() => manager.status(id).map_err(refused),
    }
}

fn answer(operation: &Operation) -> ToolOutcome {
    let value = compact(operation);
    let text = match operation.state {
        State::Queued | State::InProgress => format!(
            "operation {} is {} ({}%: {}); check it with operation_status",
            operation.id,
            operation.state.as_str(),
            operation.progress,
            operation.message
        ),
        // A model that reads only the text (most clients hand it nothing else) needs what
        // the operation produced there too: a search's servers, a test's report.
        _ => match &operation.result {
            Some(result) => format!("{}\n{result}", operation.summary()),
            None => operation.summary(),
        },
    };
    let mut outcome = ToolOutcome::structured_with_text(value, text);
    if operation.state == State::Failed {
        outcome.is_error = true;
    }
    outcome
}

impl ToolProvider for ManagerTools {
    fn name(&self) -> &str {
        "manager"
    }

    fn description(&self) -> &str {
        "Finds, installs, vets and adds MCP servers in the background"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let id = json!({"type": "string", "description": "An operation id"});
        let priority = json!({"type": "string", "enum": ["low", "medium", "high"], "description": "Default medium"});
        vec![
            tool(
                "search_servers",
                "Searches the MCP registries for servers that could give you new tools. Returns names, descriptions, versions and what installing each would run.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "Words to look for in server names and descriptions"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Default 10"}
                }, "required": ["query"], "additionalProperties": false}),
                true,
                false,
            ),
            tool(
                "request_server",
                "Asks for a server from the registry to be installed, vetted and added. Returns an operation id at once; the work runs in the background (operation_status). Its tools appear once it is added (and approved, where an approval is needed).",
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": "The server's registry name, as search_servers gave it"},
                    "version": {"type": "string", "description": "An exact version; default the latest"},
                    "purpose": {"type": "string", "description": "Why you need it (shown to whoever approves)"},
                    "priority": priority,
                    "server": {"type": "string", "description": "The id to add it as; default derived from the name"}
                }, "required": ["name", "purpose"], "additionalProperties": false}),
                false,
                false,
            ),
            tool(
                "operation_status",
                "The state, progress and result of an operation. With wait_seconds, waits up to that long for it to end or to wait for an input or an approval.",
                json!({"type": "object", "properties": {
                    "id": id,
                    "wait_seconds": {"type": "integer", "minimum": 0, "maximum": 20}
                }, "required": ["id"], "additionalProperties": false}),
                true,
                false,
            ),
            tool(
                "cancel_operation",
                "Cancels an operation; a cancelled install leaves nothing behind.",
                json!({"type": "object", "properties": {
                    "id": id,
                    "reason": {"type": "string"}
                }, "required": ["id", "reason"], "additionalProperties": false}),
                false,
                false,
            ),
            tool(
                "list_operations",
                "Operations, newest first, optionally in one state.",
                json!({"type": "object", "properties": {
                    "state": {"type": "string", "enum": ["queued", "in_progress", "completed", "failed", "cancelled"]}
                }, "additionalProperties": false}),
                true,
                false,
            ),
            tool(
                "list_servers",
                "The servers of this gateway: state, tool count, and where installed ones came from.",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
                true,
                false,
            ),
            tool(
                "test_server",
                "Connects a copy of a configured server and reports what it serves (runs as an operation).",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
                true,
                false,
            ),
            tool(
                "remove_server",
                "Removes a server the manager installed, and uninstalls it.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}),
                false,
                true,
            ),
            tool(
                "available_tools",
                "The tools you can call now, compactly (name, server, first line of the description), optionally filtered by a word.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "additionalProperties": false}),
                true,
                false,
            ),
        ]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            match tool {
                "search_servers" => {
                    let query = required(&arguments, "query")?.to_owned();
                    let limit = arguments
                        .get("limit")
                        .and_then(Value::as_u64)
                        .map_or(10, |n| n.clamp(1, 100) as usize);
                    let mut arguments = arguments.clone();
                    arguments.insert("priority".into(), json!("high"));
                    self.queue_and_follow(Work::Search { query, limit }, &arguments, ctx, true)
                        .await
                }
                "request_server" => self.request_server(&arguments, ctx).await,
                "operation_status" => {
                    let manager = self.manager()?;
                    let id = required(&arguments, "id")?;
                    let wait = arguments
                        .get("wait_seconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    own_operation(manager, id, ctx)?;
                    let operation = if wait > 0 {
                        follow(
                            manager,
                            id,
                            ctx,
                            Duration::from_secs(wait).min(LONGEST_WAIT),
                        )
                        .await?
                    } else {
                        manager.status(id).map_err(refused)?
                    };
                    Ok(answer(&operation))
                }
                "cancel_operation" => {
                    let manager = self.manager()?;
                    let id = required(&arguments, "id")?;
                    let reason = required(&arguments, "reason")?;
                    own_operation(manager, id, ctx)?;
                    let operation = manager.cancel_anywhere(id, reason).await.map_err(refused)?;
                    Ok(answer(&operation))
                }
                "list_operations" => {
                    let manager = self.manager()?;
                    let state = match string_arg(&arguments, "state") {
                        None => None,
                        Some(text) => Some(State::parse(text).ok_or_else(|| {
                            ToolError::new(
                                "state must be queued, in_progress, completed, failed or cancelled",
                            )
                        })?),
                    };
                    let mut operations = manager.list(state, 200).map_err(refused)?;
                    operations.retain(|operation| operation.request.agent == ctx.agent);
                    operations.truncate(50);
                    Ok(ToolOutcome::structured(json!({
                        "operations": operations.iter().map(compact).collect::<Vec<_>>()
                    })))
                }
                "list_servers" => self.list_servers(ctx),
                "test_server" => {
                    let server = required(&arguments, "name")?.to_owned();
                    if !visible_servers(self.manager()?, ctx)?.contains(&server) {
                        return Err(ToolError::new(format!(
                            "no server '{server}' among those you can see (list_servers)"
                        )));
                    }
                    self.queue_and_follow(Work::Test { server }, &arguments, ctx, true)
                        .await
                }
                "remove_server" => {
                    let server = required(&arguments, "name")?.to_owned();
                    self.queue_and_follow(Work::Remove { server }, &arguments, ctx, true)
                        .await
                }
                "available_tools" => self.available_tools(&arguments, ctx),
                other => Err(ToolError::new(format!("the manager has no tool '{other}'"))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished operation's text carries its result: a client that shows the model only
    /// the text content (no `structuredContent`) still sees what a search found.
    #[test]
    fn a_finished_operations_text_carries_its_result() {
        let request = Request::new(Work::Search {
            query: "memory".into(),
            limit: 10,
        });
        let mut operation = Operation::queued("01TEST".into(), request, 0);
        operation.state = State::Completed;
        operation.progress = 100;
        operation.result = Some(json!({"servers": [{"name": "io.example/memory"}]}));
        let text = answer(&operation).text_content();
        assert!(text.contains("completed"), "{text}");
        assert!(text.contains("io.example/memory"), "{text}");
    }
}
