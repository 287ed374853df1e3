//! The Streamable HTTP front over real HTTP on 127.0.0.1: sessions, both eras, the
//! DNS-rebinding guard, size limits, SSE progress and cancellation by closing the stream,
//! plain JSON for a session's call whose result comes first, and the bounds on connections
//! (the header timeout, the cap).

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_mcp::front::Dispatcher;
use switchboard_mcp::front::http::{
    ConnectionLimits, HttpOptions, Lifecycle, LocalEndedSessions, serve,
};
use switchboard_mcp::seal::FixedKeys;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

struct Server {
    url: String,
    client: reqwest::Client,
    cancelled: tokio::sync::mpsc::UnboundedReceiver<String>,
    shutdown: CancellationToken,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// The front on the test's runtime.
async fn start() -> Server {
    start_on(0).await
}

/// The front with its connections served by `workers` threads of their own (0: on the
/// test's runtime).
async fn start_on(workers: usize) -> Server {
    start_bounded(workers, ConnectionLimits::default()).await
}

/// The front on `workers` threads (0: the test's runtime), its connections within `limits`.
async fn start_bounded(workers: usize, limits: ConnectionLimits) -> Server {
    let (backend, _version, cancelled) = support::fake_backend();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address: SocketAddr = listener.local_addr().expect("address");
    let options = HttpOptions {
        max_message_bytes: 4096,
        allowed_origins: vec!["https://app.example".into()],
        allowed_hosts: Vec::new(),
        check_host: true,
        auth: None,
        oauth: None,
        connection_workers: workers,
        connections: limits,
        keys: Arc::new(FixedKeys::ephemeral()),
        lifecycle: Lifecycle::default(),
        ended_sessions: Arc::new(LocalEndedSessions::default()),
        answer_routes: None,
    };
    let shutdown = CancellationToken::new();
    let served = tokio::spawn(serve(
        Dispatcher::new(backend, None),
        listener,
        options,
        shutdown.clone(),
    ));
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    Server {
        url: format!("http://{address}/mcp"),
        client,
        cancelled,
        shutdown,
        served,
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

impl Server {
    /// `host:port` of the front.
    fn address(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    fn post(&self, body: impl Into<String>) -> reqwest::RequestBuilder {
        self.client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.into())
    }

    /// A 2026-07-28 request without arguments, its version in the header and in `_meta`.
    fn modern_request(
        &self,
        id: u64,
        method: &str,
        header_version: &str,
        body_version: &str,
    ) -> reqwest::RequestBuilder {
        let mut body: Value = serde_json::from_str(&modern(id, method, json!({}))).expect("json");
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(body_version);
        self.post(body.to_string())
            .header("mcp-protocol-version", header_version)
            .header("mcp-method", method)
    }

    /// A 2026-07-28 `tools/call` with the routing headers a modern client sends.
    fn modern_call(&self, id: u64, params: Value) -> reqwest::RequestBuilder {
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        self.post(modern(id, "tools/call", params))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
    }
}

/// The session an `initialize` answer opened.
fn session_id(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("mcp-session-id")
        .expect("session id")
        .to_str()
        .expect("ascii")
        .to_owned()
}

/// The JSON messages of an SSE body.
fn sse_events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("event json"))
        .collect()
}

fn modern(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn legacy_sessions() {
    legacy_sessions_on(start().await).await;
}

#[tokio::test]
async fn legacy_sessions_on_connection_workers() {
    legacy_sessions_on(start_on(3).await).await;
}

async fn legacy_sessions_on(server: Server) {
    let init = server.post(INIT).send().await.expect("initialize");
    assert_eq!(init.status(), 200);
    let session = session_id(&init);
    let body: Value = init.json().await.expect("json");
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        body["result"]["capabilities"]["resources"].get("subscribe"),
        None,
        "subscriptions announced with no server that takes them: {body}"
    );

    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let without = server.post(list).send().await.expect("no session");
    assert_eq!(without.status(), 400);
    let unknown = server
        .post(list)
        .header("mcp-session-id", "nope")
        .send()
        .await
        .expect("bad session");
    assert_eq!(unknown.status(), 404);
    let listed: Value = server
        .post(list)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(listed["result"]["tools"][0]["name"], "echo");

    let note = server
        .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("note");
    assert_eq!(note.status(), 202);
    let deleted = server
        .client
        .delete(&server.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 204);
    let after = server
        .post(list)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("after delete");
    assert_eq!(after.status(), 404);
}

#[tokio::test]
async fn an_initialize_whose_fields_have_the_wrong_types_is_refused_without_a_session() {
    let server = start().await;
    let bad = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    let refused = server.post(bad).send().await.expect("initialize");
    assert_eq!(refused.status(), 400);
    assert!(
        refused.headers().get("mcp-session-id").is_none(),
        "a refused initialize opens no session"
    );
    let body: Value = refused.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(
        body["error"]["message"],
        "initialize: params.protocolVersion must be a string, got 5"
    );
}

/// An initialize with its params by position opened a session, and every other method
/// took an array as no params: 400 with -32602 now, and no session.
#[tokio::test]
async fn params_by_position_are_refused_without_a_session() {
    let server = start().await;
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":["2025-11-25"]}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}"#,
    ] {
        let refused = server.post(body).send().await.expect("post");
        assert_eq!(refused.status(), 400, "{body}");
        assert!(refused.headers().get("mcp-session-id").is_none(), "{body}");
        let answer: Value = refused.json().await.expect("json");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("params must be an object"), "{message}");
    }
}

