//! Issue 32, the result cache the replicas share through Redis: real `switchboard serve`
//! replicas (each its own directory and ledger) on one real Redis, in front of the latency
//! fixture, whose servers append every call they run to one shared log. The same cacheable
//! call sent to both replicas at once runs upstream once; later calls on either replica are
//! served from Redis; another agent's identical call is never served from the first agent's
//! entry.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{HttpGateway, fixture, post, quoted, write_config};
use switchboard_testkit::redis::Redis;

/// `count` replicas under `root` on the Redis at `redis`, agents `qa` and `dev` on their
/// endpoints, the fixture's calls logged to `log`.
fn replicas(root: &Path, redis: &str, log: &Path, count: usize) -> Vec<HttpGateway> {
    let text = format!(
        "[gateway]\nledger = \"ledger.db\"\n\n[latency]\ndatabase = \"latency.db\"\n\n\
         [manager]\ndatabase = \"manager.db\"\nregistries = []\n\n\
         [shared]\nredis = {}\nreplicas = 2\ndeployment = \"cache\"\n\n\
         [agents.qa]\n\n[agents.dev]\n\n\
         [servers.lab]\ncommand = {}\nargs = [\"latency\"]\nenv = {{ FIXTURE_CALL_LOG = {} }}\n\n\
         [servers.lab.tools.cached_quote]\nprobe = false\n",
        quoted(redis),
        quoted(&fixture()),
        quoted(&log.display().to_string()),
    );
    let start = |n: usize| {
        // Each replica in its own directory (its own ledger and stats), as on its own machine.
        let dir = root.join(n.to_string());
        std::fs::create_dir_all(&dir).expect("replica dir");
        HttpGateway::start(&write_config(&dir, &text), &[])
    };
    (0..count).map(start).collect()
}

/// `lab__cached_quote` for `SB`, as `agent` on the replica at `url`: the JSON-RPC result.
async fn quote(url: &str, agent: &str) -> Value {
    let endpoint = url.replace("/mcp", &format!("/mcp/agents/{agent}"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "lab__cached_quote", "arguments": {"symbol": "SB"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, text, _) = post(&endpoint, None, body).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("a JSON answer");
    assert!(answer["result"]["content"].is_array(), "{answer}");
    answer["result"].clone()
}

/// How many times the fixture's servers ran `cached_quote`, across the replicas.
fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| *line == "call cached_quote")
        .count()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

fn shared_hit(result: &Value) -> bool {
    result["_meta"]["switchboard.dev/cache"]["shared"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_run_a_cacheable_call_once_and_never_across_agents() {
    let redis = Redis::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("calls.log");
    let replicas = replicas(dir.path(), &redis.url(), &log, 2);
    let (a, b) = (&replicas[0].url, &replicas[1].url);

    // The same call on both replicas at once (it takes about 200 ms): one run upstream.
    let (first, second) = tokio::join!(quote(a, "qa"), quote(b, "qa"));
    assert_eq!(runs(&log), 1, "{first} / {second}");
    assert_eq!(text(&first), text(&second), "{first} / {second}");
    assert!(
        shared_hit(&first) || shared_hit(&second),
        "one of them waited for the other's answer: {first} / {second}"
    );

    // Later, on either replica: the same answer, no run.
    for url in [a, b] {
        let again = quote(url, "qa").await;
        assert_eq!(text(&again), text(&first), "{again}");
    }
    assert_eq!(runs(&log), 1);

    // Another agent's identical call runs for itself, on both replicas once.
    let (dev_a, dev_b) = tokio::join!(quote(a, "dev"), quote(b, "dev"));
    assert_eq!(runs(&log), 2, "{dev_a} / {dev_b}");
    assert!(
        !shared_hit(&dev_a) || !shared_hit(&dev_b),
        "one of dev's calls ran: {dev_a} / {dev_b}"
    );
}
