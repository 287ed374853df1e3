//! Tasks: calls a client starts now and comes back for (MCP 2025-11-25 tasks, the 2026-07-28
//! tasks extension), and the library's way to fire a slow tool without blocking a turn.
//!
//! A task the gateway runs itself is an ordinary call through the whole pipeline (view,
//! validation, policy, approval, limits, deadline, ledger) on a tokio task of its own, with a
//! [`caller::TaskCaller`] in place of the client: what the upstream or the approver asks
//! mid-call is parked on the task (`input_required`) until the client answers. Cancelling
//! the task cancels the call, which cancels it upstream and is recorded like any cancelled
//! call. Tasks live in memory ([`store`]): a gateway restart loses them, and a client asking
//! for one afterwards is told it does not exist (calls that finished are in the ledger).
//! With `[shared] redis`, every replica can read, await and cancel them ([`shared`]).

mod bounds;
mod caller;
mod mirror;
mod settings;
pub mod shared;
mod store;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_core::pipeline::CallError;
use switchboard_core::task::{
    RELATED_TASK_META, StartedTask, TaskEnd, TaskError, TaskOwner, TaskStatus, TaskSupport,
    TaskView,
};
use switchboard_core::{CallContext, Caller, ProgressSink, ToolCall, ToolOutcome};
use switchboard_mcp::front::Backend;
use tokio::sync::oneshot;

pub use mirror::{Mirror, Mirrored, PendingChange};
pub use settings::TaskSettings;
pub use store::{Task, TaskStore, UpstreamTask};

use crate::Host;
use caller::TaskCaller;
use switchboard_mcp::jsonrpc::{CLIENT_REQUEST_METHODS, client_capability_for};

impl Host {
    /// What the tool `name` declares of tasks, as `caller` may call it; `None` when `caller`
    /// may not call it (unknown, outside its view or its tier: visible = callable).
    pub fn task_support(&self, caller: &Caller, name: &str) -> Option<TaskSupport> {
        let catalog = self.catalog();
        let tier = self.active_tier(caller);
        let view = self.view_at(caller, tier.as_ref());
        catalog
            .resolve(name)
            .filter(|entry| view.contains(entry))
            .map(|entry| TaskSupport::of(&entry.spec.definition))
    }

    /// Starts `call` as a task owned by `ctx`'s caller and returns at once with its id. The
    /// call runs through the pipeline like any other; the client's questions (if `ctx` says
    /// it can be asked) and an operator's approval make the task `input_required` meanwhile.
    /// `ttl`: how long the task is kept (bounded by [`TaskSettings`]).
    pub async fn start_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> Result<TaskView, TaskError> {
        let launched = self.launch(ctx, call, ttl, false).await?;
        Ok(launched.task.view())
    }

    /// Starts `call` for a 2026-07-28 client when the tool's server runs tasks itself: the
    /// server decides. Its first answer may ask the client something (`input_required`,
    /// answered before any task exists) or be the result; once it makes the call a task, the
    /// gateway's task follows that one and is returned.
    pub async fn start_relayed_task(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
    ) -> Result<StartedTask, TaskError> {
        // Until the server creates its task the client waits on this request: its going away
        // cancels the call.
        let request = ctx.cancel.clone();
        let Launched {
            task,
            created,
            answered,
        } = self.launch(ctx, call, ttl, true).await?;
        let Some(mut answered) = answered else {
            return Ok(StartedTask::Task(task.view()));
        };
        let mut created = created;
        let mut created_open = true;
        let mut forwarded = false;
        loop {
            tokio::select! {
                biased;
                answer = &mut answered => {
                    self.inner.tasks.remove(&task.id);
                    return Ok(StartedTask::Answered(answer.unwrap_or(Err(CallError::Cancelled))));
                }
                () = request.cancelled(), if !forwarded => {
                    task.cancel.cancel();
                    forwarded = true;
                }
                made = &mut created, if created_open => {
                    if made.is_err() {
                        // The call ended without a task: its answer is on its way.
                        created_open = false;
                        continue;
                    }
                    // From now on the runner ends the task itself; an answer it already
                    // handed over is taken back here so it is not lost.
                    answered.close();
                    if let Ok(answer) = answered.try_recv() {
                        finish(&task, answer);
                    }
                    if let Err(error) = self.share_new_task(&task).await {
                        cancel(&task, error.to_string()).ok();
                        self.inner.tasks.remove(&task.id);
                        return Err(error);
                    }
                    return Ok(StartedTask::Task(task.view()));
                }
            }
        }
    }

