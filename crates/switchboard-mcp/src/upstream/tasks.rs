//! Relaying tasks to a server that runs them itself. A server that declares tasks — the
//! 2025-11-25 `capabilities.tasks.requests.tools.call`, or the 2026-07-28 extension
//! `io.modelcontextprotocol/tasks` — gets a tool call as a task of its own when the call is a
//! task's at the gateway (its caller says [`CallerChannel::is_task`]) or when the tool only
//! runs as one (`taskSupport: "required"`). The gateway then follows the server's task to its
//! end — polling `tasks/get` at the server's interval, passing its status messages on as
//! progress, its questions to the caller (`inputRequests` answered by `tasks/update`, or the
//! requests the server sends during `tasks/result`), and a cancellation on as `tasks/cancel`
//! — and the call ends with the server's result like any other. The server's task id never
//! leaves this module: clients see the gateway's own task.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_core::task::{TASKS_EXTENSION, TaskSupport};
use switchboard_core::upstream::UpstreamError;
use switchboard_core::{CallContext, CallerChannel, Progress, ToolDefinition, ToolOutcome};

use super::client::{ClientError, RequestFor, RpcClient};
use super::session::Rounds;
use super::transport::OnBehalf;
use crate::era::{Era, META_CLIENT_CAPABILITIES};

/// The task dialect a server speaks, learned at negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskDialect {
    /// 2025-11-25: `params.task`, `{task: Task}`, `tasks/result`.
    Legacy,
    /// 2026-07-28 extension: server-directed, `tasks/get` inlines the result, `tasks/update`.
    Modern,
}

/// The task dialect of a server that negotiated `era` with these capabilities, if it runs
/// tasks itself.
pub fn dialect_of(era: &Era, capabilities: &Value) -> Option<TaskDialect> {
    match era {
        Era::Modern => capabilities
            .get("extensions")
            .and_then(|extensions| extensions.get(TASKS_EXTENSION))
            .map(|_| TaskDialect::Modern),
        Era::Legacy { .. } => capabilities
            .pointer("/tasks/requests/tools/call")
            .map(|_| TaskDialect::Legacy),
    }
}

/// What a server declared of tasks: its dialect, and each tool's `taskSupport`. Read on
/// every call, so the dialect is an atomic: a server without tasks costs one load.
#[derive(Debug, Default)]
pub struct UpstreamTasks {
    /// 0: no tasks, 1: legacy, 2: modern.
    dialect: AtomicU8,
    tools: RwLock<HashMap<String, TaskSupport>>,
}

impl UpstreamTasks {
    /// Learns the dialect from the server's negotiated capabilities.
    pub fn learn_capabilities(&self, era: &Era, capabilities: &Value) {
        let dialect = dialect_of(era, capabilities);
        let code = match dialect {
            None => 0,
            Some(TaskDialect::Legacy) => 1,
            Some(TaskDialect::Modern) => 2,
        };
        self.dialect.store(code, Ordering::Release);
    }

    /// Learns which tools run as tasks from a `tools/list` walk.
    pub fn learn_tools(&self, tools: &[ToolDefinition]) {
        let supported = tools
            .iter()
            .map(|tool| (tool.name.clone(), TaskSupport::of(tool)))
            .filter(|(_, support)| *support != TaskSupport::Forbidden)
            .collect();
        if let Ok(mut slot) = self.tools.write() {
            *slot = supported;
        }
    }

    /// Whether the server runs tasks itself.
    pub fn dialect(&self) -> Option<TaskDialect> {
        match self.dialect.load(Ordering::Acquire) {
            1 => Some(TaskDialect::Legacy),
            2 => Some(TaskDialect::Modern),
            _ => None,
        }
    }

    /// The dialect to call `tool` as a task in, if this call is to be the server's task.
    fn route(&self, tool: &str, ctx: &CallContext) -> Option<TaskDialect> {
        let dialect = self.dialect()?;
        let support = self.tools.read().ok()?.get(tool).copied()?;
        let as_task = ctx.caller.as_ref().is_some_and(|caller| caller.is_task());
        match support {
            TaskSupport::Required => Some(dialect),
            TaskSupport::Optional if as_task => Some(dialect),
            _ => None,
        }
    }
}

/// The longest a server's task is followed between two polls, whatever it asks.
const MAX_POLL: Duration = Duration::from_secs(2);
/// The shortest.
const MIN_POLL: Duration = Duration::from_millis(100);
/// The TTL asked of a server's task.
const UPSTREAM_TTL_MS: u64 = 3_600_000;