/// `/mcp/tiers/nosuch` opened a session that listed no tools and called none, each call
/// "Unknown tool": the tier is refused at once now, saying which tiers there are.
#[tokio::test]
async fn an_unknown_tier_is_refused_naming_the_tiers() {
    let server = start().await;
    let tiers = server.url.replace("/mcp", "/mcp/tiers");
    let post = |url: String| {
        server
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INIT)
    };
    let refused = post(format!("{tiers}/nosuch")).send().await.expect("post");
    assert_eq!(refused.status(), 404);
    assert!(refused.headers().get("mcp-session-id").is_none());
    let body: Value = refused.json().await.expect("json");
    assert_eq!(
        body["error"]["message"],
        "unknown tier 'nosuch' (the config defines: fast)"
    );
    let init = server.post(INIT).send().await.expect("initialize");
    let listened = server
        .client
        .get(&server.url)
        .header("switchboard-tier", "nosuch")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session_id(&init))
        .send()
        .await
        .expect("get");
    assert_eq!(listened.status(), 404, "a stream for an unknown tier");
    let text = listened.text().await.expect("text");
    assert!(text.contains("unknown tier 'nosuch'"), "{text}");
    let served = post(format!("{tiers}/fast")).send().await.expect("post");
    assert_eq!(served.status(), 200);
}

