//! OpenTelemetry traces end to end: a real `switchboard serve --http` with `[telemetry]`
//! pointing at an OTLP/HTTP receiver inside the test, in front of the stdio fixture. A call
//! sent with a known `_meta.traceparent` gives a SERVER span (child of the caller's span) and a
//! CLIENT span (child of the SERVER span) with the MCP conventions' names and attributes; the
//! stdio server receives the same trace id with the CLIENT span as parent; the ledger row
//! carries the trace id. The HTTP `traceparent` header is read when `_meta` has none, and a
//! failed call's span says how it failed. A one-off `switchboard call` is traced the same way
//! (in the trace `TRACEPARENT` names) and has sent its spans when it exits; a collector that
//! never answers holds it up 2 s at most.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// An OTLP/HTTP receiver on 127.0.0.1: every span posted to `/v1/traces`, as JSON.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |axum::Json(request): axum::Json<Value>| {
            let kept = kept.clone();
            async move {
                let mut kept = kept.lock().expect("spans");
                for resource in request["resourceSpans"].as_array().into_iter().flatten() {
                    for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                        for span in scope["spans"].as_array().into_iter().flatten() {
                            let mut span = span.clone();
                            span["resource"] = resource["resource"].clone();
                            kept.push(span);
                        }
                    }
                }
                axum::Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!(
        "http://{}/v1/traces",
        listener.local_addr().expect("address")
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, spans)
}

fn attribute<'s>(span: &'s Value, key: &str) -> &'s Value {
    span["attributes"]
        .as_array()
        .and_then(|attributes| attributes.iter().find(|a| a["key"] == key))
        .map_or(&Value::Null, |a| &a["value"]["stringValue"])
}

