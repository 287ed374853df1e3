//! Everything besides tools that a client reaches through the gateway: prompts and completion
//! (renamed and routed), resources and subscriptions (routed by URI), and the upstream's own
//! requests relayed to the client over stdio.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use switchboard_fixtures::client::StdioClient;

fn gateway(config_text: &str, dir: &std::path::Path) -> StdioClient {
    let config = write_config(dir, config_text);
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "error", "serve"])
        .env("PATH", node_path())
        .stderr(Stdio::null());
    StdioClient::spawn(&mut command).expect("gateway")
}

fn initialize_with(client: &mut StdioClient, capabilities: Value) {
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "test", "version": "1"}});
    client.request("initialize", params).expect("initialize");
    client
        .notify("notifications/initialized", json!({}))
        .expect("initialized");
}

#[test]
fn prompts_completion_resources_and_subscriptions_of_a_real_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[servers.everything]\ncommand = {}\n",
        quoted(
            &node_bin()
                .join("mcp-server-everything")
                .display()
                .to_string()
        )
    );
    let mut client = gateway(&text, dir.path());
    initialize_with(&mut client, json!({}));

    let prompts = client.request("prompts/list", json!({})).expect("prompts");
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"everything__simple-prompt"), "{names:?}");
    let prompt = client
        .request("prompts/get", json!({"name": "everything__simple-prompt"}))
        .expect("prompts/get");
    assert!(
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{prompt}"
    );
    let unknown = client
        .exchange("prompts/get", json!({"name": "simple-prompt"}))
        .expect("answer");
    assert_eq!(
        unknown["error"]["code"], -32602,
        "the upstream's own name is not exposed: {unknown}"
    );

    let completion = client
        .request("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "everything__completable-prompt"}, "argument": {"name": "department", "value": "E"}}))
        .expect("complete");
    assert_eq!(completion["completion"]["values"], json!(["Engineering"]));

    let resources = client
        .request("resources/list", json!({}))
        .expect("resources");
    let uri = resources["resources"][0]["uri"]
        .as_str()
        .expect("a resource")
        .to_owned();
    let read = client
        .request("resources/read", json!({"uri": uri}))
        .expect("read");
    assert_eq!(read["contents"][0]["uri"], uri.as_str());
    let missing = client
        .exchange("resources/read", json!({"uri": "nowhere://nothing"}))
        .expect("answer");
    assert!(missing.get("error").is_some(), "{missing}");

    client
        .request("resources/subscribe", json!({"uri": uri}))
        .expect("subscribe");
    client
        .request(
            "tools/call",
            json!({"name": "everything__toggle-subscriber-updates", "arguments": {}}),
        )
        .expect("toggle");
    let update = wait_for(Duration::from_secs(20), || {
        let message = client.read_message().ok()?;
        (message["method"] == "notifications/resources/updated").then_some(message)
    })
    .expect("a resource update reaches the client");
    assert_eq!(update["params"]["uri"], uri.as_str());
}

#[test]
fn upstream_requests_are_relayed_to_a_client_that_supports_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nprefix_tools = false\n\n[servers.c]\ncommand = {}\nargs = [\"conformance\"]\n",
        quoted(&fixture())
    );

    let mut capable = gateway(&text, dir.path());
    initialize_with(&mut capable, json!({"sampling": {}, "elicitation": {}}));
    capable.send_line(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}}).to_string()).expect("call");
    let request = capable.read_message().expect("the relayed request");
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    assert_eq!(request["params"]["messages"][0]["content"]["text"], "hi");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "hello back"}, "model": "test"}});
    capable.send_line(&answer.to_string()).expect("answer");
    let result = capable.read_message().expect("the result");
    assert_eq!(result["id"], 7);
    assert_eq!(
        result["result"]["content"][0]["text"],
        "LLM response: hello back"
    );

    let mut incapable = gateway(&text, dir.path());
    initialize_with(&mut incapable, json!({}));
    let result = incapable
        .request(
            "tools/call",
            json!({"name": "test_elicitation", "arguments": {"message": "?"}}),
        )
        .expect("call");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("does not support elicitation/create"),
        "the client never declared elicitation: {text}"
    );

    let logged = incapable.request(
        "tools/call",
        json!({"name": "test_tool_with_logging", "arguments": {}}),
    );
    assert!(logged.is_ok(), "{logged:?}");
}