    /// Makes the task and starts its call on a task of its own. `modern`: the call keeps the
    /// client's 2026-07-28 round (its first questions go back as `input_required`).
    async fn launch(
        &self,
        ctx: CallContext,
        call: ToolCall,
        ttl: Option<Duration>,
        modern: bool,
    ) -> Result<Launched, TaskError> {
        self.wait_for_startup().await;
        if self.task_support(&Caller::of(&ctx), &call.name).is_none() {
            return Err(TaskError::UnknownTool(call.name));
        }
        let task = self
            .inner
            .tasks
            .create(TaskOwner::of(&ctx), &call.name, ttl, None)?;
        // Every replica can find the task before its client hears of it (a relayed call's
        // task is shared once the server makes it one).
        if !modern && let Err(error) = self.share_new_task(&task).await {
            // Ended first: a write that lands after the wait gave up is followed by its end,
            // so no other replica finds it working.
            cancel(&task, error.to_string()).ok();
            self.inner.tasks.remove(&task.id);
            return Err(error);
        }
        let (created_tx, created) = oneshot::channel();
        let caller = TaskCaller {
            task: task.clone(),
            supported: answerable(&ctx),
            created: std::sync::Mutex::new(Some(created_tx)),
            modern_client: ctx.modern.is_some(),
        };
        let progress_of = task.clone();
        let run = CallContext {
            agent: ctx.agent,
            principal: ctx.principal,
            session: ctx.session,
            tier: ctx.tier,
            progress: Some(ProgressSink::new(move |progress| {
                if let Some(message) = progress.message {
                    progress_of.note_progress(message);
                }
            })),
            cancel: task.cancel.clone(),
            caller: Some(Arc::new(caller)),
            deadline: ctx.deadline,
            modern: if modern { ctx.modern } else { None },
            trace: ctx.trace,
            telemetry: ctx.telemetry,
        };
        let host = self.clone();
        let runner = task.clone();
        // Whoever starts a relayed call may still take its answer; otherwise (and always for
        // a gateway-run task) the answer ends the task.
        let (answered_tx, answered) = match modern {
            true => {
                let (sender, receiver) = oneshot::channel();
                (Some(sender), Some(receiver))
            }
            false => (None, None),
        };
        tokio::spawn(async move {
            let answer = run_bounded(&host, &runner, run, call).await;
            let unclaimed = match answered_tx {
                Some(answered) => answered.send(answer).err(),
                None => Some(answer),
            };
            if let Some(answer) = unclaimed {
                finish(&runner, answer);
            }
        });
        Ok(Launched {
            task,
            created,
            answered,
        })
    }

    /// Whether the tool `name` belongs to a server that runs tasks itself (its call is then
    /// relayed as the server's own task).
    pub fn relays_tasks(&self, name: &str) -> bool {
        let catalog = self.catalog();
        let Some(entry) = catalog.resolve(name) else {
            return false;
        };
        let fleet = self.inner.fleet.load();
        fleet.find(&entry.spec.server).is_some_and(|member| {
            let status = member.supervisor().status();
            status.era.as_ref().is_some_and(|era| {
                switchboard_mcp::upstream::tasks::dialect_of(era, &status.capabilities).is_some()
            })
        })
    }

    /// The caller's task `id` as it stands — with its result once it ended, which then
    /// counts as fetched (the task may make room for a new one).
    pub fn task_status(&self, owner: &TaskOwner, id: &str) -> Result<TaskView, TaskError> {
        let task = self.owned_task(owner, id)?;
        let view = task.view();
        if view.status.is_terminal() {
            task.mark_fetched();
        }
        Ok(view)
    }

