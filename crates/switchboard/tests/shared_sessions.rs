//! Sessions' state of two Hosts (two replicas in one process) sharing a real Redis with
//! `redis_unavailable = "fail_open"`: a category loaded on one is listed by the other for the
//! same session, and not for another session; while Redis is down a category loaded on one
//! replica is kept there alone and its answer says so, the other does not list it, and once
//! Redis answers again the shared state wins on both.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use support::{Named, plan};
use switchboard::shared::{EventBus, SharedSessions};
use switchboard::{Host, HostOptions};
use switchboard_core::config::Exposure;
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::{CallContext, Caller, ToolCall, ToolOutcome};
use switchboard_mcp::front::Backend;
use switchboard_testkit::redis::Redis;

/// A Host on `redis` (fail open) listing `games__roll` by category, once its bus is
/// subscribed.
async fn replica(redis: &Redis) -> Host {
    let bus = EventBus::connect(&redis.url(), "t").expect("bus");
    while bus.epoch() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let sessions = SharedSessions::connect(
        &redis.url(),
        "t",
        WhenUnreachable::FailOpen,
        Some(bus.clone()),
    )
    .expect("sessions");
    let options = HostOptions {
        exposure: Exposure::Categories,
        events: Some(bus),
        shared_sessions: Some(Arc::new(sessions)),
        ..HostOptions::default()
    };
    let provider = Named {
        id: "games",
        tools: &["roll"],
    };
    let host = Host::start(vec![plan(provider, "games")], options);
    host.ready().await;
    host
}

fn session(id: &str) -> Caller {
    Caller::new(Some("npc".into()), Some(id.into()))
}

async fn load(host: &Host, caller: &Caller) -> ToolOutcome {
    let ctx = CallContext {
        agent: caller.agent.clone(),
        session: caller.session.clone(),
        ..CallContext::default()
    };
    let mut arguments = Map::new();
    arguments.insert("name".into(), Value::from("games"));
    host.call_tool(ctx, ToolCall::new("load_category", arguments))
        .await
        .expect("answered")
}

async fn lists_roll(host: &Host, caller: &Caller) -> bool {
    host.list_tools(caller)
        .await
        .iter()
        .any(|tool| tool.name == "games__roll")
}

/// Waits (a second at most) until `host` lists `games__roll` to `caller` as `want` says.
async fn listed_within_a_second(host: &Host, caller: &Caller, want: bool) {
    let started = Instant::now();
    while lists_roll(host, caller).await != want {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "games__roll listed: {}",
            !want
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_loaded_category_follows_the_session_and_fail_open_keeps_it_here_while_redis_is_down() {
    let mut redis = Redis::start();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    let (one, two) = (session("s1"), session("s2"));
    assert!(!lists_roll(&b, &one).await);
    let loaded = load(&a, &one).await;
    assert_eq!(
        loaded.structured_content.as_ref().map(|s| &s["changed"]),
        Some(&json!(true))
    );
    listed_within_a_second(&b, &one, true).await;
    assert!(
        !lists_roll(&b, &two).await,
        "another session's state is its own"
    );

    redis.stop();
    let alone = load(&a, &two).await;
    assert!(
        alone.text_content().contains("kept on this replica only")
            && alone.text_content().contains("fail_open"),
        "{alone:?}"
    );
    assert!(lists_roll(&a, &two).await);
    assert!(!lists_roll(&b, &two).await);
    // What both already held still lists.
    assert!(lists_roll(&b, &one).await);

    redis.restart();
    // Once Redis answers again, each reads the session again: Redis's state (nothing for
    // s2, a restarted Redis being empty) wins over what A kept alone.
    listed_within_a_second(&a, &two, false).await;
    let loaded = load(&a, &two).await;
    assert!(!loaded.text_content().contains("only"), "{loaded:?}");
    listed_within_a_second(&b, &two, true).await;
}

/// A Redis restart loses the sessions' state while the replicas hold it: the first replica
/// that serves the session after it writes its copy back, so a replica that never held the
/// session finds it whole.
#[tokio::test]
async fn a_session_state_lost_in_a_redis_restart_is_written_back_by_a_replica_holding_it() {
    let mut redis = Redis::start();
    let (a, b) = (replica(&redis).await, replica(&redis).await);
    let one = session("s1");
    load(&a, &one).await;
    listed_within_a_second(&b, &one, true).await;

    redis.restart();
    let c = replica(&redis).await;
    let started = Instant::now();
    // B's next requests read the session again once its bus subscribed again.
    while !lists_roll(&c, &one).await {
        assert!(lists_roll(&b, &one).await, "B keeps its copy");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the session's state never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// After a Redis restart every replica writes back the sessions it holds as soon as its bus
/// subscribed again: a replica that never held a session finds it whole, though no replica
/// holding it served it since.
#[tokio::test]
async fn after_a_redis_restart_the_replicas_write_back_the_sessions_they_hold() {
    let mut redis = Redis::start();
    let a = replica(&redis).await;
    let one = session("s1");
    load(&a, &one).await;

    redis.restart();
    let c = replica(&redis).await;
    let started = Instant::now();
    while !lists_roll(&c, &one).await {
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the session's state was not written back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
