//! The operator's command line: output shapes for scripts, exit codes, config errors with
//! their location, and quiet exits on a closed pipe.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

#[test]
fn builtin_default_lists_and_calls_the_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        Command::new(switchboard())
            .args(args)
            .current_dir(dir.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_STATE_HOME", dir.path())
            .output()
            .expect("run")
    };
    let tools = stdout_json(&run(&["tools", "--format", "json"]));
    let servers: std::collections::BTreeSet<&str> = tools
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["server"].as_str())
        .collect();
    assert_eq!(
        servers,
        ["clock", "dice", "files", "memory"].into(),
        "the default config serves every built-in"
    );
    assert_eq!(tools[0]["name"], "clock__now");
    assert_eq!(tools[0]["server"], "clock");
    assert_eq!(tools[0]["tool"], "now");
    assert!(
        tools[0]["description"]
            .as_str()
            .is_some_and(|d| d.contains("ISO 8601"))
    );

    let call = run(&["call", "clock__now", "utc_offset=+05:30", "--json"]);
    assert!(call.status.success());
    let result = stdout_json(&call);
    assert!(
        result["structuredContent"]["iso8601"]
            .as_str()
            .is_some_and(|t| t.ends_with("+05:30")),
        "{result}"
    );
    assert!(result["content"].is_array());

    let bad = run(&["call", "clock__now", "utc_offset=nonsense", "--json"]);
    assert_eq!(bad.status.code(), Some(1), "a tool error exits 1");
    assert_eq!(stdout_json(&bad)["isError"], true);

    let unknown = run(&["call", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("unknown tool: nope") && stderr.contains("hint:"),
        "{stderr}"
    );

    let status = stdout_json(&run(&["status", "--json"]));
    assert!(
        status["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("local")),
        "{status}"
    );
    assert_eq!(status["servers"][0]["server"], "clock");
    assert_eq!(status["servers"][0]["state"], "up");
    assert_eq!(status["servers"][0]["tools"], 1);
    assert_eq!(status["servers"][0]["generation"], 1);
    assert!(
        status["servers"]
            .as_array()
            .expect("array")
            .iter()
            .all(|s| s["state"] == "up"),
        "{status}"
    );
    assert!(
        dir.path().join("switchboard/memory.db").exists(),
        "memory lives under XDG_DATA_HOME"
    );
    assert!(
        status["servers"][0].get("era").is_some() && status["servers"][0].get("error").is_some()
    );

    let usage = run(&["call"]);
    assert_eq!(usage.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn serve_refuses_a_busy_poll_window_it_cannot_use() {
    for (value, expected) in [("1s", "at most 10ms"), ("soon", "100us")] {
        let output = Command::new(switchboard())
            .args(["serve", "--busy-poll", value])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("--busy-poll") && stderr.contains(expected),
            "{value}: {stderr}"
        );
    }
}

#[test]
fn search_servers_refuses_a_limit_outside_1_to_100() {
    let dir = tempfile::tempdir().expect("tempdir");
    for limit in ["0", "101"] {
        let output = isolated(dir.path(), &["search-servers", "memory", "--limit", limit]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{limit}: {stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{limit}' for '--limit <LIMIT>'"))
                && stderr.contains("1..=100"),
            "{limit}: {stderr}"
        );
    }
}

#[test]
fn config_check_without_a_file_checks_the_config_commands_would_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = write_config(dir.path(), "[servers.clock]\nbuiltin = \"clock\"\n");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[servers.a]\ncomand = \"x\"\n").expect("write");
    let check = |flag: Option<&std::path::Path>, env: Option<&std::path::Path>| {
        let mut command = Command::new(switchboard());
        if let Some(flag) = flag {
            command.arg("--config").arg(flag);
        }
        command.args(["config", "check"]).current_dir(dir.path());
        match env {
            Some(env) => command.env("SWITCHBOARD_CONFIG", env),
            None => command.env_remove("SWITCHBOARD_CONFIG"),
        };
        let output = command
            .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
            .output()
            .expect("run");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (good_path, bad_path) = (good.display().to_string(), bad.display().to_string());

    let (code, out, err) = check(Some(&good), None);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(&format!("{good_path}: ok (1 servers")),
        "{out}"
    );
    assert!(
        err.contains(&format!("checking {good_path} (from --config)")),
        "{err}"
    );

    let (code, _, err) = check(None, Some(&bad));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("(from $SWITCHBOARD_CONFIG)"), "{err}");
    assert!(
        err.contains(&format!("{bad_path}:2:1: unknown key 'comand'")),
        "{err}"
    );

    // --config comes before the variable.
    let (code, _, err) = check(Some(&good), Some(&bad));
    assert_eq!(code, Some(0), "{err}");

    // Neither: ./switchboard.toml, where write_config put the good one.
    let (code, out, err) = check(None, None);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("(from ./switchboard.toml)"), "{err}");
    assert!(out.contains(": ok (1 servers"), "{out}");
}