#[tokio::test]
async fn modern_requests_need_no_session_and_headers_must_match() {
    let server = start().await;
    let body = modern(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let answer: Value = server
        .post(body.clone())
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .send()
        .await
        .expect("call")
        .json()
        .await
        .expect("json");
    assert_eq!(answer["result"]["content"][0]["text"], "hi");
    assert_eq!(answer["result"]["resultType"], "complete");
    // Routing headers that are missing or contradict the body: 400 with HeaderMismatch
    // (-32020), whose message names the header.
    for (method_header, name_header, names) in [
        (Some("tools/list"), Some("echo"), "Mcp-Method 'tools/list'"),
        (None, Some("echo"), "Mcp-Method header is required"),
        (Some("TOOLS/CALL"), Some("echo"), "Mcp-Method 'TOOLS/CALL'"),
        (Some("tools/call"), None, "Mcp-Name header is required"),
        (Some("tools/call"), Some("ECHO"), "Mcp-Name 'ECHO'"),
    ] {
        let mut request = server
            .post(body.clone())
            .header("mcp-protocol-version", "2026-07-28");
        if let Some(value) = method_header {
            request = request.header("mcp-method", value);
        }
        if let Some(value) = name_header {
            request = request.header("mcp-name", value);
        }
        let refused = request.send().await.expect("mismatch");
        assert_eq!(refused.status(), 400, "{names}");
        let error: Value = refused.json().await.expect("json error");
        assert_eq!(error["error"]["code"], -32020, "{names}: {error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(names), "{names}: {message}");
    }
    // A name outside visible ASCII comes Base64-encoded and is compared decoded.
    let accented = modern(4, "tools/call", json!({"name": "écho"}));
    let encoded: Value = server
        .post(accented)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "=?base64?w6ljaG8=?=")
        .send()
        .await
        .expect("encoded name")
        .json()
        .await
        .expect("json");
    assert_ne!(encoded["error"]["code"], -32020, "{encoded}");
    let discover: Value = server
        .modern_request(3, "server/discover", "2026-07-28", "2026-07-28")
        .send()
        .await
        .expect("discover")
        .json()
        .await
        .expect("json");
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    assert_eq!(
        discover["result"]["capabilities"]["resources"].get("subscribe"),
        None,
        "2026-07-28 has no resources/subscribe: {discover}"
    );
}

#[tokio::test]
async fn modern_requests_are_refused_by_the_first_envelope_check_they_fail() {
    let server = start().await;
    let refused = |response: reqwest::Response, status: u16, code: i64| async move {
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.expect("json error");
        assert_eq!(body["error"]["code"], code, "{body}");
        body
    };
    // No _meta envelope: invalid params.
    let bare = server
        .post(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .send()
        .await
        .expect("bare");
    refused(bare, 400, -32602).await;
    // The header and the body disagree on the version: header mismatch, before the version.
    let send = |header: &'static str, body: &'static str| {
        server.modern_request(2, "tools/list", header, body).send()
    };
    let contradicting = send("2026-07-28", "v999.0.0").await.expect("contradicting");
    refused(contradicting, 400, -32020).await;
    // A version the gateway does not speak: listed with the ones it does.
    let future = send("v999.0.0", "v999.0.0").await.expect("future");
    let body = refused(future, 400, -32022).await;
    assert_eq!(body["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(body["error"]["data"]["requested"], "v999.0.0");
    // Methods the modern era removed, and unknown ones: 404 with method-not-found.
    for method in ["ping", "initialize", "logging/setLevel", "no/such/method"] {
        let gone = server
            .modern_request(4, method, "2026-07-28", "2026-07-28")
            .send()
            .await
            .expect("removed method");
        refused(gone, 404, -32601).await;
    }
}

#[tokio::test]
async fn hostile_origins_hosts_and_oversized_bodies_are_refused() {
    let server = start().await;
    let evil = server
        .post(INIT)
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("evil");
    assert_eq!(evil.status(), 403);
    let allowed = server
        .post(INIT)
        .header("origin", "https://app.example")
        .send()
        .await
        .expect("allowed");
    assert_eq!(allowed.status(), 200);
    let local = server
        .post(INIT)
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .expect("local");
    assert_eq!(local.status(), 200);
    let rebound = server
        .post(INIT)
        .header("host", "attacker.example:80")
        .send()
        .await
        .expect("host");
    assert_eq!(rebound.status(), 403);
    // A domain that merely starts like a loopback address is an attacker's, rebound to it.
    let lookalike = server
        .post(INIT)
        .header("origin", "http://127.0.0.1.attacker.example:8080")
        .header("host", "127.0.0.1.attacker.example:8080")
        .send()
        .await
        .expect("lookalike");
    assert_eq!(lookalike.status(), 403);
    let lookalike_host = server
        .post(INIT)
        .header("host", "127.attacker.example")
        .send()
        .await
        .expect("lookalike host");
    assert_eq!(lookalike_host.status(), 403);
    let huge = server
        .post(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
            "a".repeat(10_000)
        ))
        .send()
        .await
        .expect("huge");
    assert_eq!(huge.status(), 413);
    let refusal: Value = huge.json().await.expect("a JSON-RPC error body");
    assert_eq!(
        refusal["error"]["data"]["maxMessageBytes"], 4096,
        "{refusal}"
    );
    let garbage = server.post("{not json").send().await.expect("garbage");
    assert_eq!(garbage.status(), 400);
    let error: Value = garbage.json().await.expect("json error body");
    assert_eq!(error["error"]["code"], -32700);
    // Still serving.
    assert_eq!(server.post(INIT).send().await.expect("again").status(), 200);
}

#[tokio::test]
async fn progress_streams_and_closing_the_stream_cancels() {
    progress_streams_and_closing_the_stream_cancels_on(start().await).await;
}

#[tokio::test]
async fn progress_streams_and_closing_the_stream_cancels_on_connection_workers() {
    progress_streams_and_closing_the_stream_cancels_on(start_on(2).await).await;
}

async fn progress_streams_and_closing_the_stream_cancels_on(mut server: Server) {
    let response = server
        .modern_call(
            1,
            json!({"name": "progress", "_meta": {"progressToken": 7}}),
        )
        .send()
        .await
        .expect("progress");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.expect("stream");
    let events = sse_events(&text);
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(events[0]["params"]["progressToken"], 7);
    assert_eq!(events[1]["result"]["content"][0]["text"], "done");

    let response = server
        .modern_call(2, json!({"name": "wait", "_meta": {"progressToken": "w"}}))
        .send()
        .await
        .expect("wait");
    drop(response);
    let cancelled = tokio::time::timeout(Duration::from_secs(5), server.cancelled.recv())
        .await
        .expect("cancel reaches the backend");
    assert_eq!(cancelled.as_deref(), Some("wait"));
}

#[tokio::test]
async fn a_session_call_whose_result_comes_first_is_answered_as_plain_json() {
    let server = start().await;
    let init = server.post(INIT).send().await.expect("initialize");
    let session = session_id(&init);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
    let response = server
        .post(call)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("call");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response
        .json()
        .await
        .expect("a JSON body, not an event stream");
    assert_eq!(body["id"], 2);
    assert_eq!(body["result"]["content"][0]["text"], "hi");

    // Asking for progress still opens a stream at once, whose first event is the progress.
    let progress = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"p"}}}"#;
    let response = server
        .post(progress)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("progress call");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.expect("stream");
    let events = sse_events(&text);
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(events[0]["params"]["progressToken"], "p");
    assert_eq!(events[1]["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_call_whose_client_went_away_is_cancelled_and_still_unwinds() {
    a_call_whose_client_went_away_is_cancelled_and_still_unwinds_on(start().await).await;
}

#[tokio::test]
async fn a_call_whose_client_went_away_is_cancelled_and_still_unwinds_on_connection_workers() {
    a_call_whose_client_went_away_is_cancelled_and_still_unwinds_on(start_on(2).await).await;
}

async fn a_call_whose_client_went_away_is_cancelled_and_still_unwinds_on(mut server: Server) {
    // A modern call answered as plain JSON: the client gives up while the tool runs.
    let call = server.modern_call(1, json!({"name": "wait"}));
    give_up_and_see_the_call_unwind(&mut server, call).await;

    // The same for a session's call, while its answer's headers wait for the first message.
    let init = server.post(INIT).send().await.expect("initialize");
    let session = session_id(&init);
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}"#;
    let call = server.post(body).header("mcp-session-id", &session);
    give_up_and_see_the_call_unwind(&mut server, call).await;
}

/// Connection workers spread concurrent clients over their threads, answer each one, and on
/// shutdown close idle keep-alive connections and let the server return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_workers_answer_many_clients_and_stop_on_shutdown() {
    let server = start_on(4).await;
    let calls = (0..16).map(|i| {
        // A client of its own per call: a connection each, spread over the workers.
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let body = modern(
            i,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": format!("call {i}")}}),
        );
        let request = client
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(body);
        async move {
            let response = request.send().await.expect("call");
            assert_eq!(response.status(), 200);
            let body: Value = response.json().await.expect("json");
            (i, body, client)
        }
    });
    let answers = futures::future::join_all(calls).await;
    for (i, body, _) in &answers {
        assert_eq!(
            body["result"]["content"][0]["text"],
            format!("call {i}"),
            "{body}"
        );
    }
    // The clients' keep-alive connections are still open; shutdown must not wait for them.
    server.shutdown.cancel();
    let served = tokio::time::timeout(Duration::from_secs(5), server.served)
        .await
        .expect("the front stops within 5 s of shutdown with idle connections open")
        .expect("the front's task");
    assert!(served.is_ok(), "{served:?}");
    drop(answers);
}

