//! Managed configuration on PostgreSQL: two real `switchboard serve` replicas, each with its
//! own config file and admin endpoint, on one PostgreSQL (`[storage] url`). A server added
//! through replica A's admin endpoint (`switchboard servers add`) runs on replica B within
//! seconds and answers calls there; `servers remove` on B removes it from A; two adds of
//! different servers sent to A and B at once both land (the later one gets a conflict and
//! is retried, as an operator would); neither replica's file is rewritten, and `status`
//! shows the managed revision.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::live::{Live, server, text_of, wait_status};
use support::*;
use switchboard_testkit::postgres::Postgres;

/// A replica's directory: its own config (ledger in the directory, the shared store, one
/// echo server of its own file) and its own admin file.
fn replica_config(dir: &Path, postgres: &Postgres) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).expect("replica dir");
    let ledger = dir.join("ledger.db").display().to_string();
    write_config(
        dir,
        &format!(
            "# this replica's own file\n[gateway]\nledger = {}\n\n[storage]\nurl = {}\n\n\
             [servers.base]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger),
            quoted(&postgres.url()),
            quoted(&fixture())
        ),
    )
}

/// A PostgreSQL of the test's own, migrated, and the config files of replicas `a` and `b`.
fn two_replicas(dir: &Path) -> (Postgres, std::path::PathBuf, std::path::PathBuf) {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let config_a = replica_config(&dir.join("a"), &postgres);
    let config_b = replica_config(&dir.join("b"), &postgres);
    let migrated = run_bare(&config_a, &["migrate"]);
    assert!(
        output_text(&migrated).contains("applied migration 3: managed configuration"),
        "{}",
        output_text(&migrated)
    );
    (postgres, config_a, config_b)
}

fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `servers add ID -- fixture echo` on `live`, retried while it is refused as a conflict.
fn add_retrying(live: &Live, id: &str) -> u32 {
    let fixture = fixture();
    let mut conflicts = 0;
    loop {
        let output = live.cli(&["servers", "add", id, "--json", "--", &fixture, "echo"]);
        if output.status.success() {
            return conflicts;
        }
        let said = output_text(&output);
        assert!(said.contains("conflict"), "add {id}: {said}");
        conflicts += 1;
        assert!(
            conflicts < 10,
            "add {id}: still a conflict after 10 tries: {said}"
        );
    }
}

fn has(live: &Live, id: &str) -> bool {
    server(&live.status(), id).is_some_and(|s| s["state"] == "up")
}

#[test]
fn servers_changed_on_one_replica_reach_the_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config_a, config_b) = two_replicas(dir.path());
    let file_b = std::fs::read_to_string(&config_b).expect("read b");
    let a = Live::start(&dir.path().join("a"), config_a.clone(), &[]);
    let b = Live::start(&dir.path().join("b"), config_b.clone(), &[]);

    // Added through A's admin endpoint; B runs it within a couple of seconds.
    let fixture = fixture();
    let added = a.json(&["servers", "add", "fx", "--json", "--", &fixture, "echo"]);
    assert_eq!(added["servers"][0]["action"], "added", "{added}");
    let since = Instant::now();
    wait_status(&b, "fx up on replica B", |status| {
        server(status, "fx").is_some_and(|s| s["state"] == "up")
    });
    let took = since.elapsed();
    eprintln!("replica B ran fx {took:?} after replica A's add returned");
    assert!(took < Duration::from_secs(5), "B took {took:?}");
    assert_eq!(
        text_of(&b.call("fx__echo", r#"{"message": "from B"}"#)),
        "from B"
    );
    let status = b.status();
    assert_eq!(status["live"]["managed"]["revision"], 1, "{status}");
    // Each replica recorded the change in the ledger: A as made through its admin
    // endpoint, B as reconciled from another replica.
    let recorded = wait_for(Duration::from_secs(10), || {
        let seen = postgres
            .psql(
                switchboard_testkit::postgres::DATABASE,
                "SELECT count(DISTINCT replica) || ' ' || \
                 count(*) FILTER (WHERE args_redacted LIKE '%\"surface\":\"replica\"%') \
                 FROM mcp_tool_invocations WHERE exposed = 'switchboard.config/added' AND server = 'fx'",
            )
            .expect("ledger rows");
        (seen == "2 1").then_some(())
    });
    assert!(
        recorded.is_some(),
        "a ledger row of the add from each replica, B's by replica"
    );
    // Kept in PostgreSQL, not in either file.
    assert!(
        !std::fs::read_to_string(&config_a)
            .expect("read a")
            .contains("fx")
    );
    assert_eq!(std::fs::read_to_string(&config_b).expect("read b"), file_b);
    let shown = output_text(&b.cli(&["status"]));
    assert!(
        shown.contains("managed configuration: revision 1"),
        "{shown}"
    );

    // Removed through B; gone from A.
    let removed = b.json(&["servers", "remove", "fx", "--json"]);
    assert_eq!(removed["servers"][0]["action"], "removed", "{removed}");
    wait_status(&a, "fx gone from replica A", |status| {
        server(status, "fx").is_none()
    });

    // Two adds at once, one on each replica: both land.
    let conflicts = std::thread::scope(|scope| {
        let one = scope.spawn(|| add_retrying(&a, "one"));
        let two = scope.spawn(|| add_retrying(&b, "two"));
        one.join().expect("one") + two.join().expect("two")
    });
    for live in [&a, &b] {
        wait_status(live, "both concurrent adds", |status| {
            ["one", "two", "base"]
                .iter()
                .all(|id| server(status, id).is_some_and(|s| s["state"] == "up"))
        });
    }
    assert!(has(&a, "two") && has(&b, "one"));
    let head = postgres
        .psql(
            switchboard_testkit::postgres::DATABASE,
            "SELECT max(revision) FROM managed_config",
        )
        .expect("head");
    assert_eq!(
        head, "4",
        "add, remove, two adds ({conflicts} conflicts retried)"
    );
}

/// A replica started after the change reads the managed configuration and runs it over its
/// file; a server of its file that was removed through the live operation does not run, and
/// `status` says so.
#[test]
fn a_replica_that_starts_later_runs_the_managed_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_postgres, config_a, config_b) = two_replicas(dir.path());
    let a = Live::start(&dir.path().join("a"), config_a, &[]);
    let fixture = fixture();
    a.json(&["servers", "add", "fx", "--json", "--", &fixture, "echo"]);
    a.json(&["servers", "remove", "base", "--json"]);

    let b = Live::start(&dir.path().join("b"), config_b, &[]);
    let status = wait_status(&b, "fx up on the late replica", |status| {
        server(status, "fx").is_some_and(|s| s["state"] == "up")
    });
    assert!(server(&status, "base").is_none(), "{status}");
    assert_eq!(status["live"]["managed"]["revision"], 2, "{status}");
    let notes = status["live"]["managed"]["notes"].to_string();
    assert!(notes.contains("servers.base"), "{notes}");
}
