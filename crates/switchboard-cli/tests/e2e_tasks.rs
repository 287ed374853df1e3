//! Tasks end to end, against the real gateway over HTTP in front of `switchboard-fixture
//! conformance` (whose tools the gateway runs as tasks itself): a 2025-11-25 session's task
//! (`params.task`, `tasks/get`, `tasks/result`, `tasks/list`); cancelling a task cancels its
//! call upstream and the ledger records it cancelled; the 2026-07-28 tasks extension
//! (`resultType: "task"`, `tasks/get` inlining the result, a question answered by
//! `tasks/update`); a task is invisible to another agent (the same -32602 as a made-up id);
//! an operator approval keeps the task waiting (`input_required` to a 2025-11-25 client,
//! `working` with the wait in its status message to a 2026-07-28 one) until the operator
//! approves with
//! `switchboard approvals approve`, from a client that polls with fresh requests; and a
//! gateway that stops cancels its running tasks' calls, on record.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A config in front of the conformance fixture (tools unprefixed), with `extra` before the
/// servers and `server_extra` in the server's table.
fn tasks_config(dir: &Path, extra: &str, server_extra: &str) -> PathBuf {
    write_config(
        dir,
        &format!(
            "[gateway]\nprefix_tools = false\nledger = {}\n{extra}\n[servers.conformance]\ncommand = {}\nargs = [\"conformance\"]\n{server_extra}",
            quoted(&dir.join("ledger.db").display().to_string()),
            quoted(&fixture())
        ),
    )
}

/// The JSON-RPC answer to request `id` in a response body: plain JSON, or the matching
/// message of an SSE stream.
fn answer_in(body: &str, id: &Value) -> Value {
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {body}"));
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| {
            &message["id"] == id
                && (message.get("result").is_some() || message.get("error").is_some())
        })
        .unwrap_or_else(|| panic!("no answer to request {id} in: {body}"))
}

/// A 2025-11-25 client over HTTP: one session (`Mcp-Session-Id`), raw JSON-RPC.
struct LegacySession {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
    session: String,
    next_id: i64,
}

impl LegacySession {
    async fn open(url: &str, token: Option<&str>) -> Self {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let mut this = Self {
            http,
            url: url.to_owned(),
            token: token.map(str::to_owned),
            session: String::new(),
            next_id: 1,
        };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "e2e-tasks", "version": "1"}}});
        let response = this.send(&initialize).await;
        assert_eq!(response.status().as_u16(), 200, "initialize");
        this.session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("the gateway opens a session")
            .to_owned();
        let body = response.text().await.expect("body");
        let answer = answer_in(&body, &json!(0));
        assert!(
            answer["result"]["capabilities"]["tasks"].is_object(),
            "the gateway announces tasks: {answer}"
        );
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = this.send(&initialized).await;
        assert!(response.status().is_success(), "initialized");
        this
    }

    async fn send(&self, body: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(body);
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("send")
    }

    /// Sends one request and returns the whole answer (`result` or `error`).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.send(&body).await;
        let text = response.text().await.expect("body");
        answer_in(&text, &id)
    }

    /// Sends one request that must succeed and returns its result.
    async fn result(&mut self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params).await;
        assert!(answer.get("result").is_some(), "{method} failed: {answer}");
        answer["result"].clone()
    }
}

