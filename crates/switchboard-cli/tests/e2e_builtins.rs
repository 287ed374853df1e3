//! The built-in tool servers end to end: `switchboard serve` with no config, driven by the
//! official Python SDK client over stdio, calls a tool of each built-in; and each built-in
//! served alone by `switchboard tool-server NAME`.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// Runs the Python client against `switchboard ARGS...` started in `dir` with its data there.
fn client(dir: &Path, action: &[&str], gateway: &[&str]) -> Value {
    let script = repo_root().join("e2e/py/client.py");
    let mut command = std::process::Command::new(venv_bin().join("python"));
    command
        .arg(script)
        .args(["--era", "legacy", "--stdio"])
        .args(action)
        .arg("--")
        .arg(switchboard())
        .args(gateway)
        .current_dir(dir)
        .env_remove("SWITCHBOARD_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir);
    let output = command.output().expect("run the Python client");
    assert!(
        output.status.success(),
        "client failed ({action:?}):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn the_default_gateway_serves_every_builtin_to_the_python_sdk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = ["serve"];
    let listed = names(&client(dir.path(), &["list"], &serve));
    for tool in [
        "clock__now",
        "dice__roll",
        "dice__roll_table",
        "dice__list_tables",
        "files__read_file",
        "files__write_file",
        "files__edit_file",
        "files__search_files",
        "files__list_allowed_roots",
        "memory__create_entities",
        "memory__search_facts",
        "memory__put_summary",
        "memory__search_sessions",
    ] {
        assert!(
            listed.contains(&tool.to_owned()),
            "{tool} missing from {listed:?}"
        );
    }
    let roll = client(
        dir.path(),
        &[
            "call",
            "dice__roll",
            r#"{"expression": "4d6kh3 # strength"}"#,
        ],
        &serve,
    );
    let total = roll["structuredContent"]["total"].as_i64().expect("total");
    assert!((3..=18).contains(&total), "{roll}");
    assert!(text(&roll).contains("# strength"), "{roll}");
    let bad = client(
        dir.path(),
        &["call", "dice__roll", r#"{"expression": "4d6kh"}"#],
        &serve,
    );
    assert_eq!(bad["isError"], true);
    assert!(
        text(&bad).contains("expected a number after kh at column 6"),
        "{bad}"
    );

    let wrote = client(
        dir.path(),
        &[
            "call",
            "files__write_file",
            r#"{"path": "notes.md", "content": "hello from the SDK"}"#,
        ],
        &serve,
    );
    assert_ne!(wrote["isError"], true, "{wrote}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).expect("written"),
        "hello from the SDK"
    );
    let read = client(
        dir.path(),
        &["call", "files__read_file", r#"{"path": "notes.md"}"#],
        &serve,
    );
    assert_eq!(text(&read), "hello from the SDK");
    let escape = client(
        dir.path(),
        &[
            "call",
            "files__read_file",
            r#"{"path": "../../etc/passwd"}"#,
        ],
        &serve,
    );
    assert_eq!(escape["isError"], true, "{escape}");

    let entities = r#"{"entities": [{"name": "Mira", "entityType": "npc", "observations": ["keeps the tavern by the river"]}]}"#;
    client(
        dir.path(),
        &["call", "memory__create_entities", entities],
        &serve,
    );
    let found = client(
        dir.path(),
        &["call", "memory__search_facts", r#"{"query": "tavern"}"#],
        &serve,
    );
    assert_eq!(
        found["structuredContent"]["facts"][0]["subject"], "Mira",
        "{found}"
    );
    assert!(dir.path().join("switchboard/memory.db").exists());

    let now = client(dir.path(), &["call", "clock__now", "{}"], &serve);
    assert!(
        now["structuredContent"]["iso8601"].as_str().is_some(),
        "{now}"
    );
}

#[test]
fn each_builtin_is_also_a_standalone_mcp_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = dir.path().join("tables");
    std::fs::create_dir(&tables).expect("tables");
    std::fs::write(tables.join("weather.csv"), "weight,result\n1,Fog\n").expect("table");
    let tables_arg = tables.display().to_string();
    let dice = [
        "tool-server",
        "dice",
        "--seed",
        "7",
        "--tables-dir",
        &tables_arg,
    ];
    assert_eq!(
        names(&client(dir.path(), &["list"], &dice)),
        ["list_tables", "roll", "roll_table"]
    );
    let first = client(
        dir.path(),
        &["call", "roll", r#"{"expression": "10d100"}"#],
        &dice,
    );
    let again = client(
        dir.path(),
        &["call", "roll", r#"{"expression": "10d100"}"#],
        &dice,
    );
    assert_eq!(
        first["structuredContent"]["total"], again["structuredContent"]["total"],
        "a seed makes rolls repeat"
    );
    let table = client(
        dir.path(),
        &["call", "roll_table", r#"{"table": "weather"}"#],
        &dice,
    );
    assert_eq!(table["structuredContent"]["results"][0], "Fog");

    let root = dir.path().join("docs");
    std::fs::create_dir(&root).expect("root");
    std::fs::write(root.join("a.txt"), "alpha").expect("file");
    let root_arg = root.display().to_string();
    let files = ["tool-server", "files", "--read-only-root", &root_arg];
    let read = client(
        dir.path(),
        &["call", "read_file", r#"{"path": "a.txt"}"#],
        &files,
    );
    assert_eq!(text(&read), "alpha");
    let refused = client(
        dir.path(),
        &["call", "write_file", r#"{"path": "a.txt", "content": "x"}"#],
        &files,
    );
    assert!(text(&refused).contains("read-only root"), "{refused}");

    let database = dir.path().join("standalone.db").display().to_string();
    let memory = ["tool-server", "memory", "--database", &database];
    client(
        dir.path(),
        &[
            "call",
            "put_summary",
            r#"{"session_id": "s1", "summary": "met the dragon"}"#,
        ],
        &memory,
    );
    let summary = client(
        dir.path(),
        &["call", "get_summary", r#"{"session_id": "s1"}"#],
        &memory,
    );
    assert_eq!(text(&summary), "met the dragon");
}
