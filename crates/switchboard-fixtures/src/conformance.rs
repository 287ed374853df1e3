//! `conformance`: a server with the tools, resources and prompts the MCP conformance suite's
//! server scenarios call (`test_simple_text`, `test://static-text`, `test_simple_prompt`, …),
//! so the suite can run against the gateway in pass-through mode in front of it. Written from
//! the scenarios' expectations; it also asks its client for sampling and elicitation, which
//! the gateway must relay, and changes its tool and prompt lists on demand
//! (`test_trigger_tool_change`, `test_trigger_prompt_change`), which the gateway must announce. Its multi-round-trip tools (`input_required`) are the
//! `input_rounds` module. The diagnostic tools of the suite's `server-stateless` checks ask
//! for sampling mid-call and pass on the error they get (`test_missing_capability`), ask for
//! a confirmation as the client's era asks (`test_streaming_elicitation`: `input_required`
//! when the call carries a 2026-07-28 client's capabilities), and log at four levels
//! (`test_logging_tool`); `test_custom_headers` declares arguments that HTTP clients mirror
//! into `Mcp-Param-*` headers (`x-mcp-header`). The tools of the suite's task scenarios
//! (`greet`, `slow_compute`, …, declaring `execution.taskSupport`; the gateway runs the
//! tasks) are the `task_tools` module; a `notifications/cancelled` raises the cancel flag of
//! the call it names (the `peer` module keeps them).
//!
//! Three switches in its environment misbehave for the gateway's tests:
//! `CONFORMANCE_SLOW_RESOURCE_LIST_MS` answers `resources/list` that late,
//! `CONFORMANCE_FLAKY_PROMPT_LIST` fails `prompts/list` while a prompt change is in effect,
//! and `CONFORMANCE_SHADOW_PREFIX` lists a template `PREFIX{rest}` too and answers every
//! read under that prefix with a text naming the URI shadowed (a server whose template
//! overlaps another's resources).
//! The unlisted resource `test://subscriptions` reads back the URIs it is subscribed to.

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

use crate::peer::{Peer, error_object, message_of};
use crate::server::Out;
use crate::{input_rounds, task_tools};

const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const AUDIO: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

pub(crate) fn text(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

fn tools() -> Value {
    let empty = json!({"type": "object", "properties": {}});
    let with = |name: &str, description: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]});
    let schema_2020 = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}, "contactMethod": {"type": "string", "enum": ["phone", "email"]}, "phone": {"type": "string"}, "email": {"type": "string"}},
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    let tool = |name: &str, description: &str, schema: &Value| json!({"name": name, "description": description, "inputSchema": schema});
    json!([
        tool(
            "test_simple_text",
            "Tests simple text content response",
            &empty
        ),
        tool("test_image_content", "Tests image content response", &empty),
        tool(
            "test_trigger_tool_change",
            "Adds a tool to the list, or removes it again, and announces the change",
            &empty
        ),
        tool(
            "test_trigger_prompt_change",
            "Adds a prompt to the list, or removes it again, and announces the change",
            &empty
        ),
        tool("test_audio_content", "Tests audio content response", &empty),
        tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
            &empty
        ),
        tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
            &empty
        ),
        tool(
            "test_tool_with_logging",
            "Tests tool that emits log messages during execution",
            &empty
        ),
        tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
            &empty
        ),
        tool(
            "test_error_handling",
            "Tests error response handling",
            &empty
        ),
        tool(
            "test_sampling",
            "Tests server-initiated sampling (LLM completion request)",
            &with("prompt", "The prompt to send to the LLM")
        ),
        tool(
            "test_elicitation",
            "Tests server-initiated elicitation (user input request)",
            &with("message", "The message to show the user")
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Tests elicitation with default values per SEP-1034",
            &empty
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Tests elicitation with enum schema improvements per SEP-1330",
            &empty
        ),
        tool(
            "test_missing_capability",
            "Needs the client's sampling: asks for it while it runs, and fails with the error it gets when the client cannot be asked",
            &empty
        ),
        tool(
            "test_streaming_elicitation",
            "Asks the user for a confirmation: mid-call from a legacy client, by input_required from a 2026-07-28 one",
            &empty
        ),
        tool(
            "test_logging_tool",
            "Logs one message at each of debug, info, warning and error, then answers",
            &empty
        ),
        tool(
            "test_custom_headers",
            "Takes a region and a priority that HTTP clients mirror into Mcp-Param-Region and Mcp-Param-Priority headers (x-mcp-header)",
            &json!({"type": "object", "properties": {
                "region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "description": "How urgent", "x-mcp-header": "Priority"},
                "note": {"type": "string", "description": "Not mirrored"}
            }, "required": ["region"]})
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            &schema_2020
        ),
    ])
}

