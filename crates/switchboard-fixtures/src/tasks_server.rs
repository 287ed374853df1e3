//! `conformance-tasks`: a stdio server that runs tasks itself, per the 2026-07-28 tasks
//! extension (SEP-2663, `io.modelcontextprotocol/tasks`), so the gateway relays them rather
//! than running them. It answers `initialize` and `server/discover`, both advertising the
//! extension under `capabilities.extensions`, and serves one tool, `test_tool_with_task`
//! (task support required), as the suite's `tasks-mrtr-composition` scenario demands: round
//! 1 asks the user's name by `input_required`, round 2 creates a task (a flat
//! `CreateTaskResult`) that completes ~300 ms later with a greeting. `tasks/get`,
//! `tasks/cancel` and `tasks/update` act on its tasks; a call from a client that did not
//! declare the extension is refused with -32021 (missing required client capabilities).

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::conformance::text;
use crate::server::{Out, initialize};

const TASKS: &str = "io.modelcontextprotocol/tasks";
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const NAME: &str = "switchboard-fixture-conformance-tasks";
const MISSING_CAPABILITIES: i64 = -32021;
const INVALID_PARAMS: i64 = -32602;
const TTL_MS: u64 = 60_000;
const POLL_INTERVAL_MS: u64 = 200;
/// How long a task works before it completes.
const WORK: Duration = Duration::from_millis(300);

struct Task {
    status: &'static str,
    created_at: String,
    last_updated_at: String,
    result: Option<Value>,
}

impl Task {
    fn terminal(&self) -> bool {
        matches!(self.status, "completed" | "failed" | "cancelled")
    }
}

type Tasks = Arc<Mutex<HashMap<String, Task>>>;

/// The connection's state: its tasks, and the capabilities `initialize` declared.
struct Server {
    out: Out,
    tasks: Tasks,
    next_task: AtomicU64,
    initialize_capabilities: Mutex<Option<Value>>,
}

type Answer = Result<Value, Value>;

fn error(code: i64, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// Serves on stdin/stdout until stdin closes.
pub fn serve() -> i32 {
    let server = Server {
        out: Out::stdout(),
        tasks: Tasks::default(),
        next_task: AtomicU64::new(1),
        initialize_capabilities: Mutex::new(None),
    };
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return 0 };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        // Notifications and answers to nothing this server asked are ignored.
        let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) else {
            continue;
        };
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let answer = match server.handle(method, &params) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        server.out.send(&answer);
    }
    0
}