    /// The caller's task `id` without its result or questions (which it leaves unfetched).
    pub fn task_summary(&self, owner: &TaskOwner, id: &str) -> Result<TaskView, TaskError> {
        Ok(self.owned_task(owner, id)?.summary())
    }

    /// Waits until the caller's task `id` has ended and returns it. While it waits, the
    /// task's questions go to `ctx`'s caller when it can answer them (the 2025-11-25 era
    /// asks over the stream of `tasks/result`), each tagged with the task.
    pub async fn task_result(&self, ctx: &CallContext, id: &str) -> Result<TaskView, TaskError> {
        let task = self.owned_task(&TaskOwner::of(ctx), id)?;
        let mut changes = task.watch();
        let mut relayed: Vec<String> = Vec::new();
        let mut answers = futures::stream::FuturesUnordered::new();
        loop {
            let view = task.view();
            if view.status.is_terminal() {
                task.mark_fetched();
                return Ok(view);
            }
            if let Some(channel) = &ctx.caller {
                for (key, request) in task.open_questions() {
                    let (method, params) = tagged(&request, &task.id);
                    if relayed.contains(&key) || !channel.supports(&method) {
                        continue;
                    }
                    relayed.push(key.clone());
                    let channel = channel.clone();
                    answers.push(async move { (key, channel.request(&method, params).await) });
                }
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(task.view());
                    }
                }
                Some((key, answer)) = futures::StreamExt::next(&mut answers) => {
                    task.reply_to(&key, answer);
                }
                () = ctx.cancel.cancelled() => return Ok(task.view()),
            }
        }
    }

    /// Hands the client's answers to the caller's task `id` (2026-07-28 `tasks/update`).
    pub fn update_task(
        &self,
        owner: &TaskOwner,
        id: &str,
        responses: &Map<String, Value>,
    ) -> Result<(), TaskError> {
        self.owned_task(owner, id)?.answer(responses);
        Ok(())
    }

    /// Cancels the caller's task `id`: its call is cancelled (upstream too) and the task says
    /// `cancelled` at once. A task that already ended is left as it was:
    /// [`TaskError::Terminal`].
    pub fn cancel_task(&self, owner: &TaskOwner, id: &str) -> Result<TaskView, TaskError> {
        let task = self.owned_task(owner, id)?;
        cancel(&task, "cancelled by the client".to_owned())
    }

    /// Every task the gateway holds, newest first, with its owner and tool: what an
    /// operator sees (the console), whoever started them.
    pub fn operator_tasks(&self) -> Vec<(TaskOwner, String, TaskView)> {
        self.inner
            .tasks
            .all()
            .iter()
            .map(|task| (task.owner.clone(), task.tool.clone(), task.summary()))
            .collect()
    }

    /// An operator cancels a task, whoever started it: its call is cancelled upstream and the
    /// task ends `cancelled`, saying by whom.
    pub fn cancel_task_as_operator(&self, id: &str, by: &str) -> Result<TaskView, TaskError> {
        let task = self
            .inner
            .tasks
            .get_any(id)
            .ok_or_else(|| TaskError::UnknownTask(id.to_owned()))?;
        cancel(&task, format!("cancelled by an operator ({by})"))
    }

    /// The caller's tasks, newest first.
    pub fn list_tasks(&self, owner: &TaskOwner) -> Vec<TaskView> {
        self.inner
            .tasks
            .list(owner)
            .iter()
            .map(|task| task.summary())
            .collect()
    }

    /// The task store (for fronts that announce status changes, and for tests).
    pub fn tasks(&self) -> &TaskStore {
        &self.inner.tasks
    }

    fn owned_task(&self, owner: &TaskOwner, id: &str) -> Result<Arc<Task>, TaskError> {
        self.inner
            .tasks
            .get(owner, id)
            .ok_or_else(|| TaskError::UnknownTask(id.to_owned()))
    }
}