fn call_tool(peer: &Peer, params: &Value) -> Result<Value, Value> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    Ok(match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_trigger_tool_change" => {
            peer.grown.fetch_xor(true, Ordering::SeqCst);
            peer.out
                .notify("notifications/tools/list_changed", json!({}));
            text("The tool list changed.")
        }
        "test_added_tool" if peer.grown.load(Ordering::SeqCst) => text("Added."),
        "test_trigger_prompt_change" => {
            peer.prompts_grown.fetch_xor(true, Ordering::SeqCst);
            peer.out
                .notify("notifications/prompts/list_changed", json!({}));
            text("The prompt list changed.")
        }
        "test_image_content" => {
            json!({"content": [{"type": "image", "data": IMAGE, "mimeType": "image/png"}]})
        }
        "test_audio_content" => {
            json!({"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]})
        }
        "test_embedded_resource" => {
            json!({"content": [{"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}}]})
        }
        "test_multiple_content_types" => json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": IMAGE, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}
        ]}),
        "test_tool_with_logging" => {
            for (index, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .iter()
            .enumerate()
            {
                if index > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                peer.log(message);
            }
            text("Tool with logging executed successfully")
        }
        "test_tool_with_progress" => {
            let token = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned()
                .unwrap_or(json!(0));
            for (index, step) in [0, 50, 100].iter().enumerate() {
                if index > 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                peer.out.notify("notifications/progress", json!({"progressToken": token, "progress": step, "total": 100, "message": format!("Completed step {step} of 100")}));
            }
            text(match &token {
                Value::String(token) => token.clone(),
                other => other.to_string(),
            })
        }
        "test_error_handling" => {
            json!({"content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}], "isError": true})
        }
        "test_sampling" => {
            let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
            let request = json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100});
            match peer.ask("sampling/createMessage", request) {
                Ok(result) => {
                    let reply = result
                        .pointer("/content/text")
                        .and_then(Value::as_str)
                        .unwrap_or("No response");
                    text(format!("LLM response: {reply}"))
                }
                Err(error) => text(format!(
                    "Sampling not supported or error: {}",
                    message_of(&error)
                )),
            }
        }
        "test_missing_capability" => {
            let request = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say yes"}}], "maxTokens": 10});
            peer.ask("sampling/createMessage", request)?;
            text("The client answered the sampling request.")
        }
        "test_streaming_elicitation" => {
            let confirm = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
            if let Some(answer) = params.pointer("/inputResponses/confirm") {
                text(format!("Confirmed by input_required: {answer}"))
            } else if params
                .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
                .is_some()
            {
                // The gateway passes a 2026-07-28 client's capabilities on: ask as that era asks.
                json!({"resultType": "input_required", "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "Please confirm", "requestedSchema": confirm}}}})
            } else {
                elicit(peer, "Please confirm", confirm, "Confirmed mid-call")
            }
        }
        "test_custom_headers" => text(format!(
            "region={}, priority={}",
            args.get("region").unwrap_or(&Value::Null),
            args.get("priority").unwrap_or(&Value::Null)
        )),
        "test_logging_tool" => {
            for level in ["debug", "info", "warning", "error"] {
                peer.log_at(level, &format!("logged at {level}"));
            }
            text("Logged at debug, info, warning and error.")
        }
        "test_elicitation" => {
            let message = args.get("message").and_then(Value::as_str).unwrap_or("");
            let schema = json!({"type": "object", "properties": {"response": {"type": "string", "description": "User's response"}}, "required": ["response"]});
            elicit(peer, message, schema, "User response")
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }, "required": []});
            elicit(
                peer,
                "Please review and update the form fields with defaults",
                schema,
                "Elicitation completed",
            )
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": [{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}
            }, "required": []});
            elicit(
                peer,
                "Please select options from the enum fields",
                schema,
                "Elicitation completed",
            )
        }
        "json_schema_2020_12_tool" => text(format!("JSON Schema 2020-12 tool called with: {args}")),
        other => return Err(error_object(-32602, format!("Unknown tool: {other}"))),
    })
}

