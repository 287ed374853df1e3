//! Live configuration through the CLI and the admin endpoint, end to end: a real gateway
//! over HTTP, real stdio servers, the official Python SDK client — servers added, removed,
//! enabled, disabled, restarted and tested while calls flow, the file kept as the user wrote
//! it, every change one operation with one revision.

mod support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::live::*;
use support::*;

#[test]
fn servers_add_reaches_an_open_session_and_writes_only_the_new_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let before = std::fs::read_to_string(&config).expect("read");
    let live = Live::start(dir.path(), config.clone(), &[]);
    let (pid_a, pid_b) = (live.pid("a"), live.pid("b"));

    let client = live.watch("c__echo", r#"{"message": "new"}"#);
    let fixture = fixture();
    let added = live.json(&["servers", "add", "c", "--json", "--", &fixture, "echo"]);
    assert_eq!(added["servers"][0]["action"], "added", "{added}");
    assert_eq!(added["servers"][0]["state"], "up", "{added}");
    assert_eq!(added["servers"][0]["tools"], 7, "{added}");

    let watched = finish(client);
    assert_eq!(watched["notified"], true, "{watched}");
    let after: Vec<&str> = watched["after"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        after.contains(&"c__echo") && after.contains(&"a__echo"),
        "{watched}"
    );
    assert_eq!(text_of(&watched["result"]), "new", "{watched}");

    // The file: exactly the new entry appended, everything else byte for byte.
    let written = std::fs::read_to_string(&config).expect("read");
    let expected = format!(
        "{before}\n[servers.c]\ncommand = {}\nargs = [\"echo\"]\n",
        quoted(&fixture)
    );
    assert_eq!(written, expected);
    assert!(
        config.with_extension("toml.bak").exists(),
        "a backup is kept"
    );

    // The untouched servers kept their processes.
    assert_eq!((live.pid("a"), live.pid("b")), (pid_a, pid_b));
    let status = live.status();
    let c = server(&status, "c").expect("c in status");
    assert_eq!(c["changed"]["by"], "cli", "{c}");
    assert_eq!(server(&status, "a").expect("a")["generation"], 1);
}

