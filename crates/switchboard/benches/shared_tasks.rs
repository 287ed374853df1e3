//! What `[shared] redis` adds to MCP tasks: the owner's write of a task's state (one script:
//! the record, the caller's set, the event; done at creation before the client is answered,
//! and in the background at every later change), and another replica's `tasks/get` of it
//! (one script that also checks that the owner lives) and `tasks/list` of ten — with a real
//! Redis on a unix socket (switchboard-testkit), on one current-thread runtime, so the time
//! is the round trip and the scripts.

use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Map;
use switchboard::shared::{EventBus, SharedTasks};
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::task::{TaskOwner, TaskStatus, TaskView};
use switchboard_testkit::redis::Redis;

fn view(id: String) -> TaskView {
    let now = SystemTime::now();
    TaskView {
        id,
        status: TaskStatus::Working,
        status_message: None,
        created_at: now,
        updated_at: now,
        ttl: Some(Duration::from_secs(3600)),
        poll_interval: Duration::from_secs(1),
        end: None,
        input_requests: Map::new(),
    }
}

fn shared_tasks(c: &mut Criterion) {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    let runtime = builder.enable_io().enable_time().build().expect("runtime");
    let redis = Redis::start();
    let replica = |bus: EventBus| {
        SharedTasks::connect(&redis.url(), "bench", WhenUnreachable::FailClosed, bus)
            .expect("tasks")
    };
    let (owner_side, reader) = runtime.block_on(async {
        let (a, b) = (
            EventBus::connect(&redis.url(), "bench").expect("bus"),
            EventBus::connect(&redis.url(), "bench").expect("bus"),
        );
        while a.epoch() == 0 || b.epoch() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        (replica(a), replica(b))
    });
    let owner = TaskOwner {
        agent: Some("bench".to_owned()),
        session: Some("a session id of a typical length".to_owned()),
        subject: None,
    };
    let tasks: Vec<TaskView> = (0..10).map(|n| view(format!("{n:032x}"))).collect();
    runtime.block_on(async {
        for task in &tasks {
            owner_side.write(&owner, "slow", task).await.expect("write");
        }
    });
    c.bench_function("task write, owner", |b| {
        b.iter(|| {
            runtime
                .block_on(owner_side.write(&owner, "slow", &tasks[0]))
                .expect("write")
        });
    });
    c.bench_function("task get, another replica", |b| {
        b.iter(|| {
            runtime
                .block_on(reader.get(&owner, &tasks[0].id))
                .expect("get")
                .expect("found")
        });
    });
    c.bench_function("task list of 10, another replica", |b| {
        b.iter(|| runtime.block_on(reader.list(&owner)).expect("list"));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3));
    targets = shared_tasks
}
criterion_main!(benches);
