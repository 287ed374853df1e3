//! Governance end to end: the official Python SDK client against the real gateway, with
//! approvals answered through elicitation (legacy and modern eras), by an operator with
//! `switchboard approvals`, or not at all (timeout); and per-agent views over stdio.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::*;

fn governed_config(dir: &Path, timeout: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "[gateway]\napproval_timeout = {}\n\n[agents.qa]\napproval = \"destructive\"\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(timeout),
            quoted(&fixture())
        ),
    )
}

fn add(url: &str, era: &str, elicit: Option<&str>) -> Value {
    let mut args = vec!["--era", era, "--http", url];
    if let Some(answer) = elicit {
        args.extend(["--elicit", answer]);
    }
    args.extend(["call", "fx__add", r#"{"a": 2, "b": 3}"#]);
    python_client(&args)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn the_calling_client_approves_or_declines_in_both_eras() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = governed_config(dir.path(), "30s");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let gateway = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_arg]);
    for era in ["legacy", "modern"] {
        let approved = add(&gateway.url, era, Some("accept"));
        assert_ne!(approved["isError"], true, "{era}: {approved}");
        assert_eq!(text(&approved), "5", "{era}: {approved}");
        let envelope = &approved["_meta"]["switchboard.dev/call"];
        assert_eq!(
            envelope["server"], "fx",
            "{era}: the envelope reaches the client"
        );
        let declined = add(&gateway.url, era, Some("decline"));
        assert_eq!(declined["isError"], true, "{era}: {declined}");
        assert_eq!(
            text(&declined),
            "denied by client: the user declined",
            "{era}"
        );
        let refused = add(&gateway.url, era, Some("approve-false"));
        assert_eq!(
            text(&refused),
            "denied by client: the user did not approve",
            "{era}"
        );
    }
    // A read-only tool needs no approval, even without elicitation.
    let echo = python_client(&[
        "--era",
        "legacy",
        "--http",
        &gateway.url,
        "call",
        "fx__echo",
        r#"{"message": "hi"}"#,
    ]);
    assert_ne!(echo["isError"], true, "{echo}");
}

