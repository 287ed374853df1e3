//! Tasks on the wire, in both eras.
//!
//! - 2025-11-25 (SEP-1686): the client opts in per call with `params.task` (`{ttl}`), gets
//!   `{task: Task}` at once, and uses `tasks/get`, `tasks/result` (waits for the end; the
//!   task's questions come over its stream), `tasks/list` and `tasks/cancel`; the gateway
//!   announces `notifications/tasks/status`. Any tool may be called as a task.
//! - 2026-07-28 (the tasks extension, SEP-2663): the client declares
//!   `extensions["io.modelcontextprotocol/tasks"]` in its request's capabilities and the
//!   server decides: a tool that declares `execution.taskSupport` runs as a task, answered by
//!   a flat `CreateTaskResult` (`resultType: "task"`); `tasks/get` inlines the result, the
//!   error or the questions (`inputRequests`), answered by `tasks/update`; `tasks/cancel`
//!   acknowledges. `tasks/result` and `tasks/list` are gone, and a client that did not
//!   declare the extension is refused the task methods (-32021).
//!
//! Task state lives behind the [`Backend`]; a task belongs to the agent and session that
//! started it, and is unknown (-32602) to anyone else.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use switchboard_core::task::{
    RELATED_TASK_META, StartedTask, TASKS_EXTENSION, TaskEnd, TaskError, TaskOwner, TaskStatus,
    TaskSupport, TaskView,
};
use switchboard_core::{CallContext, Caller, ToolCall};

use super::dispatch::{Dispatcher, RequestEra};
use super::tool_call::{answer_message, call_answer};
use crate::era::META_CLIENT_CAPABILITIES;
use crate::jsonrpc::{Message, RequestId, RpcError, code, params_meta};

/// The task methods, in either era.
pub const TASK_METHODS: [&str; 5] = [
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
];

/// Whether a modern request's `_meta` declares the tasks extension.
pub fn declares_tasks(params: Option<&Value>) -> bool {
    params_meta(params)
        .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
        .and_then(|capabilities| capabilities.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some()
}

/// The -32021 error of a modern request that needs the tasks extension.
fn extension_required(what: &str) -> RpcError {
    RpcError {
        code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!("{what} needs the client capability extensions[\"{TASKS_EXTENSION}\"]"),
        data: Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})),
    }
}