#[test]
fn the_mcp_servers_json_form_gets_the_new_entry_with_the_rest_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = quoted(&fixture());
    let text = format!(
        "{{\n  // Cursor's file, shared with Switchboard\n  \"mcpServers\": {{\n    \"a\": {{\n      \"command\": {fixture},\n      \"args\": [\"echo\"],\n    }},\n  }},\n}}\n"
    );
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, &text).expect("write");
    let live = Live::start(dir.path(), config.clone(), &[]);
    let pid_a = live.pid("a");

    live.json(&[
        "servers",
        "add",
        "b",
        "--json",
        "--",
        &support::fixture(),
        "echo",
    ]);
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(
        written.starts_with(
            "{\n  // Cursor's file, shared with Switchboard\n  \"mcpServers\": {\n    \"a\": {\n"
        ),
        "{written}"
    );
    let parsed = switchboard_core::config::Config::parse(
        &written,
        switchboard_core::config::Origin::Inline,
        switchboard_core::config::Format::Json,
        &switchboard_core::config::MapEnvironment::default(),
    )
    .expect("the written file is valid");
    let ids: Vec<&str> = parsed.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(
        text_of(&live.call("b__echo", r#"{"message": "json"}"#)),
        "json"
    );
    assert_eq!(live.pid("a"), pid_a);

    // And a removal takes out just that member.
    live.json(&["servers", "remove", "b", "--json"]);
    let removed = std::fs::read_to_string(&config).expect("read");
    assert_eq!(removed, text, "removing b restores the file byte for byte");
}

#[test]
fn two_changes_based_on_one_revision_one_wins_one_conflicts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config, &[]);
    let revision = live.status()["revision"]
        .as_str()
        .expect("revision")
        .to_owned();
    let fixture = fixture();
    let outputs: Vec<Output> = std::thread::scope(|scope| {
        let handles: Vec<_> = ["c", "d"]
            .into_iter()
            .map(|name| {
                let (live, fixture, revision) = (&live, &fixture, &revision);
                scope.spawn(move || {
                    live.cli(&[
                        "servers",
                        "add",
                        name,
                        "--revision",
                        revision,
                        "--",
                        fixture,
                        "echo",
                    ])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let won = outputs.iter().filter(|o| o.status.success()).count();
    assert_eq!(won, 1, "exactly one change wins");
    let lost = outputs
        .iter()
        .find(|o| !o.status.success())
        .expect("one lost");
    let stderr = String::from_utf8_lossy(&lost.stderr);
    assert!(
        stderr.contains("conflict") && stderr.contains(&revision),
        "{stderr}"
    );
}

#[test]
fn read_only_mode_refuses_changes_and_dry_run_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let before = std::fs::read_to_string(&config).expect("read");
    let fixture = fixture();
    {
        let live = Live::start(dir.path(), config.clone(), &["--read-only-config"]);
        let refused = live.cli(&["servers", "add", "c", "--", &fixture, "echo"]);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("read-only") && stderr.contains("[read_only]"),
            "{stderr}"
        );
        let refused = live.cli(&["servers", "remove", "a"]);
        assert!(!refused.status.success());
        assert_eq!(std::fs::read_to_string(&config).expect("read"), before);
    }
    let live = Live::start(dir.path(), config.clone(), &[]);
    let dry = live.cli(&["servers", "add", "c", "--dry-run", "--", &fixture, "echo"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let diff = String::from_utf8_lossy(&dry.stdout);
    assert!(
        diff.contains("+[servers.c]") && diff.contains("--- a/switchboard.toml"),
        "{diff}"
    );
    assert_eq!(std::fs::read_to_string(&config).expect("read"), before);
    assert!(server(&live.status(), "c").is_none());
}

#[test]
fn calls_keep_succeeding_while_servers_come_and_go_and_no_process_is_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config, &[]);
    let plan: Vec<Value> = (0..300)
        .map(|i| serde_json::json!([if i % 2 == 0 { "a__echo" } else { "b__echo" }, {"message": format!("m{i}")}]))
        .collect();
    let plan = Value::Array(plan).to_string();
    let load = python_in_background(&live.client_args(&["calls", &plan]));
    let fixture = fixture();
    let mut pids = Vec::new();
    for round in 0..5 {
        let name = format!("x{round}");
        live.json(&["servers", "add", &name, "--json", "--", &fixture, "echo"]);
        pids.push(live.pid(&name));
        live.json(&["servers", "remove", &name, "--json"]);
    }
    let results = finish(load);
    let results = results.as_array().expect("results");
    assert_eq!(results.len(), 300);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["isError"], false, "call {i}: {result}");
        assert_eq!(text_of(result), format!("m{i}"), "call {i}");
    }
    for pid in pids {
        assert_exits(pid, "a removed server's process is still running");
    }
}

#[test]
fn servers_test_judges_a_server_without_adding_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let fixture = fixture();
    let report = live.json(&["servers", "test", "probe", "--json", "--", &fixture, "echo"]);
    assert_eq!(report["verdict"], "ok", "{report}");
    assert_eq!(report["tools"], 7, "{report}");
    assert_eq!(report["era"], "legacy", "{report}");
    assert!(
        report["listing_tokens"].as_u64().is_some_and(|t| t > 50),
        "{report}"
    );
    assert!(
        server(&live.status(), "probe").is_none(),
        "test added the server"
    );

    let failed = live.cli(&["servers", "test", "nope", "--json", "--", "/nonexistent/x"]);
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(stdout_json(&failed)["verdict"], "failed");

    // Offline, on the file alone: the configured server.
    let offline = live.json(&["servers", "test", "a", "--offline", "--json"]);
    assert_eq!(offline["verdict"], "ok", "{offline}");
}

