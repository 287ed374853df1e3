//! Issue 32, a session's own state on every replica, through Redis: real `switchboard serve`
//! replicas (each its own directory, one key ring, one Redis), each request sent to the
//! replica chosen. A category loaded on one replica is listed by the other (one that had
//! adopted the session before, and one that never saw it); a result cut on one replica is
//! read to its end with `read_more` on the other, which lists `read_more` too; a tier an
//! operator sets for the session through one replica's admin endpoint narrows its listing on
//! the other. With Redis stopped (`fail_closed`), loading a category and reading a rest held
//! elsewhere are refused saying why, and both work once Redis is back. A resource subscribed
//! to through one replica sends its updates to the session's GET stream on the other.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::shared_replicas::{self, Replica, calls, initialize, legacy, next_message, send};
use support::{fixture, node_bin, post, quoted, run_switchboard};
use switchboard_testkit::redis::Redis;

/// `count` replicas on the Redis at `redis`; agent `qa` (every call's) sees its tools by
/// category, and results over 40 tokens are cut.
fn replicas(root: &std::path::Path, redis: &str, count: usize) -> Vec<Replica> {
    let rest = format!(
        "[agents.qa]\nexposure = \"categories\"\nmax_result_tokens = 40\n\n\
         [servers.fx]\ncommand = {}\nargs = [\"echo\"]\ncategory = \"testing/echo\"\n",
        quoted(&fixture())
    );
    shared_replicas::start(root, redis, count, &rest)
}

/// A 2025-era request of `session` on `url`: the JSON-RPC result.
async fn request(url: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let (status, text, _) = legacy("POST", url, Some(session), Some(body)).await;
    assert_eq!(status, 200, "{method}: {text}");
    let value: Value = serde_json::from_str(&text).expect("a JSON answer");
    value["result"].clone()
}