impl Dispatcher {
    /// A `tools/call` that is to run as a task: answered here with the created task, or
    /// handed back (`Err`) to run as an ordinary call.
    pub(super) async fn task_call(
        &self,
        id: RequestId,
        params: Option<Value>,
        mut ctx: CallContext,
        era: RequestEra,
    ) -> Result<Message, (RequestId, Option<Value>, CallContext)> {
        if !self.backend.runs_tasks() {
            return Err((id, params, ctx));
        }
        let name = params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let ttl = match era {
            RequestEra::Legacy => {
                let Some(task) = params.as_ref().and_then(|p| p.get("task")) else {
                    return Err((id, params, ctx));
                };
                match requested_ttl(task) {
                    Ok(ttl) => ttl,
                    Err(problem) => {
                        return Ok(Message::error(Some(id), code::INVALID_PARAMS, problem));
                    }
                }
            }
            RequestEra::Modern => {
                // Whether the tool runs as a task is in its listing: wait for start-up as a
                // listing does, so an early call is not run synchronously by mistake.
                self.backend.settled().await;
                let declared = declares_tasks(params.as_ref());
                // The usual call: no task asked for and none required — decided from the
                // catalog alone, before any view is computed.
                if !declared && !self.backend.may_require_task(&name) {
                    return Err((id, params, ctx));
                }
                self.fill_caller(&mut ctx);
                let support = self.backend.task_support(&Caller::of(&ctx), &name);
                match support {
                    Some(TaskSupport::Required) if !declared => {
                        return Ok(Message::Error {
                            id: Some(id),
                            error: extension_required(&format!("the tool '{name}'")),
                        });
                    }
                    Some(TaskSupport::Optional | TaskSupport::Required) if declared => None,
                    _ => return Err((id, params, ctx)),
                }
            }
        };
        let Some(Value::Object(mut fields)) = params else {
            return Err((id, params, ctx));
        };
        let arguments = match fields.remove("arguments") {
            Some(Value::Object(arguments)) => arguments,
            None | Some(Value::Null) => Map::new(),
            Some(_) => {
                return Ok(Message::error(
                    Some(id),
                    code::INVALID_PARAMS,
                    "tools/call: 'arguments' must be an object",
                ));
            }
        };
        self.fill_caller(&mut ctx);
        if era == RequestEra::Modern {
            ctx.modern = Some(super::tool_call::modern_request(Some(&Value::Object(
                fields.clone(),
            ))));
            if self.backend.relays_tasks(&name) {
                // The server decides; the gateway's task follows the server's once it exists.
                let started = self
                    .backend
                    .start_relayed_task(ctx, ToolCall::new(name, arguments), ttl)
                    .await;
                return Ok(match started {
                    Ok(StartedTask::Task(view)) => Message::Response {
                        id,
                        result: created(&view, era),
                    },
                    Ok(StartedTask::Answered(answer)) => {
                        answer_message(id, call_answer(answer), era)
                    }
                    Err(error) => Message::Error {
                        id: Some(id),
                        error: rpc_error(error),
                    },
                });
            }
        }
        let started = self
            .backend
            .start_task(ctx, ToolCall::new(name, arguments), ttl)
            .await;
        Ok(match started {
            Ok(view) => Message::Response {
                id,
                result: created(&view, era),
            },
            Err(TaskError::UnknownTool(name)) => Message::error(
                Some(id),
                code::INVALID_PARAMS,
                format!("Unknown tool: {name}"),
            ),
            Err(error) => Message::Error {
                id: Some(id),
                error: rpc_error(error),
            },
        })
    }

    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, `tasks/update`.
    pub(super) async fn task_method(
        &self,
        method: &str,
        params: Option<&Value>,
        mut ctx: CallContext,
        era: RequestEra,
    ) -> Result<Value, RpcError> {
        let not_found = || {
            RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )
        };
        if !self.backend.runs_tasks() {
            return Err(not_found());
        }
        if era == RequestEra::Modern {
            if matches!(method, "tasks/result" | "tasks/list") {
                return Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!(
                        "Method not found: {method} is not part of the 2026-07-28 tasks extension (tasks/get inlines the result)"
                    ),
                ));
            }
            if !declares_tasks(params) {
                return Err(extension_required(method));
            }
        } else if method == "tasks/update" {
            return Err(not_found());
        }
        // The owner of the tasks this request asks about: agent, session and subject, as the
        // dispatcher knows them where the request does not say.
        self.fill_caller(&mut ctx);
        let owner = TaskOwner::of(&ctx);
        if method == "tasks/list" {
            let tasks: Vec<Value> = self
                .backend
                .list_tasks(&owner)
                .await
                .map_err(rpc_error)?
                .iter()
                .map(|view| Value::Object(fields(view, era)))
                .collect();
            return Ok(json!({"tasks": tasks}));
        }
        let id = params
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::new(code::INVALID_PARAMS, "params.taskId must be a string"))?
            .to_owned();
        match (method, era) {
            ("tasks/get", _) => {
                let modern = era == RequestEra::Modern;
                let view = self
                    .backend
                    .task(&owner, &id, modern)
                    .await
                    .map_err(rpc_error)?;
                Ok(match era {
                    RequestEra::Legacy => Value::Object(fields(&view, era)),
                    RequestEra::Modern => detailed(&view),
                })
            }
            ("tasks/result", _) => {
                let view = self.backend.task_result(ctx, id).await.map_err(rpc_error)?;
                legacy_result(&view)
            }
            ("tasks/cancel", RequestEra::Legacy) => {
                // A task that already ended is an error in this era.
                let view = self
                    .backend
                    .cancel_task(&owner, &id)
                    .await
                    .map_err(rpc_error)?;
                Ok(Value::Object(fields(&view, era)))
            }
            ("tasks/cancel", RequestEra::Modern) => {
                // The same acknowledgement for a task that already ended.
                match self.backend.cancel_task(&owner, &id).await {
                    Ok(_) | Err(TaskError::Terminal(..)) => Ok(json!({})),
                    Err(error) => Err(rpc_error(error)),
                }
            }
            ("tasks/update", _) => {
                let responses = match params.and_then(|p| p.get("inputResponses")) {
                    Some(Value::Object(responses)) => responses.clone(),
                    _ => {
                        return Err(RpcError::new(
                            code::INVALID_PARAMS,
                            "tasks/update: params.inputResponses must be an object",
                        ));
                    }
                };
                self.backend
                    .update_task(&owner, &id, responses)
                    .await
                    .map_err(rpc_error)?;
                Ok(json!({}))
            }
            _ => Err(not_found()),
        }
    }
}

