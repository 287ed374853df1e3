//! Issue 32, MCP tasks across replicas: three real `switchboard serve` replicas on one Redis
//! (one key ring), in front of `switchboard-fixture conformance`, and a 2025-11-25 client
//! that sends each request to the replica the test picks. A task created on one replica is
//! got, listed and awaited (`tasks/result`) on the others, its status changes reach the
//! client's GET stream on another replica, it is cancelled through a third (its call stops
//! on the replica that runs it), a task's question is asked and answered through another
//! replica (2026-07-28 `tasks/update`, 2025-11-25 `tasks/result`'s stream), a session DELETEd on one replica stops its tasks on the others, and when the
//! replica that runs a task is SIGKILLed the others answer it `failed`, saying that replica is
//! gone, within a second. With Redis stopped (`fail_closed`) tasks are refused readably.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::shared_replicas::{self, Replica, next_message};
use support::{fixture, http_client, quoted};
use switchboard_testkit::redis::Redis;

const VERSION: &str = "2025-11-25";

/// `count` replicas on the Redis at `redis`, serving the conformance fixture as `c`, which
/// logs the calls it saw cancelled in `root/cancel.log`.
fn replicas(root: &std::path::Path, redis: &str, count: usize) -> Vec<Replica> {
    let rest = format!(
        "[servers.c]\ncommand = {}\nargs = [\"conformance\"]\nenv = {{ SWITCHBOARD_FIXTURE_CANCEL_LOG = {} }}\n",
        quoted(&fixture()),
        quoted(&root.join("cancel.log").display().to_string())
    );
    shared_replicas::start(root, redis, count, &rest)
}

/// A Redis and `count` replicas on it in a temporary directory (dropped in this order: the
/// replicas first).
fn deployment(count: usize) -> (Vec<Replica>, tempfile::TempDir, Redis) {
    let redis = Redis::start();
    let root = tempfile::tempdir().expect("tempdir");
    (replicas(root.path(), &redis.url(), count), root, redis)
}

/// A 2025-11-25 request to `url` (of `session`, none for `initialize`): the response.
async fn send(url: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http_client()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .json(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("send")
}

/// The JSON-RPC answer in a response body (plain JSON, or the answer on an SSE stream).
fn answer_in(body: &str) -> Value {
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str(trimmed).unwrap_or_else(|e| panic!("{e}: {body}"));
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("result").is_some() || message.get("error").is_some())
        .unwrap_or_else(|| panic!("no answer in: {body}"))
}

/// A new session on `url`: its id.
async fn open(url: &str) -> String {
    open_with(url, json!({})).await
}

/// A new session on `url` declaring `capabilities`: its id.
async fn open_with(url: &str, capabilities: Value) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": capabilities,
        "clientInfo": {"name": "e2e-shared-tasks", "version": "1"}}});
    let response = send(url, None, &initialize).await;
    assert_eq!(response.status().as_u16(), 200, "initialize");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(
        send(url, Some(&session), &initialized)
            .await
            .status()
            .is_success()
    );
    session
}

/// `method` on replica `url` for `session`: the whole answer (`result` or `error`).
async fn rpc(url: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = send(url, Some(session), &body).await;
    answer_in(&response.text().await.expect("body"))
}

/// `tasks/get` of `id` on replica `url` for `session`: the whole answer.
async fn task(url: &str, session: &str, id: &str) -> Value {
    rpc(url, session, "tasks/get", json!({"taskId": id})).await
}

