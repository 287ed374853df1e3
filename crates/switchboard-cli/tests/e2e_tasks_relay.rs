//! Tasks relayed to a server that runs them itself: the npm everything server, whose
//! `simulate-research-query` only runs as a 2025-11-25 task, behind the gateway, driven by the
//! official TypeScript SDK client (`e2e/tasks_client.mjs`; the Python SDK has no task client).
//! The client starts the tool as a task of the gateway's, sees status updates (polled and
//! notified), answers the server's clarifying question that comes over `tasks/result`, and gets
//! the report; a cancelled task is cancelled at the server too and recorded in the ledger.

mod support;

use std::process::Command;

use serde_json::Value;
use support::*;

/// The gateway in front of the everything server.
fn everything_gateway() -> (tempfile::TempDir, std::path::PathBuf, HttpGateway) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = prerequisite(
        node_bin().join("mcp-server-everything"),
        "the npm everything server (e2e/node_modules)",
    );
    let text = format!(
        "[servers.everything]\ncommand = {}\nargs = [\"stdio\"]\n",
        quoted(&server.display().to_string())
    );
    let config = write_config(dir.path(), &text);
    let gateway = HttpGateway::start(&config, &[]);
    (dir, config, gateway)
}

/// Runs the TypeScript SDK tasks client and returns its JSON event lines and exit status.
fn tasks_client(url: &str, args: &[&str]) -> (Vec<Value>, bool, String) {
    let script = prerequisite(
        repo_root().join("e2e/tasks_client.mjs"),
        "the TypeScript tasks client",
    );
    let output = Command::new(node_bin().join("node"))
        .arg(script)
        .args(args)
        .args(["--url", url, "--timeout", "40000"])
        .env("PATH", node_path())
        .output()
        .expect("run the tasks client");
    let events = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (events, output.status.success(), stderr)
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["event"] == kind)
        .collect()
}

#[test]
fn a_task_of_a_server_that_runs_tasks_is_relayed_with_its_status_and_question() {
    let (_dir, _config, gateway) = everything_gateway();
    let (events, success, stderr) = tasks_client(
        &gateway.url,
        &[
            "research",
            "--tool",
            "everything__simulate-research-query",
            "--args",
            r#"{"topic":"python","ambiguous":true}"#,
        ],
    );
    assert!(success, "client failed: {stderr}\n{events:?}");
    let created = of_kind(&events, "created");
    let task_id = created[0]["taskId"].as_str().expect("task id");
    // The gateway's own id: 128 random bits in hex, not the server's (a UUID).
    assert_eq!(task_id.len(), 32, "{task_id}");
    let statuses = of_kind(&events, "status");
    let messages: Vec<&str> = statuses
        .iter()
        .filter_map(|event| event["statusMessage"].as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("Gathering sources")),
        "the server's status messages reach the client: {messages:?}"
    );
    assert!(
        statuses
            .iter()
            .any(|event| event["source"] == "notification"),
        "notifications/tasks/status reach the client: {statuses:?}"
    );
    assert!(
        statuses
            .iter()
            .any(|event| event["status"] == "input_required"),
        "{statuses:?}"
    );
    let asked = of_kind(&events, "elicitation");
    assert_eq!(
        asked.len(),
        1,
        "the server's question reached the client: {events:?}"
    );
    let result = &of_kind(&events, "result")[0]["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Research Report: python (programming)"),
        "the answer reached the server: {text}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id,
        "{result}"
    );
}

#[test]
fn cancelling_a_relayed_task_cancels_it_at_the_server_and_in_the_ledger() {
    let (_dir, config, gateway) = everything_gateway();
    let (events, success, stderr) = tasks_client(
        &gateway.url,
        &["cancel", "--tool", "everything__simulate-research-query"],
    );
    assert!(success, "client failed: {stderr}\n{events:?}");
    let cancelled = &of_kind(&events, "cancel")[0]["result"];
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // The call ends as cancelled in the ledger once the gateway has told the server.
    let recorded = wait_for(std::time::Duration::from_secs(10), || {
        let rows = audit_rows(&config);
        rows.as_array()
            .into_iter()
            .flatten()
            .find(|row| row["tool"] == "simulate-research-query" && row["outcome"] != "ok")
            .cloned()
    });
    let row = recorded.expect("the task's call is in the ledger");
    assert_eq!(row["outcome"], "cancelled", "{row}");
}

/// Two clients' tasks on the one stdio server at once: each server question, tagged with its
/// task (`related-task`), reaches the client whose task it is — not refused as ambiguous, as
/// an untagged request with calls of two clients in flight would be.
#[test]
fn two_clients_questions_on_one_server_reach_each_its_own() {
    let (_dir, _config, gateway) = everything_gateway();
    let run = |topic: &'static str| {
        let url = gateway.url.clone();
        std::thread::spawn(move || {
            let args = format!(r#"{{"topic":"{topic}","ambiguous":true}}"#);
            tasks_client(
                &url,
                &[
                    "research",
                    "--tool",
                    "everything__simulate-research-query",
                    "--args",
                    &args,
                ],
            )
        })
    };
    let (python, tasks) = (run("python"), run("tasks"));
    for (topic, client, chosen) in [
        ("python", python, "programming"),
        ("tasks", tasks, "technical"),
    ] {
        let (events, success, stderr) = client.join().expect("client thread");
        assert!(success, "{topic}: {stderr}\n{events:?}");
        assert_eq!(
            of_kind(&events, "elicitation").len(),
            1,
            "{topic}: its question reached it: {events:?}"
        );
        let result = &of_kind(&events, "result")[0]["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("Research Report: {topic} ({chosen})")),
            "{topic}: its answer reached its task: {text}"
        );
    }
}
