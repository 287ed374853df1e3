//! `bench drive` end to end: the real binary drives the echo fixture over stdio and over
//! HTTP, and the gateway over stdio and HTTP in both protocol eras, and reports every call it
//! made; it fails, saying why, when calls fail, the target dies or stops answering, or the
//! command line is wrong.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bench() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bench"))
}

/// A binary built with the workspace, next to `bench`.
fn sibling(name: &str) -> String {
    let path = bench().with_file_name(name);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path.display().to_string()
}

fn drive(args: &[&str]) -> Output {
    drive_in(None, args)
}

/// `bench drive` with the gateway's state and data directories in `home`, if given.
fn drive_in(home: Option<&tempfile::TempDir>, args: &[&str]) -> Output {
    let mut command = Command::new(bench());
    if let Some(home) = home {
        isolate(&mut command, home);
    }
    command
        .arg("--json")
        .arg("drive")
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run bench")
}

/// Keeps a gateway's files (admin token, ledger, latency stats) in `home`.
fn isolate(command: &mut Command, home: &tempfile::TempDir) {
    for variable in ["XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"] {
        command.env(variable, home.path());
    }
}

/// The JSON report of a run that succeeded.
fn report(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "bench drive failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("bench drive --json prints JSON")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every call answered, and percentiles that are ordered.
fn assert_all_answered(report: &Value, calls: u64) {
    assert_eq!(report["calls"], calls, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["latency"]["samples"], calls, "{report}");
    let at = |key: &str| report["latency"][key].as_f64().expect(key);
    assert!(at("p50_us") > 0.0, "{report}");
    assert!(at("p50_us") <= at("p90_us"), "{report}");
    assert!(at("p90_us") <= at("p99_us"), "{report}");
    assert!(at("p99_us") <= at("max_us"), "{report}");
    assert!(report["calls_per_second"].as_f64().expect("rate") > 0.0);
}

/// A child killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HTTP echo fixture, running, and its URL.
fn http_fixture() -> (Running, String) {
    let mut command = Command::new(sibling("switchboard-fixture"));
    command.arg("http-echo");
    listening(command, true)
}

/// Starts `command` and returns it with the URL it announces after "listening on " on
/// `stdout` or stderr.
fn listening(mut command: Command, on_stdout: bool) -> (Running, String) {
    let (out, err) = if on_stdout {
        (Stdio::piped(), Stdio::null())
    } else {
        (Stdio::null(), Stdio::piped())
    };
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start the server");
    let stream: Box<dyn std::io::Read + Send> = if on_stdout {
        Box::new(child.stdout.take().expect("stdout"))
    } else {
        Box::new(child.stderr.take().expect("stderr"))
    };
    let running = Running(child);
    let line = BufReader::new(stream)
        .lines()
        .map_while(Result::ok)
        .find(|line| line.contains("listening on "))
        .expect("the server announces its address");
    let address = line
        .split("listening on ")
        .nth(1)
        .expect("address")
        .trim()
        .to_owned();
    let url = if address.starts_with("http://") {
        address
    } else {
        format!("http://{address}/mcp")
    };
    (running, url)
}

/// A gateway config in `dir` with the echo fixture speaking both eras as server `echo`.
fn gateway_config(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("switchboard.toml");
    std::fs::write(
        &path,
        format!(
            "[gateway]\nledger = {}\n\n[servers.echo]\ncommand = {}\nargs = [\"echo\", \"--era\", \"both\"]\n",
            serde_json::json!(dir.path().join("ledger.db")),
            serde_json::json!(sibling("switchboard-fixture")),
        ),
    )
    .expect("write config");
    path.display().to_string()
}

#[test]
fn a_stdio_target_keeps_c_calls_in_flight_and_reports_every_one() {
    let fixture = sibling("switchboard-fixture");
    let output = drive(&[
        "--calls",
        "300",
        "--concurrency",
        "8",
        "--warmup",
        "20",
        "--",
        &fixture,
        "echo",
    ]);
    let report = report(&output);
    assert_all_answered(&report, 300);
    assert_eq!(report["concurrency"], 8);
    assert_eq!(report["era"], "legacy");
    assert_eq!(report["tool"], "echo");
}

#[test]
fn the_http_fixture_at_concurrency_over_separate_connections() {
    let (_fixture, url) = http_fixture();
    let report = report(&drive(&[
        "--url",
        &url,
        "--calls",
        "200",
        "--concurrency",
        "4",
    ]));
    assert_all_answered(&report, 200);
    assert_eq!(report["target"], url.as_str());
}

#[test]
fn a_gap_pauses_each_worker_after_every_measured_answer() {
    let (_fixture, url) = http_fixture();
    let fixture = sibling("switchboard-fixture");
    // 20 ms after every answer: 2 HTTP workers making 10 calls each, or the stdio pipe's
    // reader after each of 10 calls, pause at least 10 × 20 ms in a row.
    for (target, calls) in [
        (vec!["--url", url.as_str(), "--concurrency", "2"], 20),
        (vec!["--", fixture.as_str(), "echo"], 10),
    ] {
        let count = calls.to_string();
        let mut args = vec!["--calls", count.as_str(), "--gap-ms", "20"];
        args.extend(target);
        let report = report(&drive(&args));
        assert_all_answered(&report, calls);
        let seconds = report["seconds"].as_f64().expect("seconds");
        assert!(
            seconds >= 0.2,
            "{args:?}: {seconds} s, it paused too little"
        );
    }
}

#[test]
fn the_gateway_in_both_eras_over_stdio_and_http() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = gateway_config(&dir);
    let switchboard = sibling("switchboard");
    let mut command = Command::new(&switchboard);
    command.args(["--config", &config, "serve", "--http", "127.0.0.1:0"]);
    isolate(&mut command, &dir);
    let (gateway, url) = listening(command, false);
    let pid = gateway.0.id().to_string();
    let stdio = ["--", &switchboard, "--config", &config, "serve"];
    let http = ["--url", &url, "--server-pid", &pid];
    // A modern client that declares elicitation has each call run on a task of its own, so
    // the gateway can park it if the upstream asks something.
    let eras: [(&str, &[&str]); 3] = [
        ("legacy", &[]),
        ("modern", &[]),
        ("modern", &["--declare", "elicitation"]),
    ];
    for target in [&stdio[..], &http[..]] {
        for (era, declare) in eras {
            let mut args = vec![
                "--era",
                era,
                "--tool",
                "echo__echo",
                "--calls",
                "100",
                "--concurrency",
                "4",
            ];
            args.extend(declare);
            // A stdio command comes last, after `--`.
            if target[0] == "--" {
                args.extend(target);
            } else {
                args.splice(0..0, target.iter().copied());
            }
            let report = report(&drive_in(Some(&dir), &args));
            assert_all_answered(&report, 100);
            assert_eq!(report["era"], era, "{target:?}");
        }
    }
}

