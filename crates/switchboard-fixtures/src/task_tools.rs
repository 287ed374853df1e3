//! The `conformance` fixture's tools for the task scenarios (SEP-1686, and the 2026-07-28
//! tasks extension SEP-2663: `tasks-lifecycle`, `tasks-mrtr-input`, …). The fixture does not
//! run tasks itself — the gateway does, in front of it — so each tool only declares its
//! `execution.taskSupport` and runs synchronously: `greet` (sync only), `slow_compute`
//! (sleeps, stops promptly when its call is cancelled and then says so in
//! `$SWITCHBOARD_FIXTURE_CANCEL_LOG`), `failing_job` (a tool error after ~1 s; task support
//! required), `protocol_error_job` (a JSON-RPC error), `confirm_delete` (one confirmation)
//! and `multi_input` (two answers at once). The last two ask as the client's era asks:
//! `input_required` when the call carries a 2026-07-28 client's capabilities, else
//! `elicitation/create` mid-call — `multi_input` with both requests outstanding at once.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::conformance::text;
use crate::peer::{Peer, error_object, message_of};

/// Names the file a cancelled `slow_compute` appends `cancelled {label}` to.
pub const CANCEL_LOG: &str = "SWITCHBOARD_FIXTURE_CANCEL_LOG";

/// How a call is answered.
pub enum Reply {
    Result(Value),
    Error(Value),
    /// Cancelled: nothing is sent.
    Silent,
}

impl Reply {
    /// The JSON-RPC message answering request `id`, if any.
    pub fn message(self, id: &Value) -> Option<Value> {
        match self {
            Reply::Result(result) => Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Reply::Error(error) => Some(json!({"jsonrpc": "2.0", "id": id, "error": error})),
            Reply::Silent => None,
        }
    }
}

/// The tools' definitions.
pub fn tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, properties: Value, required: Value| {
        json!({"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": properties, "required": required}})
    };
    let with_tasks = |mut tool: Value, support: &str| {
        tool["execution"] = json!({"taskSupport": support});
        tool
    };
    vec![
        tool(
            "greet",
            "Greets by name (sync only)",
            json!({"name": {"type": "string"}}),
            json!(["name"]),
        ),
        with_tasks(
            tool(
                "slow_compute",
                "Sleeps `seconds` (0: answers at once), then says it computed `label`",
                json!({"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}}),
                json!(["seconds"]),
            ),
            "optional",
        ),
        with_tasks(
            tool(
                "failing_job",
                "Fails with a tool error after about a second",
                json!({}),
                json!([]),
            ),
            "required",
        ),
        with_tasks(
            tool(
                "protocol_error_job",
                "Answers a JSON-RPC error (-32603) after a short while",
                json!({}),
                json!([]),
            ),
            "optional",
        ),
        with_tasks(
            tool(
                "confirm_delete",
                "Asks the user to confirm deleting `filename`, then says what was decided",
                json!({"filename": {"type": "string"}}),
                json!([]),
            ),
            "optional",
        ),
        with_tasks(
            tool(
                "multi_input",
                "Asks the user two questions at once, then repeats both answers",
                json!({}),
                json!([]),
            ),
            "optional",
        ),
    ]
}

/// Answers a call of one of the tools; `None` for any other tool. `cancelled` is raised by
/// a `notifications/cancelled` for the call.
pub fn call_tool(peer: &Peer, name: &str, params: &Value, cancelled: &AtomicBool) -> Option<Reply> {
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let string = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
    Some(match name {
        "greet" => Reply::Result(text(format!("Hello, {}!", string("name")))),
        "slow_compute" => {
            let seconds = args.get("seconds").cloned().unwrap_or(json!(0));
            let label = string("label");
            let wait = Duration::from_secs_f64(seconds.as_f64().unwrap_or(0.0).clamp(0.0, 3600.0));
            if !sleep(wait, cancelled) {
                log_cancel(label);
                return Some(Reply::Silent);
            }
            Reply::Result(text(format!("computed {label} after {seconds}s")))
        }
        "failing_job" => {
            if !sleep(Duration::from_secs(1), cancelled) {
                return Some(Reply::Silent);
            }
            Reply::Result(json!({
                "content": [{"type": "text", "text": "failing_job failed, as it always does"}],
                "isError": true
            }))
        }
        "protocol_error_job" => {
            if !sleep(Duration::from_millis(200), cancelled) {
                return Some(Reply::Silent);
            }
            Reply::Error(error_object(
                -32603,
                "simulated protocol error from protocol_error_job",
            ))
        }
        "confirm_delete" => confirm_delete(peer, params, string("filename")),
        "multi_input" => multi_input(peer, params),
        _ => return None,
    })
}

/// Sleeps `wait`, checking `cancelled` every 20 ms; false when cancelled.
fn sleep(wait: Duration, cancelled: &AtomicBool) -> bool {
    let end = Instant::now() + wait;
    loop {
        if cancelled.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Appends `cancelled {label}` to `$SWITCHBOARD_FIXTURE_CANCEL_LOG`, when set.
fn log_cancel(label: &str) {
    let Ok(path) = std::env::var(CANCEL_LOG) else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "cancelled {label}");
    }
}

/// Whether the call carries a 2026-07-28 client's capabilities declaring elicitation (the
/// gateway passes them on): then the tool asks by `input_required`.
fn modern(params: &Value) -> bool {
    params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities/elicitation")
        .is_some()
}

fn elicitation(message: &str, field: &str, kind: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    }})
}

