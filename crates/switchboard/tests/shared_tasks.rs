//! Tasks of two Hosts (two replicas in one process) sharing a real Redis with
//! `redis_unavailable = "fail_open"`: a task one starts is found on the other; while Redis is
//! down each keeps its tasks to itself — a task is still started, the other does not know it
//! and says so the ordinary way, listing answers with what it holds — and once Redis is back
//! new tasks are shared again. A task working while Redis restarts empty is written again
//! by its replica once it has subscribed again, and is never taken for one whose replica is
//! gone.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Map;
use support::{Named, plan};
use switchboard::shared::{EventBus, SharedTasks};
use switchboard::{Host, HostOptions};
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::task::{TaskError, TaskOwner, TaskStatus};
use switchboard_core::{CallContext, ToolCall};
use switchboard_testkit::redis::Redis;

/// A Host on `redis` (fail open) serving `n__echo`, once its bus is subscribed.
async fn replica(redis: &Redis) -> Host {
    let provider = Named {
        id: "n",
        tools: &["echo"],
    };
    replica_serving(redis, vec![plan(provider, "")]).await
}

/// A Host on `redis` (fail open) serving `servers`, once its bus is subscribed.
async fn replica_serving(redis: &Redis, servers: Vec<switchboard::ServerPlan>) -> Host {
    let bus = EventBus::connect(&redis.url(), "t").expect("bus");
    while bus.epoch() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tasks = SharedTasks::connect(&redis.url(), "t", WhenUnreachable::FailOpen, bus.clone())
        .expect("tasks");
    let options = HostOptions {
        events: Some(bus),
        shared_tasks: Some(Arc::new(tasks)),
        ..HostOptions::default()
    };
    let host = Host::start(servers, options);
    host.ready().await;
    host
}

fn echo() -> ToolCall {
    ToolCall::new("n__echo", Map::new())
}

/// Polls `other` (5 s at most) until it finds the owner's task `id` ended.
async fn ended_on(other: &Host, owner: &TaskOwner, id: &str) {
    let started = Instant::now();
    loop {
        let found = other.find_task(owner, id, true).await;
        if found
            .as_ref()
            .is_ok_and(|view| view.status == TaskStatus::Completed)
        {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{found:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn with_redis_down_fail_open_keeps_each_replicas_tasks_to_itself() {
    let mut redis = Redis::start();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    let ctx = CallContext::default().with_agent("voice");
    let owner = TaskOwner::of(&ctx);
    let shared = a.start_task(ctx.clone(), echo(), None).await.expect("task");
    ended_on(&b, &owner, &shared.id).await;

    redis.stop();
    let alone = a
        .start_task(ctx.clone(), echo(), None)
        .await
        .expect("started anyway (fail_open)");
    assert_eq!(
        b.find_task(&owner, &alone.id, false).await,
        Err(TaskError::UnknownTask(alone.id.clone()))
    );
    assert!(a.find_task(&owner, &alone.id, false).await.is_ok());
    assert_eq!(b.list_all_tasks(&owner).await, Ok(Vec::new()));

    redis.restart();
    let started = Instant::now();
    loop {
        let again = a.start_task(ctx.clone(), echo(), None).await.expect("task");
        let found = b.find_task(&owner, &again.id, true).await;
        if found.is_ok() {
            ended_on(&b, &owner, &again.id).await;
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `g__wait`: answers once the test opens the gate.
struct Gate(Arc<tokio::sync::Notify>);

impl switchboard_core::upstream::ToolProvider for Gate {
    fn name(&self) -> &str {
        "g"
    }

    fn tools(&self) -> Vec<switchboard_core::ToolDefinition> {
        vec![switchboard_core::ToolDefinition::new(
            "wait",
            "Answers once the gate opens",
            serde_json::json!({"type": "object"}),
        )]
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: Map<String, serde_json::Value>,
        _ctx: &'a CallContext,
    ) -> futures::future::BoxFuture<
        'a,
        Result<switchboard_core::ToolOutcome, switchboard_core::upstream::ToolError>,
    > {
        Box::pin(async move {
            self.0.notified().await;
            Ok(switchboard_core::ToolOutcome::text("opened"))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_working_through_a_redis_restart_is_written_again_and_never_taken_for_gone() {
    working_through_a_redis_restart(false).await;
}

/// The same while A's other tasks change all the time (a task started every 50 ms): the
/// rewrite after subscribing again is not put off by them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_working_through_a_redis_restart_is_written_again_among_busy_tasks() {
    working_through_a_redis_restart(true).await;
}

async fn working_through_a_redis_restart(busy: bool) {
    let mut redis = Redis::start();
    let gate = Arc::new(tokio::sync::Notify::new());
    let echo_server = plan(
        Named {
            id: "n",
            tools: &["echo"],
        },
        "",
    );
    let gated = support::plan_of("g", Arc::new(Gate(gate.clone())));
    let a = replica_serving(&redis, vec![gated, echo_server]).await;
    let b = replica(&redis).await;
    let ctx = CallContext::default().with_agent("voice");
    let owner = TaskOwner::of(&ctx);
    let call = ToolCall::new("g__wait", Map::new());
    let task = a.start_task(ctx.clone(), call, None).await.expect("task");
    let seen = b.find_task(&owner, &task.id, false).await.expect("found");
    assert_eq!(seen.status, TaskStatus::Working);
    let chatter = busy.then(|| {
        let (a, ctx) = (a.clone(), ctx.clone());
        tokio::spawn(async move {
            loop {
                let _ = a.start_task(ctx.clone(), echo(), None).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    });

    // Redis restarts with nothing: the record is gone until A, subscribed again, writes it.
    redis.restart();
    let started = Instant::now();
    loop {
        match b.find_task(&owner, &task.id, false).await {
            Ok(view) if view.status == TaskStatus::Working => break,
            Ok(view) => panic!("{:?} after the restart: {view:?}", started.elapsed()),
            Err(error) => assert!(
                started.elapsed() < Duration::from_secs(5),
                "not found again within 5 s: {error}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!(
        "the task was found again {:?} after Redis restarted",
        started.elapsed()
    );
    // It goes on to its end, seen on B.
    for _ in 0..20 {
        let view = b.find_task(&owner, &task.id, false).await.expect("found");
        assert_eq!(view.status, TaskStatus::Working, "{view:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gate.notify_one();
    ended_on(&b, &owner, &task.id).await;
    if let Some(chatter) = chatter {
        chatter.abort();
    }
}
