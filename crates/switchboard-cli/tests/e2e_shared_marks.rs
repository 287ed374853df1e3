//! Issue 32, what must hold on every replica once one saw it, through Redis: real
//! `switchboard serve` replicas (each its own directory and ledger, one key ring, one Redis).
//! A 2025-era session DELETEd on one replica is refused by the others, those that adopted it
//! included; a 2026-era `requestState` used on one replica is refused when replayed to
//! another. With Redis stopped and `redis_unavailable = "fail_closed"`, both are refused
//! readably (503 for the session), and served again once Redis is back.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{HttpGateway, fixture, http_client, post, quoted, switchboard, write_config};
use switchboard_testkit::redis::Redis;

const LEGACY: &str = "2025-06-18";

/// `count` replicas in their own directories under `root`, sharing `root/keys.json` and the
/// Redis at `redis`; agent `qa` (every call's) needs approval for destructive tools.
fn replicas(root: &Path, redis: &str, count: usize) -> Vec<HttpGateway> {
    let ring = root.join("keys.json");
    let created = std::process::Command::new(switchboard())
        .args(["keys", "create"])
        .arg(&ring)
        .output()
        .expect("keys create");
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    (0..count)
        .map(|n| {
            let dir = root.join(format!("replica-{n}"));
            std::fs::create_dir_all(&dir).expect("replica dir");
            let config: PathBuf = write_config(
                &dir,
                &format!(
                    "[gateway]\nledger = \"ledger.db\"\napproval_timeout = \"30s\"\n\n\
                     [latency]\ndatabase = \"latency.db\"\n\n\
                     [manager]\ndatabase = \"manager.db\"\nregistries = []\n\n\
                     [shared]\nkeys = {}\nredis = {}\nredis_unavailable = \"fail_closed\"\n\
                     deployment = \"marks\"\n\n\
                     [agents.qa]\napproval = \"destructive\"\n\n\
                     [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
                    quoted(&ring.display().to_string()),
                    quoted(redis),
                    quoted(&fixture())
                ),
            );
            HttpGateway::start(&config, &["--agent", "qa"])
        })
        .collect()
}

/// A 2025-era request of `session` (or `initialize` without one): (status, body, the
/// `Mcp-Session-Id` answered).
async fn legacy(
    method: &str,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, String, Option<String>) {
    let client = http_client();
    let mut request = match method {
        "DELETE" => client.delete(url),
        _ => client.post(url).json(&body.unwrap_or(Value::Null)),
    }
    .header("accept", "application/json, text/event-stream")
    .header("mcp-protocol-version", LEGACY);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.text().await.expect("body"), id)
}

async fn initialize(url: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}});
    let (status, text, id) = legacy("POST", url, None, Some(body)).await;
    assert_eq!(status, 200, "{text}");
    id.expect("an Mcp-Session-Id")
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
    let (a, b) = (&replicas[0].url, &replicas[1].url);

    // DELETE on A: B, which adopted the session before, refuses it from then on.
    let session = initialize(a).await;
    let (status, body) = list(b, &session).await;
    assert_eq!(status, 200, "B adopts the session: {body}");
    let (status, body, _) = legacy("DELETE", a, Some(&session), None).await;
    assert_eq!(status, 204, "{body}");
    let (status, body) = list(b, &session).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("it was ended (DELETE)"), "{body}");
    // A session B never saw is refused there too.
    let unseen = initialize(a).await;
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
    let live = initialize(a).await;
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
    let started = std::time::Instant::now();
    loop {
        let (status, body) = list(b, &live).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "served again once Redis is back: {status} {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let approved = add(b, Some(&state)).await;
    assert_eq!(text(&approved), "5", "{approved}");
}
