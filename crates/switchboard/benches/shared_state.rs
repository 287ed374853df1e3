//! What `[shared] redis` adds to the requests that consult the state replicas share beside
//! limits: a 2025-era session's request (is the id ended? asked of Redis every time without
//! the event bus; with it, answered from memory once the session was asked about in the
//! bus's current epoch), a `requestState` retry (first use of its nonce?), and a cacheable
//! call answered from the shared result cache — each against the same in this process's
//! memory, with a real Redis on a unix socket (switchboard-testkit), on one current-thread
//! runtime, so the difference is the round trip. And a session's call with its state shared
//! (`shared::sessions`): a `list_categories` call answered by the Host, whose session's copy
//! is current (the bus carries changes) or read from Redis at every request (no bus), against
//! a Host that keeps sessions alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use switchboard::latency::cache::{Reuse, SharedResults};
use switchboard::shared::{EventBus, RedisResults, SharedMarks, SharedSessions};
use switchboard::{Host, HostOptions, MemoryNonces, UsedNonces};
use switchboard_core::config::Exposure;
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::{CallContext, ToolCall, ToolOutcome};
use switchboard_mcp::front::Backend;
use switchboard_mcp::front::http::{EndedSessions, LocalEndedSessions};
use switchboard_testkit::redis::Redis;

fn shared_state(c: &mut Criterion) {
    // The gateway's runtime, as `connection_workers` runs it: one thread, time and I/O.
    let mut builder = tokio::runtime::Builder::new_current_thread();
    let runtime = builder.enable_io().enable_time().build().expect("runtime");
    let redis = Redis::start();
    let (marks, followed, results) = runtime.block_on(async {
        let url = redis.url();
        let marks =
            SharedMarks::connect(&url, "bench", WhenUnreachable::FailClosed, None).expect("marks");
        let bus = EventBus::connect(&url, "bench").expect("bus");
        while bus.epoch() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let followed = SharedMarks::connect(&url, "bench", WhenUnreachable::FailClosed, Some(bus))
            .expect("marks");
        let results = RedisResults::connect(&url, "bench").expect("results");
        (Arc::new(marks), followed, results)
    });
    let now = SystemTime::now();
    let expires = now + Duration::from_secs(3600);
    let local = LocalEndedSessions::default();
    let id = "a session id of a typical length, about one hundred and sixty bytes long";
    c.bench_function("session check, memory", |b| {
        b.iter(|| {
            runtime
                .block_on(local.is_ended(id, expires, now))
                .expect("answer")
        });
    });
    c.bench_function("session check, redis every request", |b| {
        b.iter(|| {
            runtime
                .block_on(marks.is_ended(id, expires, now))
                .expect("answer")
        });
    });
    c.bench_function("session check, redis with the event bus", |b| {
        b.iter(|| {
            runtime
                .block_on(followed.is_ended(id, expires, now))
                .expect("answer")
        });
    });
    // A new nonce each time, at a clock that moves one ms a use, each valid for a second:
    // the memory keeps about a thousand, as a busy replica would.
    let next = AtomicU64::new(0);
    let fresh = |store: &dyn UsedNonces| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let mut nonce = [0u8; 16];
        nonce[..8].copy_from_slice(&n.to_be_bytes());
        runtime.block_on(store.first_use(nonce, n + 1_000, n))
    };
    let memory = MemoryNonces::default();
    c.bench_function("requestState nonce, memory", |b| {
        b.iter(|| fresh(&memory));
    });
    c.bench_function("requestState nonce, redis", |b| {
        b.iter(|| fresh(marks.as_ref()));
    });
    let reuse = Reuse {
        ttl: Duration::from_secs(600),
        wait: Duration::from_secs(1),
    };
    let answer = ToolOutcome::text("a quote of the day, a few hundred bytes ".repeat(8));
    let run = || -> switchboard::latency::cache::Pending<'static> {
        let answer = answer.clone();
        Box::pin(async move { Ok(answer) })
    };
    runtime
        .block_on(results.get_or_run("a\0lab:quote\0{}", reuse, run()))
        .expect("stored");
    c.bench_function("result cache hit, redis", |b| {
        b.iter(|| {
            runtime
                .block_on(results.get_or_run("a\0lab:quote\0{}", reuse, run()))
                .expect("answer")
        });
    });
}

/// A Host with no servers listing by category, its sessions' state shared as `shared` says.
fn categories_host(shared: Option<SharedSessions>) -> Host {
    let options = HostOptions {
        exposure: Exposure::Categories,
        shared_sessions: shared.map(Arc::new),
        ..HostOptions::default()
    };
    Host::start(Vec::new(), options)
}

fn session_state(c: &mut Criterion) {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    let runtime = builder.enable_io().enable_time().build().expect("runtime");
    let redis = Redis::start();
    let hosts = runtime.block_on(async {
        let url = redis.url();
        let bus = EventBus::connect(&url, "bench").expect("bus");
        while bus.epoch() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let policy = WhenUnreachable::FailClosed;
        let followed = SharedSessions::connect(&url, "bench", policy, Some(bus)).expect("sessions");
        let unfollowed = SharedSessions::connect(&url, "bench", policy, None).expect("sessions");
        [
            ("memory", categories_host(None)),
            ("redis with the event bus", categories_host(Some(followed))),
            ("redis every request", categories_host(Some(unfollowed))),
        ]
    });
    let ctx = CallContext {
        agent: Some("npc".to_owned()),
        session: Some("a session id of a typical length, about one hundred and sixty bytes".into()),
        ..CallContext::default()
    };
    for (name, host) in &hosts {
        c.bench_function(&format!("session's list_categories call, {name}"), |b| {
            b.iter(|| {
                let call = ToolCall::new("list_categories", Default::default());
                runtime
                    .block_on(host.call_tool(ctx.clone(), call))
                    .expect("answer")
            });
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).sample_size(30);
    targets = shared_state, session_state
}
criterion_main!(benches);