#[test]
fn failed_calls_are_counted_and_fail_the_run_with_the_first_reason() {
    let fixture = sibling("switchboard-fixture");
    let output = drive(&[
        "--tool",
        "no_such_tool",
        "--calls",
        "50",
        "--warmup",
        "0",
        "--",
        &fixture,
        "echo",
    ]);
    assert!(!output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).expect("the report is printed");
    assert_eq!(report["calls"], 50);
    assert_eq!(report["errors"], 50);
    assert_eq!(report["latency"]["samples"], 0);
    let first = report["first_error"].as_str().expect("first_error");
    assert!(first.contains("no_such_tool"), "{first}");
    assert!(
        stderr(&output).contains("50 of 50 calls failed"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_target_that_stops_answering_fails_the_run_within_the_timeout() {
    let started = Instant::now();
    let output = drive(&["--calls", "5", "--timeout", "1", "--", "sleep", "30"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no answer from the target for 1s"),
        "{}",
        stderr(&output)
    );
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_target_that_dies_is_reported_with_its_exit_and_last_stderr() {
    let output = drive(&[
        "--calls",
        "5",
        "--",
        "sh",
        "-c",
        "echo 'cannot open the database' >&2; exit 3",
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.contains("cannot open the database"), "{message}");
}

#[test]
fn a_wrong_command_line_names_what_is_wrong() {
    let fixture = sibling("switchboard-fixture");
    for (args, expected) in [
        (
            vec!["--arguments", "[1]", "--", &fixture, "echo"],
            "--arguments must be a JSON object",
        ),
        (
            vec!["--arguments", "{oops", "--", &fixture, "echo"],
            "--arguments is not JSON",
        ),
        (vec!["--calls", "10"], "name a target"),
        (
            vec!["--concurrency", "0", "--", &fixture, "echo"],
            "--calls and --concurrency must be at least 1",
        ),
        (
            vec!["--url", "http://example.com/mcp"],
            "benchmarks talk to 127.0.0.1 only",
        ),
        (
            vec!["--era", "modern", "--", &fixture, "echo"],
            "does the target speak the 2026-07-28 era?",
        ),
        (
            vec!["--declare", "elicitation", "--", &fixture, "echo"],
            "--declare needs --era modern",
        ),
        (
            vec!["--", "/nonexistent/server"],
            "cannot start /nonexistent/server",
        ),
        (
            vec!["--gap-ms=-5", "--", &fixture, "echo"],
            "--gap-ms must be zero or a positive number of milliseconds",
        ),
    ] {
        let output = drive(&args);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: expected {expected:?} in {}",
            stderr(&output)
        );
    }
}