#[test]
fn disable_enable_and_restart_go_through_the_same_operation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config.clone(), &[]);
    let pid_b = live.pid("b");
    live.json(&["servers", "disable", "b", "--json"]);
    let status = live.status();
    assert_eq!(server(&status, "b").expect("b listed")["state"], "disabled");
    assert!(
        std::fs::read_to_string(&config)
            .expect("read")
            .contains("enabled = false")
    );
    live.json(&["servers", "enable", "b", "--json"]);
    let restarted = live.json(&["servers", "restart", "b", "--json"]);
    assert_eq!(
        restarted["servers"][0]["action"], "restarted",
        "{restarted}"
    );
    assert_ne!(live.pid("b"), pid_b);
    let missing = live.cli(&["servers", "remove", "nope"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no server 'nope'") || stderr.contains("not_found"),
        "{stderr}"
    );
    // SIGHUP and `switchboard reload` read the file again.
    let reloaded = live.json(&["reload", "--json"]);
    assert!(reloaded["revision"].is_string(), "{reloaded}");
}

#[test]
fn an_added_server_with_prompts_and_resources_announces_those_lists_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = two_servers(dir.path());
    let live = Live::start(dir.path(), config, &[]);
    let client = live.watch("a__echo", r#"{"message": "x"}"#);
    let fixture = fixture();
    let added = live.json(&[
        "servers",
        "add",
        "conf",
        "--json",
        "--",
        &fixture,
        "conformance",
    ]);
    assert_eq!(added["servers"][0]["state"], "up", "{added}");
    let watched = finish(client);
    assert_eq!(
        watched["lists_changed"],
        serde_json::json!(["prompts", "resources", "tools"]),
        "{watched}"
    );
}

#[test]
fn a_call_outliving_the_drain_is_cancelled_readably_and_changes_reach_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let fixture = quoted(&fixture());
    let text = format!(
        "[gateway]\ndrain_timeout = \"1s\"\nledger = {}\n\n\
         [servers.a]\ncommand = {fixture}\nargs = [\"echo\"]\n\n\
         [servers.b]\ncommand = {fixture}\nargs = [\"echo\"]\nenv = {{ SECRET = \"hunter2\" }}\n",
        quoted(&ledger.display().to_string())
    );
    let config = write_config(dir.path(), &text);
    let live = Live::start(dir.path(), config, &[]);
    let pid_b = live.pid("b");
    let slow = live.call_in_flight("b", 20000);
    let started = std::time::Instant::now();
    live.json(&["servers", "remove", "b", "--json"]);
    let cut = finish(slow);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the call was not cut off at the drain timeout"
    );
    assert_eq!(cut["isError"], true, "{cut}");
    let message = text_of(&cut);
    assert!(
        message.contains("removed while this call was in flight"),
        "{message}"
    );
    assert_exits(pid_b, "b's process outlived its drain");

    // The ledger has the change: who, which surface, the entry before, its secret redacted.
    let ledger_arg = ledger.display().to_string();
    let rows = wait_for(Duration::from_secs(10), || {
        let output = run_switchboard(
            &live.config,
            &[
                "audit",
                "--json",
                "--ledger",
                &ledger_arg,
                "--tool",
                "switchboard.config/*",
            ],
        );
        let rows = stdout_json(&output);
        (rows.as_array().is_some_and(|r| !r.is_empty())).then_some(rows)
    })
    .expect("a ledger row for the change");
    let row = &rows[0];
    assert_eq!(row["exposed"], "switchboard.config/removed", "{row}");
    assert_eq!(row["server"], "b", "{row}");
    assert_eq!(row["outcome"], "config_applied", "{row}");
    let details = row["args_redacted"].to_string();
    assert!(details.contains("\"surface\":\"cli\""), "{details}");
    assert!(
        details.contains("SECRET") && !details.contains("hunter2"),
        "{details}"
    );
}