impl Server {
    fn handle(&self, method: &str, params: &Value) -> Answer {
        let modern = params
            .pointer("/_meta")
            .and_then(|m| m.get(META_PROTOCOL_VERSION));
        let complete = |mut result: Value| {
            if modern.is_some() {
                result["resultType"] = json!("complete");
            }
            Ok(result)
        };
        match method {
            "initialize" => {
                if let Ok(mut declared) = self.initialize_capabilities.lock() {
                    *declared = params.get("capabilities").cloned();
                }
                let mut result = initialize(NAME, params);
                result["capabilities"]["extensions"] = json!({TASKS: {}});
                Ok(result)
            }
            "server/discover" => Ok(json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                "_meta": {META_SERVER_INFO: {"name": NAME, "version": "1.0.0"}}
            })),
            "ping" => complete(json!({})),
            "tools/list" => complete(json!({"tools": [{
                "name": "test_tool_with_task",
                "description": "Asks the user's name, then greets them from a task",
                "inputSchema": {"type": "object", "properties": {}},
                "execution": {"taskSupport": "required"}
            }]})),
            "tools/call" => self.call(params),
            "tasks/get" => {
                let tasks = self.tasks.lock().map_err(|_| error(-32603, "poisoned"))?;
                let (id, task) = find(&tasks, params)?;
                let mut result = json!({
                    "resultType": "complete",
                    "taskId": id,
                    "status": task.status,
                    "createdAt": task.created_at,
                    "lastUpdatedAt": task.last_updated_at,
                    "ttlMs": TTL_MS,
                    "pollIntervalMs": POLL_INTERVAL_MS,
                });
                if let Some(done) = &task.result {
                    result["result"] = done.clone();
                }
                Ok(result)
            }
            "tasks/cancel" => {
                let mut tasks = self.tasks.lock().map_err(|_| error(-32603, "poisoned"))?;
                let id = find(&tasks, params)?.0.to_owned();
                if let Some(task) = tasks.get_mut(&id).filter(|task| !task.terminal()) {
                    task.status = "cancelled";
                    task.last_updated_at = now();
                }
                Ok(json!({"resultType": "complete"}))
            }
            "tasks/update" => {
                let tasks = self.tasks.lock().map_err(|_| error(-32603, "poisoned"))?;
                find(&tasks, params)?;
                Ok(json!({"resultType": "complete"}))
            }
            other => Err(error(-32601, format!("Method not found: {other}"))),
        }
    }

    /// Whether the client declared the tasks extension: in the request's `_meta` (2026-07-28)
    /// or, without it, in `initialize`.
    fn declares_tasks(&self, params: &Value) -> bool {
        let declared = params
            .pointer("/_meta")
            .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
            .cloned()
            .or_else(|| {
                self.initialize_capabilities
                    .lock()
                    .ok()
                    .and_then(|c| c.clone())
            });
        declared
            .and_then(|capabilities| capabilities.pointer("/extensions").cloned())
            .is_some_and(|extensions| extensions.get(TASKS).is_some())
    }

    fn call(&self, params: &Value) -> Answer {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        if name != "test_tool_with_task" {
            return Err(error(INVALID_PARAMS, format!("Unknown tool: {name}")));
        }
        if !self.declares_tasks(params) {
            let mut refusal = error(
                MISSING_CAPABILITIES,
                "test_tool_with_task runs only as a task: the client must declare the io.modelcontextprotocol/tasks extension",
            );
            refusal["data"] = json!({"requiredCapabilities": {"extensions": {TASKS: {}}}});
            return Err(refusal);
        }
        let Some(answer) = params.pointer("/inputResponses/user_name") else {
            return Ok(json!({
                "resultType": "input_required",
                "inputRequests": {"user_name": {"method": "elicitation/create", "params": {
                    "message": "What is your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
                }}},
                "requestState": "test_tool_with_task:round-1"
            }));
        };
        let user = answer
            .pointer("/content/name")
            .and_then(Value::as_str)
            .unwrap_or("stranger")
            .to_owned();
        let id = format!(
            "task-{}-{}",
            std::process::id(),
            self.next_task.fetch_add(1, Ordering::SeqCst)
        );
        let created = now();
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.insert(
                id.clone(),
                Task {
                    status: "working",
                    created_at: created.clone(),
                    last_updated_at: created.clone(),
                    result: None,
                },
            );
        }
        let (tasks, task) = (self.tasks.clone(), id.clone());
        std::thread::spawn(move || {
            std::thread::sleep(WORK);
            if let Ok(mut tasks) = tasks.lock()
                && let Some(task) = tasks.get_mut(&task).filter(|task| !task.terminal())
            {
                task.status = "completed";
                task.last_updated_at = now();
                task.result = Some(text(format!("Hello, {user}! (from a task)")));
            }
        });
        Ok(json!({
            "resultType": "task",
            "taskId": id,
            "status": "working",
            "createdAt": created,
            "lastUpdatedAt": created,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS
        }))
    }
}

/// The task `params.taskId` names; -32602 when there is none.
fn find<'t>(
    tasks: &'t HashMap<String, Task>,
    params: &Value,
) -> Result<(&'t str, &'t Task), Value> {
    let id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
    tasks
        .get_key_value(id)
        .map(|(id, task)| (id.as_str(), task))
        .ok_or_else(|| error(INVALID_PARAMS, format!("Unknown task: {id}")))
}

/// Now, as ISO 8601 in UTC with milliseconds.
fn now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    iso8601(since.as_millis() as u64)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (civil-from-days).
fn iso8601(millis: u64) -> String {
    let (days, rest) = (millis / 86_400_000, millis % 86_400_000);
    let (hour, minute) = (rest / 3_600_000, rest / 60_000 % 60);
    let (second, milli) = (rest / 1000 % 60, rest % 1000);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn timestamps_are_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_785_196_799_999), "2026-07-27T23:59:59.999Z");
    }
}