/// The TTL a 2025-11-25 `params.task` asks for: `None` for none; a `task` that is not an
/// object, or a `ttl` that is not a whole number of milliseconds, is refused.
fn requested_ttl(task: &Value) -> Result<Option<Duration>, String> {
    let Value::Object(task) = task else {
        return Err(
            "tools/call: params.task must be an object ({\"ttl\": MILLISECONDS})".to_owned(),
        );
    };
    match task.get("ttl") {
        None | Some(Value::Null) => Ok(None),
        Some(ttl) => ttl
            .as_u64()
            .map(|ms| Some(Duration::from_millis(ms)))
            .ok_or_else(|| {
                format!("tools/call: params.task.ttl must be a whole number of milliseconds, found {ttl}")
            }),
    }
}

/// The JSON-RPC error of a task that cannot be reached or started.
fn rpc_error(error: TaskError) -> RpcError {
    match error {
        TaskError::Upstream {
            code,
            message,
            data,
        } => RpcError {
            code,
            message,
            data,
        },
        TaskError::TooMany(_)
        | TaskError::AgentFull { .. }
        | TaskError::Full(_)
        | TaskError::Unavailable(_) => RpcError::new(code::INTERNAL_ERROR, error.to_string()),
        other => RpcError::new(code::INVALID_PARAMS, other.to_string()),
    }
}

fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// A task's fields in an era's spelling (`ttl`/`pollInterval` before 2026-07-28,
/// `ttlMs`/`pollIntervalMs` after).
fn fields(view: &TaskView, era: RequestEra) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("taskId".into(), json!(view.id));
    fields.insert("status".into(), json!(view.status.as_str()));
    if let Some(message) = &view.status_message {
        fields.insert("statusMessage".into(), json!(message));
    }
    fields.insert("createdAt".into(), json!(timestamp(view.created_at)));
    fields.insert("lastUpdatedAt".into(), json!(timestamp(view.updated_at)));
    let ttl = view.ttl.map(|ttl| json!(ttl.as_millis() as u64));
    let poll = json!(view.poll_interval.as_millis() as u64);
    let (ttl_key, poll_key) = match era {
        RequestEra::Legacy => ("ttl", "pollInterval"),
        RequestEra::Modern => ("ttlMs", "pollIntervalMs"),
    };
    fields.insert(ttl_key.into(), ttl.unwrap_or(Value::Null));
    fields.insert(poll_key.into(), poll);
    fields
}

/// The answer to a `tools/call` that started a task.
pub fn created(view: &TaskView, era: RequestEra) -> Value {
    match era {
        RequestEra::Legacy => json!({"task": fields(view, era)}),
        RequestEra::Modern => {
            let mut fields = fields(view, era);
            fields.insert("resultType".into(), json!("task"));
            Value::Object(fields)
        }
    }
}

