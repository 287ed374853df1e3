//! Two real `switchboard serve` gateways on one PostgreSQL (`[storage] url`), both calling a
//! real stdio server: `switchboard migrate` creates the schema (and is idempotent), a
//! gateway on an unmigrated database refuses to start and names the command, calls sent to
//! both gateways at once land as one hash chain with exactly one row per call, and
//! `switchboard audit verify` checks it — and names the row a superuser edited. With
//! PostgreSQL away, calls are refused saying why (`storage.ledger_unavailable = "refuse"`, the
//! default) or journaled and answered (`"journal"`), and nothing answered is lost.

mod support;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

const MODERN: &str = "2026-07-28";
/// Calls sent to each gateway.
const CALLS: usize = 40;

/// A 2026-07-28 `tools/call` of the fixture's echo.
fn echo(message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "fx__echo", "arguments": {"message": message},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Asserts the command succeeded (or not) and said `needle`.
fn says(output: &std::process::Output, success: bool, needle: &str) {
    let said = text(output);
    assert_eq!(output.status.success(), success, "{said}");
    assert!(said.contains(needle), "expected '{needle}' in:\n{said}");
}

fn rows(postgres: &Postgres) -> usize {
    postgres
        .psql(DATABASE, "SELECT count(*) FROM mcp_tool_invocations")
        .expect("count")
        .parse()
        .expect("a number")
}

/// A PostgreSQL of the test's own, and a config in `dir` whose ledger is there, calling the
/// fixture's echo server over stdio.
fn shared_store(dir: &std::path::Path) -> (Postgres, std::path::PathBuf) {
    shared_store_with(dir, "")
}

/// [`shared_store`] with `storage` lines added to `[storage]`.
fn shared_store_with(dir: &std::path::Path, storage: &str) -> (Postgres, std::path::PathBuf) {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let ledger = dir.join("ledger.db").display().to_string();
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\n\n[storage]\nurl = {}\n{storage}\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger),
            quoted(&postgres.url()),
            quoted(&fixture())
        ),
    );
    (postgres, config)
}

/// Calls echo `count` times through the gateway at `url`, each answered with its message.
async fn calls(url: &str, name: &str, count: usize) {
    for i in 0..count {
        let message = format!("{name}-{i}");
        let (status, body, _) = post(url, None, echo(&message)).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&message), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_one_postgres_keep_one_verifiable_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config) = shared_store(dir.path());

    // Before `migrate`, a gateway refuses to start and says what to run.
    let refused = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run the gateway");
    says(&refused, false, "run `switchboard migrate`");
    let migrated = run_bare(&config, &["migrate"]);
    says(&migrated, true, "applied migration 1: audit ledger");
    says(&run_bare(&config, &["migrate"]), true, "up to date");

    let first_admin = dir.path().join("one.json").display().to_string();
    let second_admin = dir.path().join("two.json").display().to_string();
    let mut first = HttpGateway::start(&config, &["--admin-file", &first_admin]);
    let mut second = HttpGateway::start(&config, &["--admin-file", &second_admin]);
    assert_ne!(first.url, second.url);

    // Both gateways are called at once, each from its own task.
    let mut tasks = Vec::new();
    for (name, url) in [("one", first.url.clone()), ("two", second.url.clone())] {
        tasks.push(tokio::spawn(async move { calls(&url, name, CALLS).await }));
    }
    for task in tasks {
        task.await.expect("calls");
    }
    // Stopped cleanly, each gateway writes what it journaled before it exits.
    assert!(first.terminate().success());
    assert!(second.terminate().success());
    assert_eq!(rows(&postgres), 2 * CALLS, "one row per call, no more");

    let verified = run_bare(&config, &["audit", "verify"]);
    says(&verified, true, &format!("intact: {} rows", 2 * CALLS));
    // Both replicas appended to the one chain.
    let replicas = postgres
        .psql(
            DATABASE,
            "SELECT count(DISTINCT replica) FROM mcp_tool_invocations",
        )
        .expect("replicas");
    assert_eq!(replicas, "2");
    // `audit` lists from PostgreSQL too.
    let listed = stdout_json(&run_bare(&config, &["audit", "--json", "--limit", "0"]));
    assert_eq!(listed.as_array().map(Vec::len), Some(2 * CALLS));

    // A superuser who switches the triggers off and edits a row is caught.
    postgres
        .psql(
            DATABASE,
            "SET session_replication_role = replica; \
             UPDATE mcp_tool_invocations SET outcome = 'denied' WHERE id = 5",
        )
        .expect("tamper");
    let caught = run_bare(&config, &["audit", "verify"]);
    says(&caught, false, "row 5: this row was edited");
}

