//! Issue 32, what must hold on every replica once one saw it, through Redis: real
//! `switchboard serve` replicas (each its own directory and ledger, one key ring, one Redis).
//! A 2025-era session DELETEd on one replica is refused by the others, those that adopted it
//! included; a 2026-era `requestState` used on one replica is refused when replayed to
//! another. With Redis stopped and `redis_unavailable = "fail_closed"`, both are refused
//! readably (503 for the session), and served again once Redis is back. A replica that
//! adopted a session asks Redis nothing on its later requests and hears a DELETE on the event
//! bus; after its subscription was cut it asks again, so an end it missed is not missed.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::shared_replicas::{self, Replica, calls, initialize, legacy};
use support::{fixture, post, quoted};
use switchboard_testkit::redis::Redis;

/// `count` replicas on the Redis at `redis`; agent `qa` (every call's) needs approval for
/// destructive tools.
fn replicas(root: &std::path::Path, redis: &str, count: usize) -> Vec<Replica> {
    let rest = format!(
        "[agents.qa]\napproval = \"destructive\"\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
        quoted(&fixture())
    );
    shared_replicas::start(root, redis, count, &rest)
}

async fn list(url: &str, session: &str) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, text, _) = legacy("POST", url, Some(session), Some(body)).await;
    (status, text)
}

/// A 2026-era `fx__add` call, with `retry` = (requestState, approval) when it answers an
/// `input_required`: the JSON-RPC result.
async fn add(url: &str, retry: Option<&Value>) -> Value {
    let mut params = json!({"name": "fx__add", "arguments": {"a": 2, "b": 3},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    if let Some(state) = retry {
        params["requestState"] = state.clone();
        params["inputResponses"] =
            json!({"switchboard_approval": {"action": "accept", "content": {"approve": true}}});
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params});
    let (status, text, _) = post(url, None, body).await;
    assert_eq!(status, 200, "{text}");
    let value: Value = serde_json::from_str(&text).expect("a JSON answer");
    value["result"].clone()
}

/// The `requestState` of a fresh `input_required` for `fx__add` on `url`.
async fn asked(url: &str) -> Value {
    let asked = add(url, None).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    asked["requestState"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delete_and_a_used_request_state_hold_on_every_replica() {
    let mut redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url(), 2);
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);

    // DELETE on A: B, which adopted the session before, refuses it within a second (the
    // time the event bus takes to tell it) and from then on.
    let session = initialize(a, json!({})).await;
    let (status, body) = list(b, &session).await;
    assert_eq!(status, 200, "B adopts the session: {body}");
    let (status, body, _) = legacy("DELETE", a, Some(&session), None).await;
    assert_eq!(status, 204, "{body}");
    refused_within_a_second(b, &session).await;
    let (status, body) = list(b, &session).await;
    assert_eq!(status, 404, "{body}");
    // A session B never saw is refused there at once (its first request asks Redis).
    let unseen = initialize(a, json!({})).await;
    legacy("DELETE", a, Some(&unseen), None).await;
    let (status, body) = list(b, &unseen).await;
    assert_eq!(status, 404, "{body}");

    // A requestState used on A is refused when replayed to B.
    let state = asked(b).await;
    let approved = add(a, Some(&state)).await;
    assert_eq!(text(&approved), "5", "{approved}");
    let replayed = add(b, Some(&state)).await;
    assert_eq!(replayed["isError"], true, "{replayed}");
    assert!(text(&replayed).contains("already used"), "{replayed}");

    // Redis stopped, fail_closed: a session and a state that cannot be checked are refused,
    // saying so; nothing is used up, so both work once Redis is back.
    let live = initialize(a, json!({})).await;
    let state = asked(a).await;
    redis.stop();
    let (status, body) = list(b, &live).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("cannot be checked now") && body.contains("fail_closed"),
        "{body}"
    );
    let refused = add(b, Some(&state)).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("cannot be checked now"),
        "{refused}"
    );
    redis.restart();
    let started = Instant::now();
    loop {
        let (status, body) = list(b, &live).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "served again once Redis is back: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let approved = add(b, Some(&state)).await;
    assert_eq!(text(&approved), "5", "{approved}");
}

/// Lists on `url` until the session is refused as ended, for at most a second.
async fn refused_within_a_second(url: &str, session: &str) {
    let started = Instant::now();
    loop {
        let (status, body) = list(url, session).await;
        if status == 404 {
            assert!(body.contains("it was ended (DELETE)"), "{body}");
            return;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "still served a second after it ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Two replicas A and B on `redis`, and a session minted on A that both now serve without
/// asking Redis. A is waited for too: minted before A's subscription held, the session is
/// asked about once there, and that question must not be counted as B's.
async fn adopted_by_b(redis: &Redis) -> (tempfile::TempDir, Vec<Replica>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url(), 2);
    let session = initialize(&replicas[0].gateway.url, json!({})).await;
    asks_nothing(redis, &replicas[0].gateway.url, &session).await;
    asks_nothing(redis, &replicas[1].gateway.url, &session).await;
    (dir, replicas, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_adopted_session_costs_no_round_trip_and_a_delete_arrives_on_the_bus() {
    let redis = Redis::start();
    let (_dir, replicas, session) = adopted_by_b(&redis).await;
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);
    let (status, body, _) = legacy("DELETE", a, Some(&session), None).await;
    assert_eq!(status, 204, "{body}");
    refused_within_a_second(b, &session).await;
    assert_eq!(
        calls(&redis, "pttl"),
        0,
        "B learnt of the DELETE from the bus"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_its_subscription_is_cut_a_replica_asks_again_and_misses_no_end() {
    let redis = Redis::start();
    let (_dir, replicas, session) = adopted_by_b(&redis).await;
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);
    // Every subscription is cut, and the session ended without an announcement, as a DELETE
    // published while B was not subscribed would be for B.
    redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    let digest = ring::digest::digest(&ring::digest::SHA256, session.as_bytes());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let key = format!("switchboard:{{marks}}:ended:{hex}");
    redis.cli(&["SET", &key, "1", "PX", "600000"]);
    refused_within_a_second(b, &session).await;
    // Once subscribed again, a session's requests ask nothing again.
    let other = initialize(a, json!({})).await;
    asks_nothing(&redis, b, &other).await;
}

/// Waits (at most 5 s: the replica may still be subscribing) until ten requests of `session`
/// on `url` in a row ask Redis nothing (the first adopts it there).
async fn asks_nothing(redis: &Redis, url: &str, session: &str) {
    let started = Instant::now();
    loop {
        redis.cli(&["CONFIG", "RESETSTAT"]);
        for _ in 0..10 {
            let (status, body) = list(url, session).await;
            assert_eq!(status, 200, "{body}");
        }
        if (calls(redis, "pttl"), calls(redis, "exists")) == (0, 0) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "requests of a session the replica holds still ask Redis"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
