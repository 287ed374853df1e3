//! Issue 32, what replicas share through Redis: real `switchboard serve` replicas (each its
//! own directory, ledger and admin file, as on separate machines) on one real Redis. An
//! agent's rate and concurrency cap hold across all of them; with Redis stopped mid-test the
//! configured policy holds (fail_closed refuses saying why, fail_open admits limit/replicas
//! per replica), and once Redis is back the limits are shared again. A change of the tools on
//! one replica reaches a client listening on another as `tools/list_changed`.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::live::{finish, python_in_background, save_like_an_editor, wait_ready};
use support::{
    HttpGateway, call_tool, fixture, quoted, run_switchboard, stdout_json, write_config,
};
use switchboard_testkit::redis::Redis;

/// One replica: its config, its admin file, the running gateway.
struct Replica {
    config: PathBuf,
    admin: String,
    gateway: HttpGateway,
}

/// `count` replicas in their own directories under `root`, with `[shared]` and the agent's
/// `limits` as given, each serving every call as agent `qa`.
fn replicas(root: &Path, count: usize, shared: &str, limits: &str) -> Vec<Replica> {
    (0..count)
        .map(|n| {
            let dir = root.join(format!("replica-{n}"));
            std::fs::create_dir_all(&dir).expect("replica dir");
            let config = write_config(
                &dir,
                &format!(
                    "[gateway]\nledger = \"ledger.db\"\n\n[latency]\ndatabase = \"latency.db\"\n\n\
                     [manager]\ndatabase = \"manager.db\"\nregistries = []\n\n[shared]\n{shared}\n\n\
                     [agents.qa]\nlimits = {limits}\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
                    quoted(&fixture())
                ),
            );
            let admin = dir.join("admin.json").display().to_string();
            let gateway = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin]);
            Replica {
                config,
                admin,
                gateway,
            }
        })
        .collect()
}

/// A Redis and `count` replicas sharing it with `policy`, the agent limited by `limits`.
fn cluster(count: usize, policy: &str, limits: &str) -> (Redis, tempfile::TempDir, Vec<Replica>) {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = format!(
        "redis = {}\nredis_unavailable = \"{policy}\"\nreplicas = 3\ndeployment = \"e2e\"",
        quoted(&redis.url())
    );
    let replicas = replicas(dir.path(), count, &shared, limits);
    (redis, dir, replicas)
}

/// What a call came back as.
#[derive(Debug, PartialEq)]
enum Answer {
    Ok,
    /// Refused by a limit: the tool error's text.
    Refused(String),
}

async fn call(url: &str, id: usize, tool: &str, arguments: Value) -> Answer {
    match call_tool(url, id, tool, arguments).await {
        Ok(()) => Answer::Ok,
        Err(text) => Answer::Refused(text),
    }
}

async fn echo(url: &str, id: usize) -> Answer {
    call(url, id, "fx__echo", json!({"message": "hi"})).await
}

/// Sends `total` echo calls spread round robin over `urls`, `clients` at a time: how many
/// each replica admitted, and every refusal's text.
async fn burst(urls: &[String], total: usize, clients: usize) -> (Vec<usize>, Vec<String>) {
    let mut tasks = tokio::task::JoinSet::new();
    for first in 0..clients {
        let urls = urls.to_vec();
        tasks.spawn(async move {
            let mut answers = Vec::new();
            for i in (first..total).step_by(clients) {
                let replica = i % urls.len();
                answers.push((replica, echo(&urls[replica], i).await));
            }
            answers
        });
    }
    let mut admitted = vec![0; urls.len()];
    let mut refusals = Vec::new();
    while let Some(answers) = tasks.join_next().await {
        for (replica, answer) in answers.expect("a client") {
            match answer {
                Answer::Ok => admitted[replica] += 1,
                Answer::Refused(text) => refusals.push(text),
            }
        }
    }
    (admitted, refusals)
}

fn urls(replicas: &[Replica]) -> Vec<String> {
    replicas.iter().map(|r| r.gateway.url.clone()).collect()
}