/// Sends a call of the `wait` tool, gives up on it after 200 ms (closing the connection),
/// and checks that the call was cancelled and still ran to its end (where the ledger
/// records it).
async fn give_up_and_see_the_call_unwind(server: &mut Server, call: reqwest::RequestBuilder) {
    let gave_up = call.timeout(Duration::from_millis(200)).send().await;
    assert!(gave_up.is_err(), "the wait tool answered: {gave_up:?}");
    let cancelled = tokio::time::timeout(Duration::from_secs(5), server.cancelled.recv())
        .await
        .expect("the cancelled call runs to its end");
    assert_eq!(cancelled.as_deref(), Some("wait"));
}

#[tokio::test(start_paused = true)]
async fn a_silent_call_opens_its_stream_after_15_s_and_keeps_it_alive() {
    let mut server = start().await;
    let init = server.post(INIT).send().await.expect("initialize");
    let session = session_id(&init);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}"#;
    let opened_at = tokio::time::Instant::now();
    let mut response = server
        .post(call)
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("the headers come after the commit delay");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert!(opened_at.elapsed() >= Duration::from_secs(15));
    let chunk = response.chunk().await.expect("read").expect("a chunk");
    assert_eq!(&chunk[..], b": keep-alive\n\n");
    assert!(opened_at.elapsed() >= Duration::from_secs(30));
    drop(response);
    let cancelled = tokio::time::timeout(Duration::from_secs(5), server.cancelled.recv())
        .await
        .expect("closing the stream cancels the call");
    assert_eq!(cancelled.as_deref(), Some("wait"));
}

