//! One-off commands behave like the gateway they stand in for: `switchboard call` records
//! its call in the ledger and closes it as a stopping gateway does — the row is on record
//! and no journal is left for the next start to replay — on success and on error alike, and
//! when SIGINT or SIGTERM stops it mid-call (the call then recorded as cancelled); a
//! malformed `TRACEPARENT` is named in a warning; a call waits only for the server that owns
//! its tool, not for one that hangs at start;
//! `switchboard tools --as-sent` prints exactly what a stdio `serve --agent` answers
//! `tools/list` with, for an agent in search mode and one in full mode, and with `--exposure`
//! what `serve --exposure` answers.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use serde_json::{Value, json};
use support::*;

/// A config in `dir` with the clock built-in and a ledger beside it.
fn clock_config(dir: &Path) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\n\n[servers.clock]\nbuiltin = \"clock\"\n",
            quoted(&dir.join("ledger.db").display().to_string())
        ),
    )
}

#[test]
fn call_writes_its_row_and_leaves_no_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = clock_config(dir.path()).display().to_string();

    let called = isolated(dir.path(), &["--config", &config, "call", "clock__now"]);
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert_eq!(journals(dir.path()), Vec::<String>::new(), "after a call");

    // An error path closes the ledger too.
    let unknown = isolated(dir.path(), &["--config", &config, "call", "clock__nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        journals(dir.path()),
        Vec::<String>::new(),
        "after a failed call"
    );

    let audit = isolated(
        dir.path(),
        &["--config", &config, "audit", "--json", "--limit", "0"],
    );
    let rows = stdout_json(&audit);
    let seen: Vec<(&str, &str)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row["exposed"].as_str().unwrap_or(""),
                row["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("clock__nope", "unknown_tool"), ("clock__now", "ok")],
        "{rows}"
    );
    assert_eq!(rows[1]["server"], "clock", "{rows}");
}

/// `switchboard call clock__now` with a server beside the clock that hangs at start: the
/// call waits for the clock alone, not for the other's connect timeout (20 s).
#[test]
fn a_call_waits_only_for_the_server_that_owns_the_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\nconnect_timeout = \"20s\"\n\n\
             [servers.clock]\nbuiltin = \"clock\"\n\n\
             [servers.hangs]\ncommand = {}\nargs = [\"hang\"]\n",
            quoted(&dir.path().join("ledger.db").display().to_string()),
            quoted(&fixture())
        ),
    )
    .display()
    .to_string();

    let started = std::time::Instant::now();
    let called = isolated(dir.path(), &["--config", &config, "call", "clock__now"]);
    let took = started.elapsed();
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert!(
        took < Duration::from_secs(10),
        "the call waited {took:?} for a server it does not use"
    );
}

/// A malformed `TRACEPARENT` is named in one warning line saying why it was not used, and
/// the call goes on (in a new trace); a valid one, or none, draws no warning.
#[test]
fn a_malformed_traceparent_is_named_in_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = clock_config(dir.path());
    let call = |traceparent: &str| {
        let output = Command::new(switchboard())
            .arg("--config")
            .arg(&config)
            .args(["call", "clock__now"])
            .env_remove("SWITCHBOARD_LOG")
            .env("XDG_STATE_HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .env("TRACEPARENT", traceparent)
            .stdin(Stdio::null())
            .output()
            .expect("run switchboard call");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let warned = call("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7");
    let lines: Vec<&str> = warned.lines().collect();
    assert_eq!(lines.len(), 1, "{warned}");
    assert!(
        lines[0].contains("TRACEPARENT") && lines[0].contains("fewer than four"),
        "{warned}"
    );
    assert_eq!(
        call("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        ""
    );
    assert_eq!(call(""), "");
}

/// `switchboard call slow__sleep ms=60000`, sent `signal` once the sleep reached the server
/// (its requests are copied to `requests.log` on their way in): the exit code, and the
/// ledger's rows as (tool, outcome).
fn interrupted_call(signal: Signal) -> (Option<i32>, Vec<(String, String)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let requests = dir.path().join("requests.log");
    let copy_then_serve = format!("tee -a {} | exec {} echo", requests.display(), fixture());
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            quoted(&dir.path().join("ledger.db").display().to_string()),
            quoted(&copy_then_serve)
        ),
    );
    let mut call = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["call", "slow__sleep", "ms=60000"])
        .current_dir(dir.path())
        .env_remove("SWITCHBOARD_LOG")
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start switchboard call");
    let started = wait_for(Duration::from_secs(20), || {
        std::fs::read_to_string(&requests)
            .ok()
            .filter(|text| text.contains("\"tools/call\""))
    });
    assert!(started.is_some(), "the call never reached the server");
    let pid = Pid::from_raw(i32::try_from(call.id()).expect("a pid"));
    kill(pid, signal).expect("signal switchboard call");
    let ended = wait_for(Duration::from_secs(20), || call.try_wait().ok().flatten());
    let Some(status) = ended else {
        let _ = call.kill();
        panic!("switchboard call did not stop within 20 s of {signal}");
    };
    assert_eq!(journals(dir.path()), Vec::<String>::new(), "after {signal}");
    let rows = audit_rows(&config);
    let rows = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let field = |name: &str| row[name].as_str().unwrap_or("").to_owned();
            (field("exposed"), field("outcome"))
        })
        .collect();
    (status.code(), rows)
}