/// Waits for a span named `name` in trace `trace`.
async fn span_named(spans: &Mutex<Vec<Value>>, trace: &str, name: &str) -> Value {
    for _ in 0..100 {
        let found = spans
            .lock()
            .expect("spans")
            .iter()
            .find(|span| span["traceId"] == trace && span["name"] == name)
            .cloned();
        if let Some(span) = found {
            return span;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen = spans.lock().expect("spans").clone();
    panic!("no span '{name}' in trace {trace}: {seen:#?}");
}

/// Waits for the span with this id.
async fn span_with_id(spans: &Mutex<Vec<Value>>, id: &str) -> Value {
    for _ in 0..100 {
        let found = spans
            .lock()
            .expect("spans")
            .iter()
            .find(|span| span["spanId"] == id)
            .cloned();
        if let Some(span) = found {
            return span;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no span {id}");
}

fn call(tool: &str, arguments: Value, meta: Value) -> Value {
    let mut meta = meta;
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_traced_from_the_client_through_the_gateway_into_a_stdio_server() {
    let (endpoint, spans) = receiver().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let meta_log = dir.path().join("meta.log");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {ledger}\n\n[telemetry]\nendpoint = {endpoint}\n\
             service_name = \"gw-under-test\"\n\n\
             [servers.fx]\ncommand = {fixture}\nargs = [\"echo\"]\nenv = {{ FIXTURE_META_LOG = {log} }}\n",
            ledger = quoted(&ledger.display().to_string()),
            endpoint = quoted(&endpoint),
            fixture = quoted(&fixture()),
            log = quoted(&meta_log.display().to_string()),
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let (status, body, _) = post(
        &gateway.url,
        None,
        call(
            "fx__echo",
            json!({"message": "hi"}),
            json!({"traceparent": traceparent, "tracestate": "vendor=1", "baggage": "user.tier=gold"}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // The SERVER span: a child of the caller's, with the conventions' attributes.
    let server = span_named(&spans, TRACE, "tools/call fx__echo").await;
    assert_eq!(server["parentSpanId"], CALLER_SPAN);
    assert_eq!(server["kind"], 2);
    assert_eq!(server["traceState"], "vendor=1");
    assert_eq!(attribute(&server, "mcp.method.name"), "tools/call");
    assert_eq!(attribute(&server, "gen_ai.tool.name"), "fx__echo");
    assert_eq!(attribute(&server, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attribute(&server, "jsonrpc.request.id"), "7");
    assert_eq!(attribute(&server, "network.transport"), "tcp");
    assert_eq!(attribute(&server, "mcp.protocol.version"), "2026-07-28");
    assert_eq!(server["status"]["code"], 0);
    let service = server["resource"]["attributes"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["key"] == "service.name"))
        .map(|a| a["value"]["stringValue"].clone());
    assert_eq!(service, Some(json!("gw-under-test")));
    assert!(
        attribute(&server, "gen_ai.tool.call.arguments").is_null(),
        "arguments only when opted in"
    );

    // The CLIENT span: a child of the SERVER span, named by the server's own tool name.
    let client = span_named(&spans, TRACE, "tools/call echo").await;
    assert_eq!(client["kind"], 3);
    assert_eq!(client["parentSpanId"], server["spanId"]);
    assert_eq!(attribute(&client, "switchboard.server.id"), "fx");

    // The stdio server got the trace in `_meta`: same trace, a CLIENT span as parent (each
    // attempt has its own: a hedged call is two).
    let logged = std::fs::read_to_string(&meta_log).expect("meta log");
    let meta: Value = serde_json::from_str(logged.lines().last().expect("a call")).expect("json");
    let sent = meta["traceparent"].as_str().unwrap_or_default().to_owned();
    let (version_and_trace, flags) = sent.rsplit_once('-').unwrap_or_default();
    let (prefix, parent) = version_and_trace.rsplit_once('-').unwrap_or_default();
    assert_eq!(
        (prefix, flags),
        (format!("00-{TRACE}").as_str(), "01"),
        "{sent}"
    );
    let attempt = span_with_id(&spans, parent).await;
    assert_eq!(attempt["kind"], 3);
    assert_eq!(attempt["parentSpanId"], server["spanId"]);
    assert_eq!(meta["tracestate"], "vendor=1");
    assert_eq!(meta["baggage"], "user.tier=gold");

    // The HTTP header, when `_meta` carries no context; a tool error says so.
    let other_trace = "0af7651916cd43dd8448eb211c80319c";
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "fx__fail")
        .header(
            "traceparent",
            format!("00-{other_trace}-b7ad6b7169203331-01"),
        )
        .json(&call("fx__fail", json!({"message": "no"}), json!({})))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 200);
    let failed = span_named(&spans, other_trace, "tools/call fx__fail").await;
    assert_eq!(failed["parentSpanId"], "b7ad6b7169203331");
    assert_eq!(attribute(&failed, "error.type"), "tool_error");
    assert_eq!(failed["status"]["code"], 2);

    // An unknown tool: the JSON-RPC error's code is the error type. Without any context the
    // request starts a trace of its own.
    let (_, body, _) = post(&gateway.url, None, call("fx__nope", json!({}), json!({}))).await;
    assert!(body.contains("\"error\""), "{body}");
    let unknown = loop {
        let found = spans
            .lock()
            .expect("spans")
            .iter()
            .find(|span| span["name"] == "tools/call fx__nope")
            .cloned();
        if let Some(span) = found {
            break span;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(unknown.get("parentSpanId").is_none(), "{unknown}");
    assert_eq!(attribute(&unknown, "error.type"), "-32602");

    // The ledger row of the first call carries its trace id.
    drop(gateway);
    let rows = audit_rows(&config);
    let traced = rows
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row["exposed"] == "fx__echo")
        .cloned()
        .unwrap_or_default();
    assert_eq!(traced["trace_id"], TRACE, "{rows:#}");
}

/// `switchboard call fx__echo message=hi` in `dir` with `TRACEPARENT` set, its traces sent
/// to `endpoint`; it must succeed.
async fn call_echo(dir: &std::path::Path, endpoint: &str, traceparent: &str) {
    let ledger = dir.join("ledger.db");
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nledger = {ledger}\n\n[telemetry]\nendpoint = {endpoint}\n\n\
             [servers.fx]\ncommand = {fixture}\nargs = [\"echo\"]\n",
            ledger = quoted(&ledger.display().to_string()),
            endpoint = quoted(endpoint),
            fixture = quoted(&fixture()),
        ),
    );
    let mut command = std::process::Command::new(switchboard());
    command
        .arg("--config")
        .arg(config)
        .args(["call", "fx__echo", "message=hi"])
        .env("TRACEPARENT", traceparent)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .env_remove("SWITCHBOARD_LOG");
    let called =
        tokio::task::spawn_blocking(move || command.output().expect("run switchboard call"))
            .await
            .expect("the command's thread");
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_call_sends_its_spans_before_it_exits() {
    let (endpoint, spans) = receiver().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    call_echo(dir.path(), &endpoint, &traceparent).await;

    // Already sent: no waiting for the spans here.
    let sent = spans.lock().expect("spans").clone();
    let named = |name: &str| {
        sent.iter()
            .find(|span| span["traceId"] == TRACE && span["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no span '{name}' in trace {TRACE}: {sent:#?}"))
    };
    let server = named("tools/call fx__echo");
    assert_eq!(server["kind"], 2);
    assert_eq!(server["parentSpanId"], CALLER_SPAN);
    assert_eq!(attribute(&server, "gen_ai.tool.name"), "fx__echo");
    assert_eq!(attribute(&server, "gen_ai.operation.name"), "execute_tool");
    assert!(
        attribute(&server, "network.transport").is_null(),
        "no request was received: {server}"
    );
    assert_eq!(server["status"]["code"], 0);
    let client = named("tools/call echo");
    assert_eq!(client["kind"], 3);
    assert_eq!(client["parentSpanId"], server["spanId"]);
    let rows = audit_rows(&dir.path().join("switchboard.toml"));
    assert_eq!(rows[0]["trace_id"], TRACE, "{rows:#}");

    // A collector that takes the request and never answers: the command still ends at once
    // after the 2 s it waits for the spans.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!("http://{}/v1/traces", silent.local_addr().expect("address"));
    let started = std::time::Instant::now();
    call_echo(dir.path(), &silent_url, &traceparent).await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "a silent collector held the command {:?}",
        started.elapsed()
    );
    drop(silent);
}
