//! Tasks from the library: an embedding agent fires a slow tool with `Host::start_task`, goes
//! on, and picks the result up with `task_result`; a task is its owner's alone; cancelling it
//! cancels the tool's call; a question the tool asks parks the task `input_required` until
//! `update_task` answers it; an unknown tool and a full caller are refused before any task.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use support::plan_of;
use switchboard::tasks::TaskSettings;
use switchboard::{Host, HostOptions};
use switchboard_core::task::{TaskEnd, TaskError, TaskOwner, TaskStatus};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{
    CallContext, CallerChannel, CallerError, ToolCall, ToolDefinition, ToolOutcome,
};

/// `slow` waits `ms` (or until cancelled, which it notes); `ask` asks its caller a question
/// by elicitation and answers with what it was told.
struct Slow {
    started: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
}

impl ToolProvider for Slow {
    fn name(&self) -> &str {
        "s"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        ["slow", "ask"]
            .iter()
            .map(|tool| ToolDefinition::new(*tool, "d", json!({"type": "object"})))
            .collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            if tool == "ask" {
                let Some(caller) = &ctx.caller else {
                    return Ok(ToolOutcome::error("nobody to ask"));
                };
                let answer = caller
                    .request("elicitation/create", json!({"message": "Which one?"}))
                    .await
                    .map_err(|error| ToolError::new(error.message))?;
                return Ok(ToolOutcome::text(format!(
                    "told {}",
                    answer["content"]["pick"]
                )));
            }
            let ms = arguments.get("ms").and_then(Value::as_u64).unwrap_or(0);
            self.started.store(true, Ordering::SeqCst);
            // Cancelled either way: told by the token, or dropped by the pipeline.
            let mut unfinished = Unfinished(Some(self.cancelled.clone()));
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {
                    unfinished.0 = None;
                    Ok(ToolOutcome::text(format!("slept {ms} ms")))
                }
                () = ctx.cancel.cancelled() => Err(ToolError::new("cancelled")),
            }
        })
    }
}

/// Sets its flag when dropped before the call finished.
struct Unfinished(Option<Arc<AtomicBool>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// A Host serving [`Slow`], with the flags that say the slow tool started and was cancelled.
async fn host(max_per_caller: usize) -> (Host, [Arc<AtomicBool>; 2]) {
    let started = Arc::new(AtomicBool::new(false));
    let cancelled = Arc::new(AtomicBool::new(false));
    let provider = Slow {
        started: started.clone(),
        cancelled: cancelled.clone(),
    };
    let options = HostOptions {
        agents: BTreeMap::new(),
        tasks: TaskSettings {
            max_per_caller,
            ..TaskSettings::default()
        },
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan_of("s", Arc::new(provider))], options);
    host.ready().await;
    (host, [started, cancelled])
}

/// Waits (at most 5 s) until `flag` is set.
async fn until(flag: &AtomicBool, what: &str) {
    let set = async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), set)
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

fn voice() -> CallContext {
    CallContext::default().with_agent("voice")
}

fn wait(ms: u64) -> ToolCall {
    let arguments = json!({"ms": ms}).as_object().cloned().unwrap_or_default();
    ToolCall::new("s__slow", arguments)
}

#[tokio::test]
async fn a_slow_tool_runs_as_a_task_its_owner_picks_up() {
    let (host, _) = host(10).await;
    let ctx = voice();
    let started = std::time::Instant::now();
    let task = host
        .start_task(ctx.clone(), wait(300), None)
        .await
        .expect("task");
    assert!(started.elapsed() < Duration::from_millis(200), "at once");
    assert_eq!(task.status, TaskStatus::Working);
    let owner = TaskOwner::of(&ctx);
    assert_eq!(host.list_tasks(&owner).len(), 1);
    // Another agent: no such task.
    let other = TaskOwner::of(&CallContext::default().with_agent("other"));
    assert_eq!(
        host.task_status(&other, &task.id),
        Err(TaskError::UnknownTask(task.id.clone()))
    );
    assert!(host.list_tasks(&other).is_empty());
    let done = host.task_result(&ctx, &task.id).await.expect("result");
    assert_eq!(done.status, TaskStatus::Completed);
    let Some(TaskEnd::Completed(result)) = done.end else {
        panic!("completed with a result: {done:?}");
    };
    assert_eq!(result["content"][0]["text"], "slept 300 ms");
}