/// Starts a modern `tools/call` that must become a task; returns the task's id.
async fn start_modern_task(
    url: &str,
    token: Option<&str>,
    elicitation: bool,
    params: serde_json::Value,
) -> String {
    let created = modern(url, token, elicitation, "tools/call", params).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

/// A stateless 2026-07-28 request that declares the tasks extension (and elicitation when
/// `elicitation`), with the version and routing headers; returns the whole answer.
async fn modern(
    url: &str,
    token: Option<&str>,
    elicitation: bool,
    method: &str,
    mut params: Value,
) -> Value {
    let mut capabilities = json!({"extensions": {TASKS_EXTENSION: {}}});
    if elicitation {
        capabilities["elicitation"] = json!({});
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (status, text, _) = post(url, token, body).await;
    assert!(
        status == 200 || status == 400 || status == 404,
        "{method}: HTTP {status}: {text}"
    );
    answer_in(&text, &json!(1))
}

/// Polls the modern `tasks/get` of `id` until `done` says so, or fails after `limit`.
async fn poll_modern(
    url: &str,
    token: Option<&str>,
    id: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let answer = modern(url, token, false, "tasks/get", json!({"taskId": id})).await;
        let result = answer["result"].clone();
        assert!(result.is_object(), "tasks/get {id}: {answer}");
        if done(&result) {
            return result;
        }
        assert!(
            started.elapsed() < limit,
            "task {id} did not get there within {limit:?}: {result}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_legacy_session_runs_a_tool_as_a_task_and_fetches_its_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tasks_config(dir.path(), "", "");
    let gateway = HttpGateway::start(&config, &[]);
    let mut client = LegacySession::open(&gateway.url, None).await;

    let sent = Instant::now();
    let created = client
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "answer"},
                "task": {"ttl": 60000}}),
        )
        .await;
    let took = sent.elapsed();
    let task = &created["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000, "{created}");
    // At once: before the call's second of work (with room for a loaded machine).
    assert!(
        took < Duration::from_millis(900),
        "the task came back after {took:?}, not at once"
    );
    let id = task["taskId"].as_str().expect("taskId").to_owned();

    let got = client.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["taskId"], id.as_str(), "{got}");
    assert_eq!(got["status"], "working", "{got}");

    let result = client.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(text_of(&result), "computed answer after 1s", "{result}");
    assert_eq!(
        result["_meta"][RELATED_TASK]["taskId"],
        id.as_str(),
        "{result}"
    );
    assert!(
        sent.elapsed() >= Duration::from_secs(1),
        "tasks/result waits for the end"
    );

    let listed = client.result("tasks/list", json!({})).await;
    let tasks = listed["tasks"].as_array().expect("tasks");
    let entry = tasks
        .iter()
        .find(|t| t["taskId"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} is not listed: {listed}"));
    assert_eq!(entry["status"], "completed", "{listed}");
}

#[tokio::test]
async fn cancelling_a_task_cancels_its_call_upstream_and_in_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("cancel.log");
    let config = tasks_config(
        dir.path(),
        "",
        &format!(
            "env = {{ SWITCHBOARD_FIXTURE_CANCEL_LOG = {} }}\n",
            quoted(&log.display().to_string())
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let label = format!("doomed-{}", std::process::id());
    let mut client = LegacySession::open(&gateway.url, None).await;
    let created = client
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": label},
                "task": {"ttl": 60000}}),
        )
        .await;
    let id = created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    assert_eq!(created["task"]["status"], "working", "{created}");

    let cancelled = client.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let got = client.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "cancelled", "{got}");
    // A task that ended cannot be cancelled again (2025-11-25).
    let again = client.request("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");

    // The upstream call was cancelled: the fixture says so in its log.
    let expected = format!("cancelled {label}");
    let logged = wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|text| text.lines().any(|line| line == expected))
    });
    assert!(
        logged.is_some(),
        "the fixture never logged {expected:?}: {:?}",
        std::fs::read_to_string(&log).ok()
    );

    // The ledger records the call as cancelled.
    let row = ledger_row(&config, &label).await;
    assert_eq!(row["outcome"], "cancelled", "{row}");
}

/// The ledger row of the `slow_compute` call labelled `label`, once it is recorded.
async fn ledger_row(config: &Path, label: &str) -> Value {
    let started = Instant::now();
    loop {
        let rows = audit_rows(config);
        let row =
            rows.as_array().expect("rows").iter().find(|row| {
                row["exposed"] == "slow_compute" && row["args_redacted"]["label"] == label
            });
        if let Some(row) = row {
            return row.clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the call labelled {label} is not in the ledger: {rows}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Tasks live in memory: a gateway that stops cancels the calls of its running tasks, and
/// the ledger records them cancelled.
#[tokio::test]
async fn a_stopping_gateway_cancels_running_tasks_on_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tasks_config(dir.path(), "", "");
    let mut gateway = HttpGateway::start(&config, &[]);
    let label = format!("interrupted-{}", std::process::id());
    let mut client = LegacySession::open(&gateway.url, None).await;
    let created = client
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": label},
                "task": {}}),
        )
        .await;
    assert_eq!(created["task"]["status"], "working", "{created}");
    let status = gateway.terminate();
    assert!(status.success(), "the gateway stops cleanly: {status}");
    let row = ledger_row(&config, &label).await;
    assert_eq!(row["outcome"], "cancelled", "{row}");
}