#[test]
fn config_check_reports_every_problem_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = write_config(dir.path(), "[servers.clock]\nbuiltin = \"clock\"\n");
    let ok = Command::new(switchboard())
        .args(["config", "check"])
        .arg(&good)
        .output()
        .expect("run");
    assert!(ok.status.success());
    assert!(String::from_utf8_lossy(&ok.stdout).contains("ok (1 servers, 1 enabled)"));

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[servers.a]\ncomand = \"x\"\n\n[servers.b]\nurl = \"ftp://nowhere\"\n",
    )
    .expect("write");
    let output = Command::new(switchboard())
        .args(["config", "check"])
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let path = bad.display().to_string();
    assert!(
        stderr.contains(&format!("{path}:2:1: unknown key 'comand'")),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean 'command'?"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{path}:5:7: url 'ftp://nowhere' must start with http"
        )),
        "{stderr}"
    );

    let json = dir.path().join("claude.json");
    std::fs::write(
        &json,
        "{\"mcpServers\": {\"t\": {\"command\": \"x\", \"args\": [1]}}}",
    )
    .expect("write");
    let output = Command::new(switchboard())
        .args(["config", "check"])
        .arg(&json)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains(":1:48: mcpServers.t.args[0] must be a string"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let missing = Command::new(switchboard())
        .args(["--config", "/nonexistent.toml", "tools"])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));
}

#[test]
fn a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[servers.many]\ncommand = {}\nargs = [\"paginate\", \"--tools\", \"2000\", \"--page-size\", \"500\"]\n",
        quoted(&fixture())
    );
    let config = write_config(dir.path(), &text);
    let mut child = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .arg("tools")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let status = child.wait().expect("exit");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert!(
        status.success(),
        "broken pipe should exit 0, got {status:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `config check` wrote its problems with `eprintln!`, which panics when stderr is closed
/// (`switchboard config check bad.toml 2>&1 | head -1`): exit 101, not the 1 of an invalid config.
#[test]
fn a_closed_stderr_keeps_the_exit_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        "[gateway]\nseparator = 5\nprefix_tools = \"yes\"\n",
    );
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let status = Command::new(switchboard())
        .args(["config", "check"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .expect("run");
    assert_eq!(status.code(), Some(1), "an invalid config, told to nobody");
}

#[test]
fn tools_search_reads_an_offline_catalog() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"servers": [{"id": "fs", "category": "filesystem"}, {"id": "gh", "category": "vcs"}],
            "tools": [
              {"id": "fs/read_file", "server": "fs", "name": "read_file", "description": "Read the contents of a file.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
              {"id": "fs/write_file", "server": "fs", "name": "write_file", "description": "Write text to a file, replacing it.", "inputSchema": {"type": "object"}},
              {"id": "gh/create_issue", "server": "gh", "name": "create_issue", "description": "Open a new issue in a repository.", "inputSchema": {"type": "object"}},
              {"id": "gh/list_commits", "server": "gh", "name": "list_commits", "description": "List the commits of a branch.", "inputSchema": {"type": "object"}}
            ]}"#,
    )
    .expect("write catalog");
    let catalog_arg = catalog.display().to_string();
    let output = Command::new(switchboard())
        .args([
            "tools",
            "search",
            "open an issue on github",
            "--json",
            "--limit",
            "2",
            "--catalog",
            &catalog_arg,
        ])
        .output()
        .expect("run");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let hits = stdout_json(&output);
    let hits = hits.as_array().expect("array");
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["id"], "gh/create_issue");
    assert_eq!(hits[0]["name"], "create_issue");
    assert!(hits[0]["score"].as_f64().expect("score") >= hits[1]["score"].as_f64().expect("score"));
    let read = Command::new(switchboard())
        .args([
            "tools",
            "search",
            "read a file",
            "--json",
            "--catalog",
            &catalog_arg,
        ])
        .output()
        .expect("run");
    assert_eq!(stdout_json(&read)[0]["id"], "fs/read_file");
    let missing = Command::new(switchboard())
        .args([
            "tools",
            "search",
            "x",
            "--catalog",
            "/nonexistent/catalog.json",
        ])
        .output()
        .expect("run");
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("cannot read catalog /nonexistent/catalog.json")
    );
}

