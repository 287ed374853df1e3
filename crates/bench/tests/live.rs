//! `bench live` end to end at tiny sizes: the real binary starts a gateway of its own, adds
//! and removes servers through the admin endpoint and the CLI, loads an untouched server in
//! a calm and a churn window, edits the config file by hand, and reports all three
//! measurements; and it refuses a command line it cannot measure with, saying why.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn bench() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bench"))
}

/// `bench --json live ARGS...`, with the state and config directories of anything it starts
/// in `home`.
fn live(home: &tempfile::TempDir, args: &[&str]) -> Output {
    for sibling in ["switchboard", "switchboard-fixture"] {
        let path = bench().with_file_name(sibling);
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --workspace --bins` first",
            path.display()
        );
    }
    let mut command = Command::new(bench());
    for variable in ["XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"] {
        command.env(variable, home.path());
    }
    command
        .args(["--json", "live"])
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run bench")
}

fn samples(section: &Value, key: &str) -> u64 {
    section[key]["samples"]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} has no samples: {section}"))
}

#[test]
fn three_measurements_with_every_sample_counted() {
    let home = tempfile::tempdir().expect("temp dir");
    let output = live(
        &home,
        &[
            "--adds",
            "3",
            "--cli-adds",
            "1",
            "--windows",
            "2",
            "--window-secs",
            "1",
            "--clients",
            "2",
            "--edits",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("bench live --json printed no JSON; stderr:\n{stderr}"));

    let adds = &report["add_to_callable"];
    assert_eq!(adds["rounds"], 3, "{adds}");
    assert_eq!(samples(adds, "add_to_callable"), 3);
    assert_eq!(samples(adds, "server_start"), 3);
    assert_eq!(samples(adds, "remove_answered"), 3);
    assert_eq!(samples(&adds["cli"], "add_to_callable"), 1);
    assert!(adds["add_to_callable"]["p50_us"].as_f64().expect("p50") > 0.0);
    // The new server's start is part of add → callable.
    assert!(
        adds["add_to_callable"]["p50_us"].as_f64() >= adds["server_start"]["p50_us"].as_f64(),
        "{adds}"
    );

    let churn = &report["untouched_under_churn"];
    assert_eq!(
        churn["windows"].as_array().map(Vec::len),
        Some(2),
        "{churn}"
    );
    assert_eq!(churn["calm"]["errors"], 0, "{churn}");
    assert!(samples(&churn["calm"], "latency") > 0, "{churn}");
    assert!(samples(&churn["churn"], "latency") > 0, "{churn}");
    assert!(churn["changes"].as_u64() >= Some(2), "{churn}");
    assert!(churn["p99_ratio"].as_f64().expect("ratio") > 0.0, "{churn}");

    let edits = &report["hand_edit_to_list_changed"];
    assert_eq!(samples(edits, "to_list_changed"), 2, "{edits}");
    assert_eq!(samples(edits, "adding"), 1, "{edits}");
    assert_eq!(samples(edits, "removing"), 1, "{edits}");
    assert_eq!(edits["stale_listings"], 0, "{edits}");

    // A failed call fails the run after the report, naming the calls; none is expected.
    if churn["churn"]["errors"] == 0 {
        assert!(output.status.success(), "bench live failed:\n{stderr}");
    } else {
        assert!(stderr.contains("calls to a__echo failed"), "{stderr}");
    }
}

#[test]
fn a_command_line_it_cannot_measure_with_is_refused() {
    let home = tempfile::tempdir().expect("temp dir");
    // A binary that is no gateway ends at once, before it says where it listens.
    let not_a_gateway = bench().with_file_name("switchboard-fixture");
    let not_a_gateway = not_a_gateway.to_str().expect("a UTF-8 path");
    for (args, expected) in [
        (vec!["--windows", "1"], "--windows must be at least 2"),
        (vec!["--adds", "0"], "must be at least 1"),
        (
            vec!["--window-secs", "0"],
            "--window-secs must be a positive",
        ),
        (
            vec!["--switchboard", "/nonexistent/switchboard"],
            "/nonexistent/switchboard is missing",
        ),
        (
            vec!["--switchboard", not_a_gateway],
            "the gateway ended before listening",
        ),
    ] {
        let output = live(&home, &args);
        assert!(!output.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(expected),
            "{args:?}: expected {expected:?} in {stderr}"
        );
    }
}
