//! Issue 32, owner-bound streams across replicas: real `switchboard serve` replicas on one
//! key ring and one Redis, and a client that sends each request to the replica the test
//! picks. A server request relayed mid-call (the conformance fixture's `test_sampling` asks
//! `sampling/createMessage`) is answered by a POST to another replica than the one running
//! the call: the answer is routed to the owner and the call finishes with it; with the owner
//! SIGKILLed, the POST is refused within a second saying why. A GET stream opened on a
//! replica that did not mint the session hears `tools/list_changed` from a change made on
//! the replica that did. Behind a real HAProxy (round robin per request) the official Python
//! SDK client answers elicitations mid-call, wherever its answers land.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::haproxy::Haproxy;
use support::live::save_like_an_editor;
use support::shared_replicas::{self, Replica, initialize, legacy, next_message, send};
use support::{fixture, python_client, quoted};
use switchboard_testkit::redis::Redis;

/// How long a test waits for what should come.
const WITHIN: Duration = Duration::from_secs(15);

/// Two replicas serving the conformance fixture as server `c`.
fn replicas(root: &std::path::Path, redis: &str) -> Vec<Replica> {
    replicas_of(root, redis, 2)
}

fn replicas_of(root: &std::path::Path, redis: &str, count: usize) -> Vec<Replica> {
    let rest = format!(
        "[servers.c]\ncommand = {}\nargs = [\"conformance\"]\n",
        quoted(&fixture())
    );
    shared_replicas::start(root, redis, count, &rest)
}

/// Starts `c__test_sampling` in `session` on `url`: the call's stream, its buffer, and the
/// sampling request it relayed.
async fn sampling_call(url: &str, session: &str) -> (reqwest::Response, String, Value) {
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "c__test_sampling", "arguments": {"prompt": "hi"}}});
    let mut stream = send("POST", url, Some(session), Some(call)).await;
    assert_eq!(stream.status().as_u16(), 200);
    let mut buffer = String::new();
    let asked = next_message(&mut stream, &mut buffer, WITHIN)
        .await
        .expect("the relayed request");
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    (stream, buffer, asked)
}

fn sampled(asked: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": text}, "model": "e2e"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_answer_posted_to_another_replica_reaches_the_call_that_asked() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url());
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);
    let session = initialize(a, json!({"sampling": {}})).await;
    let (mut stream, mut buffer, asked) = sampling_call(a, &session).await;
    let id = asked["id"].as_str().expect("a string id");
    assert!(
        id.starts_with("sb-") && id.matches('-').count() == 2,
        "the id names the replica that asked: {id}"
    );
    let started = Instant::now();
    let (status, body, _) =
        legacy("POST", b, Some(&session), Some(sampled(&asked, "routed"))).await;
    assert_eq!(status, 202, "{body}");
    let answer = next_message(&mut stream, &mut buffer, WITHIN)
        .await
        .expect("the call's answer");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert_eq!(text, "LLM response: routed", "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered without waiting for a timeout: {:?}",
        started.elapsed()
    );
    // Only the session's own asker gets its answers carried: another agent's POST is refused.
    let (status, body, _) = legacy(
        "POST",
        &b.replace("/mcp", "/mcp/agents/dev"),
        Some(&session),
        Some(sampled(&asked, "x")),
    )
    .await;
    assert_ne!(status, 202, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_answer_for_a_killed_owner_is_refused_within_a_second() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut replicas = replicas(dir.path(), &redis.url());
    let b = replicas[1].gateway.url.clone();
    let a = replicas[0].gateway.url.clone();
    let session = initialize(&a, json!({"sampling": {}})).await;
    let (_stream, _buffer, asked) = sampling_call(&a, &session).await;
    let owner = &mut replicas[0].gateway.child;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(owner.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
    owner.wait().expect("reaped");
    let killed = Instant::now();
    loop {
        let (status, body, _) =
            legacy("POST", &b, Some(&session), Some(sampled(&asked, "late"))).await;
        if status == 410 {
            assert!(body.contains("is gone"), "{body}");
            break;
        }
        assert_eq!(status, 202, "{body}");
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "still accepted a second after the owner died"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(killed.elapsed() < Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_get_stream_on_a_replica_that_did_not_mint_the_session_hears_list_changed() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas(dir.path(), &redis.url());
    let (a, b) = (&replicas[0].gateway.url, &replicas[1].gateway.url);
    let session = initialize(a, json!({})).await;
    let mut stream = send("GET", b, Some(&session), None).await;
    assert_eq!(
        stream.status().as_u16(),
        200,
        "B adopts the session for its GET"
    );
    // A server added on A by a hand edit: A's tools change, and B hears it on the bus.
    let config = &replicas[0].config;
    let mut text = std::fs::read_to_string(config).expect("config");
    text.push_str(&format!(
        "\n[servers.d]\ncommand = {}\nargs = [\"echo\"]\n",
        quoted(&fixture())
    ));
    save_like_an_editor(config, &text);
    let mut buffer = String::new();
    let heard = next_message(&mut stream, &mut buffer, WITHIN)
        .await
        .expect("a notification on B's stream");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn behind_haproxy_the_python_sdk_answers_questions_asked_mid_call_wherever_they_land() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let replicas = replicas_of(dir.path(), &redis.url(), 3);
    let authorities: Vec<String> = replicas.iter().map(|r| r.gateway.authority()).collect();
    let haproxy = Haproxy::start(dir.path(), &authorities);
    let url = format!("http://{}/mcp", haproxy.address);
    redis.cli(&["CONFIG", "RESETSTAT"]);
    for round in 0..3 {
        let url = url.clone();
        let started = Instant::now();
        let result = tokio::task::spawn_blocking(move || {
            python_client(&[
                "--era",
                "legacy",
                "--http",
                &url,
                "--elicit",
                "accept",
                "call",
                "c__test_elicitation",
                r#"{"message": "Proceed?"}"#,
            ])
        })
        .await
        .expect("the client");
        let text = result["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            text.starts_with("User response: action=accept"),
            "round {round}: {result}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "round {round} took {:?}: an answer waited for a timeout",
            started.elapsed()
        );
    }
    // Round robin sent answers to other replicas than the calls', which routed them (one
    // script each: nothing else here runs one).
    let stats = redis.cli(&["INFO", "commandstats"]);
    let scripts: u64 = stats
        .lines()
        .filter_map(|line| {
            let calls = line
                .strip_prefix("cmdstat_evalsha:calls=")
                .or_else(|| line.strip_prefix("cmdstat_eval:calls="))?;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum();
    assert!(scripts >= 1, "no answer was routed: {stats}");
}
