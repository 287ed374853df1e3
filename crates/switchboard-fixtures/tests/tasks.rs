//! The task fixtures over stdio: the `conformance` fixture's `slow_compute` stops when its
//! call is cancelled and logs it to `$SWITCHBOARD_FIXTURE_CANCEL_LOG`; its `multi_input`
//! asks a legacy client both questions at once (both requests outstanding before either is
//! answered); `conformance-tasks` gathers a name by `input_required`, creates a task and
//! completes it with the name, and refuses a client without the tasks extension (-32021).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A fixture over stdio, killed when dropped; its lines arrive on a channel.
struct Fixture {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
}

impl Fixture {
    fn start(mode: &str, env: &[(&str, &std::path::Path)]) -> Fixture {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard-fixture"));
        command
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("start the fixture");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let Ok(message) = serde_json::from_str(&line) else {
                    continue;
                };
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Fixture {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// The next message, skipping notifications.
    fn next(&self) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(5))
                .expect("a message within 5 s");
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Sends a request and returns its answer (result or error), skipping anything else.
    fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params);
        loop {
            let message = self.next();
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize(fixture: &mut Fixture, capabilities: Value) {
    let answer = fixture.call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "test", "version": "0"}}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
}

#[test]
fn a_cancelled_slow_compute_stops_and_logs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("cancel.log");
    let mut fixture = Fixture::start(
        "conformance",
        &[("SWITCHBOARD_FIXTURE_CANCEL_LOG", log.as_path())],
    );
    initialize(&mut fixture, json!({}));
    let quick = fixture.call(
        1,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "quick"}}),
    );
    assert_eq!(
        quick["result"]["content"][0]["text"],
        "computed quick after 0s"
    );
    fixture.request(
        2,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": "doomed"}}),
    );
    std::thread::sleep(Duration::from_millis(100));
    fixture.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}}));
    let started = Instant::now();
    while std::fs::read_to_string(&log).unwrap_or_default() != "cancelled doomed\n" {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "no cancel logged"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The cancelled call is not answered; the next request is.
    let ping = fixture.call(3, "ping", json!({}));
    assert_eq!(ping["result"], json!({}));
}

#[test]
fn multi_input_asks_a_legacy_client_both_questions_at_once() {
    let mut fixture = Fixture::start("conformance", &[]);
    initialize(&mut fixture, json!({"elicitation": {}}));
    let listed = fixture.call(1, "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    let declared = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["execution"]["taskSupport"].clone())
    };
    assert_eq!(declared("greet"), Some(Value::Null));
    assert_eq!(declared("slow_compute"), Some(json!("optional")));
    assert_eq!(declared("failing_job"), Some(json!("required")));
    assert_eq!(declared("multi_input"), Some(json!("optional")));

    fixture.request(
        2,
        "tools/call",
        json!({"name": "multi_input", "arguments": {}}),
    );
    let (first, second) = (fixture.next(), fixture.next());
    for asked in [&first, &second] {
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
    }
    // Both are outstanding: answer them in reverse order.
    for (asked, name) in [(&second, "two"), (&first, "one")] {
        fixture.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": name, "confirm": true}}}));
    }
    let answer = fixture.next();
    assert_eq!(answer["id"], 2, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("one") && text.contains("two"), "{text}");
}

#[test]
fn conformance_tasks_gathers_a_name_then_completes_a_task_with_it() {
    let mut fixture = Fixture::start("conformance-tasks", &[]);
    let discovered = fixture.call(1, "server/discover", json!({}));
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let meta = |extensions: Value| {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": extensions}})
    };
    let with_tasks = meta(json!({"io.modelcontextprotocol/tasks": {}}));

    let refused = fixture.call(
        2,
        "tools/call",
        json!({"name": "test_tool_with_task", "arguments": {}, "_meta": meta(json!({}))}),
    );
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    let round1 = fixture.call(
        3,
        "tools/call",
        json!({"name": "test_tool_with_task", "arguments": {}, "_meta": with_tasks}),
    )["result"]
        .clone();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1["inputRequests"]["user_name"].is_object());

    let round2 = fixture.call(
        4,
        "tools/call",
        json!({
            "name": "test_tool_with_task", "arguments": {}, "_meta": with_tasks,
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": round1["requestState"]
        }),
    )["result"]
        .clone();
    assert_eq!(round2["resultType"], "task", "{round2}");
    assert_eq!(round2["status"], "working");
    assert!(round2.get("requestState").is_none());
    let task = round2["taskId"].clone();

    let started = Instant::now();
    let done = loop {
        let got =
            fixture.call(5, "tasks/get", json!({"taskId": task, "_meta": with_tasks}))["result"]
                .clone();
        if got["status"] == "completed" {
            break got;
        }
        assert_eq!(got["status"], "working", "{got}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "never completed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        done["result"]["content"][0]["text"],
        "Hello, Alice! (from a task)"
    );
    let unknown = fixture.call(6, "tasks/get", json!({"taskId": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
}