#[test]
fn the_first_change_to_a_builtin_default_gateway_creates_the_user_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("config-home");
    let admin = dir.path().join("admin.json");
    let mut child = Command::new(switchboard())
        .args(["serve", "--http", "127.0.0.1:0", "--admin-file"])
        .arg(&admin)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", &home)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env_remove("SWITCHBOARD_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the gateway");
    wait_for(Duration::from_secs(15), || admin.exists().then_some(())).expect("admin file");
    let output = Command::new(switchboard())
        .args([
            "servers",
            "add",
            "d2",
            "--builtin",
            "dice",
            "--json",
            "--admin-file",
        ])
        .arg(&admin)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", &home)
        .output()
        .expect("run");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = stdout_json(&output);
    let file = home.join("switchboard/switchboard.toml");
    assert_eq!(report["created_file"], true, "{report}");
    assert_eq!(report["file"], file.display().to_string(), "{report}");
    let written = std::fs::read_to_string(&file).expect("the new file");
    for server in ["clock", "dice", "files", "memory", "d2"] {
        assert!(
            written.contains(&format!("[servers.{server}]")),
            "{written}"
        );
    }
    switchboard_core::config::Config::load(
        &file,
        &switchboard_core::config::MapEnvironment::default(),
    )
    .expect("the new file is valid");
}

#[test]
fn an_add_whose_client_goes_away_leaves_no_process_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = quoted(&fixture());
    let text = format!(
        "[gateway]\nconnect_timeout = \"2s\"\n\n[servers.a]\ncommand = {fixture}\nargs = [\"echo\"]\n"
    );
    let config = write_config(dir.path(), &text);
    let live = Live::start(dir.path(), config, &[]);
    let marker = format!("SWITCHBOARD_TEST_MARK={}", std::process::id());
    let mark = marker.clone();
    let admin = live.admin.display().to_string();
    // The CLI is killed while the server it adds hangs in its handshake.
    let mut cli = Command::new(switchboard())
        .arg("--config")
        .arg(&live.config)
        .args([
            "servers",
            "add",
            "h",
            "--env",
            &mark,
            "--admin-file",
            &admin,
            "--",
        ])
        .arg(support::fixture())
        .arg("hang")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the CLI");
    let started = wait_for(Duration::from_secs(10), || {
        (!processes_marked(&marker).is_empty()).then_some(())
    });
    assert!(started.is_some(), "the server being added never started");
    let _ = cli.kill();
    let _ = cli.wait();
    let gone = wait_for(Duration::from_secs(15), || {
        processes_marked(&marker).is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "the half-added server outlived its abandoned change: {:?}",
        processes_marked(&marker)
    );
    assert!(server(&live.status(), "h").is_none());
    assert_eq!(text_of(&live.call("a__echo", r#"{"message": "ok"}"#)), "ok");
}

/// The admin endpoint's `/changes` as HTTP has it: `If-Match: *` asks for no revision check,
/// a weak tag is read by its value, and `surface` is the CLI's or the endpoint's own — a
/// caller cannot have the ledger say the manager or a hand edit made its change.
#[test]
fn the_change_endpoint_reads_if_match_as_http_does_and_keeps_surface_honest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = Live::start(dir.path(), two_servers(dir.path()), &[]);
    let admin: Value =
        serde_json::from_str(&std::fs::read_to_string(&live.admin).expect("the admin file"))
            .expect("admin JSON");
    let url = format!("{}/changes", admin["url"].as_str().expect("url"));
    let token = admin["token"].as_str().expect("token").to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let post = |body: Value, if_match: Option<&str>| {
        runtime.block_on(async {
            let mut request = reqwest::Client::new()
                .post(&url)
                .bearer_auth(&token)
                .json(&body);
            if let Some(tag) = if_match {
                request = request.header("if-match", tag);
            }
            let response = request.send().await.expect("post");
            (
                response.status().as_u16(),
                response.text().await.unwrap_or_default(),
            )
        })
    };
    let (status, answer) = post(
        serde_json::json!({"op": "disable", "server": "b", "surface": "manager"}),
        None,
    );
    assert!(
        status == 400 && answer.contains("surface"),
        "{status}: {answer}"
    );
    let (status, answer) = post(
        serde_json::json!({"op": "disable", "server": "b"}),
        Some("W/\"0-00000000\""),
    );
    assert_eq!(status, 409, "a stale weak tag: {answer}");
    let (status, answer) = post(
        serde_json::json!({"op": "disable", "server": "b"}),
        Some("*"),
    );
    assert_eq!(status, 200, "any revision: {answer}");
}