/// Flags a command cannot run with are usage errors (exit 2, as clap's own), told before any
/// server starts; a flag that would be ignored is refused rather than dropped.
#[test]
fn unusable_flags_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n",
            quoted(&ledger.display().to_string())
        ),
    );
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, r#"{"tools": []}"#).expect("write catalog");
    let catalog_arg = catalog.display().to_string();
    let cases: [(&[&str], &str); 9] = [
        (
            &["call", "clock__now", "--args", "[1]"],
            "must be a JSON object",
        ),
        (&["call", "clock__now", "--args", "{"], "not valid JSON"),
        (&["call", "clock__now", "zone"], "is not KEY=VALUE"),
        (&["tools", "--count-tokens"], "needs an LLM rendering"),
        (&["tools", "--as-sent", "--stats"], "pick one"),
        (&["tools", "--exposure", "search"], "add --as-sent"),
        (
            &[
                "tools",
                "--catalog",
                &catalog_arg,
                "--format",
                "openai",
                "--tier",
                "fast",
            ],
            "need the configured gateway",
        ),
        (&["audit", "export", "--format", "csv"], "not known"),
        (
            &["servers", "add", "x", "--offline"],
            "say how to reach the server",
        ),
    ];
    for (args, expected) in cases {
        let output = run_bare(&config, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `tools --catalog FILE` without `--format` prints the table `tools` prints, and an entry
/// with an id of the form server/tool needs no `name`.
#[test]
fn tools_list_an_offline_catalog_as_a_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"tools": [{"id": "gh/create_issue", "description": "Open a new issue.", "inputSchema": {"type": "object"}}]}"#,
    )
    .expect("write catalog");
    let output = Command::new(switchboard())
        .args(["tools", "--catalog", &catalog.display().to_string()])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Vec<&str>> = stdout
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "SERVER", "DESCRIPTION"], "{stdout}");
    assert_eq!(
        lines[1],
        ["gh__create_issue", "gh", "Open", "a", "new", "issue."],
        "{stdout}"
    );
    assert_eq!(lines.len(), 2, "{stdout}");
}