/// Starts `c__slow_compute` for `seconds` as a task on `url`: its id.
async fn start(url: &str, session: &str, seconds: u64, label: &str) -> String {
    let created = rpc(
        url,
        session,
        "tools/call",
        json!({"name": "c__slow_compute", "arguments": {"seconds": seconds, "label": label},
               "task": {"ttl": 60000}}),
    )
    .await;
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    created["result"]["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

#[tokio::test]
async fn a_task_is_got_listed_awaited_and_cancelled_on_replicas_that_do_not_run_it() {
    let (replicas, root, _redis) = deployment(3);
    let url = |n: usize| replicas[n].gateway.url.clone();
    let session = open(&url(0)).await;

    // The client's GET stream is on replica 2; the task runs on replica 0.
    let mut stream = http_client()
        .get(url(2))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("GET");
    assert_eq!(stream.status().as_u16(), 200, "the GET stream opens");

    let sent = Instant::now();
    let id = start(&url(0), &session, 2, "shared").await;
    let got = rpc(&url(1), &session, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "working", "{got}");
    assert_eq!(got["result"]["taskId"], id.as_str(), "{got}");

    let listed = rpc(&url(2), &session, "tasks/list", json!({})).await;
    let tasks = listed["result"]["tasks"].as_array().expect("tasks");
    assert!(
        tasks.iter().any(|task| task["taskId"] == id.as_str()),
        "{listed}"
    );
    // Another session (another caller) sees nothing of it, on any replica.
    let stranger = open(&url(1)).await;
    let refused = rpc(&url(1), &stranger, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let listed = rpc(&url(0), &stranger, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");

    let result = rpc(&url(1), &session, "tasks/result", json!({"taskId": id})).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "computed shared after 2s",
        "{result}"
    );
    assert!(
        sent.elapsed() >= Duration::from_secs(2),
        "it waited for the end"
    );
    let got = rpc(&url(2), &session, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");

    // The stream on replica 2 heard the task end on replica 0.
    let mut buffer = String::new();
    let mut heard = Vec::new();
    while let Some(message) = next_message(&mut stream, &mut buffer, Duration::from_secs(2)).await {
        if message["method"] == "notifications/tasks/status"
            && message["params"]["taskId"] == id.as_str()
        {
            heard.push(message["params"]["status"].clone());
            if message["params"]["status"] == "completed" {
                break;
            }
        }
    }
    assert_eq!(heard.last(), Some(&json!("completed")), "heard: {heard:?}");

    // Cancelled through replica 2: replica 0 stops its call, every replica says cancelled.
    let doomed = start(&url(0), &session, 30, "doomed").await;
    let cancelled = rpc(&url(2), &session, "tasks/cancel", json!({"taskId": doomed})).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    for n in 0..3 {
        let got = rpc(&url(n), &session, "tasks/get", json!({"taskId": doomed})).await;
        assert_eq!(got["result"]["status"], "cancelled", "replica {n}: {got}");
    }
    let again = rpc(&url(1), &session, "tasks/cancel", json!({"taskId": doomed})).await;
    assert_eq!(again["error"]["code"], -32602, "an ended task: {again}");
    let log = root.path().join("cancel.log");
    let logged = support::wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|text| text.lines().any(|line| line == "cancelled doomed"))
    });
    assert!(
        logged.is_some(),
        "the call upstream was not cancelled: {:?}",
        std::fs::read_to_string(&log).ok()
    );
}

/// A stateless 2026-07-28 request declaring the tasks extension and elicitation: the whole
/// answer.
async fn modern(url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (_, text, _) = support::post(url, None, body).await;
    answer_in(&text)
}

/// A modern `c__slow_compute` task call on `url`: the whole answer.
async fn compute(url: &str, seconds: u64, label: &str) -> Value {
    let params =
        json!({"name": "c__slow_compute", "arguments": {"seconds": seconds, "label": label}});
    modern(url, "tools/call", params).await
}

fn task_id(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    answer["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

/// Polls the modern `tasks/get` of `id` on `url` until `done` says so (10 s at most).
async fn poll(url: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let got = modern(url, "tasks/get", json!({"taskId": id})).await;
        if done(&got["result"]) {
            return got["result"].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_question_of_a_task_is_seen_and_answered_through_another_replica() {
    let (replicas, _root, _redis) = deployment(2);
    let url = |n: usize| replicas[n].gateway.url.clone();
    let params = json!({"name": "c__confirm_delete", "arguments": {"filename": "notes.txt"}});
    let id = task_id(&modern(&url(0), "tools/call", params).await);

    let asking = poll(&url(1), &id, |t| t["status"] == "input_required").await;
    let requests = asking["inputRequests"].as_object().expect("inputRequests");
    let (key, request) = requests.iter().next().expect("one question");
    assert!(
        request.to_string().contains("Delete notes.txt?"),
        "{asking}"
    );
    // Answered through replica 1, to the call waiting on replica 0.
    let mut update = json!({"taskId": id, "inputResponses": {}});
    update["inputResponses"][key.as_str()] =
        json!({"action": "accept", "content": {"confirm": true}});
    let updated = modern(&url(1), "tasks/update", update).await;
    assert!(updated.get("result").is_some(), "{updated}");
    let done = poll(&url(1), &id, |t| t["status"] == "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.starts_with("notes.txt deleted"), "{done}");
}

#[tokio::test]
async fn a_legacy_task_result_on_another_replica_relays_the_question_and_its_answer() {
    let (replicas, _root, _redis) = deployment(2);
    let url = |n: usize| replicas[n].gateway.url.clone();
    let session = open_with(&url(0), json!({"elicitation": {}})).await;
    let created = rpc(
        &url(0),
        &session,
        "tools/call",
        json!({"name": "c__confirm_delete", "arguments": {"filename": "notes.txt"},
               "task": {"ttl": 60000}}),
    )
    .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let started = Instant::now();
    while task(&url(1), &session, &id).await["result"]["status"] != "input_required" {
        assert!(started.elapsed() < Duration::from_secs(10), "never asked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // tasks/result on replica 1 asks the question over its own stream...
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": {"taskId": id}});
    let mut stream = send(&url(1), Some(&session), &body).await;
    let mut buffer = String::new();
    let asked = next_message(&mut stream, &mut buffer, Duration::from_secs(5))
        .await
        .expect("the question");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{asked}"
    );
    // ... and the client's answer reaches the call on replica 0.
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"confirm": true}}});
    let posted = send(&url(1), Some(&session), &answer).await;
    assert_eq!(posted.status().as_u16(), 202, "the answer is taken");
    let result = next_message(&mut stream, &mut buffer, Duration::from_secs(10))
        .await
        .expect("the task's result");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.starts_with("notes.txt deleted"), "{result}");
}

#[tokio::test]
async fn a_session_ended_on_one_replica_stops_its_tasks_on_the_others() {
    let (replicas, root, _redis) = deployment(2);
    let url = |n: usize| replicas[n].gateway.url.clone();
    let session = open(&url(0)).await;
    start(&url(1), &session, 30, "orphaned-by-delete").await;
    let ended = http_client()
        .delete(url(0))
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("DELETE");
    assert!(ended.status().is_success(), "DELETE: {}", ended.status());
    let log = root.path().join("cancel.log");
    let logged = support::wait_for(Duration::from_secs(2), || {
        std::fs::read_to_string(&log).ok().filter(|text| {
            text.lines()
                .any(|line| line == "cancelled orphaned-by-delete")
        })
    });
    assert!(
        logged.is_some(),
        "the task's call on replica 1 still runs: {:?}",
        std::fs::read_to_string(&log).ok()
    );
}

#[tokio::test]
async fn with_redis_down_tasks_fail_closed_readably_and_are_shared_again_once_it_is_back() {
    let (replicas, _root, mut redis) = deployment(2);
    let url = |n: usize| replicas[n].gateway.url.clone();
    // Stateless 2026-07-28 requests: no session for Redis to vouch for, so what is refused
    // below is refused by the tasks themselves.
    let theirs = task_id(&compute(&url(1), 30, "theirs").await);
    let own = task_id(&compute(&url(0), 30, "own").await);
    let brief = task_id(&compute(&url(0), 1, "brief").await);

    redis.stop();
    // Replica 0 cannot read the task replica 1 runs, and says why
    // (`redis_unavailable = "fail_closed"`).
    let got = modern(&url(0), "tasks/get", json!({"taskId": theirs})).await;
    assert_eq!(got["error"]["code"], -32603, "{got}");
    let message = got["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("cannot be read now") && message.contains("redis"),
        "{got}"
    );
    // A task the others could not see is not started.
    let refused = compute(&url(0), 1, "down").await;
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("cannot be shared with the other replicas now"),
        "{refused}"
    );
    // Its own replica still answers about the task it runs.
    let held = modern(&url(0), "tasks/get", json!({"taskId": own})).await;
    assert_eq!(held["result"]["status"], "working", "{held}");

    // `brief` ends while Redis is down: its end is written once Redis is back.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    redis.restart();
    let started = Instant::now();
    let again = loop {
        let answer = compute(&url(0), 0, "back").await;
        if answer["result"]["taskId"].is_string() {
            break task_id(&answer);
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let done = poll(&url(1), &brief, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "computed brief after 1s",
        "{done}"
    );
    let done = poll(&url(1), &again, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "computed back after 0s",
        "{done}"
    );
}

#[tokio::test]
async fn a_task_whose_replica_is_killed_is_failed_on_the_others_within_a_second() {
    let (mut replicas, _root, _redis) = deployment(3);
    let urls: Vec<String> = replicas.iter().map(|r| r.gateway.url.clone()).collect();
    let session = open(&urls[0]).await;
    let id = start(&urls[1], &session, 30, "orphan").await;
    let got = task(&urls[0], &session, &id).await;
    assert_eq!(got["result"]["status"], "working", "{got}");

    // A client waits on replica 2 for the task's result when its replica dies.
    let waiting = {
        let url = urls[2].clone();
        let session = session.clone();
        let id = id.clone();
        tokio::spawn(async move {
            let answer = rpc(&url, &session, "tasks/result", json!({"taskId": id})).await;
            (answer, Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let owner = &mut replicas[1].gateway.child;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(owner.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
    let killed = Instant::now();
    let _ = owner.wait();

    let failed = loop {
        let got = task(&urls[0], &session, &id).await;
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "still working 1 s after its replica died: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let within = killed.elapsed();
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    let message = failed["result"]["statusMessage"].as_str().unwrap_or("");
    assert!(
        message.starts_with("the replica that ran this task (") && message.ends_with(") is gone"),
        "{failed}"
    );
    assert!(within < Duration::from_secs(1), "failed after {within:?}");
    eprintln!("the task read failed {within:?} after its replica's SIGKILL");
    // Every replica answers the same.
    let other = task(&urls[2], &session, &id).await;
    assert_eq!(other["result"]["status"], "failed", "{other}");
    assert_eq!(other["result"]["statusMessage"], message, "{other}");

    let (answer, at) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("tasks/result answered")
        .expect("joined");
    eprintln!(
        "the waiting tasks/result answered {:?} after the SIGKILL",
        at.duration_since(killed)
    );
    assert!(
        at.duration_since(killed) < Duration::from_secs(1),
        "tasks/result answered {:?} after the kill",
        at.duration_since(killed)
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("is gone")),
        "{answer}"
    );
}