/// A 2026-07-28 `tasks/get` answer: the task with its result, error or questions inlined.
fn detailed(view: &TaskView) -> Value {
    let mut fields = fields(view, RequestEra::Modern);
    fields.insert("resultType".into(), json!("complete"));
    match &view.end {
        Some(TaskEnd::Completed(result)) => {
            fields.insert("result".into(), result.clone());
        }
        Some(TaskEnd::Failed {
            code,
            message,
            data,
        }) => {
            let mut error = json!({"code": code, "message": message});
            if let Some(data) = data {
                error["data"] = data.clone();
            }
            fields.insert("error".into(), error);
        }
        None if view.status == TaskStatus::InputRequired && !view.input_requests.is_empty() => {
            fields.insert(
                "inputRequests".into(),
                Value::Object(view.input_requests.clone()),
            );
        }
        None => {}
    }
    Value::Object(fields)
}

/// A 2025-11-25 `tasks/result` answer: the call's own result, tied to the task, or its error.
fn legacy_result(view: &TaskView) -> Result<Value, RpcError> {
    match &view.end {
        Some(TaskEnd::Completed(result)) => {
            let mut result = result.clone();
            if let Value::Object(map) = &mut result {
                let meta = map
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(RELATED_TASK_META.into(), json!({"taskId": view.id}));
                }
            }
            Ok(result)
        }
        Some(TaskEnd::Failed {
            code,
            message,
            data,
        }) => Err(RpcError {
            code: *code,
            message: message.clone(),
            data: data.clone(),
        }),
        None => Err(RpcError {
            code: code::INTERNAL_ERROR,
            message: format!("task '{}' was {}", view.id, view.status.as_str()),
            data: Some(json!({RELATED_TASK_META: {"taskId": view.id}})),
        }),
    }
}

/// `notifications/tasks/status`, with the field names of the client's era.
pub fn status_notification(view: &TaskView, era: RequestEra) -> Message {
    Message::notification(
        "notifications/tasks/status",
        Value::Object(fields(view, era)),
    )
}

/// The `notifications/tasks/status` of the tasks one client owns (its agent and session),
/// for a front that keeps a stream to that client (a stdio connection, a legacy HTTP
/// session's GET stream), in the era `era` says the client speaks when each is sent. Ends
/// when the backend is gone.
pub fn status_notifications(
    events: tokio::sync::broadcast::Receiver<(TaskOwner, TaskView)>,
    owner: TaskOwner,
    era: impl Fn() -> RequestEra + Send + Sync + 'static,
) -> impl futures::Stream<Item = Message> + Send + 'static {
    use tokio::sync::broadcast::error::RecvError;
    futures::stream::unfold(
        (events, owner, era),
        |(mut events, owner, era)| async move {
            loop {
                match events.recv().await {
                    Ok((of, view)) if of == owner => {
                        let notification = status_notification(&view, era());
                        return Some((notification, (events, owner, era)));
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use switchboard_core::task::TaskStatus;

    use super::*;

    #[test]
    fn a_status_notification_speaks_the_clients_era() {
        let view = TaskView {
            id: "t1".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: SystemTime::UNIX_EPOCH,
            updated_at: SystemTime::UNIX_EPOCH,
            ttl: Some(Duration::from_secs(60)),
            poll_interval: Duration::from_millis(500),
            end: None,
            input_requests: Map::new(),
        };
        let params = |era| match status_notification(&view, era) {
            Message::Notification { params, .. } => params.unwrap_or_default(),
            _ => Value::Null,
        };
        let legacy = params(RequestEra::Legacy);
        assert_eq!(
            (&legacy["ttl"], &legacy["pollInterval"]),
            (&json!(60000), &json!(500))
        );
        let modern = params(RequestEra::Modern);
        assert_eq!(
            (&modern["ttlMs"], &modern["pollIntervalMs"]),
            (&json!(60000), &json!(500))
        );
        assert!(modern.get("pollInterval").is_none(), "{modern}");
    }
}