#[test]
fn tools_render_an_offline_catalog_for_every_llm_api() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        r#"{"tools": [
              {"id": "gh/create_issue", "server": "gh", "name": "create_issue", "description": "Open a new issue. Needs push access.",
               "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["title"],
                               "properties": {"title": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}}}}
            ]}"#,
    )
    .expect("write catalog");
    let catalog_arg = catalog.display().to_string();
    let run = |format: &str, extra: &[&str]| {
        let output = Command::new(switchboard())
            .args(["tools", "--catalog", &catalog_arg, "--format", format])
            .args(extra)
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(
        run("compact", &[]),
        "gh__create_issue(title, labels?: string[]): Open a new issue."
    );
    let openai: serde_json::Value = serde_json::from_str(&run("openai", &[])).expect("json");
    assert_eq!(openai[0]["type"], "function");
    assert_eq!(openai[0]["function"]["name"], "gh__create_issue");
    assert!(
        openai[0]["function"]["parameters"].get("$schema").is_none(),
        "slimmed"
    );
    let anthropic: serde_json::Value = serde_json::from_str(&run("anthropic", &[])).expect("json");
    assert_eq!(
        anthropic[0]["input_schema"]["required"],
        serde_json::json!(["title"])
    );
    let gemini: serde_json::Value = serde_json::from_str(&run("gemini", &[])).expect("json");
    assert_eq!(
        gemini["functionDeclarations"][0]["name"],
        "gh__create_issue"
    );
    let mcp: serde_json::Value = serde_json::from_str(&run("mcp", &[])).expect("json");
    assert_eq!(
        mcp[0]["inputSchema"]["$schema"], "http://json-schema.org/draft-07/schema#",
        "MCP is as served"
    );
    // The MCP listing as the compact listing mode sends it: what max_listing_tokens is
    // compared with.
    let mcp_compact: serde_json::Value =
        serde_json::from_str(&run("mcp-compact", &[])).expect("json");
    assert_eq!(mcp_compact[0]["name"], "gh__create_issue");
    assert_eq!(mcp_compact[0]["description"], "Open a new issue.");
    assert!(
        mcp_compact[0]["inputSchema"].get("$schema").is_none(),
        "slimmed"
    );
    let mcp_tokens: usize = run("mcp", &["--count-tokens"]).parse().expect("a number");
    let mcp_compact_tokens: usize = run("mcp-compact", &["--count-tokens"])
        .parse()
        .expect("a number");
    assert!(
        mcp_compact_tokens < mcp_tokens,
        "{mcp_compact_tokens} vs {mcp_tokens}"
    );
    assert!(run("toon", &[]).starts_with("tools[1]{name,params,description}:"));
    let compact_tokens: usize = run("compact", &["--count-tokens"])
        .parse()
        .expect("a number");
    let openai_tokens: usize = run("openai", &["--count-tokens"])
        .parse()
        .expect("a number");
    assert!(
        compact_tokens > 5 && compact_tokens < openai_tokens,
        "{compact_tokens} vs {openai_tokens}"
    );
}

#[test]
fn admin_commands_say_why_they_cannot_reach_the_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), "");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let approvals = || {
        run_switchboard(
            &config,
            &["approvals", "list", "--json", "--admin-file", &admin_arg],
        )
    };

    // A stale admin file: the gateway that wrote it is gone, its port closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let stale =
        serde_json::json!({"url": format!("http://127.0.0.1:{port}"), "token": "t", "pid": 1});
    std::fs::write(&admin, stale.to_string()).expect("write the admin file");
    let refused = approvals();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("the admin request failed")
            && stderr.contains(&format!("127.0.0.1:{port}")),
        "{stderr}"
    );

    // A running gateway and a wrong token: its refusal is shown.
    let mut gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let written = wait_for(Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&admin).ok()?;
        let file: serde_json::Value = serde_json::from_str(&text).ok()?;
        (file["token"] != "t").then_some(file)
    })
    .expect("the gateway writes its admin file");
    assert_eq!(stdout_json(&approvals()), serde_json::json!([]));
    let mut forged = written.clone();
    forged["token"] = "forged".into();
    std::fs::write(&admin, forged.to_string()).expect("write the admin file");
    let refused = approvals();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("the gateway answered 401"), "{stderr}");
    gateway.terminate();
}