#[test]
fn sigint_during_a_call_records_it_cancelled_and_exits_130() {
    let (code, rows) = interrupted_call(Signal::SIGINT);
    assert_eq!(code, Some(130));
    assert_eq!(rows, [("slow__sleep".to_owned(), "cancelled".to_owned())]);
}

#[test]
fn sigterm_during_a_call_records_it_cancelled_and_exits_143() {
    let (code, rows) = interrupted_call(Signal::SIGTERM);
    assert_eq!(code, Some(143));
    assert_eq!(rows, [("slow__sleep".to_owned(), "cancelled".to_owned())]);
}

/// A config whose agent `seeker` lists in search mode (`clock__now` pinned) and `plain` in
/// full, both seeing the clock and dice built-ins.
fn exposure_config(dir: &Path) -> String {
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\n\n\
             [agents.seeker]\nexposure = \"search\"\nallow = [\"clock:*\", \"dice:*\"]\npinned = [\"clock__now\"]\n\n\
             [agents.plain]\nallow = [\"clock:*\", \"dice:*\"]\n\n\
             [servers.clock]\nbuiltin = \"clock\"\n\n[servers.dice]\nbuiltin = \"dice\"\n",
            quoted(&dir.join("ledger.db").display().to_string())
        ),
    );
    config.display().to_string()
}

/// The `tools` a stdio `serve SERVE_ARGS...` answers `tools/list` with.
fn tools_list_over_stdio(dir: &Path, config: &str, serve_args: &[&str]) -> Value {
    let mut gateway = Command::new(switchboard())
        .args(["--config", config, "serve"])
        .args(serve_args)
        .arg("--admin-file")
        .arg(dir.join("admin.json"))
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env_remove("SWITCHBOARD_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the gateway");
    let mut input = gateway.stdin.take().expect("stdin");
    for request in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "e2e_one_off", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ] {
        writeln!(input, "{request}").expect("write a request");
    }
    let output = BufReader::new(gateway.stdout.take().expect("stdout"));
    let listed = output
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .find(|message| message["id"] == 2)
        .expect("an answer to tools/list");
    drop(input);
    let _ = gateway.wait();
    listed["result"]["tools"].clone()
}

#[test]
fn tools_as_sent_prints_what_tools_list_sends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = exposure_config(dir.path());
    let tools = |args: &[&str]| {
        let mut all = vec!["--config", config.as_str(), "tools"];
        all.extend(args);
        let output = isolated(dir.path(), &all);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    };

    // Search mode: the view is every tool the agent may call; what it is sent is the
    // meta-tools and its pinned tool — exactly what `serve --agent` answers.
    let view = stdout_json(&tools(&["--agent", "seeker", "--format", "json"]));
    assert!(names(&view).contains(&"dice__roll".to_owned()), "{view}");
    let sent = stdout_json(&tools(&[
        "--agent",
        "seeker",
        "--as-sent",
        "--format",
        "json",
    ]));
    assert_eq!(
        names(&sent),
        ["search_tools", "describe_tool", "call_tool", "clock__now"]
    );
    assert_eq!(
        sent,
        tools_list_over_stdio(dir.path(), &config, &["--agent", "seeker"])
    );
    let table = tools(&["--agent", "seeker", "--as-sent"]);
    let table = String::from_utf8_lossy(&table.stdout);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        rows,
        [
            ["search_tools", "-"],
            ["describe_tool", "-"],
            ["call_tool", "-"],
            ["clock__now", "clock"]
        ],
        "{table}"
    );
    let count = |args: &[&str]| -> u64 {
        let output = tools(args);
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("a token count")
    };
    let sent_tokens = count(&[
        "--agent",
        "seeker",
        "--as-sent",
        "--format",
        "mcp",
        "--count-tokens",
    ]);
    let view_tokens = count(&["--agent", "seeker", "--format", "mcp", "--count-tokens"]);
    assert_ne!(sent_tokens, view_tokens, "the listing sent is not the view");

    // Full mode: what it is sent is its view.
    let sent = stdout_json(&tools(&[
        "--agent",
        "plain",
        "--as-sent",
        "--format",
        "json",
    ]));
    assert_eq!(
        names(&sent),
        names(&stdout_json(&tools(&[
            "--agent", "plain", "--format", "mcp"
        ])))
    );
    assert_eq!(
        sent,
        tools_list_over_stdio(dir.path(), &config, &["--agent", "plain"])
    );

    // `--exposure` as `serve --exposure` takes it: over gateway.exposure, for an agent that
    // does not choose (plain), not for one that does (seeker).
    let sent = stdout_json(&tools(&[
        "--agent",
        "plain",
        "--as-sent",
        "--exposure",
        "search",
        "--format",
        "json",
    ]));
    assert_eq!(
        names(&sent),
        ["search_tools", "describe_tool", "call_tool"],
        "{sent}"
    );
    assert_eq!(
        sent,
        tools_list_over_stdio(
            dir.path(),
            &config,
            &["--agent", "plain", "--exposure", "search"]
        )
    );
    let sent = stdout_json(&tools(&[
        "--agent",
        "seeker",
        "--as-sent",
        "--exposure",
        "full",
        "--format",
        "json",
    ]));
    assert_eq!(
        sent,
        tools_list_over_stdio(
            dir.path(),
            &config,
            &["--agent", "seeker", "--exposure", "full"]
        )
    );
    assert_eq!(
        names(&sent),
        ["search_tools", "describe_tool", "call_tool", "clock__now"]
    );
}
