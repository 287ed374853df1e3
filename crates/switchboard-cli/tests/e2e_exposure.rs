//! Exposure modes end to end with the official Python SDK client over stdio: in categories
//! mode the client sees the meta-tools, loads a category, is told the list changed and calls
//! a newly listed tool; in search mode it finds a tool and calls it through `call_tool`; a
//! tool outside its view is refused in both.

mod support;

use serde_json::Value;
use support::*;

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "[agents.lazy]\nexposure = \"categories\"\nallow = [\"fx:*\", \"clock:*\"]\ndeny = [\"fx__pid\"]\npinned = [\"clock__now\"]\n\n[agents.seeker]\nexposure = \"search\"\nallow = [\"fx:*\"]\ndeny = [\"fx__pid\"]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\ncategory = \"testing/echo\"\n\n[servers.clock]\nbuiltin = \"clock\"\n",
            quoted(&fixture())
        ),
    )
}

fn client(config: &std::path::Path, agent: &str, action: &[&str]) -> Value {
    let switchboard = switchboard().display().to_string();
    let admin = config
        .parent()
        .map(|dir| dir.join("admin.json"))
        .unwrap_or_default()
        .display()
        .to_string();
    let config = config.display().to_string();
    let mut args = vec!["--era", "legacy", "--stdio"];
    args.extend(action);
    args.extend([
        "--",
        &switchboard,
        "--config",
        &config,
        "serve",
        "--agent",
        agent,
        "--admin-file",
        &admin,
    ]);
    python_client(&args)
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn categories_mode_loads_tools_and_announces_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path());
    let run = client(
        &config,
        "lazy",
        &[
            "lazy",
            "testing",
            "fx__echo",
            r#"{"message": "lazy hello"}"#,
        ],
    );
    let before: Vec<&str> = run["before"]
        .as_array()
        .expect("before")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        before,
        [
            "list_categories",
            "load_category",
            "unload_category",
            "clock__now"
        ]
    );
    assert_eq!(
        run["notified"], true,
        "loading a category sends tools/list_changed: {run}"
    );
    let after: Vec<&str> = run["after"]
        .as_array()
        .expect("after")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        after.contains(&"fx__echo") && after.contains(&"fx__add"),
        "{after:?}"
    );
    assert!(
        !after.contains(&"fx__pid"),
        "denied tools never appear: {after:?}"
    );
    assert_eq!(text(&run["result"]), "lazy hello");
    // Outside the view, even after loading: refused like an unknown tool (a JSON-RPC error).
    let output = std::process::Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/client.py"))
        .args([
            "--era", "legacy", "--stdio", "lazy", "testing", "fx__pid", "{}", "--",
        ])
        .arg(switchboard())
        .args([
            "--config",
            &config.display().to_string(),
            "serve",
            "--agent",
            "lazy",
        ])
        .args([
            "--admin-file",
            &dir.path().join("admin.json").display().to_string(),
        ])
        .output()
        .expect("run the client");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("client error: MCPError: Unknown tool: fx__pid"),
        "{stderr}"
    );
}

#[test]
fn search_mode_finds_and_calls_through_call_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path());
    let listed = client(&config, "seeker", &["list"]);
    assert_eq!(
        names(&listed),
        ["search_tools", "describe_tool", "call_tool"]
    );
    let run = client(
        &config,
        "seeker",
        &[
            "find",
            "add two numbers",
            "fx__add",
            r#"{"a": 20, "b": 22}"#,
        ],
    );
    let found = text(&run["found"]);
    assert!(
        found.starts_with("fx__add(a: number, b: number): Adds two numbers."),
        "{found}"
    );
    assert_eq!(text(&run["result"]), "42");
    let hidden = client(&config, "seeker", &["find", "process id", "fx__pid", "{}"]);
    assert!(
        !text(&hidden["found"]).contains("fx__pid"),
        "search never shows a tool outside the view"
    );
    assert_eq!(hidden["result"]["isError"], true);
    assert!(
        text(&hidden["result"]).contains("unknown tool 'fx__pid'"),
        "{hidden}"
    );
}