/// PostgreSQL goes away under a serving gateway that journals meanwhile
/// (`ledger_unavailable = "journal"`): calls are still answered (each journaled first), and
/// when that gateway is SIGKILLed with none of them in PostgreSQL, the next gateway started
/// with the same journal directory replays them, exactly once each, onto the one chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_answered_by_a_killed_gateway_reach_postgres_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config) = shared_store_with(dir.path(), "ledger_unavailable = \"journal\"\n");
    says(
        &run_bare(&config, &["migrate"]),
        true,
        "applied migration 1",
    );
    let admin = dir.path().join("admin.json").display().to_string();
    let mut killed = HttpGateway::start(&config, &["--admin-file", &admin]);
    calls(&killed.url, "before", 3).await;
    let before = wait_for(std::time::Duration::from_secs(10), || {
        (rows(&postgres) == 3).then_some(())
    });
    assert!(before.is_some(), "the first rows reach PostgreSQL");
    postgres.stop().expect("stop PostgreSQL");
    calls(&killed.url, "killed", CALLS).await;
    killed.child.kill().expect("SIGKILL");
    killed.child.wait().expect("reaped");
    postgres.resume().expect("start PostgreSQL again");
    assert_eq!(
        rows(&postgres),
        3,
        "nothing could be appended while it was away"
    );

    let mut next = HttpGateway::start(&config, &["--admin-file", &admin]);
    // Opening its ledger replayed the dead gateway's journal before it listened.
    assert_eq!(rows(&postgres), 3 + CALLS, "every answered call, once");
    calls(&next.url, "next", 5).await;
    assert!(next.terminate().success());
    let all = 3 + CALLS + 5;
    assert_eq!(rows(&postgres), all);
    let distinct = postgres
        .psql(
            DATABASE,
            "SELECT count(DISTINCT call_id) FROM mcp_tool_invocations",
        )
        .expect("distinct");
    assert_eq!(distinct, all.to_string());
    says(
        &run_bare(&config, &["audit", "verify"]),
        true,
        &format!("intact: {all} rows"),
    );
}

/// PostgreSQL goes away under a serving gateway with the default policy: calls are answered
/// (journaled) until the writer's append fails, then refused with a tool error that says
/// why; once PostgreSQL is back calls run again, and every call, answered or refused, is one
/// row of the verified chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_away_calls_are_refused_readably_and_run_again_once_it_is_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config) = shared_store(dir.path());
    says(
        &run_bare(&config, &["migrate"]),
        true,
        "applied migration 1",
    );
    let admin = dir.path().join("admin.json").display().to_string();
    let mut gateway = HttpGateway::start(&config, &["--admin-file", &admin]);
    calls(&gateway.url, "before", 3).await;
    let mut made = 3;
    postgres.stop().expect("stop PostgreSQL");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let refusal = loop {
        assert!(
            std::time::Instant::now() < until,
            "no call refused within 10 s of PostgreSQL stopping"
        );
        let message = format!("away-{made}");
        let (status, body, _) = post(&gateway.url, None, echo(&message)).await;
        made += 1;
        assert_eq!(status, 200, "{body}");
        if body.contains("was not run") {
            break body;
        }
        assert!(body.contains(&message), "answered while journaled: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        refusal.contains("the audit ledger cannot reach its database")
            && refusal.contains("storage.ledger_unavailable")
            && refusal.contains(r#""isError":true"#),
        "{refusal}"
    );
    postgres.resume().expect("start PostgreSQL again");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        assert!(
            std::time::Instant::now() < until,
            "calls still refused 15 s after PostgreSQL came back"
        );
        let message = format!("back-{made}");
        let (status, body, _) = post(&gateway.url, None, echo(&message)).await;
        made += 1;
        assert_eq!(status, 200, "{body}");
        if body.contains(&message) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let all = wait_for(std::time::Duration::from_secs(10), || {
        (rows(&postgres) == made).then_some(())
    });
    assert!(
        all.is_some(),
        "{} rows for {made} calls, each answered or refused",
        rows(&postgres)
    );
    assert!(gateway.terminate().success());
    says(
        &run_bare(&config, &["audit", "verify"]),
        true,
        &format!("intact: {made} rows"),
    );
}

/// `migrate` is for the shared store: without `[storage] url` it says so and fails.
#[test]
fn migrate_without_a_shared_store_says_there_is_nothing_to_migrate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "[servers.fx]\ncommand = \"true\"\n");
    says(&run_bare(&config, &["migrate"]), false, "no [storage] url");
}
