//! Tasks over the stdio front, 2025-11-25 era: a task-augmented call answers with the task at
//! once, `notifications/tasks/status` reach the connection as the task changes, and
//! `tasks/result` waits for the end — and a 2026-07-28 request on the same connection sees
//! the same task in its own shape.

mod support;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::*;
use switchboard_fixtures::client::StdioClient;

#[test]
fn a_stdio_client_gets_its_tasks_status_and_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nprefix_tools = false\nledger = {}\n\n[servers.conformance]\ncommand = {}\nargs = [\"conformance\"]\n",
            quoted(&dir.path().join("ledger.db").display().to_string()),
            quoted(&fixture())
        ),
    );
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "error", "serve"])
        .stderr(Stdio::null());
    let mut client = StdioClient::spawn(&mut command).expect("gateway");
    let initialized = client.initialize().expect("initialize");
    assert!(
        initialized["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object(),
        "{initialized}"
    );

    let created = client
        .request(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.5, "label": "stdio"},
                "task": {"ttl": 30000}}),
        )
        .expect("task-augmented call");
    let id = created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    assert_eq!(created["task"]["ttl"], 30000, "{created}");

    // tasks/result waits for the end; the status notifications come before its answer.
    client
        .send_line(
            &json!({"jsonrpc": "2.0", "id": 900, "method": "tasks/result", "params": {"taskId": id}})
                .to_string(),
        )
        .expect("send tasks/result");
    let mut statuses: Vec<Value> = Vec::new();
    let result = loop {
        let message = client.read_message().expect("a message");
        if message["method"] == "notifications/tasks/status" {
            statuses.push(message["params"].clone());
            continue;
        }
        if message["id"] == 900 {
            break message;
        }
    };
    assert_eq!(
        result["result"]["content"][0]["text"], "computed stdio after 0.5s",
        "{result}"
    );
    // The end's notification travels beside the answer, not necessarily before it: read on,
    // pinging, until it is there.
    let announced_end = |statuses: &[Value]| {
        statuses
            .iter()
            .any(|status| status["taskId"] == id.as_str() && status["status"] == "completed")
    };
    for ping in 0..20 {
        if announced_end(&statuses) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let ping_id = 1000 + ping;
        client
            .send_line(&json!({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}).to_string())
            .expect("send ping");
        loop {
            let message = client.read_message().expect("a message");
            if message["method"] == "notifications/tasks/status" {
                statuses.push(message["params"].clone());
            } else if message["id"] == ping_id {
                break;
            }
        }
    }
    assert!(
        announced_end(&statuses),
        "notifications/tasks/status announced the end: {statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|status| status.get("pollInterval").is_some()
                && status.get("pollIntervalMs").is_none()),
        "an initialized (2025-11-25) client gets its era's field names: {statuses:?}"
    );

    // The same task, asked by a 2026-07-28 request on this connection.
    let modern = client
        .request(
            "tasks/get",
            json!({"taskId": id, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": {"io.modelcontextprotocol/tasks": {}}
                }
            }}),
        )
        .expect("modern tasks/get");
    assert_eq!(modern["status"], "completed", "{modern}");
    assert_eq!(modern["ttlMs"], 30000, "{modern}");
    assert_eq!(
        modern["result"]["content"][0]["text"],
        "computed stdio after 0.5s"
    );
}