/// Ends a task `cancelled` with `message` and cancels its call; an error for a task that
/// has already ended.
fn cancel(task: &Task, message: String) -> Result<TaskView, TaskError> {
    if !task.finish(None, TaskStatus::Cancelled, Some(message)) {
        return Err(TaskError::Terminal(
            task.id.clone(),
            task.summary().status.as_str(),
        ));
    }
    task.cancel.cancel();
    Ok(task.summary())
}

/// Runs a task's call: cancelled once the task's TTL has passed (and still awaited, so the
/// pipeline records it), and a panic in it fails the task instead of leaving it working.
async fn run_bounded(
    host: &Host,
    task: &Task,
    ctx: CallContext,
    call: ToolCall,
) -> Result<ToolOutcome, CallError> {
    use futures::FutureExt;
    let call = std::panic::AssertUnwindSafe(Backend::call_tool(host, ctx, call)).catch_unwind();
    tokio::pin!(call);
    let ttl = task
        .ttl()
        .unwrap_or(switchboard_core::task::TASK_CALL_LIMIT);
    let answer = tokio::select! {
        answer = &mut call => answer,
        () = tokio::time::sleep(ttl) => {
            task.cancel.cancel();
            call.await
        }
    };
    answer.unwrap_or_else(|_| {
        Err(CallError::Upstream {
            code: -32603,
            message: "the task's call failed inside the gateway (a panic; see its log)".to_owned(),
            data: None,
        })
    })
}

/// A task whose call has started: told when the server makes it a task of its own, and
/// handed the call's answer unless the task's runner keeps it.
struct Launched {
    task: Arc<Task>,
    created: oneshot::Receiver<()>,
    /// Set for a relayed call (see [`Host::start_relayed_task`]).
    answered: Option<oneshot::Receiver<Result<ToolOutcome, CallError>>>,
}

/// The input methods the caller behind `ctx` can answer: what a modern request declared in
/// its `_meta`, or what the legacy client's channel supports.
fn answerable(ctx: &CallContext) -> Vec<&'static str> {
    CLIENT_REQUEST_METHODS
        .into_iter()
        .filter(|method| match (&ctx.modern, &ctx.caller) {
            (Some(modern), _) => modern
                .client_capabilities
                .as_ref()
                .zip(client_capability_for(method))
                .is_some_and(|(declared, capability)| declared.get(capability).is_some()),
            (None, Some(channel)) => channel.supports(method),
            (None, None) => false,
        })
        .collect()
}

/// A task's question as its client is asked it: the method, and the params tagged with the
/// task (`_meta`'s related task).
fn tagged(request: &Value, task: &str) -> (String, Value) {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let mut params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    if let Value::Object(params) = &mut params {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(RELATED_TASK_META.into(), json!({"taskId": task}));
        }
    }
    (method.to_owned(), params)
}

/// Records how the task's call ended.
fn finish(task: &Task, answer: Result<ToolOutcome, CallError>) {
    let failed = |code: i64, message: String, data: Option<Value>| {
        (
            Some(TaskEnd::Failed {
                code,
                message: message.clone(),
                data,
            }),
            TaskStatus::Failed,
            Some(message),
        )
    };
    let (end, status, message) = match answer {
        Ok(outcome) => match serde_json::to_value(&outcome) {
            Ok(result) => (
                Some(TaskEnd::Completed(result)),
                TaskStatus::Completed,
                None,
            ),
            Err(error) => failed(-32603, error.to_string(), None),
        },
        Err(CallError::Cancelled) => (None, TaskStatus::Cancelled, None),
        Err(CallError::UnknownTool { name }) => {
            failed(-32602, format!("Unknown tool: {name}"), None)
        }
        Err(CallError::Upstream {
            code,
            message,
            data,
        }) => failed(code, message, data),
        Err(other) => failed(-32603, other.to_string(), None),
    };
    task.finish(end, status, message);
}
