//! `bench compare` end to end, at tiny sizes: it refuses a run that could not draw its plots
//! before measuring anything, finds the peers where `--peers-dir` says (and notes the ones
//! that are not there), prints each table as it is measured — to stderr under `--json`, whose
//! JSON comes last on stdout — and runs only the parts it is asked for.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bench() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bench"))
}

/// `bench compare` needs the gateway and the fixtures next to it.
fn compare(args: &[&str]) -> Output {
    for sibling in ["switchboard", "switchboard-fixture"] {
        let path = bench().with_file_name(sibling);
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --workspace --bins` first",
            path.display()
        );
    }
    Command::new(bench())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("bench runs")
}

#[test]
fn a_font_that_is_not_there_stops_the_run_before_anything_is_measured() {
    let started = Instant::now();
    let output = compare(&["compare", "--font", "/nonexistent/DejaVuSans.ttf"]);
    assert!(!output.status.success());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--font /nonexistent/DejaVuSans.ttf"),
        "{stderr}"
    );
    assert!(stderr.contains("--no-plots"), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_peers_dir_that_is_not_there_is_refused() {
    let output = compare(&["compare", "--no-plots", "--peers-dir", "/nonexistent/peers"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--peers-dir /nonexistent/peers: no such directory"),
        "{stderr}"
    );
}

#[test]
fn the_parts_asked_for_print_as_they_go_and_the_json_comes_last() {
    let peers = tempfile::tempdir().expect("tempdir");
    let peers_dir = peers.path().display().to_string();
    let output = compare(&[
        "--json",
        "compare",
        "--only",
        "throughput,scaling,instances",
        "--peers-dir",
        &peers_dir,
        "--concurrency",
        "2",
        "--cores",
        "1,999",
        "--scaling-concurrency",
        "2",
        "--instances",
        "1",
        "--seconds",
        "0.4",
        "--no-plots",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The peers it looked for, and the tables, in the order they were measured.
    assert!(
        stderr.contains("not there: rust mcp-proxy 0.6.0"),
        "{stderr}"
    );
    let order = [
        "## tools/call echo over HTTP, concurrency 2",
        "## scaling: the gateway on 1 core",
        "## scaling summary",
        "## HTTP → stdio with N instances",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|title| {
            stderr
                .find(title)
                .unwrap_or_else(|| panic!("{title}: {stderr}"))
        })
        .collect();
    assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{stderr}");
    assert!(stderr.contains("skipped: 999 cores"), "{stderr}");
    assert!(
        !stderr.contains("## tools/call echo, sequential"),
        "{stderr}"
    );

    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let throughput = &report["throughput"][0]["targets"];
    let names: Vec<&str> = throughput
        .as_array()
        .expect("targets")
        .iter()
        .filter_map(|target| target[0].as_str())
        .collect();
    assert!(names.contains(&"switchboard HTTP → HTTP"), "{names:?}");
    assert!(
        names.contains(&"floor: bare forwarder HTTP → stdio"),
        "{names:?}"
    );
    let step = &report["scaling"]["steps"][0];
    assert_eq!(step["cores"], 1);
    let rows = step["rows"].as_array().expect("rows");
    assert!(
        rows.iter()
            .any(|row| row["target"] == "switchboard" && row["to_floor"].is_number()),
        "{rows:?}"
    );
    let instances = report["instances"]["rows"].as_array().expect("rows");
    let one = instances
        .iter()
        .find(|row| row["instances"] == 1)
        .expect("instances = 1");
    assert_eq!(one["echo_servers"], 1, "{one}");
    assert!(report.get("latency").is_none() && report.get("memory").is_none());
}
