//! A stdio server run as a pool (`instances = N`), through the library with real child
//! processes (the `switchboard-fixture` binary, built by `cargo build --workspace --bins`):
//! calls reach N distinct processes, each going to the instance with the fewest calls in
//! flight; an instance killed is left out while it restarts and then serves again; and a
//! live change of `instances` starts a new pool beside the old one.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use support::fixture;
use switchboard::live::Action;
use switchboard::{Host, Surface};
use switchboard_core::CallContext;
use switchboard_core::config::{Config, Format, MapEnvironment, Origin};

/// A config of one echo server, `echo`, with `instances` (none: the key left out).
fn config(path: &Path, instances: Option<u8>) -> Config {
    let mut text = format!(
        "[gateway]\ncall_timeout = \"20s\"\nconnect_timeout = \"10s\"\ndrain_timeout = \"5s\"\n\n[servers.echo]\ncommand = {}\nargs = [\"echo\"]\n",
        serde_json::to_string(&fixture()).expect("string")
    );
    if let Some(instances) = instances {
        text.push_str(&format!("instances = {instances}\n"));
    }
    std::fs::write(path, &text).expect("write config");
    Config::parse(
        &text,
        Origin::from(path),
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid config")
}

async fn started(dir: &Path, instances: Option<u8>) -> Host {
    let path = dir.join("switchboard.toml");
    let host = Host::from_config(&config(&path, instances)).expect("host");
    host.ready().await;
    host
}

async fn call(host: &Host, tool: &str, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let outcome = host
        .call(&CallContext::default(), tool, arguments)
        .await
        .unwrap_or_else(|error| panic!("{tool}: {error}"));
    assert!(!outcome.is_error, "{tool}: {outcome:?}");
    outcome.content[0]["text"]
        .as_str()
        .expect("a text block")
        .to_owned()
}

/// The process that answers the next call.
async fn pid(host: &Host) -> u32 {
    call(host, "echo__pid", json!({}))
        .await
        .parse()
        .expect("a pid")
}

/// The processes that answer `calls` calls one after another.
async fn pids(host: &Host, calls: usize) -> Vec<u32> {
    let mut pids = Vec::with_capacity(calls);
    for _ in 0..calls {
        pids.push(pid(host).await);
    }
    pids
}

fn distinct(pids: &[u32]) -> BTreeSet<u32> {
    pids.iter().copied().collect()
}

/// The echo server's report in `status`.
fn report(host: &Host) -> switchboard::ServerReport {
    host.status()
        .into_iter()
        .find(|s| s.server == "echo")
        .expect("echo in status")
}

/// Waits (10 s at most) until `check` holds of the echo server's report.
async fn wait_report(host: &Host, what: &str, check: impl Fn(&switchboard::ServerReport) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !check(&report(host)) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}: not seen; last {:?}", report(host));
}

fn instances_up(report: &switchboard::ServerReport) -> Option<(u8, u8)> {
    report.instances.map(|i| (i.up, i.configured))
}

/// Whether a process is alive (and not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z'))
    })
}

async fn wait_exit(pid: u32, what: &str) {
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "{what} (process {pid} is still running)");
}

#[tokio::test]
async fn calls_through_a_pool_reach_every_instance_and_the_least_busy_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = started(dir.path(), Some(3)).await;
    let echo = report(&host);
    assert_eq!(echo.state, "up", "{echo:?}");
    assert_eq!(instances_up(&echo), Some((3, 3)), "{echo:?}");
    assert_eq!(
        echo.tools, 7,
        "the tools are listed once, from one instance"
    );

    // Calls one after another go round the three processes.
    let round = pids(&host, 6).await;
    assert_eq!(distinct(&round).len(), 3, "{round:?}");
    assert_eq!(round[..3], round[3..], "{round:?}");

    // Two slow calls keep two instances busy: every quick call goes to the third.
    let slow: Vec<_> = (0..2)
        .map(|_| {
            let host = host.clone();
            tokio::spawn(async move { call(&host, "echo__sleep", json!({"ms": 1500})).await })
        })
        .collect();
    wait_report(&host, "two calls in flight", |r| r.in_flight == 2).await;
    let quick = pids(&host, 5).await;
    assert_eq!(distinct(&quick).len(), 1, "{quick:?}");
    for slow in slow {
        assert_eq!(slow.await.expect("the slow call"), "slept 1500 ms");
    }
    host.shutdown().await;
    for pid in distinct(&round) {
        wait_exit(pid, "an instance outlived the gateway's shutdown").await;
    }
}

