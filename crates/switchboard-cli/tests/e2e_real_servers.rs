//! End to end through the real `switchboard` binary: the npm reference servers
//! (server-everything, server-filesystem) and a Python server (mcp-server-time) behind one
//! gateway, driven by the official Python SDK client over stdio and HTTP, in both eras.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// A config with the three real servers; the filesystem server is confined to `root`.
fn config(dir: &Path, root: &Path) -> std::path::PathBuf {
    let node = node_bin();
    let text = format!(
        "[gateway]\nconnect_timeout = \"20s\"\n\n\
         [servers.everything]\ncommand = {}\n\n\
         [servers.fs]\ncommand = {}\nargs = [{}]\n\n\
         [servers.time]\ncommand = {}\n",
        quoted(&node.join("mcp-server-everything").display().to_string()),
        quoted(&node.join("mcp-server-filesystem").display().to_string()),
        quoted(&root.display().to_string()),
        quoted(&venv_bin().join("mcp-server-time").display().to_string()),
    );
    write_config(dir, &text)
}

struct Setup {
    _dir: tempfile::TempDir,
    config: std::path::PathBuf,
    file: String,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root").canonicalize().unwrap_or_else(|_| {
        std::fs::create_dir_all(dir.path().join("root")).expect("mkdir");
        dir.path().join("root").canonicalize().expect("root")
    });
    let file = root.join("note.txt");
    std::fs::write(&file, "hello from the filesystem server\n").expect("write");
    let config = config(dir.path(), &root);
    Setup {
        _dir: dir,
        config,
        file: file.display().to_string(),
    }
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lists and calls one tool of each server through a client reaching the gateway by `target`.
fn exercise(setup: &Setup, target: &[&str]) {
    let with = |rest: &[&str]| -> Vec<String> {
        let (before, after) = match target.iter().position(|a| *a == "--") {
            Some(split) => (&target[..split], &target[split..]),
            None => (target, &[][..]),
        };
        before
            .iter()
            .chain(rest)
            .chain(after)
            .map(|s| s.to_string())
            .collect()
    };
    let run = |rest: &[&str]| {
        let args = with(rest);
        python_client(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let tools = names(&run(&["list"]));
    for expected in [
        "everything__echo",
        "fs__read_text_file",
        "time__get_current_time",
        "everything__trigger-long-running-operation",
    ] {
        assert!(
            tools.iter().any(|t| t == expected),
            "{expected} missing from {tools:?}"
        );
    }
    let echo = run(&["call", "everything__echo", r#"{"message": "hi there"}"#]);
    assert_eq!(text_of(&echo), "Echo: hi there");
    let read_args = serde_json::json!({"path": setup.file}).to_string();
    let read = run(&["call", "fs__read_text_file", &read_args]);
    assert_eq!(text_of(&read).trim(), "hello from the filesystem server");
    let time = run(&[
        "call",
        "time__get_current_time",
        r#"{"timezone": "Europe/Berlin"}"#,
    ]);
    assert!(text_of(&time).contains("Europe/Berlin"), "{time}");
    let invalid = run(&["call", "time__get_current_time", r#"{"timezone": 5}"#]);
    assert_eq!(invalid["isError"], true);
    assert!(text_of(&invalid).contains("$.timezone"), "{invalid}");
}

#[test]
fn python_sdk_over_stdio_in_both_eras() {
    let setup = setup();
    let gateway = switchboard().display().to_string();
    let config = setup.config.display().to_string();
    for era in ["legacy", "modern"] {
        exercise(
            &setup,
            &[
                "--era", era, "--stdio", "--", &gateway, "--config", &config, "serve",
            ],
        );
    }
}

#[test]
fn python_sdk_over_http_in_both_eras() {
    let setup = setup();
    let mut gateway = HttpGateway::start(&setup.config, &[]);
    let url = gateway.url.clone();
    for era in ["legacy", "modern", "auto"] {
        exercise(&setup, &["--era", era, "--http", &url]);
    }
    let info = python_client(&["--era", "auto", "--http", &url, "info"]);
    assert_eq!(
        info["protocolVersion"], "2026-07-28",
        "auto mode finds the modern era"
    );
    assert!(
        gateway.terminate().success(),
        "SIGTERM ends the gateway with exit code 0"
    );
}

#[test]
fn progress_of_a_long_running_operation_reaches_the_client() {
    let setup = setup();
    let gateway = switchboard().display().to_string();
    let config = setup.config.display().to_string();
    let args = r#"{"duration": 1, "steps": 3}"#;
    let stdio = python_client(&[
        "--era",
        "legacy",
        "progress",
        "everything__trigger-long-running-operation",
        args,
        "--stdio",
        "--",
        &gateway,
        "--config",
        &config,
        "serve",
    ]);
    assert_eq!(
        stdio["progress"],
        serde_json::json!([1.0, 2.0, 3.0]),
        "{stdio}"
    );
    assert!(text_of(&stdio["result"]).contains("completed"), "{stdio}");

    let http = HttpGateway::start(&setup.config, &[]);
    for era in ["legacy", "modern"] {
        let answer = python_client(&[
            "--era",
            era,
            "--http",
            &http.url,
            "progress",
            "everything__trigger-long-running-operation",
            args,
        ]);
        assert_eq!(
            answer["progress"].as_array().map(Vec::len),
            Some(3),
            "{era}: {answer}"
        );
    }
}