#[test]
fn without_elicitation_an_operator_decides_or_time_runs_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = governed_config(dir.path(), "20s");
    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let gateway = HttpGateway::start(&config, &["--agent", "qa", "--admin-file", &admin_arg]);
    for (answer, expected) in [("approve", None), ("deny", Some("not today"))] {
        let client = Command::new(venv_bin().join("python"))
            .arg(repo_root().join("e2e/py/client.py"))
            .args([
                "--era",
                "legacy",
                "--http",
                &gateway.url,
                "call",
                "fx__add",
                r#"{"a": 1, "b": 1}"#,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Python client");
        let pending = wait_for(Duration::from_secs(15), || {
            let listed = run_switchboard(
                &config,
                &["approvals", "list", "--json", "--admin-file", &admin_arg],
            );
            let approvals = stdout_json(&listed);
            approvals.as_array().filter(|a| !a.is_empty()).cloned()
        })
        .expect("the call shows up in `switchboard approvals list`");
        assert_eq!(pending[0]["tool"], "fx__add");
        assert_eq!(pending[0]["agent"], "qa");
        assert_eq!(pending[0]["arguments"]["a"], 1);
        let id = pending[0]["id"].as_str().expect("id").to_owned();
        let mut command = vec![answer, id.as_str(), "--admin-file", &admin_arg];
        if let Some(reason) = expected {
            command.extend(["--reason", reason]);
        }
        let mut full = vec!["approvals"];
        full.extend(command);
        let answered = run_switchboard(&config, &full);
        assert!(
            answered.status.success(),
            "{}",
            String::from_utf8_lossy(&answered.stderr)
        );
        let output = client.wait_with_output().expect("client ends");
        let result: Value = serde_json::from_slice(&output.stdout).expect("client JSON");
        match expected {
            None => assert_eq!(text(&result), "2", "{result}"),
            Some(reason) => {
                assert_eq!(result["isError"], true);
                assert!(
                    text(&result).starts_with("denied by operator")
                        && text(&result).ends_with(reason),
                    "{result}"
                );
            }
        }
    }
    drop(gateway);

    let quick = governed_config(dir.path(), "1s");
    let gateway = HttpGateway::start(&quick, &["--agent", "qa", "--admin-file", &admin_arg]);
    let timed_out = add(&gateway.url, "legacy", None);
    assert_eq!(timed_out["isError"], true);
    assert_eq!(
        text(&timed_out),
        "denied by timeout: no operator answered within 1 s"
    );
}

#[test]
fn an_agent_sees_and_calls_only_its_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[agents.reader]\nallow = [\"fx__echo\", \"fx:pid\"]\n\n[agents.all]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ),
    );
    let switchboard = switchboard().display().to_string();
    let config_arg = config.display().to_string();
    let admin = dir.path().join("admin.json").display().to_string();
    let reader = |action: &[&str]| {
        let mut args = vec!["--era", "legacy", "--stdio"];
        args.extend(action);
        args.extend([
            "--",
            &switchboard,
            "--config",
            &config_arg,
            "serve",
            "--agent",
            "reader",
            "--admin-file",
            &admin,
        ]);
        python_client(&args)
    };
    let listed = names(&reader(&["list"]));
    assert_eq!(listed, ["fx__echo", "fx__pid"]);
    let echo = reader(&["call", "fx__echo", r#"{"message": "hi"}"#]);
    assert_ne!(echo["isError"], true);
    let cli = run_switchboard(&config, &["tools", "--agent", "reader", "--format", "json"]);
    assert_eq!(names(&stdout_json(&cli)), ["fx__echo", "fx__pid"]);
    let refused = run_switchboard(
        &config,
        &["call", "--agent", "reader", "fx__add", "a=1", "b=2"],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("unknown tool: fx__add"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let unknown = run_switchboard(&config, &["tools", "--agent", "nobody"]);
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("unknown agent 'nobody' (the config defines: all, reader)")
    );
}

fn modern_list() -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
}

#[tokio::test]
async fn http_tokens_decide_the_agent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.json");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\ntoken_file = {}\n\n[agents.reader]\nallow = [\"fx__echo\"]\n\n[agents.all]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&tokens.display().to_string()),
            quoted(&fixture())
        ),
    );
    let create = |agent: &str| create_token(&config, agent);
    let reader = create("reader");
    let all = create("all");
    let stored = std::fs::read_to_string(&tokens).expect("token file");
    assert!(
        !stored.contains(&reader) && !stored.contains(&all),
        "only hashes are stored"
    );
    let unknown = run_switchboard(&config, &["token", "create", "ghost"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown agent 'ghost'"));

    let admin = dir.path().join("admin.json").display().to_string();
    let gateway = HttpGateway::start(&config, &["--admin-file", &admin]);
    let (status, _, challenge) = post(&gateway.url, None, modern_list()).await;
    assert_eq!(status, 401);
    assert_eq!(challenge.as_deref(), Some("Bearer realm=\"switchboard\""));
    let (status, _, _) = post(&gateway.url, Some("sbt_forged"), modern_list()).await;
    assert_eq!(status, 401);
    let listed = |body: &str| -> Vec<String> {
        let value: serde_json::Value = serde_json::from_str(body).expect("json");
        names(&value["result"]["tools"])
    };
    let (status, body, _) = post(&gateway.url, Some(&reader), modern_list()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(listed(&body), ["fx__echo"]);
    assert!(
        body.contains("\"cacheScope\":\"private\""),
        "a per-agent list is private: {body}"
    );
    let (_, body, _) = post(&gateway.url, Some(&all), modern_list()).await;
    assert!(listed(&body).len() > 1, "{body}");
    // Agent endpoints, for clients that cannot choose headers per agent: still need the token.
    let endpoint = format!("{}/agents/reader", gateway.url);
    let (status, body, _) = post(&endpoint, Some(&reader), modern_list()).await;
    assert_eq!((status, listed(&body)), (200, vec!["fx__echo".to_owned()]));
    let (status, _, _) = post(&endpoint, None, modern_list()).await;
    assert_eq!(status, 401);
    let (status, body, _) = post(&endpoint, Some(&all), modern_list()).await;
    assert_eq!(status, 403, "{body}");
    // The official SDK sees the same view.
    let python = python_client(&[
        "--era",
        "modern",
        "--http",
        &endpoint,
        "--header",
        &format!("Authorization=Bearer {reader}"),
        "list",
    ]);
    assert_eq!(names(&python), ["fx__echo"]);

    // Tokens listed by id, revoked and created while the gateway runs: it follows the file
    // within a second, no restart.
    let list = run_switchboard(&config, &["token", "list", "--json"]);
    let listed_tokens: Vec<serde_json::Value> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    assert_eq!(listed_tokens.len(), 2, "{listed_tokens:?}");
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&reader),
        "ids, never tokens"
    );
    let reader_id = listed_tokens
        .iter()
        .find(|token| token["agent"] == "reader")
        .and_then(|token| token["id"].as_str())
        .expect("reader's token")
        .to_owned();
    let revoke = run_switchboard(&config, &["token", "revoke", &reader_id[..8]]);
    assert!(
        revoke.status.success(),
        "{}",
        String::from_utf8_lossy(&revoke.stderr)
    );
    let late = create("reader");
    let refused = wait_for_async(std::time::Duration::from_secs(3), || async {
        let (status, _, _) = post(&gateway.url, Some(&reader), modern_list()).await;
        (status == 401).then_some(())
    })
    .await;
    assert!(
        refused.is_some(),
        "a revoked token is refused within seconds"
    );
    let (status, body, _) = post(&gateway.url, Some(&late), modern_list()).await;
    assert_eq!((status, listed(&body)), (200, vec!["fx__echo".to_owned()]));
    let (status, _, _) = post(&gateway.url, Some(&all), modern_list()).await;
    assert_eq!(status, 200, "the other token still works");
    let unknown = run_switchboard(&config, &["token", "revoke", "ffffffff"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no token in the token file"));
}

/// Polls the async `check` until it returns `Some`, or gives up after `limit`.
async fn wait_for_async<T, F, Fut>(limit: std::time::Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if let Some(found) = check().await {
            return Some(found);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    None
}

#[test]
fn the_shipped_agents_example_works() {
    let example = repo_root().join("examples/agents.toml");
    let check = run_switchboard(
        &example,
        &["config", "check", &example.display().to_string()],
    );
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let npc = names(&stdout_json(&run_switchboard(
        &example,
        &["tools", "--agent", "npc", "--format", "json"],
    )));
    assert!(
        npc.iter()
            .all(|n| n.starts_with("dice__") || n.starts_with("memory__")),
        "{npc:?}"
    );
    assert!(
        npc.contains(&"memory__search_facts".to_owned())
            && !npc.contains(&"memory__delete_entities".to_owned())
    );
    let refused = run_switchboard(
        &example,
        &[
            "call",
            "--agent",
            "npc",
            "files__read_file",
            "path=README.md",
        ],
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown tool: files__read_file"));
    let qa = names(&stdout_json(&run_switchboard(
        &example,
        &["tools", "--agent", "qa", "--format", "json"],
    )));
    assert!(
        qa.contains(&"files__write_file".to_owned()),
        "qa sees everything"
    );
}

#[tokio::test]
async fn every_answered_call_is_in_the_ledger_even_after_sigkill() {
    answered_calls_survive_sigkill(&[], 1).await;
}

/// The same with the front's connections on three threads of their own (`--threads 3`,
/// `--connections per-thread`) and eight clients at once: every thread's calls reach the one
/// ledger, in one unbroken hash chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_call_is_in_the_ledger_with_connections_on_several_threads() {
    answered_calls_survive_sigkill(&["--threads", "3", "--connections", "per-thread"], 8).await;
}

/// Makes 200 calls from `clients` clients at once through a gateway started with `extra`,
/// SIGKILLs it after the last answer, and checks the ledger: every answered call there,
/// arguments redacted, the chain verified, a tampered row found.
async fn answered_calls_survive_sigkill(extra: &[&str], clients: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger.display().to_string()),
            quoted(&fixture())
        ),
    );
    let admin = dir.path().join("admin.json").display().to_string();
    let mut args = vec!["--admin-file", admin.as_str()];
    args.extend_from_slice(extra);
    let mut gateway = HttpGateway::start(&config, &args);
    let call = |i: usize| {
        serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "fx__echo", "arguments": {"message": format!("sk-live{i:04}secretsecretsecret0123456789")},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}})
    };
    let mut clients_at_once = tokio::task::JoinSet::new();
    for first in 0..clients {
        let url = gateway.url.clone();
        clients_at_once.spawn(async move {
            let mut answered = Vec::new();
            for i in (first..200).step_by(clients) {
                let (status, body, _) = post(&url, None, call(i)).await;
                assert_eq!(status, 200, "{body}");
                let value: serde_json::Value = serde_json::from_str(&body).expect("json");
                let id = value["result"]["_meta"]["switchboard.dev/call"]["id"]
                    .as_str()
                    .expect("call id")
                    .to_owned();
                answered.push(id);
            }
            answered
        });
    }
    let mut answered = Vec::new();
    while let Some(ids) = clients_at_once.join_next().await {
        answered.extend(ids.expect("a client"));
    }
    assert_eq!(answered.len(), 200);
    // No graceful shutdown: SIGKILL right after the last answer.
    let _ = gateway.child.kill();
    let _ = gateway.child.wait();
    let rows = audit_rows(&config);
    let ids: std::collections::HashSet<&str> = rows
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["call_id"].as_str())
        .collect();
    for id in &answered {
        assert!(
            ids.contains(id.as_str()),
            "answered call {id} is missing from the ledger"
        );
    }
    let first = &rows[0];
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["args_redacted"]["message"], "[REDACTED]");
    let verify = run_switchboard(&config, &["audit", "verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let export = run_switchboard(&config, &["audit", "export", "--format", "jsonl"]);
    assert_eq!(String::from_utf8_lossy(&export.stdout).lines().count(), 200);
    let mut files = std::fs::read(&ledger).expect("ledger");
    files.extend(std::fs::read(dir.path().join("ledger.db-wal")).unwrap_or_default());
    for entry in std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(Result::ok)
    {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("ledger.db.journal")
        {
            files.extend(std::fs::read(entry.path()).unwrap_or_default());
        }
    }
    assert!(
        !String::from_utf8_lossy(&files).contains("hunter2-never-logged"),
        "secrets stay out of the ledger"
    );
    let conn_edit = std::process::Command::new(venv_bin().join("python"))
        .args(["-c", &format!("import sqlite3; c=sqlite3.connect('{}'); c.execute(\"UPDATE mcp_tool_invocations SET outcome='denied' WHERE id=5\"); c.commit()", ledger.display())])
        .status()
        .expect("edit with sqlite3");
    assert!(conn_edit.success());
    let tampered = run_switchboard(&config, &["audit", "verify"]);
    assert_eq!(tampered.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&tampered.stdout).contains("row 5: this row was edited"),
        "{}",
        String::from_utf8_lossy(&tampered.stdout)
    );
}

/// `switchboard call` of a tool that needs an operator, with no terminal to ask on: denied
/// at once, saying why — not held until the approval timeout, with nobody able to answer.
#[test]
fn a_cli_call_needing_approval_without_a_terminal_is_denied_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = governed_config(dir.path(), "60s");
    let started = std::time::Instant::now();
    let output = Command::new(switchboard())
        .arg("--config")
        .arg(&config)
        .args(["call", "fx__add", "a=2", "b=3", "--agent", "qa"])
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard call");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1), "{all}");
    assert!(all.contains("has no terminal to ask on"), "{all}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "held {:?}: the approval timeout is 60 s",
        started.elapsed()
    );
}
