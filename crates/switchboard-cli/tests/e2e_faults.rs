//! One bad upstream never takes down the rest: a server whose command does not exist, one that
//! exits at once, one that hangs on initialize, one that prints garbage — each is reported with
//! a clear reason while the good server's tools are listed and callable, and nothing hangs
//! past its deadline.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use switchboard_fixtures::client::StdioClient;

fn faulty_config(dir: &std::path::Path) -> std::path::PathBuf {
    let fixture = quoted(&fixture());
    let text = format!(
        "[gateway]\nconnect_timeout = \"1500ms\"\ndiscover_timeout = \"300ms\"\ncall_timeout = \"2s\"\n\n\
         [servers.good]\ncommand = {fixture}\nargs = [\"echo\"]\n\n\
         [servers.missing]\ncommand = \"/nonexistent/definitely-not-a-server\"\n\n\
         [servers.exits]\ncommand = {fixture}\nargs = [\"exit-immediately\"]\n\n\
         [servers.hangs]\ncommand = {fixture}\nargs = [\"hang\"]\n\n\
         [servers.garbage]\ncommand = {fixture}\nargs = [\"garbage\"]\n\n\
         [servers.crashy]\ncommand = {fixture}\nargs = [\"crash-after\", \"--calls\", \"1\"]\n"
    );
    write_config(dir, &text)
}

fn server<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["servers"]
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["server"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {status}"))
}

#[test]
fn each_fault_is_reported_with_its_reason_and_the_rest_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = faulty_config(dir.path());
    let started = Instant::now();
    let output = run_switchboard(&config, &["status", "--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "status took {:?}: a bad server blocked it",
        started.elapsed()
    );
    let status = stdout_json(&output);

    let good = server(&status, "good");
    assert_eq!(
        (good["state"].as_str(), good["tools"].as_u64()),
        (Some("up"), Some(7)),
        "{good}"
    );
    let expectations = [
        (
            "missing",
            "cannot start '/nonexistent/definitely-not-a-server'",
        ),
        // Noticed by the reader (closed stdout) or by the first write (stdin): either says so.
        ("exits", "exited"),
        ("hangs", "timed out after 1500 ms"),
        ("garbage", "non-JSON on stdout: 'this is not json'"),
    ];
    for (id, reason) in expectations {
        let entry = server(&status, id);
        assert_eq!(entry["state"], "down", "{entry}");
        let error = entry["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(reason),
            "{id}: '{error}' should contain '{reason}'"
        );
        assert_eq!(entry["tools"], 0);
    }

    let tools = stdout_json(&run_switchboard(&config, &["tools", "--format", "json"]));
    let listed: Vec<&str> = tools
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        listed.contains(&"good__echo") && listed.contains(&"crashy__echo"),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .all(|name| name.starts_with("good__") || name.starts_with("crashy__")),
        "{listed:?}"
    );
    let entry = tools
        .as_array()
        .expect("array")
        .iter()
        .find(|t| t["name"] == "good__echo")
        .expect("good__echo");
    assert_eq!(
        (
            entry["server"].as_str(),
            entry["tool"].as_str(),
            entry["status"].as_str()
        ),
        (Some("good"), Some("echo"), Some("up"))
    );

    let call = run_switchboard(
        &config,
        &["call", "good__echo", "message=still works", "--json"],
    );
    assert!(call.status.success());
    assert_eq!(stdout_json(&call)["content"][0]["text"], "still works");
}

#[test]
fn a_server_that_dies_mid_session_fails_its_calls_quickly_and_comes_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = faulty_config(dir.path());
    let mut gateway = StdioClient::spawn(
        Command::new(switchboard())
            .arg("--config")
            .arg(&config)
            .args(["--log", "error", "serve"])
            .stderr(Stdio::null()),
    )
    .expect("gateway");
    gateway.initialize().expect("initialize");
    let first = gateway
        .request(
            "tools/call",
            json!({"name": "crashy__echo", "arguments": {"message": "one"}}),
        )
        .expect("first call");
    assert_eq!(first["content"][0]["text"], "one");
    // The server exits right after answering; calls to it end with a clear error, not a hang.
    let started = Instant::now();
    let second = gateway.request(
        "tools/call",
        json!({"name": "crashy__echo", "arguments": {"message": "two"}}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    match second {
        Ok(result) => {
            assert_eq!(result["isError"], true, "{result}");
        }
        Err(error) => assert!(error.to_string().contains("Unknown tool"), "{error}"),
    }
    // The supervisor restarts it with backoff; its tools come back and work again.
    let recovered = wait_for(Duration::from_secs(10), || {
        let result = gateway
            .request(
                "tools/call",
                json!({"name": "crashy__echo", "arguments": {"message": "three"}}),
            )
            .ok()?;
        (result["content"][0]["text"] == "three").then_some(())
    });
    assert!(recovered.is_some(), "crashy never came back");
    let other = gateway
        .request(
            "tools/call",
            json!({"name": "good__add", "arguments": {"a": 2, "b": 3}}),
        )
        .expect("good still works");
    assert_eq!(other["content"][0]["text"], "5");
}

#[test]
fn hung_calls_end_at_their_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = faulty_config(dir.path());
    let started = Instant::now();
    let output = run_switchboard(&config, &["call", "good__sleep", "ms=60000", "--json"]);
    let elapsed = started.elapsed();
    assert_eq!(
        output.status.code(),
        Some(1),
        "a timed-out call is a failed call"
    );
    let result = stdout_json(&output);
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer within 2000ms"),
        "{result}"
    );
    assert!(elapsed < Duration::from_secs(8), "took {elapsed:?}");
}

#[test]
fn pagination_is_walked_to_the_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[servers.many]\ncommand = {}\nargs = [\"paginate\", \"--tools\", \"250\", \"--page-size\", \"50\"]\n",
        quoted(&fixture())
    );
    let config = write_config(dir.path(), &text);
    let tools = stdout_json(&run_switchboard(&config, &["tools", "--format", "json"]));
    let names: Vec<&str> = tools
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), 250);
    assert_eq!((names[0], names[249]), ("many__tool_000", "many__tool_249"));
}