/// What `stream` reads until the peer closes it, or `None` if it stays open for `within`.
async fn read_until_closed(stream: &mut tokio::net::TcpStream, within: Duration) -> Option<String> {
    let mut read = Vec::new();
    let closed = tokio::time::timeout(within, stream.read_to_end(&mut read)).await;
    // A reset is a close too.
    closed
        .ok()
        .map(|_| String::from_utf8_lossy(&read).into_owned())
}

const LIVEZ: &[u8] = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/// A keep-alive connection to `address` that was answered one `GET /livez`.
async fn answered_connection(address: &str) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.write_all(LIVEZ).await.expect("write");
    let mut answer = [0_u8; 12];
    stream.read_exact(&mut answer).await.expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200");
    stream
}

/// A connection that sends half a request's headers, or sends nothing more after its
/// answer, is closed once the header timeout passes (not before); a call whose headers came
/// in time runs past it.
async fn header_timeout_closes_silent_connections(workers: usize) {
    let timeout = Duration::from_millis(300);
    let mut server = start_bounded(
        workers,
        ConnectionLimits {
            header_timeout: Some(timeout),
            max_connections: 100,
        },
    )
    .await;
    let address = server.address();

    let mut half = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let opened = tokio::time::Instant::now();
    let read = read_until_closed(&mut half, Duration::from_secs(5)).await;
    assert!(
        read.is_some(),
        "a half-sent head still holds its connection after 5 s"
    );
    assert!(
        opened.elapsed() >= Duration::from_millis(250),
        "closed before the timeout"
    );

    let mut idle = answered_connection(&address).await;
    let read = read_until_closed(&mut idle, Duration::from_secs(5)).await;
    assert!(
        read.is_some(),
        "an idle keep-alive connection is still open after 5 s"
    );

    let init = server.post(INIT).send().await.expect("initialize");
    let session = session_id(&init);
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}"#;
    let mut call = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    call.write_all(request.as_bytes()).await.expect("write");
    assert_eq!(
        read_until_closed(&mut call, timeout * 4).await,
        None,
        "a call in progress lost its connection to the header timeout"
    );
    assert!(
        server.cancelled.try_recv().is_err(),
        "the call was cancelled"
    );
    drop(call);
    let cancelled = tokio::time::timeout(Duration::from_secs(5), server.cancelled.recv()).await;
    assert_eq!(cancelled.ok().flatten().as_deref(), Some("wait"));
}

