//! Issue 32, latency statistics per replica, merged: two real `switchboard serve` replicas
//! (each its own directory and journal) on one PostgreSQL (`[storage] url`), with the
//! `latency` fixture (tools of known latency, ten times faster than life). Calls through A
//! only: B, which never called the tool, lists it in the tier its measured latency fits. Then
//! calls through B too, much slower: `switchboard tools --stats` (a third replica, started
//! afterwards) reports the union of both replicas' samples — quantiles over every call, not
//! an average of each replica's — and each replica saved only the calls it measured. With
//! PostgreSQL stopped calls go on and are measured; once it is back they reach the fleet. A
//! recheck's burst outweighs a stopped replica's older window of the same tool.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

/// A replica's config in `dir` on `postgres`: tiers ten times tighter than the defaults.
fn replica_config(dir: &Path, postgres: &Postgres) -> PathBuf {
    replica_config_with(dir, postgres, "")
}

/// [`replica_config`] with more `[latency]` keys.
fn replica_config_with(dir: &Path, postgres: &Postgres, latency: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("replica dir");
    write_config(
        dir,
        &format!(
            "[gateway]\nledger = \"ledger.db\"\n\n[manager]\ndatabase = \"manager.db\"\n\
             registries = []\n\n[storage]\nurl = {}\nledger_unavailable = \"journal\"\n\n\
             [tiers]\nfast = \"50ms\"\nstandard = \"150ms\"\ndeep = \"400ms\"\n\n\
             [latency]\nmin_samples = 5\n{}\n\
             [servers.lab]\ncommand = {}\nargs = [\"latency\", \"--scale\", \"0.1\"]\n",
            quoted(&postgres.url()),
            latency,
            quoted(&fixture())
        ),
    )
}

/// The tools a replica lists at `/mcp/tiers/deep` (400 ms).
async fn deep_tier(url: &str) -> Vec<String> {
    tier(url, "deep").await
}

/// The tools a replica lists at `/mcp/tiers/NAME`.
async fn tier(url: &str, name: &str) -> Vec<String> {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, text, _) = post(&format!("{url}/tiers/{name}"), None, list).await;
    assert_eq!(status, 200, "{text}");
    let value: Value = serde_json::from_str(&text).expect("a JSON answer");
    value["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// `lab__wait`'s stats once `switchboard tools --stats` reports `samples` of them (10 s at most).
async fn fleet_stats(config: &Path, samples: usize) -> Value {
    let started = Instant::now();
    loop {
        let stats = tool_stats(config, "lab__wait");
        if stats["samples"] == samples {
            return stats;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the fleet's {samples} samples within 10 s: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_calls(url: &str, count: usize, ms: u64) {
    for id in 0..count {
        call_tool(url, id, "lab__wait", json!({"ms": ms}))
            .await
            .unwrap_or_else(|text| panic!("lab__wait ran: {text}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_merge_their_latency_samples_on_postgres() {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let config_a = replica_config(&dir.path().join("a"), &postgres);
    let config_b = replica_config(&dir.path().join("b"), &postgres);
    let migrated = run_bare(&config_a, &["migrate"]);
    let said = String::from_utf8_lossy(&migrated.stdout).into_owned();
    assert!(migrated.status.success(), "{said}");
    assert!(
        said.contains("applied migration 6: latency statistics"),
        "{said}"
    );
    let a = HttpGateway::start(&config_a, &[]);
    let b = HttpGateway::start(&config_b, &[]);

    // `wait` declares nothing: unknown, it fits no tier below 1.5 s, on B as on A.
    assert!(!deep_tier(&b.url).await.contains(&"lab__wait".to_owned()));

    // Six calls of ~100 ms through A only: B lists it in "deep" once it merged them.
    wait_calls(&a.url, 6, 1000).await;
    let measured = Instant::now();
    loop {
        if deep_tier(&b.url).await.contains(&"lab__wait".to_owned()) {
            break;
        }
        assert!(
            measured.elapsed() < Duration::from_secs(10),
            "B never placed lab__wait by A's measurements"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "B placed the tool by A's calls after {:?}",
        measured.elapsed()
    );

    // Two calls of ~400 ms through B. A replica started afterwards reports all eight: the
    // median of the union is A's 100 ms (averaging each replica's p50 would say ~250 ms),
    // and its p99 is B's 400 ms.
    wait_calls(&b.url, 2, 4000).await;
    let stats = fleet_stats(&config_a, 8).await;
    assert_eq!(stats["source"], "measured", "{stats}");
    let p50 = stats["p50_ms"].as_f64().expect("p50");
    let p99 = stats["p99_ms"].as_f64().expect("p99");
    assert!((95.0..200.0).contains(&p50), "p50 of the union: {stats}");
    assert!(p99 >= 390.0, "p99 of the union: {stats}");

    // Each replica saved what it measured, once: A six calls, B two.
    let saved = postgres
        .psql(
            DATABASE,
            "SELECT string_agg(cardinality(latencies_us)::text, ',' \
             ORDER BY cardinality(latencies_us)) \
             FROM latency_windows WHERE tool = 'lab:wait'",
        )
        .expect("the windows");
    assert_eq!(
        saved.trim(),
        "2,6",
        "samples saved per replica (stats: {stats})"
    );

    // PostgreSQL stopped for longer than a housekeeping tick: A goes on serving and measuring
    // (no call waits on the database); once it is back, A's window of the outage is saved
    // and merged.
    postgres.stop().expect("stop PostgreSQL");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let asked = Instant::now();
    wait_calls(&a.url, 1, 1000).await;
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "a call while PostgreSQL is away: {:?}",
        asked.elapsed()
    );
    postgres.resume().expect("resume PostgreSQL");
    fleet_stats(&config_a, 9).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recheck_outweighs_a_stopped_replicas_older_window() {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let config_a = replica_config(&dir.path().join("a"), &postgres);
    let config_b = replica_config_with(
        &dir.path().join("b"),
        &postgres,
        "recheck_after = \"1s\"\nlist_interval = \"1s\"",
    );
    let migrated = run_bare(&config_a, &["migrate"]);
    assert!(migrated.status.success(), "{migrated:?}");

    // A slow spell on A (~100 ms a call: standard, hidden from fast), saved, then A stops.
    let a = HttpGateway::start(&config_a, &[]);
    wait_calls(&a.url, 6, 1000).await;
    let saved = Instant::now();
    while postgres
        .psql(
            DATABASE,
            "SELECT coalesce(sum(cardinality(latencies_us)), 0) FROM latency_windows",
        )
        .expect("the windows")
        .trim()
        != "6"
    {
        assert!(
            saved.elapsed() < Duration::from_secs(10),
            "A saved its window"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(a);

    // B reads A's window, and nobody calls the tool on B: its recheck finds it fast again
    // (a probe waits 0 ms) and places it in fast. It stays there: A's older window no longer
    // counts against that tool on B.
    let b = HttpGateway::start(&config_b, &[]);
    let wait = "lab__wait".to_owned();
    let started = Instant::now();
    while !tier(&b.url, "fast").await.contains(&wait) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "B never rechecked lab__wait into fast"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let promoted = Instant::now();
    while promoted.elapsed() < Duration::from_secs(7) {
        assert!(
            tier(&b.url, "fast").await.contains(&wait),
            "lab__wait left fast again {:?} after its recheck",
            promoted.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