impl RpcClient {
    /// Calls `tool` as the server's own task when this call should be one (see the module
    /// doc); `None` when it is an ordinary call.
    pub(super) async fn call_as_task(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Option<Result<ToolOutcome, UpstreamError>> {
        let dialect = self.tasks().route(tool, ctx)?;
        let mut params = Map::new();
        params.insert("name".into(), Value::String(tool.to_owned()));
        params.insert("arguments".into(), Value::Object(arguments.clone()));
        match dialect {
            TaskDialect::Legacy => {
                params.insert("task".into(), json!({"ttl": UPSTREAM_TTL_MS}));
            }
            TaskDialect::Modern => declare_extension(&mut params),
        }
        Some(self.follow_task(tool, params, ctx, dialect).await)
    }

    async fn follow_task(
        &self,
        tool: &str,
        params: Map<String, Value>,
        ctx: &CallContext,
        dialect: TaskDialect,
    ) -> Result<ToolOutcome, UpstreamError> {
        let rounds = self
            .request_with_rounds("tools/call", tool, params, ctx)
            .await
            .map_err(|error| self.upstream_error(error))?;
        let answer = match rounds {
            Rounds::Answered(answer) => answer,
            Rounds::NotAsked(why) => return Ok(ToolOutcome::error(why)),
            Rounds::InputRequired {
                input_requests,
                request_state,
            } => {
                return Err(UpstreamError::InputRequired {
                    server: self.server().clone(),
                    input_requests,
                    request_state,
                });
            }
        };
        let created = match dialect {
            TaskDialect::Legacy => answer.get("task"),
            TaskDialect::Modern => answer.get("taskId").map(|_| &answer),
        };
        let Some(created) = created else {
            // The server answered at once (a 2026-07-28 server may).
            return self.result_outcome(answer);
        };
        let Some(id) = created.get("taskId").and_then(Value::as_str) else {
            return Err(UpstreamError::InvalidResult {
                server: self.server().clone(),
                reason: "a task without a taskId".to_owned(),
            });
        };
        let id = id.to_owned();
        if let Some(caller) = &ctx.caller {
            caller.task_created();
        }
        // Requests the server tags with this task reach this call's caller, whoever else
        // has calls in flight on the server.
        let _routed = ctx
            .caller
            .as_ref()
            .map(|caller| self.route_task_to(&id, caller.clone()));
        // Until the server's task has ended, leaving this function any other way (cancelled,
        // past the call's deadline, dropped) tells the server to cancel it.
        let mut abandon = Abandon {
            client: self,
            id: Some(id.clone()),
            dialect,
            on_behalf: OnBehalf::of(ctx),
        };
        // Polls are the caller's too: a server that takes the caller's identity sees it.
        let polls = || RequestFor {
            on_behalf: OnBehalf::of(ctx),
            ..RequestFor::default()
        };
        let poll = poll_interval(created, dialect);
        let mut reported: Option<String> = None;
        let mut answered: Vec<String> = Vec::new();
        loop {
            let task = tokio::select! {
                task = self.task_request("tasks/get", &id, dialect, polls()) => task,
                () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
            };
            let task = task.map_err(|error| self.upstream_error(error))?;
            let message = task
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let (Some(progress), Some(text)) = (&ctx.progress, &message)
                && reported.as_ref() != Some(text)
            {
                progress.report(Progress {
                    progress: 0.0,
                    total: None,
                    message: Some(text.clone()),
                });
                reported = message.clone();
            }
            let status = task.get("status").and_then(Value::as_str).unwrap_or("");
            if matches!(status, "completed" | "failed" | "cancelled") {
                abandon.id = None;
            }
            match (status, dialect) {
                ("completed" | "failed" | "input_required", TaskDialect::Legacy) => {
                    // `tasks/result` waits for the end; the server asks its questions on it.
                    let result = tokio::select! {
                        result = self.task_request("tasks/result", &id, dialect, RequestFor { caller: ctx.caller.clone(), ..polls() }) => result,
                        () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
                    };
                    abandon.id = None;
                    return match result {
                        Ok(result) => self.result_outcome(result),
                        Err(error) => Err(self.upstream_error(error)),
                    };
                }
                ("completed", TaskDialect::Modern) => {
                    let result = task.get("result").cloned().unwrap_or_else(|| json!({}));
                    return self.result_outcome(result);
                }
                ("failed", TaskDialect::Modern) => {
                    let error = task.get("error");
                    return Err(UpstreamError::Protocol {
                        server: self.server().clone(),
                        code: error
                            .and_then(|e| e.get("code"))
                            .and_then(Value::as_i64)
                            .unwrap_or(-32603),
                        message: error
                            .and_then(|e| e.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("the server's task failed")
                            .to_owned(),
                        data: error.and_then(|e| e.get("data")).cloned(),
                    });
                }
                ("input_required", TaskDialect::Modern) => {
                    // Only questions not answered yet: the server may still show answered
                    // ones until it has taken the update in.
                    let asked = unanswered(task.get("inputRequests"), &answered);
                    if asked.is_empty() {
                        tokio::select! {
                            () = tokio::time::sleep(poll) => continue,
                            () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
                        }
                    }
                    let answers = tokio::select! {
                        answers = ask_caller(&asked, ctx.caller.as_deref()) => answers,
                        () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
                    };
                    let answers = match answers {
                        Ok(answers) => answers,
                        Err(why) => {
                            return Ok(ToolOutcome::error(format!("tool '{tool}' {why}")));
                        }
                    };
                    answered.extend(asked.keys().cloned());
                    let mut update = Map::new();
                    update.insert("taskId".into(), Value::String(id.clone()));
                    update.insert("inputResponses".into(), answers);
                    declare_extension(&mut update);
                    // The caller's answer, as the caller: a server that ties its task to the
                    // caller's identity takes it (the gateway's own would be refused, or
                    // answer in the caller's name).
                    let updated = tokio::select! {
                        updated = self.request_for("tasks/update", Some(Value::Object(update)), polls()) => updated,
                        () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
                    };
                    updated.map_err(|error| self.upstream_error(error))?;
                    continue;
                }
                ("cancelled", _) => {
                    return Err(UpstreamError::Protocol {
                        server: self.server().clone(),
                        code: -32603,
                        message: message
                            .unwrap_or_else(|| "the server cancelled its task".to_owned()),
                        data: None,
                    });
                }
                _ => {}
            }
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = ctx.cancel.cancelled() => return Err(UpstreamError::Cancelled),
            }
        }
    }

    /// `method` (`tasks/get`, `tasks/result`, `tasks/cancel`) for the server's task `id`.
    async fn task_request(
        &self,
        method: &str,
        id: &str,
        dialect: TaskDialect,
        made_for: RequestFor,
    ) -> Result<Value, ClientError> {
        let mut params = Map::new();
        params.insert("taskId".into(), Value::String(id.to_owned()));
        if dialect == TaskDialect::Modern {
            declare_extension(&mut params);
        }
        self.request_for(method, Some(Value::Object(params)), made_for)
            .await
    }

    fn result_outcome(&self, mut result: Value) -> Result<ToolOutcome, UpstreamError> {
        if let Value::Object(map) = &mut result {
            map.remove("resultType");
            if let Some(Value::Object(meta)) = map.get_mut("_meta") {
                meta.remove(switchboard_core::task::RELATED_TASK_META);
            }
        }
        self.outcome(result)
    }
}

/// How often to poll a server's task: what it asks, within [`MIN_POLL`]..[`MAX_POLL`].
fn poll_interval(created: &Value, dialect: TaskDialect) -> Duration {
    let key = match dialect {
        TaskDialect::Legacy => "pollInterval",
        TaskDialect::Modern => "pollIntervalMs",
    };
    created
        .get(key)
        .and_then(Value::as_u64)
        .map_or(Duration::from_millis(500), Duration::from_millis)
        .clamp(MIN_POLL, MAX_POLL)
}

/// Declares the tasks extension in a 2026-07-28 request's `_meta`, so the server may run it
/// as a task and answers the task methods. (What the caller can answer is declared beside it
/// by [`RpcClient::request_with_rounds`].)
fn declare_extension(params: &mut Map<String, Value>) {
    let mut capabilities = Map::new();
    capabilities.insert("extensions".into(), json!({TASKS_EXTENSION: {}}));
    merge_client_capabilities(params, capabilities);
}

/// Adds `capabilities` to what a request's `_meta` already declares of its client.
pub(super) fn merge_client_capabilities(
    params: &mut Map<String, Value>,
    capabilities: Map<String, Value>,
) {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else { return };
    let declared = meta
        .entry(META_CLIENT_CAPABILITIES)
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(declared) = declared {
        declared.extend(capabilities);
    } else {
        *declared = Value::Object(capabilities);
    }
}

/// The questions of a server task's `inputRequests` not in `answered`.
fn unanswered(requests: Option<&Value>, answered: &[String]) -> Map<String, Value> {
    match requests {
        Some(Value::Object(requests)) => requests
            .iter()
            .filter(|(key, _)| !answered.contains(key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect(),
        _ => Map::new(),
    }
}

/// Tells the server to cancel its task when dropped armed (`id` set): the call that followed
/// it ended without the task ending.
struct Abandon<'a> {
    client: &'a RpcClient,
    id: Option<String>,
    dialect: TaskDialect,
    on_behalf: OnBehalf,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut params = Map::new();
        params.insert("taskId".into(), Value::String(id));
        if self.dialect == TaskDialect::Modern {
            declare_extension(&mut params);
        }
        let on_behalf = std::mem::take(&mut self.on_behalf);
        self.client.send_detached("tasks/cancel", params, on_behalf);
    }
}

/// Asks the caller every question of a server task's `inputRequests` at once, and gathers
/// the answers under the server's keys.
async fn ask_caller(
    requests: &Map<String, Value>,
    caller: Option<&dyn CallerChannel>,
) -> Result<Value, String> {
    let Some(caller) = caller else {
        return Err("asked for input, and this client cannot be asked".to_owned());
    };
    let asked = requests.iter().map(|(key, request)| async move {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !caller.supports(method) {
            return Err(format!(
                "asked for input by {method}, which the client did not declare"
            ));
        }
        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        caller
            .request(method, params)
            .await
            .map(|answer| (key.clone(), answer))
            .map_err(|error| {
                format!(
                    "asked for input, and the client answered: {}",
                    error.message
                )
            })
    });
    let answers = futures::future::try_join_all(asked).await?;
    Ok(Value::Object(answers.into_iter().collect()))
}