/// A client that sent its headers and part of its body held its connection for ever (the
/// header timeout ends with the headers): the body must come within the same bound.
#[tokio::test]
async fn a_body_cut_off_after_its_headers_is_answered_408_within_the_header_timeout() {
    let timeout = Duration::from_millis(300);
    let server = start_bounded(
        0,
        ConnectionLimits {
            header_timeout: Some(timeout),
            max_connections: 100,
        },
    )
    .await;
    let mut partial = tokio::net::TcpStream::connect(server.address())
        .await
        .expect("connect");
    partial
        .write_all(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"jsonrpc\"",
        )
        .await
        .expect("write");
    let read = read_until_closed(&mut partial, Duration::from_secs(5)).await;
    let answer = read.expect("a cut-off body still holds its connection after 5 s");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("header_timeout"), "{answer}");
}

/// A body past the limit was answered 400 with nothing in it, or — its `Content-Length` sent
/// alone — not at all until the body came: it is 413 at once, with a JSON-RPC error naming
/// the limit and the key that sets it, whether the length is declared or the body is chunked.
#[tokio::test]
async fn a_body_past_the_limit_is_answered_413_naming_the_limit_and_its_key() {
    let server = start().await;
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                accept: application/json, text/event-stream\r\n";
    let declared = format!("{head}content-length: 1000000\r\n\r\n{{\"jsonrpc\"");
    let chunked = format!(
        "{head}transfer-encoding: chunked\r\n\r\n1388\r\n{}\r\n0\r\n\r\n",
        "a".repeat(5000)
    );
    for (request, size) in [(declared, "(1000000 bytes) "), (chunked, "")] {
        let mut stream = tokio::net::TcpStream::connect(server.address())
            .await
            .expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let answer = read_until_closed(&mut stream, Duration::from_secs(5))
            .await
            .expect("answered and closed, not left waiting for the body");
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        let refusal: Value = serde_json::from_str(body).expect("a JSON-RPC error body");
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
        assert_eq!(refusal["id"], Value::Null, "{refusal}");
        let message = refusal["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("body {size}is larger than the 4096-byte limit"))
                && message.contains("gateway.max_message_bytes"),
            "{message}"
        );
    }
}

#[tokio::test]
async fn the_header_timeout_closes_silent_connections() {
    header_timeout_closes_silent_connections(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_header_timeout_closes_silent_connections_on_connection_workers() {
    header_timeout_closes_silent_connections(2).await;
}

/// Past `max_connections`, a new connection is not served until an open one closes; then it
/// is.
async fn connections_past_the_cap_wait(workers: usize) {
    let server = start_bounded(
        workers,
        ConnectionLimits {
            header_timeout: None,
            max_connections: 2,
        },
    )
    .await;
    let address = server.address();
    let mut open = Vec::new();
    for _ in 0..2 {
        open.push(answered_connection(&address).await);
    }
    // The kernel completes the handshake; the gateway does not take the connection yet.
    let mut third = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    third.write_all(LIVEZ).await.expect("write");
    let mut answer = [0_u8; 12];
    let early =
        tokio::time::timeout(Duration::from_millis(300), third.read_exact(&mut answer)).await;
    assert!(
        early.is_err(),
        "a third connection was served past a cap of two"
    );
    drop(open.pop());
    tokio::time::timeout(Duration::from_secs(5), third.read_exact(&mut answer))
        .await
        .expect("served once a connection closed")
        .expect("an answer");
    assert_eq!(&answer, b"HTTP/1.1 200");
}

#[tokio::test]
async fn connections_past_the_cap_wait_until_one_closes() {
    connections_past_the_cap_wait(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_wait_until_one_closes_on_connection_workers() {
    connections_past_the_cap_wait(2).await;
}