#[tokio::test]
async fn cancelling_a_task_cancels_its_call() {
    let (host, [started, cancelled]) = host(10).await;
    let ctx = voice();
    let task = host
        .start_task(ctx.clone(), wait(30_000), None)
        .await
        .expect("task");
    until(&started, "the tool's call started").await;
    let owner = TaskOwner::of(&ctx);
    let view = host.cancel_task(&owner, &task.id).expect("cancel");
    assert_eq!(view.status, TaskStatus::Cancelled);
    until(&cancelled, "the tool saw the cancellation").await;
    assert_eq!(
        host.task_status(&owner, &task.id).expect("task").status,
        TaskStatus::Cancelled
    );
}

/// A caller that says it can answer elicitations (its questions go to the task instead).
#[derive(Debug)]
struct CanElicit;

impl CallerChannel for CanElicit {
    fn supports(&self, method: &str) -> bool {
        method == "elicitation/create"
    }

    fn request(&self, _method: &str, _params: Value) -> BoxFuture<'_, Result<Value, CallerError>> {
        Box::pin(async {
            Err(CallerError {
                code: -32603,
                message: "a task's questions never come here".into(),
                data: None,
            })
        })
    }

    fn notify(&self, _method: &str, _params: Value) {}
}

#[tokio::test]
async fn a_question_parks_the_task_until_it_is_answered() {
    let (host, _) = host(10).await;
    let ctx = CallContext {
        caller: Some(Arc::new(CanElicit)),
        ..voice()
    };
    let task = host
        .start_task(ctx.clone(), ToolCall::new("s__ask", Map::new()), None)
        .await
        .expect("task");
    let owner = TaskOwner::of(&ctx);
    let asked = async {
        loop {
            let view = host.task_status(&owner, &task.id).expect("task");
            if view.status == TaskStatus::InputRequired {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let view = tokio::time::timeout(Duration::from_secs(5), asked)
        .await
        .expect("input_required");
    let (key, question) = view.input_requests.iter().next().expect("a question");
    assert_eq!(question["method"], "elicitation/create");
    let mut answers = Map::new();
    answers.insert(
        key.clone(),
        json!({"action": "accept", "content": {"pick": "b"}}),
    );
    host.update_task(&owner, &task.id, &answers)
        .expect("update");
    let done = host.task_result(&ctx, &task.id).await.expect("result");
    let Some(TaskEnd::Completed(result)) = done.end else {
        panic!("completed: {done:?}");
    };
    assert_eq!(result["content"][0]["text"], "told \"b\"");
}

#[tokio::test]
async fn unknown_tools_and_full_callers_get_no_task() {
    let (host, _) = host(1).await;
    let ctx = voice();
    assert_eq!(
        host.start_task(ctx.clone(), ToolCall::new("s__nope", Map::new()), None)
            .await
            .err(),
        Some(TaskError::UnknownTool("s__nope".into()))
    );
    host.start_task(ctx.clone(), wait(30_000), None)
        .await
        .expect("the first task");
    assert_eq!(
        host.start_task(ctx.clone(), wait(10), None).await.err(),
        Some(TaskError::TooMany(1))
    );
    // Another caller has room of its own.
    host.start_task(CallContext::default().with_agent("other"), wait(10), None)
        .await
        .expect("another caller's task");
}

/// A finished task makes room only once its result was fetched: a summary (a 2025-11-25
/// `tasks/get`) leaves it to be fetched, a full look (a 2026-07-28 `tasks/get`) fetches it.
#[tokio::test]
async fn a_result_not_yet_fetched_is_kept_when_the_caller_is_full() {
    let (host, _) = host(1).await;
    let ctx = voice();
    let owner = TaskOwner::of(&ctx);
    let task = host
        .start_task(ctx.clone(), wait(0), None)
        .await
        .expect("task");
    let ended = async {
        while !host
            .task_summary(&owner, &task.id)
            .expect("task")
            .status
            .is_terminal()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), ended)
        .await
        .expect("the task ended");
    assert_eq!(
        host.start_task(ctx.clone(), wait(0), None).await.err(),
        Some(TaskError::TooMany(1)),
        "its result is still to be fetched"
    );
    assert!(
        host.task_status(&owner, &task.id)
            .expect("task")
            .end
            .is_some()
    );
    host.start_task(ctx.clone(), wait(0), None)
        .await
        .expect("room once fetched");
}