fn elicit(peer: &Peer, message: &str, schema: Value, label: &str) -> Value {
    match peer.ask(
        "elicitation/create",
        json!({"message": message, "requestedSchema": schema}),
    ) {
        Ok(result) => {
            let action = result
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let content = result.get("content").cloned().unwrap_or(json!({}));
            text(format!("{label}: action={action}, content={content}"))
        }
        Err(error) => text(format!(
            "Elicitation not supported or error: {}",
            message_of(&error)
        )),
    }
}

fn resources() -> Value {
    json!([
        {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource", "description": "A static text resource for testing", "mimeType": "text/plain"},
        {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource", "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
        {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource", "description": "A resource that auto-updates every 3 seconds", "mimeType": "text/plain"}
    ])
}

/// `CONFORMANCE_SHADOW_PREFIX`, when set (the module doc).
fn shadow_prefix() -> Option<String> {
    std::env::var("CONFORMANCE_SHADOW_PREFIX")
        .ok()
        .filter(|prefix| !prefix.is_empty())
}

fn read_resource(uri: &str) -> Result<Value, (i64, String)> {
    let contents = match uri {
        "test://static-text" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
        }
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": IMAGE}),
        "test://watched-resource" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"})
        }
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
        {
            Some(id) => {
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})
            }
            None => return Err((-32002, format!("Resource not found: {uri}"))),
        },
    };
    Ok(json!({"contents": [contents]}))
}