#[tokio::test]
async fn a_modern_client_gets_tasks_it_polls_and_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tasks_config(dir.path(), "", "");
    let gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.as_str();

    // A tool that supports tasks becomes one, at once.
    let sent = Instant::now();
    let created = modern(
        url,
        None,
        false,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "modern"}}),
    )
    .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    assert!(
        task["ttlMs"].is_u64() || task["ttlMs"].is_null(),
        "{created}"
    );
    assert!(task["pollIntervalMs"].is_u64(), "{created}");
    // Working, and back before the tool's one second could have passed: not waited for.
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "the task came back after {:?}, not at once",
        sent.elapsed()
    );
    let id = task["taskId"].as_str().expect("taskId").to_owned();
    let done = poll_modern(url, None, &id, Duration::from_secs(10), |t| {
        t["status"] == "completed"
    })
    .await;
    assert_eq!(
        text_of(&done["result"]),
        "computed modern after 1s",
        "{done}"
    );

    // A tool that does not support tasks is answered at once, even when tasks are declared.
    let greeted = modern(
        url,
        None,
        false,
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "Ada"}}),
    )
    .await;
    assert_eq!(text_of(&greeted["result"]), "Hello, Ada!", "{greeted}");

    // A question of the tool makes the task input_required until tasks/update answers it.
    let id = start_modern_task(
        url,
        None,
        true,
        json!({"name": "confirm_delete", "arguments": {"filename": "notes.txt"}}),
    )
    .await;
    let asking = poll_modern(url, None, &id, Duration::from_secs(10), |t| {
        t["status"] == "input_required"
    })
    .await;
    let requests = asking["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{asking}");
    let (key, request) = requests.iter().next().expect("one question");
    assert_eq!(request["method"], "elicitation/create", "{asking}");
    assert_eq!(
        request["params"]["message"], "Delete notes.txt?",
        "{asking}"
    );
    let mut responses = serde_json::Map::new();
    responses.insert(
        key.clone(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    let updated = modern(
        url,
        None,
        true,
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses}),
    )
    .await;
    assert_eq!(updated["result"]["resultType"], "complete", "{updated}");
    let done = poll_modern(url, None, &id, Duration::from_secs(10), |t| {
        t["status"] == "completed"
    })
    .await;
    let text = text_of(&done["result"]);
    assert!(text.starts_with("notes.txt deleted"), "{done}");
    assert!(done.get("inputRequests").is_none(), "{done}");
}

#[tokio::test]
async fn a_task_is_invisible_to_another_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.json");
    let config = tasks_config(
        dir.path(),
        &format!(
            "token_file = {}\n\n[agents.alice]\n\n[agents.bob]\n",
            quoted(&tokens.display().to_string())
        ),
        "",
    );
    let create = |agent: &str| create_token(&config, agent);
    let alice = create("alice");
    let bob = create("bob");
    let admin = dir.path().join("admin.json").display().to_string();
    let gateway = HttpGateway::start(&config, &["--admin-file", &admin]);
    let url = gateway.url.as_str();

    let id = start_modern_task(
        url,
        Some(&alice),
        false,
        json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": "alice's"}}),
    )
    .await;
    let made_up = "0123456789abcdef0123456789abcdef";

    for method in ["tasks/get", "tasks/cancel"] {
        let unknown = modern(url, Some(&bob), false, method, json!({"taskId": made_up})).await;
        assert_eq!(unknown["error"]["code"], -32602, "{method}: {unknown}");
        let foreign = modern(url, Some(&bob), false, method, json!({"taskId": id})).await;
        assert_eq!(
            foreign["error"]["code"], unknown["error"]["code"],
            "{method} of another agent's task: {foreign}"
        );
        assert_eq!(
            foreign["error"]["message"]
                .as_str()
                .map(|m| m.replace(&id, made_up)),
            unknown["error"]["message"].as_str().map(str::to_owned),
            "{method}: another agent's task reads like one that does not exist"
        );
    }
    // Bob's legacy session neither lists nor reaches it either.
    let mut bobs = LegacySession::open(url, Some(&bob)).await;
    let listed = bobs.result("tasks/list", json!({})).await;
    assert!(
        !listed.to_string().contains(&id),
        "bob lists alice's task: {listed}"
    );
    let got = bobs.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");

    // Alice still sees it running, and may cancel it.
    let still = poll_modern(url, Some(&alice), &id, Duration::from_secs(1), |_| true).await;
    assert_eq!(still["status"], "working", "{still}");
    let cancelled = modern(
        url,
        Some(&alice),
        false,
        "tasks/cancel",
        json!({"taskId": id}),
    )
    .await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let ended = poll_modern(url, Some(&alice), &id, Duration::from_secs(5), |t| {
        t["status"] == "cancelled"
    })
    .await;
    assert!(ended.get("result").is_none(), "{ended}");
}