#[tokio::test]
async fn a_killed_instance_restarts_while_the_others_keep_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = started(dir.path(), Some(3)).await;
    let before = distinct(&pids(&host, 3).await);
    assert_eq!(before.len(), 3, "{before:?}");
    let killed = *before.iter().next().expect("a pid");
    let status = std::process::Command::new("kill")
        .args(["-KILL", &killed.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());

    // The pool notices, stays up on the other two, and says which instance is down.
    wait_report(&host, "one instance down", |r| {
        instances_up(r) == Some((2, 3))
    })
    .await;
    let echo = report(&host);
    assert_eq!(echo.state, "up", "{echo:?}");
    assert!(
        echo.error
            .as_deref()
            .is_some_and(|e| e.contains("of 3 is down")),
        "{echo:?}"
    );
    // Calls meanwhile all succeed, on the processes that are left (or on the new one, if it
    // is back already).
    let meanwhile = pids(&host, 6).await;
    assert!(!meanwhile.contains(&killed), "{meanwhile:?}");
    let survivors: BTreeSet<u32> = before.iter().copied().filter(|p| *p != killed).collect();
    assert!(
        survivors.iter().all(|p| meanwhile.contains(p)),
        "both other instances keep serving: {meanwhile:?}"
    );

    // The killed instance comes back as a new process, and calls reach it again.
    wait_report(&host, "the instance back", |r| {
        instances_up(r) == Some((3, 3))
    })
    .await;
    assert_eq!(report(&host).error, None);
    let after = distinct(&pids(&host, 3).await);
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(survivors.is_subset(&after), "{after:?} kept {survivors:?}");
    assert!(!after.contains(&killed), "{after:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn changing_instances_live_starts_a_new_pool_beside_the_old() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    let host = started(dir.path(), None).await;
    assert_eq!(instances_up(&report(&host)), None, "one process is no pool");
    let single = pid(&host).await;

    // 1 → 3: a new pool starts, calls move to it, and the old process is drained away.
    let outcome = host
        .reload(config(&path, Some(3)), Surface::Library)
        .await
        .expect("reload");
    let echo = &outcome.servers[0];
    assert_eq!(
        (echo.action, echo.applied),
        (Action::Restarted, true),
        "{echo:?}"
    );
    let echo = report(&host);
    assert_eq!((echo.generation, instances_up(&echo)), (2, Some((3, 3))));
    let pooled = distinct(&pids(&host, 3).await);
    assert_eq!(pooled.len(), 3, "{pooled:?}");
    assert!(!pooled.contains(&single), "{pooled:?}");
    wait_exit(single, "the single process outlived its replacement").await;

    // 3 → 1: back to one process, and the pool's three go.
    let outcome = host
        .reload(config(&path, None), Surface::Library)
        .await
        .expect("reload");
    assert_eq!(outcome.servers[0].action, Action::Restarted);
    assert_eq!(instances_up(&report(&host)), None);
    let again = distinct(&pids(&host, 3).await);
    assert_eq!(again.len(), 1, "{again:?}");
    for pid in pooled {
        wait_exit(pid, "a pooled process outlived its replacement").await;
    }
    host.shutdown().await;
}

#[tokio::test]
async fn a_change_outside_the_connection_keeps_the_pool_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    let host = started(dir.path(), Some(2)).await;
    let before = distinct(&pids(&host, 2).await);

    let mut changed = config(&path, Some(2));
    changed.servers[0].prefix = Some("e".to_owned());
    let outcome = host
        .reload(changed, Surface::Library)
        .await
        .expect("reload");
    assert_eq!(outcome.servers[0].action, Action::Updated);
    let mut after = BTreeSet::new();
    for _ in 0..2 {
        let text = call(&host, "e__pid", Map::new().into()).await;
        after.insert(text.parse::<u32>().expect("a pid"));
    }
    assert_eq!(
        after, before,
        "the same two processes serve under the new prefix"
    );
    host.shutdown().await;
}
