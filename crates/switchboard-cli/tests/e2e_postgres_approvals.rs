//! Two real `switchboard serve` gateways on one PostgreSQL (`[storage] url`) share one
//! operator queue: a call waiting on replica A is listed by B and approved through B's admin
//! endpoint (`switchboard approvals approve`), and A's call completes at once; two operators
//! answering the same call at once through A and B make exactly one decision, the other is
//! told it was already decided; the ledger records each decision and who made it.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

/// A PostgreSQL of the test's own, migrated, and a config whose agent `qa` needs approval for
/// the fixture's destructive `add`, with the ledger and the approvals there.
fn shared_store(dir: &Path) -> (Postgres, PathBuf) {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let ledger = dir.join("ledger.db").display().to_string();
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\napproval_timeout = \"60s\"\n\n[storage]\nurl = {}\n\n\
             [agents.qa]\napproval = \"destructive\"\n\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger),
            quoted(&postgres.url()),
            quoted(&fixture())
        ),
    );
    let migrated = run_bare(&config, &["migrate"]);
    let said = String::from_utf8_lossy(&migrated.stdout).into_owned();
    assert!(migrated.status.success(), "{said}");
    assert!(said.contains("applied migration 2: approvals"), "{said}");
    (postgres, config)
}

/// The Python SDK client calling `add(a, 1)` through the gateway at `url` (legacy era, no
/// elicitation: an operator must answer).
fn waiting_call(url: &str, a: u32) -> Child {
    Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/client.py"))
        .args(["--era", "legacy", "--http", url, "call", "fx__add"])
        .arg(format!(r#"{{"a": {a}, "b": 1}}"#))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client")
}

fn approvals(config: &Path, admin: &str, operator: &str, args: &[&str]) -> Output {
    Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .arg("approvals")
        .args(args)
        .args(["--admin-file", admin])
        .env("USER", operator)
        .output()
        .expect("run switchboard approvals")
}

/// The approvals `admin`'s replica lists.
fn listed(config: &Path, admin: &str) -> Vec<Value> {
    let output = approvals(config, admin, "carol", &["list", "--json"]);
    stdout_json(&output).as_array().cloned().unwrap_or_default()
}

/// Waits until `admin`'s replica lists the call with argument `a`; its id.
fn listed_by(config: &Path, admin: &str, a: u32) -> String {
    let found = wait_for(Duration::from_secs(15), || {
        listed(config, admin)
            .into_iter()
            .find(|approval| approval["arguments"]["a"] == a)
    })
    .unwrap_or_else(|| panic!("the call (a = {a}) is listed by the replica of {admin}"));
    assert_eq!(found["tool"], "fx__add");
    assert_eq!(found["agent"], "qa");
    found["id"].as_str().expect("id").to_owned()
}

/// What the client's call returned.
fn result_text(client: Child) -> (bool, String) {
    let output = client.wait_with_output().expect("the client ends");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "client JSON ({error}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    (result["isError"] == true, text)
}

#[test]
fn approvals_are_shared_and_decided_once_across_two_gateways() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config) = shared_store(dir.path());
    let admin_a = dir.path().join("a.json").display().to_string();
    let admin_b = dir.path().join("b.json").display().to_string();
    let mut a = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_a]);
    let b = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_b]);

    // A call waits on A; B lists it and approves it; A's call completes at once.
    let client = waiting_call(&a.url, 41);
    let id = listed_by(&config, &admin_b, 41);
    let approved = approvals(&config, &admin_b, "alice", &["approve", &id]);
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let decided = Instant::now();
    let (is_error, text) = result_text(client);
    let waited = decided.elapsed();
    assert!(!is_error, "{text}");
    assert_eq!(text, "42");
    // The Python client's exit is in this figure too; NOTIFY alone takes milliseconds.
    assert!(
        waited < Duration::from_secs(3),
        "A's call completed {waited:?} after B's approval"
    );
    eprintln!("approved on B -> call done on A in {waited:?}");
    assert!(
        wait_for(Duration::from_secs(5), || listed(&config, &admin_a)
            .is_empty()
            .then_some(()))
        .is_some(),
        "A no longer lists the decided call"
    );

    // Two operators at once, one through A, one through B: one decision, and the other is
    // told it came too late.
    let client = waiting_call(&a.url, 7);
    let id = listed_by(&config, &admin_a, 7);
    listed_by(&config, &admin_b, 7);
    let (approve, deny) = std::thread::scope(|scope| {
        let approve = scope.spawn(|| approvals(&config, &admin_a, "dave", &["approve", &id]));
        let deny = scope.spawn(|| {
            approvals(
                &config,
                &admin_b,
                "erin",
                &["deny", &id, "--reason", "not now"],
            )
        });
        (approve.join().expect("approve"), deny.join().expect("deny"))
    });
    assert_ne!(
        approve.status.success(),
        deny.status.success(),
        "exactly one answer is taken:\napprove: {}\ndeny: {}",
        String::from_utf8_lossy(&approve.stderr),
        String::from_utf8_lossy(&deny.stderr)
    );
    let loser = if approve.status.success() {
        &deny
    } else {
        &approve
    };
    let told = String::from_utf8_lossy(&loser.stderr);
    assert!(told.contains("already decided"), "{told}");
    let (is_error, text) = result_text(client);
    if approve.status.success() {
        assert!(!is_error, "{text}");
        assert_eq!(text, "8");
    } else {
        assert!(is_error);
        assert_eq!(text, "denied by operator erin: not now");
    }

    // Stopped cleanly, A writes what it journaled; the ledger names each decision's maker.
    assert!(a.terminate().success());
    drop(b);
    let recorded = postgres
        .psql(
            DATABASE,
            "SELECT string_agg(approval, ' | ' ORDER BY id) FROM mcp_tool_invocations \
             WHERE exposed = 'fx__add'",
        )
        .expect("the ledger");
    assert!(recorded.contains("operator alice"), "{recorded}");
    let winner = if approve.status.success() {
        "operator dave"
    } else {
        "operator erin"
    };
    assert!(recorded.contains(winner), "{recorded}");
    // The rows of the queue: both decided, each once.
    let states = postgres
        .psql(
            DATABASE,
            "SELECT string_agg(state || ':' || decided_by, ',' ORDER BY requested_at) \
             FROM approvals",
        )
        .expect("the approvals");
    assert_eq!(states.matches(':').count(), 2, "{states}");
    assert!(states.starts_with("approved:operator alice"), "{states}");
}