/// What an elicitation result says: `action=…, content=…`.
fn described(answer: &Value) -> String {
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or(json!({}));
    format!("action={action}, content={content}")
}

fn confirm_delete(peer: &Peer, params: &Value, filename: &str) -> Reply {
    let ask = elicitation(&format!("Delete {filename}?"), "confirm", "boolean");
    let answer = if modern(params) {
        match params.pointer("/inputResponses/confirm") {
            Some(answer) => answer.clone(),
            None => {
                return Reply::Result(json!({
                    "resultType": "input_required",
                    "inputRequests": {"confirm": ask},
                    "requestState": format!("confirm_delete:{filename}")
                }));
            }
        }
    } else {
        match peer.ask("elicitation/create", ask["params"].clone()) {
            Ok(answer) => answer,
            Err(error) => return could_not_ask(&error),
        }
    };
    let confirmed = answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/confirm") != Some(&json!(false));
    let decision = if confirmed { "deleted" } else { "kept" };
    Reply::Result(text(format!(
        "{filename} {decision} ({})",
        described(&answer)
    )))
}

/// Two questions at once. The modern path asks for whichever are still unanswered,
/// carrying the answers so far in `requestState`; the legacy path asks both mid-call from
/// two threads, so both requests are outstanding at the same time.
fn multi_input(peer: &Peer, params: &Value) -> Reply {
    let asks = [
        (
            "first",
            elicitation("First: what is your name?", "name", "string"),
        ),
        (
            "second",
            elicitation("Second: do you confirm?", "confirm", "boolean"),
        ),
    ];
    let answers: Map<String, Value> = if modern(params) {
        let mut answers: Map<String, Value> = params
            .get("requestState")
            .and_then(Value::as_str)
            .and_then(|state| serde_json::from_str(state).ok())
            .unwrap_or_default();
        if let Some(responses) = params.get("inputResponses").and_then(Value::as_object) {
            for (key, _) in &asks {
                if let Some(answer) = responses.get(*key) {
                    answers.insert((*key).to_owned(), answer.clone());
                }
            }
        }
        let missing: Map<String, Value> = asks
            .iter()
            .filter(|(key, _)| !answers.contains_key(*key))
            .map(|(key, ask)| ((*key).to_owned(), ask.clone()))
            .collect();
        if !missing.is_empty() {
            return Reply::Result(json!({
                "resultType": "input_required",
                "inputRequests": missing,
                "requestState": Value::Object(answers).to_string()
            }));
        }
        answers
    } else {
        let results: Vec<(&str, Result<Value, Value>)> = std::thread::scope(|scope| {
            let running: Vec<_> = asks
                .iter()
                .map(|(key, ask)| {
                    let params = ask["params"].clone();
                    (
                        *key,
                        scope.spawn(move || peer.ask("elicitation/create", params)),
                    )
                })
                .collect();
            running
                .into_iter()
                .map(|(key, thread)| {
                    let answer = thread
                        .join()
                        .unwrap_or_else(|_| Err(error_object(-32603, "the asking thread failed")));
                    (key, answer)
                })
                .collect()
        });
        let mut answers = Map::new();
        for (key, result) in results {
            match result {
                Ok(answer) => answers.insert(key.to_owned(), answer),
                Err(error) => return could_not_ask(&error),
            };
        }
        answers
    };
    Reply::Result(text(format!(
        "first: {}; second: {}",
        described(&answers["first"]),
        described(&answers["second"])
    )))
}

/// The tool error of a call whose question the client could not answer.
fn could_not_ask(error: &Value) -> Reply {
    Reply::Result(json!({
        "content": [{"type": "text", "text": format!("Could not ask the user: {}", message_of(error))}],
        "isError": true
    }))
}
