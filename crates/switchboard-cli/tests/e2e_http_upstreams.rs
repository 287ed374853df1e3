//! Upstreams over HTTP: the npm reference server and an official-Python-SDK server, each
//! over Streamable HTTP and over the legacy HTTP+SSE transport, plus a second Switchboard;
//! all on 127.0.0.1. Era negotiation picks the modern era where the server speaks it.

mod support;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::*;
use switchboard_fixtures::client::StdioClient;

/// A peer process, killed when dropped.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn wait_listening(port: u16) {
    let up = wait_for(Duration::from_secs(20), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "nothing listens on 127.0.0.1:{port}");
}

fn everything(mode: &str) -> (Peer, u16) {
    let port = free_port();
    let preload = repo_root().join("e2e/loopback.cjs");
    let child = Command::new(node_bin().join("mcp-server-everything"))
        .arg(mode)
        .env("PORT", port.to_string())
        .env("NODE_OPTIONS", format!("--require {}", preload.display()))
        .env("PATH", node_path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything");
    wait_listening(port);
    (Peer(child), port)
}

fn python_server(mode: &str) -> (Peer, u16) {
    let port = free_port();
    let child = Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/http_server.py"))
        .args([mode, &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the Python server");
    wait_listening(port);
    (Peer(child), port)
}

fn find<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["servers"]
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["server"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {status}"))
}

#[test]
fn http_and_sse_upstreams_of_two_implementations() {
    let (_ev, ev_port) = everything("streamableHttp");
    let (_ev_sse, ev_sse_port) = everything("sse");
    let (_py, py_port) = python_server("streamable-http");
    let (_py_sse, py_sse_port) = python_server("sse");
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nconnect_timeout = \"15s\"\n\n\
         [servers.ev]\nurl = \"http://127.0.0.1:{ev_port}/mcp\"\n\n\
         [servers.evsse]\nurl = \"http://127.0.0.1:{ev_sse_port}/sse\"\ntransport = \"sse\"\n\n\
         [servers.py]\nurl = \"http://127.0.0.1:{py_port}/mcp\"\n\n\
         [servers.pylegacy]\nurl = \"http://127.0.0.1:{py_port}/mcp\"\nera = \"legacy\"\n\n\
         [servers.pysse]\nurl = \"http://127.0.0.1:{py_sse_port}/sse\"\ntransport = \"sse\"\n"
    );
    let config = write_config(dir.path(), &text);
    let status = stdout_json(&run_switchboard(&config, &["status", "--json"]));
    let expected = [
        ("ev", "legacy", "streamable-http"),
        ("evsse", "legacy", "sse"),
        ("py", "modern", "streamable-http"),
        ("pylegacy", "legacy", "streamable-http"),
        ("pysse", "modern", "sse"),
    ];
    for (id, era, transport) in expected {
        let entry = find(&status, id);
        assert_eq!(
            (
                entry["state"].as_str(),
                entry["era"].as_str(),
                entry["transport"].as_str()
            ),
            (Some("up"), Some(era), Some(transport)),
            "{entry}"
        );
        assert!(entry["tools"].as_u64().unwrap_or(0) >= 2, "{entry}");
    }
    let calls = [
        ("ev__echo", "message=over http", "Echo: over http"),
        ("evsse__echo", "message=over sse", "Echo: over sse"),
        ("py__shout", "text=modern", "MODERN"),
        ("pylegacy__shout", "text=legacy", "LEGACY"),
        ("pysse__add", "a=2", "5"),
    ];
    for (tool, argument, expected) in calls {
        let mut args = vec!["call", tool, argument];
        if tool == "pysse__add" {
            args.push("b=3");
        }
        let output = run_switchboard(&config, &args);
        assert!(
            output.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            expected,
            "{tool}"
        );
    }
    // Progress travels from an HTTP upstream through the gateway to a stdio client.
    let gateway = switchboard().display().to_string();
    let config_arg = config.display().to_string();
    let progress = python_client(&[
        "--era",
        "legacy",
        "progress",
        "ev__trigger-long-running-operation",
        r#"{"duration": 1, "steps": 2}"#,
        "--stdio",
        "--",
        &gateway,
        "--config",
        &config_arg,
        "--log",
        "error",
        "serve",
    ]);
    assert_eq!(
        progress["progress"].as_array().map(Vec::len),
        Some(2),
        "{progress}"
    );
}

/// A second Switchboard over HTTP with `config_text`, its files in `dir/inner`.
fn inner_gateway(dir: &std::path::Path, config_text: &str) -> HttpGateway {
    let inner_dir = dir.join("inner");
    std::fs::create_dir_all(&inner_dir).expect("mkdir");
    HttpGateway::start(&write_config(&inner_dir, config_text), &[])
}

/// A second Switchboard over HTTP in pass-through mode in front of the conformance fixture.
fn inner_conformance_gateway(dir: &std::path::Path) -> HttpGateway {
    inner_gateway(
        dir,
        &format!(
            "[gateway]\nprefix_tools = false\n\n[servers.conformance]\ncommand = {}\nargs = [\"conformance\"]\n",
            quoted(&fixture())
        ),
    )
}

#[test]
fn a_switchboard_can_front_another_in_either_era() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = inner_gateway(
        dir.path(),
        &format!(
            "[servers.echo]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&fixture())
        ),
    );
    let text = format!(
        "[servers.auto]\nurl = {url}\n\n[servers.old]\nurl = {url}\nera = \"legacy\"\n",
        url = quoted(&inner.url)
    );
    let config = write_config(dir.path(), &text);
    let status = stdout_json(&run_switchboard(&config, &["status", "--json"]));
    assert_eq!(find(&status, "auto")["era"], "modern");
    assert_eq!(find(&status, "old")["era"], "legacy");
    for tool in ["auto__echo__echo", "old__echo__echo"] {
        let output = run_switchboard(&config, &["call", tool, "message=nested", "--json"]);
        assert!(
            output.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(stdout_json(&output)["content"][0]["text"], "nested");
    }
    let refused = stdout_json(&run_switchboard(
        &config,
        &["call", "auto__echo__echo", "message=5", "extra=1", "--json"],
    ));
    assert_eq!(
        refused["isError"], true,
        "the outer gateway validates against the schema it got from the inner one"
    );
}

/// A tool that declares `x-mcp-header` arguments: the outer gateway, a modern client of the
/// inner one, mirrors them into `Mcp-Param-*` headers (Base64 where the value needs it), and
/// the inner one refuses a call whose headers are missing or contradict the body.
#[test]
fn a_switchboard_in_front_of_another_mirrors_the_declared_argument_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = inner_conformance_gateway(dir.path());
    let config = write_config(
        dir.path(),
        &format!("[servers.auto]\nurl = {}\n", quoted(&inner.url)),
    );
    for (region, priority) in [("eu-west", "3"), ("météo du nord", "-1"), (" padded", "0")] {
        let arguments = format!(
            r#"{{"region": {}, "priority": {priority}}}"#,
            quoted(region)
        );
        let output = run_switchboard(
            &config,
            &[
                "call",
                "auto__test_custom_headers",
                "--args",
                &arguments,
                "--json",
            ],
        );
        let result = stdout_json(&output);
        assert_eq!(
            result["content"][0]["text"],
            format!("region={}, priority={priority}", quoted(region)),
            "{result}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // Without the headers the inner gateway refuses the call: the mirroring above is what
    // made it pass.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "test_custom_headers", "arguments": {"region": "eu-west"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    }});
    let (status, text, _) = runtime.block_on(post(&inner.url, None, body));
    assert_eq!(status, 400, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "the Mcp-Param-Region header is required on a tools/call request"
    );
}

/// A 2025-era server that asks mid-call, behind two gateways, gets the answer of a legacy
/// client of the outer one. Where the gateways speak 2026-07-28 (`auto`) both bridges work in
/// one call: the inner gateway parks the call and answers `input_required` (the outer one
/// declared what its client can answer); the outer one asks its client by elicitation and
/// sends the call again with the answer; the inner one hands it to the waiting server. Where
/// they speak 2025-11-25 (`old`) the inner gateway relays the question on the call's response
/// stream, which tells the outer one whose call it is.
#[test]
fn a_question_asked_mid_call_crosses_two_gateways_and_both_eras() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inner = inner_conformance_gateway(dir.path());
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.auto]\nurl = {url}\n\n[servers.old]\nurl = {url}\nera = \"legacy\"\n",
            url = quoted(&inner.url)
        ),
    );
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "error", "serve"])
        .stderr(Stdio::null());
    let mut client = StdioClient::spawn(&mut command).expect("outer gateway");
    let params = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "test", "version": "1"}});
    client.request("initialize", params).expect("initialize");
    client
        .notify("notifications/initialized", serde_json::json!({}))
        .expect("initialized");
    for (id, server) in [(7, "auto"), (8, "old")] {
        let tool = format!("{server}__test_elicitation");
        let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {"message": "Deploy?"}}});
        client.send_line(&call.to_string()).expect("call");
        let asked = client.read_message().expect("the question");
        assert_eq!(asked["method"], "elicitation/create", "{server}: {asked}");
        assert_eq!(asked["params"]["message"], "Deploy?");
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"response": "yes"}}});
        client.send_line(&answer.to_string()).expect("answer");
        let result = client.read_message().expect("the result");
        assert_eq!(result["id"], id, "{server}: {result}");
        assert_eq!(
            result["result"]["content"][0]["text"],
            r#"User response: action=accept, content={"response":"yes"}"#,
            "{server}: {result}"
        );
    }
}