fn prompts() -> Value {
    json!([
        {"name": "test_simple_prompt", "title": "Simple Test Prompt", "description": "A simple prompt without arguments"},
        {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments", "description": "A prompt with required arguments",
         "arguments": [{"name": "arg1", "description": "First test argument", "required": true}, {"name": "arg2", "description": "Second test argument", "required": true}]},
        {"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource", "description": "A prompt that includes an embedded resource",
         "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]},
        {"name": "test_prompt_with_image", "title": "Prompt With Image", "description": "A prompt that includes image content"}
    ])
}

fn get_prompt(params: &Value) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let arg = |key: &str| {
        params
            .pointer(&format!("/arguments/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let user = |content: Value| json!({"role": "user", "content": content});
    let messages = match name {
        "test_simple_prompt" => json!([user(
            json!({"type": "text", "text": "This is a simple prompt for testing."})
        )]),
        "test_prompt_with_arguments" => json!([user(
            json!({"type": "text", "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))})
        )]),
        "test_prompt_with_embedded_resource" => json!([
            user(
                json!({"type": "resource", "resource": {"uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}})
            ),
            user(json!({"type": "text", "text": "Please process the embedded resource above."}))
        ]),
        "test_prompt_with_image" => json!([
            user(json!({"type": "image", "data": IMAGE, "mimeType": "image/png"})),
            user(json!({"type": "text", "text": "Please analyze the image above."}))
        ]),
        other => return Err((-32602, format!("Unknown prompt: {other}"))),
    };
    Ok(json!({"messages": messages}))
}

/// Serves the conformance fixture on stdin/stdout until stdin closes.
pub fn serve() -> i32 {
    let out = Out::stdout();
    let pending = crate::peer::Pending::default();
    let peer = Arc::new(Peer::new(out.clone(), pending.clone()));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return 0 };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
                peer.cancel(message.get("params").unwrap_or(&Value::Null));
            }
            continue;
        };
        let Some(method) = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            let waiter = id
                .as_i64()
                .and_then(|id| pending.lock().ok().and_then(|mut map| map.remove(&id)));
            if let Some(waiter) = waiter {
                let _ = waiter.send(message);
            }
            continue;
        };
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let peer = peer.clone();
        let cancelled = (method == "tools/call").then(|| peer.register(&id));
        // Each request on its own thread: a tool waiting on the client must not block reading.
        std::thread::spawn(move || {
            let result = match method.as_str() {
                "initialize" => Ok(json!({
                    "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-11-25")),
                    "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "prompts": {"listChanged": true}, "logging": {}, "completions": {}},
                    "serverInfo": {"name": "mcp-conformance-test-server", "version": "1.0.0"}
                })),
                "ping" => Ok(json!({})),
                "resources/subscribe" | "resources/unsubscribe" => {
                    peer.note_subscription(
                        params.get("uri").and_then(Value::as_str).unwrap_or(""),
                        method == "resources/subscribe",
                    );
                    Ok(json!({}))
                }
                // Not listed: what the gateway subscribed this process to, for its tests.
                "resources/read"
                    if params.get("uri").and_then(Value::as_str)
                        == Some("test://subscriptions") =>
                {
                    let uris = peer.subscriptions();
                    Ok(
                        json!({"contents": [{"uri": "test://subscriptions", "mimeType": "application/json", "text": json!(uris).to_string()}]}),
                    )
                }
                "logging/setLevel" => {
                    peer.log(&format!(
                        "Log level set to: {}",
                        params.get("level").and_then(Value::as_str).unwrap_or("")
                    ));
                    Ok(json!({}))
                }
                "completion/complete" => {
                    Ok(json!({"completion": {"values": [], "total": 0, "hasMore": false}}))
                }
                "tools/list" => {
                    let mut listed = tools();
                    if let Value::Array(list) = &mut listed {
                        list.extend(input_rounds::tools());
                        list.extend(task_tools::tools());
                        if peer.grown.load(Ordering::SeqCst) {
                            list.push(json!({"name": "test_added_tool", "description": "Added by test_trigger_tool_change", "inputSchema": {"type": "object", "properties": {}}}));
                        }
                    }
                    Ok(json!({"tools": listed}))
                }
                "tools/call" => {
                    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
                    let flag = cancelled.unwrap_or_default();
                    let reply = task_tools::call_tool(&peer, name, &params, &flag);
                    peer.finish(&id);
                    if let Some(reply) = reply {
                        if let Some(message) = reply.message(&id) {
                            peer.out.send(&message);
                        }
                        return;
                    }
                    match input_rounds::call_tool(name, &params) {
                        Some(answer) => answer,
                        None => match call_tool(&peer, &params) {
                            Ok(result) => Ok(result),
                            Err(error) => {
                                peer.out
                                    .send(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
                                return;
                            }
                        },
                    }
                }
                "resources/list" => {
                    if let Some(delay) = std::env::var("CONFORMANCE_SLOW_RESOURCE_LIST_MS")
                        .ok()
                        .and_then(|ms| ms.parse().ok())
                    {
                        std::thread::sleep(Duration::from_millis(delay));
                    }
                    Ok(json!({"resources": resources()}))
                }
                "resources/templates/list" => {
                    let mut templates = vec![
                        json!({"uriTemplate": "test://template/{id}/data", "name": "template", "title": "Resource Template", "description": "A resource template with parameter substitution", "mimeType": "application/json"}),
                    ];
                    if let Some(prefix) = shadow_prefix() {
                        templates.push(
                            json!({"uriTemplate": format!("{prefix}{{rest}}"), "name": "shadow"}),
                        );
                    }
                    Ok(json!({"resourceTemplates": templates}))
                }
                "resources/read" => {
                    let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                    match shadow_prefix() {
                        Some(prefix) if uri.starts_with(&prefix) => Ok(
                            json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": format!("shadowed: {uri}")}]}),
                        ),
                        _ => read_resource(uri),
                    }
                }
                "prompts/list"
                    if peer.prompts_grown.load(Ordering::SeqCst)
                        && std::env::var_os("CONFORMANCE_FLAKY_PROMPT_LIST").is_some() =>
                {
                    Err((-32603, "prompts cannot be listed now".to_owned()))
                }
                "prompts/list" => {
                    let mut listed = prompts();
                    if let Value::Array(list) = &mut listed {
                        list.push(input_rounds::prompt());
                        if peer.prompts_grown.load(Ordering::SeqCst) {
                            list.push(json!({"name": "test_added_prompt", "description": "A prompt added by test_trigger_prompt_change"}));
                        }
                    }
                    Ok(json!({"prompts": listed}))
                }
                "prompts/get" => {
                    input_rounds::get_prompt(&params).unwrap_or_else(|| get_prompt(&params))
                }
                other => Err((-32601, format!("Method not found: {other}"))),
            };
            let answer = match result {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err((code, message)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                }
            };
            peer.out.send(&answer);
        });
    }
    0
}