/// `--config` and `--log` are global: they go before the command, between a command and its
/// subcommand, or after the subcommand, for every command — and the file they name is the
/// one used. A command's own options still do not go beside its subcommands.
#[test]
fn global_options_go_before_or_after_any_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = dir.path().join("global.toml");
    std::fs::write(
        &config,
        format!(
            "[gateway]\nledger = {}\n\n[servers.timekeeper]\nbuiltin = \"clock\"\n\n[agents.reader]\nallow = [\"*\"]\n",
            quoted(&ledger.display().to_string())
        ),
    )
    .expect("write config");
    let file = config.display().to_string();
    let ledger = ledger.display().to_string();
    // (command words, their other arguments, what shows the config was the one read)
    let cases: Vec<(Vec<&str>, Vec<&str>, &str)> = vec![
        (vec!["audit", "verify"], vec![], ledger.as_str()),
        (vec!["audit", "export"], vec![], ledger.as_str()),
        (vec!["audit"], vec!["--limit", "5"], ledger.as_str()),
        (vec!["approvals", "list"], vec![], "admin.json"),
        (vec!["token", "create"], vec!["nobody"], "defines: reader"),
        (
            vec!["tier", "clear"],
            vec!["--agent", "reader"],
            "admin.json",
        ),
        (vec!["reload"], vec![], "admin.json"),
        (
            vec!["tools", "search"],
            vec!["current time", "--json"],
            "timekeeper__now",
        ),
        (vec!["tools"], vec!["--format", "json"], "timekeeper__now"),
        (vec!["call"], vec!["timekeeper__now", "--json"], "iso8601"),
        (vec!["servers", "list"], vec!["--offline", "--json"], &file),
        (vec!["status"], vec!["--local", "--json"], "timekeeper"),
        (
            vec!["config", "check"],
            vec![file.as_str()],
            "ok (1 servers",
        ),
    ];
    for (words, rest, shows) in &cases {
        // Before the command, after each of its words, and at the very end.
        for at in 0..=words.len() + 1 {
            let mut args: Vec<&str> = words.iter().chain(rest).copied().collect();
            let at = if at > words.len() { args.len() } else { at };
            args.splice(at..at, ["--log", "warn", "--config", file.as_str()]);
            let output = isolated(dir.path(), &args);
            let stdout = String::from_utf8_lossy(&output.stdout);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.code() != Some(2)
                    && !stderr.contains("cannot be used with")
                    && !stderr.contains("unexpected argument"),
                "{args:?} was refused by the parser:\n{stderr}"
            );
            assert!(
                stdout.contains(shows) || stderr.contains(shows),
                "{args:?} did not read --config (no '{shows}'):\n{stdout}\n{stderr}"
            );
        }
    }

    for args in [
        &["audit", "--since", "1h", "verify"][..],
        &["tools", "--format", "json", "search", "time"],
    ] {
        let output = isolated(dir.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot be used with '{}'", args[1])),
            "{args:?}: {stderr}"
        );
    }
}

/// A server whose command does not exist fails its first attempt at once: it does not hold
/// `status` (which waits only for first attempts), it is reported down with the reason, and
/// the table says its supervisor keeps retrying.
#[test]
fn status_reports_a_server_that_cannot_start_without_waiting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("missing.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.good]\ncommand = {}\nargs = [\"echo\"]\n\n[servers.missing]\ncommand = \"/nonexistent/x\"\n",
            quoted(&fixture())
        ),
    )
    .expect("write config");
    let file = config.display().to_string();
    let started = std::time::Instant::now();
    let output = isolated(
        dir.path(),
        &["--config", &file, "status", "--local", "--json"],
    );
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        elapsed < Duration::from_secs(3),
        "status took {elapsed:?}: a server that failed its first attempt held it"
    );
    let status = stdout_json(&output);
    let servers = status["servers"].as_array().expect("servers");
    let find = |id: &str| {
        servers
            .iter()
            .find(|s| s["server"] == id)
            .unwrap_or_else(|| panic!("{id} missing from {status}"))
    };
    assert_eq!(find("good")["state"], "up", "{status}");
    assert_eq!(find("good")["failures"], 0, "{status}");
    let missing = find("missing");
    assert_eq!(missing["state"], "down", "{missing}");
    assert_eq!(missing["failures"], 1, "{missing}");
    assert!(
        missing["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot start '/nonexistent/x'")),
        "{missing}"
    );

    let table = isolated(dir.path(), &["--config", &file, "status", "--local"]);
    let stdout = String::from_utf8_lossy(&table.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let row = lines
        .iter()
        .position(|line| line.starts_with("missing "))
        .unwrap_or_else(|| panic!("no row for missing:\n{stdout}"));
    assert!(
        lines.get(row + 1).is_some_and(|note| note
            .starts_with("    retrying (attempt 1 failed: cannot start '/nonexistent/x'")),
        "no retry note under the down server:\n{stdout}"
    );
    assert_eq!(
        stdout.matches("retrying").count(),
        1,
        "only the down server retries:\n{stdout}"
    );
}

/// The binaries a README line `cargo build ...` or `cargo run ...` builds, as the paths
/// `target/<profile>/<binary>` they land at.
fn built_by(root: &std::path::Path, line: &str) -> Vec<String> {
    let line = line.trim();
    let Some(rest) = line
        .strip_prefix("cargo build ")
        .or_else(|| line.strip_prefix("cargo run "))
    else {
        return Vec::new();
    };
    let words: Vec<&str> = rest
        .split_whitespace()
        .take_while(|word| *word != "--" && !word.starts_with('#'))
        .collect();
    let profile = if words.contains(&"--release") {
        "release"
    } else {
        "debug"
    };
    words
        .windows(2)
        .filter(|pair| pair[0] == "-p" || pair[0] == "--package")
        .flat_map(|pair| binaries_of(root, pair[1]))
        .map(|binary| format!("target/{profile}/{binary}"))
        .collect()
}

