//! Tasks of two Hosts (two replicas in one process) sharing a real Redis with
//! `redis_unavailable = "fail_open"`: a task one starts is found on the other; while Redis is
//! down each keeps its tasks to itself — a task is still started, the other does not know it
//! and says so the ordinary way, listing answers with what it holds — and once Redis is back
//! new tasks are shared again.

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
    let provider = Named {
        id: "n",
        tools: &["echo"],
    };
    let host = Host::start(vec![plan(provider, "")], options);
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