/// A modern request has no session: an `Mcp-Session-Id` it carries (here a legacy session's
/// of the same agent) is not checked, so it reaches nothing that session keeps.
#[tokio::test]
async fn a_modern_request_with_a_legacy_session_id_reaches_none_of_its_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tasks_config(dir.path(), "", "");
    let gateway = HttpGateway::start(&config, &[]);
    let mut legacy = LegacySession::open(&gateway.url, None).await;
    let created = legacy
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 30, "label": "held"},
                "task": {"ttl": 60000}}),
        )
        .await;
    let id = created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {
        "taskId": id,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities":
                      {"extensions": {TASKS_EXTENSION: {}}}}}});
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tasks/get")
        .header("mcp-name", &id)
        .header("mcp-session-id", &legacy.session)
        .json(&body)
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    let answer = answer_in(&answer, &json!(1));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // The session itself still reaches it.
    let got = legacy.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "working", "{got}");
    legacy.result("tasks/cancel", json!({"taskId": id})).await;
}

#[tokio::test]
async fn an_operator_approval_keeps_the_task_waiting_until_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = tasks_config(
        dir.path(),
        "approval_timeout = \"60s\"\n\n[agents.qa]\napproval = \"always\"\n",
        "",
    );
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let gateway = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_arg]);
    let url = gateway.url.clone();

    // A client without elicitation starts the call as a task and goes away.
    let id = start_modern_task(
        &url,
        None,
        false,
        json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "approved"}}),
    )
    .await;

    // Fresh requests find it waiting for an operator: `working` with the wait in its status
    // message (to a 2026-07-28 client, input_required means questions it must answer).
    let waiting = poll_modern(&url, None, &id, Duration::from_secs(10), |t| {
        t["statusMessage"]
            .as_str()
            .is_some_and(|message| message.contains("operator"))
    })
    .await;
    assert_eq!(waiting["status"], "working", "{waiting}");
    assert!(waiting.get("inputRequests").is_none(), "{waiting}");
    approve_the_one_pending(&config, &admin_arg);

    let done = poll_modern(&url, None, &id, Duration::from_secs(10), |t| {
        t["status"] == "completed"
    })
    .await;
    assert_eq!(
        text_of(&done["result"]),
        "computed approved after 0s",
        "{done}"
    );

    // A 2025-11-25 session's task says input_required while the operator decides.
    let mut client = LegacySession::open(&url, None).await;
    let created = client
        .result(
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "legacy"},
                "task": {}}),
        )
        .await;
    let id = created["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let started = Instant::now();
    loop {
        let got = client.result("tasks/get", json!({"taskId": id})).await;
        if got["status"] == "input_required" {
            let message = got["statusMessage"].as_str().unwrap_or_default();
            assert!(message.contains("operator"), "{got}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    approve_the_one_pending(&config, &admin_arg);
    let result = client.result("tasks/result", json!({"taskId": id})).await;
    assert_eq!(text_of(&result), "computed legacy after 0s", "{result}");
}

/// Approves the one call waiting for an operator (`switchboard approvals approve`).
fn approve_the_one_pending(config: &Path, admin: &str) {
    let listed = run_switchboard(
        config,
        &["approvals", "list", "--json", "--admin-file", admin],
    );
    let pending = stdout_json(&listed);
    let pending = pending.as_array().expect("approvals");
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["tool"], "slow_compute");
    assert_eq!(pending[0]["agent"], "qa");
    let approval = pending[0]["id"].as_str().expect("approval id");
    let approved = run_switchboard(
        config,
        &["approvals", "approve", approval, "--admin-file", admin],
    );
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
}