/// `switchboard status --json` of a running replica: its `shared_limits`.
fn shared_status(replica: &Replica) -> Value {
    let output = run_switchboard(
        &replica.config,
        &["status", "--json", "--admin-file", &replica.admin],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let status = stdout_json(&output);
    assert!(
        status["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("gateway at")),
        "{status}"
    );
    status["shared_limits"].clone()
}

/// Waits until `replica` reports Redis reachable (`up`) or not.
async fn wait_reachable(replica: &Replica, up: bool) {
    let started = Instant::now();
    while shared_status(replica)["reachable"] != up {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis reachable = {up} within 10 s: {}",
            shared_status(replica)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn assert_rate_refusals(refusals: &[String]) {
    for text in refusals {
        assert!(
            text.contains("rate limited (agent qa), retry after"),
            "a rate refusal: {text}"
        );
    }
}

/// 60 calls a minute (all of them back to back): 240 calls over three replicas (80 each, more
/// than one replica alone would refuse) admit 60, plus
/// the one call a second the rate adds back while they run (the stated tolerance), not 3 × 60.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_one_rate_limit() {
    let (_redis, _dir, replicas) = cluster(3, "fail_closed", "{ per_minute = 60, burst = 60 }");
    let urls = urls(&replicas);
    let started = Instant::now();
    let (admitted, refusals) = burst(&urls, 240, 6).await;
    let elapsed = started.elapsed();
    let total: usize = admitted.iter().sum();
    let tolerance = elapsed.as_secs() as usize + 1;
    assert!(
        (60..=60 + tolerance).contains(&total),
        "admitted {total} ({admitted:?}) of 240 in {elapsed:?}: the limit is 60 + {tolerance}"
    );
    assert_eq!(total + refusals.len(), 240);
    assert_rate_refusals(&refusals);
    assert_eq!(shared_status(&replicas[0])["reachable"], true);
}

/// At most 2 calls in flight for the agent across the replicas: 6 slow calls at once, 2 per
/// replica, run 2 and refuse 4 (each replica alone would have run 2, 6 in all).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_share_one_concurrency_cap() {
    let (_redis, _dir, replicas) = cluster(3, "fail_closed", "{ max_concurrent = 2 }");
    let urls = urls(&replicas);
    // Every replica has its server up before the slow calls start together.
    for url in &urls {
        assert_eq!(echo(url, 0).await, Answer::Ok);
    }
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..6 {
        let url = urls[i % 3].clone();
        calls.spawn(async move { call(&url, i, "fx__sleep", json!({"ms": 2000})).await });
    }
    let mut ran = 0;
    let mut refused = Vec::new();
    while let Some(answer) = calls.join_next().await {
        match answer.expect("a call") {
            Answer::Ok => ran += 1,
            Answer::Refused(text) => refused.push(text),
        }
    }
    assert_eq!(ran, 2, "{refused:?}");
    for text in &refused {
        assert!(text.contains("agent qa: 2 calls in flight"), "{text}");
    }
    // The leases were released: the slots are free again.
    assert_eq!(echo(&urls[1], 7).await, Answer::Ok);
}

/// fail_closed: with Redis stopped, a limited call is refused and says the shared limiter is
/// unreachable; `switchboard status` shows it; once Redis is back, calls run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_down_fail_closed_refuses_readably_and_recovers() {
    let (mut redis, _dir, replicas) =
        cluster(1, "fail_closed", "{ per_minute = 600, burst = 100 }");
    let url = &replicas[0].gateway.url;
    assert_eq!(echo(url, 1).await, Answer::Ok);
    redis.stop();
    let started = Instant::now();
    let Answer::Refused(text) = echo(url, 2).await else {
        panic!("fail_closed refuses while Redis is down");
    };
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused without hanging"
    );
    assert!(
        text.contains("the shared limiter is unreachable (redis at unix:///")
            && text.contains("fail_closed"),
        "{text}"
    );
    let status = shared_status(&replicas[0]);
    assert_eq!(status["reachable"], false, "{status}");
    assert_eq!(status["when_unreachable"], "fail_closed");
    redis.restart();
    wait_reachable(&replicas[0], true).await;
    assert_eq!(echo(url, 3).await, Answer::Ok);
}

/// fail_open: with Redis stopped, each replica admits its share (60/3 = 20) alone; once Redis
/// is back, one replica may again use the whole shared 60 and then the others get nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_down_fail_open_admits_a_share_per_replica_and_sharing_resumes() {
    let (mut redis, _dir, replicas) = cluster(3, "fail_open", "{ per_minute = 60, burst = 60 }");
    let urls = urls(&replicas);
    redis.stop();
    let started = Instant::now();
    let (admitted, refusals) = burst(&urls, 90, 3).await;
    let tolerance = started.elapsed().as_secs() as usize + 1;
    for n in &admitted {
        assert!(
            (20..=20 + tolerance).contains(n),
            "each replica admits 60/3 alone: {admitted:?}"
        );
    }
    assert_rate_refusals(&refusals);
    assert_eq!(shared_status(&replicas[0])["when_unreachable"], "fail_open");

    redis.restart();
    for replica in &replicas {
        wait_reachable(replica, true).await;
    }
    let started = Instant::now();
    let (first, _) = burst(&urls[..1], 80, 2).await;
    let (others, refusals) = burst(&urls[1..], 20, 2).await;
    let tolerance = started.elapsed().as_secs() as usize + 1;
    assert!(
        (60..=60 + tolerance).contains(&first[0]),
        "one replica uses the shared 60, more than its share: {first:?}"
    );
    assert!(
        others.iter().sum::<usize>() <= tolerance,
        "and the others find it used: {others:?}"
    );
    assert_rate_refusals(&refusals);
}

/// A server added on replica 0 (a hand edit of its config) changes its tools only; a client
/// listening on replica 1 still hears `tools/list_changed`, told through Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tools_change_on_one_replica_reaches_listeners_on_another() {
    let (_redis, _dir, replicas) = cluster(2, "fail_closed", "{ per_minute = 600, burst = 100 }");
    // Both serve their tools (their own start-up changes are told before the listener comes).
    for replica in &replicas {
        assert_eq!(echo(&replica.gateway.url, 0).await, Answer::Ok);
    }
    let url = replicas[1].gateway.url.clone();
    let mut listener = python_in_background(&[
        "--era",
        "legacy",
        "--http",
        &url,
        "watch",
        "fx__echo",
        r#"{"message": "hi"}"#,
    ]);
    wait_ready(&mut listener);
    let config = &replicas[0].config;
    let mut text = std::fs::read_to_string(config).expect("config");
    text.push_str(&format!(
        "\n[servers.fy]\ncommand = {}\nargs = [\"echo\"]\n",
        quoted(&fixture())
    ));
    save_like_an_editor(config, &text);
    let heard = tokio::task::spawn_blocking(move || finish(listener))
        .await
        .expect("the listener");
    assert_eq!(heard["notified"], true, "{heard}");
    assert!(
        heard["waited_ms"].as_f64().is_some_and(|ms| ms < 15_000.0),
        "{heard}"
    );
    let after = heard["after"].to_string();
    assert!(
        after.contains("\"fx__echo\"") && !after.contains("fy__"),
        "replica 1's own tools did not change: {after:?}"
    );
}