/// The `[[bin]]` names of the workspace package in crates/<package>.
fn binaries_of(root: &std::path::Path, package: &str) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("crates").join(package).join("Cargo.toml"))
        .unwrap_or_else(|error| panic!("the README builds '{package}': {error}"));
    let mut in_bin = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            names.push(value.trim().trim_matches('"').to_owned());
        }
    }
    names
}

/// examples/tiers.toml works after the commands the docs give: it validates, and every program
/// it names — the servers' commands, and what its comments and the walkthrough in
/// docs/tiers.md run — is one a `cargo build`/`cargo run` line of the README or that
/// walkthrough builds (the README's first command is a release build; a debug path nothing
/// makes would leave the example's server down).
#[test]
fn the_tiers_example_runs_what_its_walkthrough_builds() {
    let root = repo_root();
    let check = Command::new(switchboard())
        .current_dir(&root)
        .args(["config", "check", "examples/tiers.toml"])
        .output()
        .expect("run switchboard");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md")
        + &std::fs::read_to_string(root.join("docs/tiers.md")).expect("docs/tiers.md");
    let built: std::collections::BTreeSet<String> = readme
        .lines()
        .flat_map(|line| built_by(&root, line))
        .collect();
    assert!(
        built.contains("target/release/switchboard"),
        "the README's first command builds the gateway: {built:?}"
    );

    let listed = Command::new(switchboard())
        .current_dir(&root)
        .args([
            "--config",
            "examples/tiers.toml",
            "servers",
            "list",
            "--offline",
            "--json",
        ])
        .output()
        .expect("run switchboard");
    let commands: Vec<String> = stdout_json(&listed)["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter_map(|server| server["command"].as_str().map(str::to_owned))
        .collect();
    assert!(!commands.is_empty(), "the example runs a fixture server");
    for command in &commands {
        assert!(
            built.contains(command),
            "examples/tiers.toml runs '{command}', which no README command builds ({built:?})"
        );
    }

    let example = std::fs::read_to_string(root.join("examples/tiers.toml")).expect("example");
    let runs: Vec<&str> = readme
        .lines()
        .chain(
            example
                .lines()
                .filter_map(|line| line.strip_prefix('#').map(str::trim)),
        )
        .filter(|line| line.contains("--config examples/tiers.toml"))
        .collect();
    assert!(runs.len() >= 8, "{runs:?}");
    for line in runs {
        let program = line.split_whitespace().next().unwrap_or_default();
        assert!(
            built.contains(program),
            "'{line}' runs '{program}', which no README command builds ({built:?})"
        );
    }
}

/// `--revision` holds offline too: a change based on the file as a report gave it goes
/// through, one based on a file that has changed since is a conflict that writes nothing.
#[test]
fn an_offline_change_checks_the_revision_it_was_based_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.a]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ),
    );
    let offline = |args: &[&str]| {
        let mut all = vec!["servers"];
        all.extend(args);
        all.extend(["--offline", "--json"]);
        run_bare(&config, &all)
    };
    let disabled = offline(&["disable", "a"]);
    assert!(
        disabled.status.success(),
        "{}",
        String::from_utf8_lossy(&disabled.stderr)
    );
    let revision = stdout_json(&disabled)["revision"]
        .as_str()
        .expect("revision")
        .to_owned();
    let enabled = offline(&["enable", "a", "--revision", &revision]);
    assert!(
        enabled.status.success(),
        "{}",
        String::from_utf8_lossy(&enabled.stderr)
    );
    let before = std::fs::read_to_string(&config).expect("config");
    let stale = offline(&["disable", "a", "--revision", &revision]);
    let said = String::from_utf8_lossy(&stale.stderr);
    assert!(
        !stale.status.success() && said.contains(&revision) && said.contains("look again"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&config).expect("config"), before);
}
