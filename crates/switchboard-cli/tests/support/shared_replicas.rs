//! Replicas of one deployment for the tests of what they share through Redis: each a real
//! `switchboard serve` in its own directory (ledger, latency and manager files, as on separate
//! machines), all with one key ring and one Redis, serving every call as agent `qa`; and the
//! raw 2025-era HTTP requests those tests send to one replica or another on purpose.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::{HttpGateway, http_client, quoted, switchboard, write_config};

/// The protocol version of the sessions these tests open.
pub const LEGACY: &str = "2025-06-18";

/// One replica: its config file, its admin file (its admin endpoint's address and token,
/// for operator commands) and the running gateway.
pub struct Replica {
    pub config: PathBuf,
    pub admin: PathBuf,
    pub gateway: HttpGateway,
}

/// `count` replicas under `root` sharing `root/keys.json` and the Redis at `redis`
/// (`redis_unavailable = "fail_closed"`, deployment `marks`); `rest` is the config after
/// `[shared]` (agents, servers).
pub fn start(root: &Path, redis: &str, count: usize, rest: &str) -> Vec<Replica> {
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
            let config = write_config(
                &dir,
                &format!(
                    "[gateway]\nledger = \"ledger.db\"\napproval_timeout = \"30s\"\n\n\
                     [latency]\ndatabase = \"latency.db\"\n\n\
                     [manager]\ndatabase = \"manager.db\"\nregistries = []\n\n\
                     [shared]\nkeys = {}\nredis = {}\nredis_unavailable = \"fail_closed\"\n\
                     deployment = \"marks\"\n\n{rest}",
                    quoted(&ring.display().to_string()),
                    quoted(redis),
                ),
            );
            let admin = dir.join("admin.json");
            let admin_arg = admin.display().to_string();
            let gateway =
                HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_arg]);
            Replica {
                config,
                admin,
                gateway,
            }
        })
        .collect()
}

/// How many times the Redis of the replicas ran `command` (`INFO commandstats`).
pub fn calls(redis: &switchboard_testkit::redis::Redis, command: &str) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}

/// A 2025-era request to `url`, of `session` (none for `initialize`): the response as it
/// comes (a stream is read with [`next_message`]).
pub async fn send(
    method: &str,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> reqwest::Response {
    let client = http_client();
    let mut request = match method {
        "DELETE" => client.delete(url),
        "GET" => client.get(url),
        _ => client.post(url).json(&body.unwrap_or(Value::Null)),
    }
    .header("accept", "application/json, text/event-stream")
    .header("mcp-protocol-version", LEGACY);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("send")
}

/// [`send`], read whole: (status, body, the `Mcp-Session-Id` answered).
pub async fn legacy(
    method: &str,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (u16, String, Option<String>) {
    let response = send(method, url, session, body).await;
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.text().await.expect("body"), id)
}

/// A new session on `url`, declaring `capabilities`: its id.
pub async fn initialize(url: &str, capabilities: Value) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": capabilities,
        "clientInfo": {"name": "e2e", "version": "1"}}});
    let (status, text, id) = legacy("POST", url, None, Some(body)).await;
    assert_eq!(status, 200, "{text}");
    id.expect("an Mcp-Session-Id")
}

/// The next JSON-RPC message on an SSE `response` (keep-alive comments skipped), within
/// `limit`; `buffer` keeps what was read past it.
pub async fn next_message(
    response: &mut reqwest::Response,
    buffer: &mut String,
    limit: Duration,
) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data = event.lines().find_map(|line| line.strip_prefix("data: "));
            if let Some(message) = data.and_then(|data| serde_json::from_str(data).ok()) {
                return Some(message);
            }
        }
        let chunk = tokio::time::timeout_at(deadline, response.chunk()).await;
        match chunk {
            Ok(Ok(Some(bytes))) => buffer.push_str(&String::from_utf8_lossy(&bytes)),
            _ => return None,
        }
    }
}
