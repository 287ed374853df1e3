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
    gateway_as(config_text, dir, &[])
}

/// A gateway serving stdio with `serve_args` (`--agent NAME`).
fn gateway_as(config_text: &str, dir: &std::path::Path, serve_args: &[&str]) -> StdioClient {
    let config = write_config(dir, config_text);
    let mut command = Command::new(switchboard());
    command
        .arg("--config")
        .arg(&config)
        .args(["--log", "error", "serve"])
        .args(serve_args)
        .env("PATH", node_path())
        .stderr(Stdio::null());
    StdioClient::spawn(&mut command).expect("gateway")
}

/// A pass-through gateway's config in front of `switchboard-fixture conformance`.
fn conformance_config() -> String {
    format!(
        "[gateway]\nprefix_tools = false\n\n[servers.c]\ncommand = {}\nargs = [\"conformance\"]\n",
        quoted(&fixture())
    )
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

/// The names (prompts) or URIs (resources) of a list answer.
fn listed(answer: &Value, list: &str, field: &str) -> Vec<String> {
    answer[list]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item[field].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_agent_sees_prompts_and_resources_only_of_the_servers_its_view_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[servers.everything]\ncommand = {}\n\n[servers.clock]\nbuiltin = \"clock\"\n\n\
         [agents.npc]\nallow = [\"clock:*\"]\n\n\
         [agents.echoer]\nallow = [\"everything__echo\"]\n\n\
         [agents.reader]\nallow = [\"everything:*\"]\ndeny = [\"everything__echo\"]\n",
        quoted(
            &node_bin()
                .join("mcp-server-everything")
                .display()
                .to_string()
        )
    );
    // One tool of the server is enough to see its prompts and resources.
    let mut echoer = gateway_as(&text, dir.path(), &["--agent", "echoer"]);
    initialize_with(&mut echoer, json!({}));
    let prompts = echoer.request("prompts/list", json!({})).expect("prompts");
    assert!(
        listed(&prompts, "prompts", "name").contains(&"everything__simple-prompt".to_owned()),
        "{prompts}"
    );
    let resources = echoer
        .request("resources/list", json!({}))
        .expect("resources");
    let uris = listed(&resources, "resources", "uri");
    let uri = uris.first().expect("a resource").clone();

    // Naming the server opens it too, whatever is denied of its tools.
    let mut reader = gateway_as(&text, dir.path(), &["--agent", "reader"]);
    initialize_with(&mut reader, json!({}));
    let read = reader
        .request("resources/read", json!({"uri": uri}))
        .expect("read");
    assert_eq!(read["contents"][0]["uri"], uri.as_str());

    // npc may see the clock only: everything's prompts and resources do not exist for it.
    let mut npc = gateway_as(&text, dir.path(), &["--agent", "npc"]);
    initialize_with(&mut npc, json!({}));
    let prompts = npc.request("prompts/list", json!({})).expect("prompts");
    assert!(
        !listed(&prompts, "prompts", "name")
            .iter()
            .any(|name| name.starts_with("everything__")),
        "{prompts}"
    );
    let resources = npc.request("resources/list", json!({})).expect("resources");
    assert!(
        !listed(&resources, "resources", "uri").contains(&uri),
        "{resources}"
    );
    let templates = npc
        .request("resources/templates/list", json!({}))
        .expect("templates");
    assert_eq!(
        listed(&templates, "resourceTemplates", "uriTemplate"),
        Vec::<String>::new(),
        "{templates}"
    );
    let get = npc
        .exchange("prompts/get", json!({"name": "everything__simple-prompt"}))
        .expect("answer");
    assert_eq!(get["error"]["code"], -32602, "{get}");
    let read = npc
        .exchange("resources/read", json!({"uri": uri}))
        .expect("answer");
    assert!(
        read.get("error").is_some(),
        "npc read another server's resource: {read}"
    );
    let completion = npc
        .request("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "everything__completable-prompt"}, "argument": {"name": "department", "value": "E"}}))
        .expect("complete");
    assert_eq!(
        completion["completion"]["values"],
        json!([]),
        "{completion}"
    );
    let subscribe = npc
        .exchange("resources/subscribe", json!({"uri": uri}))
        .expect("answer");
    assert!(subscribe.get("error").is_some(), "{subscribe}");
}

#[test]
fn a_slow_resource_listing_leaves_the_server_up_with_its_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nprefix_tools = false\nconnect_timeout = \"2s\"\n\n[servers.c]\ncommand = {}\nargs = [\"conformance\"]\nenv = {{ CONFORMANCE_SLOW_RESOURCE_LIST_MS = \"4000\" }}\n",
        quoted(&fixture())
    );
    let mut client = gateway(&text, dir.path());
    initialize_with(&mut client, json!({}));
    let answer = client
        .request(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        )
        .expect("call");
    assert_eq!(
        answer["content"][0]["text"], "This is a simple text response for testing.",
        "{answer}"
    );
    // The prompts came; the resources that did not come in time are not shown.
    let prompts = client.request("prompts/list", json!({})).expect("prompts");
    assert!(
        listed(&prompts, "prompts", "name").contains(&"test_simple_prompt".to_owned()),
        "{prompts}"
    );
}

#[test]
fn a_resource_two_servers_list_is_listed_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = |id: &str| {
        format!(
            "[servers.{id}]\ncommand = {}\nargs = [\"conformance\"]\n",
            quoted(&fixture())
        )
    };
    let mut client = gateway(&format!("{}\n{}", server("a"), server("b")), dir.path());
    initialize_with(&mut client, json!({}));
    let resources = client
        .request("resources/list", json!({}))
        .expect("resources");
    let uris = listed(&resources, "resources", "uri");
    let copies = uris
        .iter()
        .filter(|uri| *uri == "test://static-text")
        .count();
    assert_eq!(copies, 1, "{uris:?}");
}

