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

#[test]
fn the_python_sdk_calls_every_builtin_tool_through_the_gateway() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("tables")).expect("tables");
    std::fs::write(dir.path().join("tables/loot.csv"), "3,a rope\n1,a map\n").expect("table");
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").expect("file");
    let config = write_config(
        dir.path(),
        "[servers.clock]\nbuiltin = \"clock\"\n[servers.dice]\nbuiltin = \"dice\"\ntables_dir = \"tables\"\n[servers.files]\nbuiltin = \"files\"\nroots = [\".\"]\n[servers.memory]\nbuiltin = \"memory\"\ndatabase = \"memory.db\"\n",
    );
    let plan = serde_json::json!([
        ["clock__now", {"utc_offset": "+01:00"}],
        ["dice__roll", {"expression": "2d20kh1 + 3"}],
        ["dice__list_tables", {}],
        ["dice__roll_table", {"table": "loot", "count": 2}],
        ["files__list_allowed_roots", {}],
        ["files__read_file", {"path": "a.txt"}],
        ["files__read_multiple_files", {"paths": ["a.txt", "missing.txt"]}],
        ["files__write_file", {"path": "b.txt", "content": "one two"}],
        ["files__edit_file", {"path": "b.txt", "edits": [{"oldText": "two", "newText": "three"}]}],
        ["files__create_directory", {"path": "sub/deeper"}],
        ["files__move_file", {"source": "b.txt", "destination": "sub/b.txt"}],
        ["files__list_directory", {"path": "sub"}],
        ["files__directory_tree", {"path": ".", "max_depth": 2}],
        ["files__search_files", {"path": ".", "pattern": "*.txt", "content": "three"}],
        ["files__get_file_info", {"path": "a.txt"}],
        ["memory__create_entities", {"entities": [{"name": "Mira", "entityType": "npc"}, {"name": "Oakvale", "entityType": "town"}]}],
        ["memory__add_observations", {"entity": "Mira", "observations": ["keeps the tavern"]}],
        ["memory__create_relations", {"relations": [{"from": "Mira", "to": "Oakvale", "relationType": "lives_in"}]}],
        ["memory__add_facts", {"facts": [{"text": "the bridge fell", "source": "rumour"}]}],
        ["memory__query_entities", {"name": "Mir"}],
        ["memory__search_facts", {"query": "tavern"}],
        ["memory__put_summary", {"session_id": "s1", "summary": "met Mira"}],
        ["memory__get_summary", {"session_id": "s1"}],
        ["memory__search_sessions", {"query": "Mira"}],
        ["memory__delete_entities", {"names": ["Oakvale"]}]
    ]);
    let config_arg = config.display().to_string();
    let results = client(
        dir.path(),
        &["calls", &plan.to_string()],
        &["--config", &config_arg, "serve"],
    );
    let results = results.as_array().expect("results");
    assert_eq!(results.len(), 25);
    for result in results {
        assert_ne!(result["isError"], true, "{result}");
        assert!(
            result["structuredContent"].is_object(),
            "every built-in answers structured content: {result}"
        );
    }
    let by_name = |name: &str| results.iter().find(|r| r["name"] == name).expect(name);
    assert_eq!(
        by_name("files__search_files")["structuredContent"]["matches"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("sub/b.txt")).expect("moved"),
        "one three"
    );
    assert_eq!(
        by_name("memory__search_facts")["structuredContent"]["facts"][0]["subject"],
        "Mira"
    );
    assert_eq!(
        by_name("memory__query_entities")["structuredContent"]["entities"][0]["relations"][0]["to"],
        "Oakvale"
    );
    assert_eq!(
        by_name("dice__roll_table")["structuredContent"]["results"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

/// Regression: a files server with no roots served its working directory, which is `/` for a
/// gateway started by a desktop host or systemd — the whole filesystem, writable. It now
/// refuses `/` and the home directory, naming the `roots` key, and keeps serving any other
/// working directory.
#[test]
fn a_files_server_without_roots_refuses_the_filesystem_root_and_home() {
    let home = tempfile::tempdir().expect("home");
    let project = home.path().join("project");
    std::fs::create_dir(&project).expect("project");
    let run = |cwd: &Path| {
        std::process::Command::new(switchboard())
            .args(["tool-server", "files"])
            .current_dir(cwd)
            .env("HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run switchboard")
    };
    for (cwd, what) in [
        (Path::new("/"), "the filesystem root"),
        (home.path(), "your home directory"),
    ] {
        let output = run(cwd);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{what}: served; {stderr}");
        assert!(
            stderr.contains(what) && stderr.contains("roots = [\"DIR\"]"),
            "{what}: {stderr}"
        );
    }
    let served = run(&project);
    assert!(
        served.status.success(),
        "{}",
        String::from_utf8_lossy(&served.stderr)
    );
}

/// Regression: with no config file, run from the home directory (or `/`), `serve`, `tools`
/// and `call` failed outright because the default files server refused its root, with a hint
/// at a `[servers.ID]` section of a config that does not exist. The other built-ins now
/// serve, files left out with a notice saying why and how to give it a root; a config that
/// names `files` explicitly still fails as before.
#[test]
fn the_builtin_default_serves_without_files_from_the_home_directory() {
    let home = tempfile::tempdir().expect("home");
    let run = |args: &[&str]| {
        std::process::Command::new(switchboard())
            .args(args)
            .current_dir(home.path())
            .env("HOME", home.path())
            .env_remove("SWITCHBOARD_CONFIG")
            .env("SWITCHBOARD_ADMIN_FILE", home.path().join("admin.json"))
            .env("XDG_CONFIG_HOME", home.path().join(".config"))
            .env("XDG_DATA_HOME", home.path().join(".local/share"))
            .env("XDG_STATE_HOME", home.path().join(".local/state"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run switchboard")
    };
    let listed = run(&["tools", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "{stderr}");
    let tools = String::from_utf8_lossy(&listed.stdout);
    assert!(tools.contains("clock__"), "{tools}");
    assert!(!tools.contains("files__"), "{tools}");
    let notice = stderr
        .lines()
        .find(|line| line.contains("files server is left out"))
        .unwrap_or_else(|| panic!("no notice about files: {stderr}"));
    assert!(
        notice.contains("your home directory")
            && notice.contains("[servers.files]")
            && notice.contains("roots = [\"DIR\"]"),
        "{notice}"
    );
    let called = run(&["call", "dice__roll", "expression=1d6"]);
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );

    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let named = write_config(&elsewhere, "[servers.files]\nbuiltin = \"files\"\n");
    let refused = run(&["--config", &named.display().to_string(), "tools"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("your home directory") && !stderr.contains("left out"),
        "{stderr}"
    );
}