/// The names `session` is listed on `url`.
async fn names(url: &str, session: &str) -> Vec<String> {
    let result = request(url, session, "tools/list", json!({})).await;
    result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

async fn call(url: &str, session: &str, tool: &str, arguments: Value) -> Value {
    request(
        url,
        session,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

/// The piece before a truncation marker, and the marker's call id and offset (none: the
/// text is the last piece).
fn split(piece: &str) -> (String, Option<(String, u64)>) {
    let Some((head, marker)) = piece.split_once("\n[… truncated") else {
        return (piece.to_owned(), None);
    };
    let call_id = marker
        .split("call_id=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a call id in the marker");
    let offset = marker
        .split("offset=")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|offset| offset.parse().ok())
        .expect("an offset in the marker");
    (head.to_owned(), Some((call_id.to_owned(), offset)))
}

/// Waits (at most a second) until `session`'s listing on `url` satisfies `check`.
async fn listed_within_a_second(url: &str, session: &str, check: impl Fn(&[String]) -> bool) {
    let started = Instant::now();
    loop {
        let listed = names(url, session).await;
        if check(&listed) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "not listed within a second: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn categories_read_more_and_a_tier_follow_the_session_to_another_replica() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url(), 2);
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);

    // B adopts the session and lists only the meta-tools; A loads a category; B lists it.
    let session = initialize(a, json!({})).await;
    let before = names(b, &session).await;
    assert!(before.contains(&"load_category".to_owned()), "{before:?}");
    assert!(!before.contains(&"fx__echo".to_owned()), "{before:?}");
    let loaded = call(a, &session, "load_category", json!({"name": "testing"})).await;
    assert!(text(&loaded).contains("loaded category"), "{loaded}");
    listed_within_a_second(b, &session, |names| names.contains(&"fx__echo".to_owned())).await;
    // A session B never saw: its first request there reads it.
    let unseen = initialize(a, json!({})).await;
    call(a, &unseen, "load_category", json!({"name": "testing/echo"})).await;
    assert!(names(b, &unseen).await.contains(&"fx__echo".to_owned()));
    // Unloaded on B: gone from A's listing.
    let unloaded = call(b, &unseen, "unload_category", json!({"name": "testing"})).await;
    assert!(text(&unloaded).contains("unloaded"), "{unloaded}");
    listed_within_a_second(a, &unseen, |names| !names.contains(&"fx__echo".to_owned())).await;

    // A result cut on A is read to its end on B, which lists read_more.
    let message: String = (0..300).map(|i| format!("word{i} ")).collect();
    let cut = call(a, &session, "fx__echo", json!({"message": message})).await;
    let (mut whole, mut next) = split(text(&cut));
    assert!(next.is_some(), "the result is cut: {cut}");
    listed_within_a_second(b, &session, |names| names.contains(&"read_more".to_owned())).await;
    let mut pieces = 0;
    while let Some((call_id, offset)) = next {
        let piece = call(
            b,
            &session,
            "read_more",
            json!({"call_id": call_id, "offset": offset}),
        )
        .await;
        assert_ne!(piece["isError"], true, "{piece}");
        let (part, after) = split(text(&piece));
        whole.push_str(&part);
        next = after;
        pieces += 1;
    }
    assert!(pieces > 1, "read in several pieces");
    assert_eq!(whole, message, "the pieces read on B are the whole result");

    // B holds the session's state now: its requests read nothing more from Redis (the
    // changes come on the event bus).
    let reads = calls(&redis, "hgetall");
    for _ in 0..5 {
        names(b, &session).await;
        call(b, &session, "list_categories", json!({})).await;
    }
    assert_eq!(
        calls(&redis, "hgetall"),
        reads,
        "no read for a session held"
    );

    // A tier set for the session through A's admin endpoint narrows its listing on B as it
    // does on A.
    let all = names(b, &session).await;
    let set = run_switchboard(
        &replicas[0].config,
        &[
            "tier",
            "set",
            "fast",
            "--session",
            &session,
            "--admin-file",
            &replicas[0].admin.display().to_string(),
        ],
    );
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let on_a = names(a, &session).await;
    assert_ne!(on_a, all, "the tier narrows the listing");
    listed_within_a_second(b, &session, |names| names == on_a.as_slice()).await;
}

/// A 2026-07-28 stateless request (its state is the agent's): the JSON-RPC result.
async fn stateless(url: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let (status, text, _) = post(url, None, body).await;
    assert_eq!(status, 200, "{method}: {text}");
    let value: Value = serde_json::from_str(&text).expect("a JSON answer");
    value["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_redis_stopped_changes_and_rests_held_elsewhere_are_refused_readably() {
    let mut redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url(), 2);
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);
    let load = json!({"name": "load_category", "arguments": {"name": "testing"}});
    let message: String = (0..300).map(|i| format!("word{i} ")).collect();
    let echo = json!({"name": "fx__echo", "arguments": {"message": message}});

    let cut = stateless(a, "tools/call", echo.clone()).await;
    let (_, next) = split(text(&cut));
    let (call_id, offset) = next.expect("the result is cut");
    let read_more =
        json!({"name": "read_more", "arguments": {"call_id": call_id, "offset": offset}});
    // B has read the agent's state (read_more listed) before Redis goes.
    let listed = stateless(b, "tools/list", json!({})).await;
    assert!(listed.to_string().contains("read_more"), "{listed}");
    redis.stop();

    let refused = stateless(a, "tools/call", load.clone()).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let said = text(&refused);
    assert!(
        said.contains("cannot be loaded now")
            && said.contains("redis at")
            && said.contains("fail_closed"),
        "{refused}"
    );
    let refused = stateless(b, "tools/call", read_more.clone()).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("cannot be read now") && text(&refused).contains("fail_closed"),
        "{refused}"
    );
    // A's own rest is still read on A.
    let piece = stateless(a, "tools/call", read_more.clone()).await;
    assert_ne!(piece["isError"], true, "{piece}");

    redis.restart();
    let started = Instant::now();
    loop {
        let loaded = stateless(a, "tools/call", load.clone()).await;
        if loaded["isError"] != true {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "served again once Redis is back: {loaded}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // B lists what A loaded once it reads Redis again (its first command after the restart
    // may still meet the old connection's error).
    loop {
        let listed = stateless(b, "tools/list", json!({})).await;
        if listed.to_string().contains("fx__echo") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "B lists what A loaded once Redis is back: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A result cut now is read on B again (B's read of the rests may, like its listing,
    // meet the old connection's error first: each try cuts a new result).
    loop {
        let cut = stateless(a, "tools/call", echo.clone()).await;
        let (_, next) = split(text(&cut));
        let (call_id, offset) = next.expect("the result is cut");
        let piece = stateless(
            b,
            "tools/call",
            json!({"name": "read_more", "arguments": {"call_id": call_id, "offset": offset}}),
        )
        .await;
        if piece["isError"] != true {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a result cut on A is read on B once Redis is back: {piece}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subscription_taken_on_one_replica_delivers_updates_to_the_get_stream_on_another() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let everything = node_bin().join("mcp-server-everything");
    let rest = format!(
        "[servers.everything]\ncommand = {}\n",
        quoted(&everything.display().to_string())
    );
    let replicas = shared_replicas::start(dir.path(), &redis.url(), 2, &rest);
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);

    // The client listens on B; it subscribes through A, whose server sends the updates.
    let session = initialize(a, json!({})).await;
    let mut stream = send("GET", b, Some(&session), None).await;
    assert_eq!(stream.status().as_u16(), 200);
    let resources = request(a, &session, "resources/list", json!({})).await;
    let uri = resources["resources"][0]["uri"]
        .as_str()
        .expect("a resource")
        .to_owned();
    request(a, &session, "resources/subscribe", json!({"uri": uri})).await;
    call(
        a,
        &session,
        "everything__toggle-subscriber-updates",
        json!({}),
    )
    .await;
    let mut buffer = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let update = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = next_message(&mut stream, &mut buffer, left)
            .await
            .expect("a resource update reaches the GET stream on B");
        if message["method"] == "notifications/resources/updated" {
            break message;
        }
    };
    assert_eq!(update["params"]["uri"], uri.as_str(), "{update}");
}