#[test]
fn a_failed_prompt_listing_keeps_the_last_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        "[gateway]\nprefix_tools = false\n\n[servers.c]\ncommand = {}\nargs = [\"conformance\"]\nenv = {{ CONFORMANCE_FLAKY_PROMPT_LIST = \"1\" }}\n",
        quoted(&fixture())
    );
    let mut client = gateway(&text, dir.path());
    initialize_with(&mut client, json!({}));
    let before = listed(
        &client.request("prompts/list", json!({})).expect("prompts"),
        "prompts",
        "name",
    );
    assert!(
        before.contains(&"test_simple_prompt".to_owned()),
        "{before:?}"
    );
    // The server announces a change, then fails to list its prompts.
    client
        .request(
            "tools/call",
            json!({"name": "test_trigger_prompt_change", "arguments": {}}),
        )
        .expect("trigger");
    std::thread::sleep(Duration::from_millis(1_500));
    let after = listed(
        &client.request("prompts/list", json!({})).expect("prompts"),
        "prompts",
        "name",
    );
    assert_eq!(after, before, "one failed listing emptied the prompts");
}

#[test]
fn upstream_requests_are_relayed_to_a_client_that_supports_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = conformance_config();

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
        text.contains("did not declare the 'elicitation' capability"),
        "the client never declared elicitation: {text}"
    );

    let logged = incapable.request(
        "tools/call",
        json!({"name": "test_tool_with_logging", "arguments": {}}),
    );
    assert!(logged.is_ok(), "{logged:?}");
}

/// A 2026-07-28 request's `_meta`: the protocol version, the declared capabilities and, when
/// given, the log level.
fn modern_meta(capabilities: Value, log_level: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    if let Some(level) = log_level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    meta
}

/// Sends a modern `tools/call` and reads up to its answer: (notifications before it, answer).
fn modern_call(client: &mut StdioClient, id: i64, tool: &str, meta: Value) -> (Vec<Value>, Value) {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}});
    client.send_line(&request.to_string()).expect("call");
    let mut before = Vec::new();
    loop {
        let message = client.read_message().expect("a message");
        if message.get("id") == Some(&json!(id)) {
            return (before, message);
        }
        before.push(message);
    }
}

#[test]
fn a_modern_client_gets_the_log_level_it_asked_for_and_is_asked_through_input_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = conformance_config();
    let mut client = gateway(&text, dir.path());

    // The fixture logs at debug, info, warning and error: a client asking for "warning" gets
    // the last two, one asking for nothing gets none.
    let (logs, answer) = modern_call(
        &mut client,
        1,
        "test_logging_tool",
        modern_meta(json!({}), Some("warning")),
    );
    let levels: Vec<&Value> = logs.iter().map(|log| &log["params"]["level"]).collect();
    assert_eq!(levels, [&json!("warning"), &json!("error")], "{logs:?}");
    assert!(
        logs.iter()
            .all(|log| log["method"] == "notifications/message")
    );
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    let (logs, answer) = modern_call(
        &mut client,
        2,
        "test_logging_tool",
        modern_meta(json!({}), None),
    );
    assert!(logs.is_empty(), "no level asked for, yet: {logs:?}");
    assert!(answer.get("result").is_some(), "{answer}");
    let (_, answer) = modern_call(
        &mut client,
        3,
        "test_logging_tool",
        modern_meta(json!({}), Some("verbose")),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("io.modelcontextprotocol/logLevel") && message.contains("warning"),
        "{message}"
    );

    // The fixture asks for sampling mid-call. Undeclared: -32021 naming the capability, which
    // the fixture passes on. Declared: the call is parked and the client asked through
    // input_required; its retried call, with the answer, resumes it.
    let (before, answer) = modern_call(
        &mut client,
        4,
        "test_missing_capability",
        modern_meta(json!({}), None),
    );
    assert!(
        before.is_empty(),
        "no request reaches a modern client: {before:?}"
    );
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let (before, answer) = modern_call(
        &mut client,
        5,
        "test_missing_capability",
        modern_meta(json!({"sampling": {}}), None),
    );
    assert!(
        before.is_empty(),
        "no request reaches a modern client: {before:?}"
    );
    let asked = &answer["result"];
    assert_eq!(asked["resultType"], "input_required", "{answer}");
    assert_eq!(
        asked["inputRequests"]["input-1"]["method"],
        "sampling/createMessage"
    );
    let state = asked["requestState"].clone();
    let sampled = json!({"input-1": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}});
    let retry = json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": {
        "name": "test_missing_capability", "arguments": {},
        "inputResponses": sampled, "requestState": state,
        "_meta": modern_meta(json!({"sampling": {}}), None)
    }});
    client.send_line(&retry.to_string()).expect("retry");
    let answer = client.read_message().expect("the resumed call's answer");
    assert_eq!(answer["id"], 51, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "The client answered the sampling request.",
        "{answer}"
    );
    // The state was used up: a second retry is refused, saying why.
    client.send_line(&retry.to_string()).expect("retry again");
    let answer = client.read_message().expect("refusal");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("answered already"),
        "{answer}"
    );

    // A server that asks as the modern era does gets its answer through input_required.
    let (_, answer) = modern_call(
        &mut client,
        6,
        "test_streaming_elicitation",
        modern_meta(json!({"elicitation": {}}), None),
    );
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert_eq!(
        answer["result"]["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
}
