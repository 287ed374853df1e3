//! The stdio front against an in-memory backend: framing, both eras, bad input, progress and
//! cancellation — over a real byte pipe.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_mcp::front::Dispatcher;
use switchboard_mcp::front::stdio::{
    MAX_OWED_ANSWERS, MAX_WAITING_REQUESTS, REFUSAL_BUDGET_BYTES, StdioOptions, serve,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

struct Client {
    input: DuplexStream,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    cancelled: mpsc::UnboundedReceiver<String>,
    version: watch::Sender<u64>,
}

impl Client {
    async fn send(&mut self, line: &str) {
        self.input
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
    }

    /// Checks what the backend says next, within five seconds: "wait" (a call cancelled),
    /// "reading" (a read that hangs started) or "read" (that read dropped).
    async fn expect_told(&mut self, expected: &str, why: &str) {
        let told = tokio::time::timeout(Duration::from_secs(5), self.cancelled.recv())
            .await
            .unwrap_or_else(|_| panic!("{expected:?} in time: {why}"));
        assert_eq!(told.as_deref(), Some(expected), "{why}");
    }

    /// Cancels the hanging reads of [`owing_two_hanging_reads`].
    async fn cancel_reads(&mut self) {
        for id in [1, 2] {
            self.send(&format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
            ))
            .await;
        }
    }

    /// Sends request `id` and checks it is refused with -32602; its error message.
    async fn refused_params(&mut self, id: u64, method: &str, params: &Value) -> String {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        )
        .await;
        let refused = self.receive().await;
        assert_eq!(refused["error"]["code"], -32602, "{params}: {refused}");
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    async fn receive(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.output.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }
}

/// Serves a fake backend's front on these pipes until the input ends.
fn spawn_front(
    backend: std::sync::Arc<support::FakeBackend>,
    (input, output): (DuplexStream, DuplexStream),
    options: StdioOptions,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(serve(
        Dispatcher::new(backend, None),
        input,
        output,
        options,
        CancellationToken::new(),
    ))
}

fn start(max_message_bytes: usize) -> Client {
    start_with(StdioOptions {
        max_message_bytes,
        grace: Duration::from_secs(1),
        max_owed_answers: MAX_OWED_ANSWERS,
    })
}

/// The default limits and this grace period.
fn with_grace(grace: Duration) -> StdioOptions {
    StdioOptions {
        max_message_bytes: 1 << 20,
        grace,
        max_owed_answers: MAX_OWED_ANSWERS,
    }
}

fn start_with(options: StdioOptions) -> Client {
    let (client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let (backend, version, cancelled) = support::fake_backend();
    spawn_front(backend, (server_in, server_out), options);
    Client {
        input: client_in,
        output: BufReader::new(client_out).lines(),
        cancelled,
        version,
    }
}

/// A client owed the most answers it may be (two): two reads that hang until cancelled
/// (ids 1 and 2, [`Client::cancel_reads`]) have started.
async fn owing_two_hanging_reads() -> Client {
    let mut client = start_with(StdioOptions {
        max_message_bytes: 1 << 20,
        grace: Duration::from_secs(1),
        max_owed_answers: 2,
    });
    for id in [1, 2] {
        client
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"wait://forever"}}}}"#
            ))
            .await;
        client.expect_told("reading", "the read starts").await;
    }
    client
}

#[tokio::test]
async fn legacy_handshake_list_and_call() {
    let mut client = start(1 << 20);
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#).await;
    let init = client.receive().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "fake");
    client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .await;
    let list = client.receive().await;
    assert_eq!(list["result"]["tools"][0]["name"], "echo");
    assert!(
        list["result"].get("resultType").is_none(),
        "legacy results carry no resultType"
    );
    client.send(r#"{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#).await;
    let call = client.receive().await;
    assert_eq!(call["id"], "c");
    assert_eq!(call["result"]["content"][0]["text"], "hi");
    client.version.send_modify(|v| *v += 1);
    let note = client.receive().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
}

#[tokio::test]
async fn modern_requests_are_stateless_and_checked() {
    let mut client = start(1 << 20);
    client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#)
        .await;
    let discover = client.receive().await;
    assert!(
        discover["result"]["supportedVersions"]
            .as_array()
            .expect("versions")
            .contains(&json!("2026-07-28"))
    );
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}})
                .to_string(),
        )
        .await;
    let list = client.receive().await;
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "public");
    assert!(list["result"]["ttlMs"].is_number());
    let partial = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    client.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": partial}}).to_string()).await;
    let refused = client.receive().await;
    assert_eq!(refused["error"]["code"], -32602);
    assert!(
        refused["error"]["message"]
            .as_str()
            .expect("message")
            .contains("clientCapabilities")
    );
}

#[tokio::test]
async fn bad_input_gets_errors_and_the_front_keeps_serving() {
    let mut client = start(256);
    client.send("this is not json").await;
    let parse = client.receive().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    client
        .send(r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["error"]["code"], -32600);
    client
        .send(&format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"pad":"{}"}}}}"#,
            "x".repeat(1000)
        ))
        .await;
    let oversized = client.receive().await;
    assert!(
        oversized["error"]["message"]
            .as_str()
            .expect("message")
            .contains("256-byte limit")
    );
    assert_eq!(
        oversized["id"], 5,
        "answered to the request it was, its id read from its start"
    );
    // A message of exactly the limit is taken: its line ending is not counted.
    let head = r#"{"jsonrpc":"2.0","id":10,"method":"ping","params":{"pad":""#;
    let tail = r#""}}"#;
    let exact = format!("{head}{}{tail}", "x".repeat(256 - head.len() - tail.len()));
    assert_eq!(exact.len(), 256);
    client.send(&exact).await;
    assert_eq!(client.receive().await["result"], json!({}));
    client
        .send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"missing"}}"#)
        .await;
    let unknown = client.receive().await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "Unknown tool: missing");
    client.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#).await;
    assert_eq!(client.receive().await["error"]["code"], -32602);
    client
        .send(r#"{"jsonrpc":"2.0","id":8,"method":"no/such"}"#)
        .await;
    assert_eq!(client.receive().await["error"]["code"], -32601);
    client
        .send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["result"], json!({}));
}

#[tokio::test]
async fn logging_set_level_refuses_a_level_mcp_does_not_name() {
    let mut client = start(1 << 20);
    for (id, params) in [
        (1, json!({"level": "verbose"})),
        (2, json!({"level": 5})),
        (3, json!({})),
    ] {
        let message = client.refused_params(id, "logging/setLevel", &params).await;
        assert!(
            message.starts_with("logging/setLevel: params.level must be one of")
                && message.contains("warning"),
            "names the method, the parameter and the levels: {message}"
        );
    }
    client
        .send(
            r#"{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"warning"}}"#,
        )
        .await;
    assert_eq!(client.receive().await["result"], json!({}));
}

#[tokio::test]
async fn an_initialize_whose_fields_have_the_wrong_types_is_refused_naming_them() {
    let mut client = start(1 << 20);
    for (id, params, field) in [
        (
            1,
            json!({"protocolVersion": 5, "capabilities": {}}),
            "protocolVersion",
        ),
        (
            2,
            json!({"protocolVersion": "2025-11-25", "capabilities": []}),
            "capabilities",
        ),
        (
            3,
            json!({"capabilities": {}, "clientInfo": "x"}),
            "clientInfo",
        ),
    ] {
        client
            .send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params})
                    .to_string(),
            )
            .await;
        let refused = client.receive().await;
        assert_eq!(refused["error"]["code"], -32602, "{params}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("params.{field}")), "{message}");
    }
}

#[tokio::test]
async fn a_list_cursor_the_gateway_never_gave_is_refused_not_answered_with_the_first_page() {
    let mut client = start(1 << 20);
    for (id, method) in [(1, "tools/list"), (2, "prompts/list"), (3, "tasks/list")] {
        client
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"cursor": "garbage!!"}}).to_string())
            .await;
        let refused = client.receive().await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("params.cursor"), "{message}");
    }
    client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":null}}"#)
        .await;
    assert_eq!(client.receive().await["result"]["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn a_malformed_completion_reference_is_refused_naming_the_field_not_completed_empty() {
    let mut client = start(1 << 20);
    let argument = json!({"name": "department", "value": "E"});
    for (id, params, path) in [
        (1, json!({"ref": "x", "argument": argument}), "params.ref "),
        (
            2,
            json!({"ref": {"type": "ref/tool", "name": "p"}, "argument": argument}),
            "params.ref.type",
        ),
        (
            3,
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"value": "E"}}),
            "params.argument.name",
        ),
    ] {
        let message = client
            .refused_params(id, "completion/complete", &params)
            .await;
        assert!(message.contains(path), "{message}");
    }
    let valid = json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": argument});
    client
        .send(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": valid})
                .to_string(),
        )
        .await;
    assert_eq!(
        client.receive().await["result"]["completion"]["values"],
        json!([])
    );
}

/// Params by position (an array) were taken, and read as no params at all: MCP names every
/// param, so every method refuses them, like any params that are not an object.
#[tokio::test]
async fn params_by_position_are_refused_for_every_method() {
    let mut client = start(1 << 20);
    for (id, method) in [
        (1, "initialize"),
        (2, "tools/list"),
        (3, "tools/call"),
        (4, "prompts/get"),
        (5, "ping"),
    ] {
        let message = client.refused_params(id, method, &json!(["echo"])).await;
        assert!(
            message.contains(&format!("{method}: params must be an object")),
            "{message}"
        );
    }
    client
        .send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}"#)
        .await;
    assert_eq!(client.receive().await["result"]["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn progress_uses_the_clients_token_and_cancel_reaches_the_backend() {
    let mut client = start(1 << 20);
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok-1"}}}"#).await;
    let progress = client.receive().await;
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(
        progress["params"],
        json!({"progressToken": "tok-1", "progress": 1.0, "total": 2.0, "message": "half"})
    );
    assert_eq!(
        client.receive().await["result"]["content"][0]["text"],
        "done"
    );

    client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait"}}"#)
        .await;
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"bored"}}"#).await;
    client.expect_told("wait", "the call is cancelled").await;
    // The cancelled request gets no answer; the next one does.
    client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["id"], 3);

    // Not only tool calls: a resource read that hangs is dropped when cancelled (which is
    // what tells the server upstream), and answers nothing.
    client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"wait://forever"}}"#)
        .await;
    client.expect_told("reading", "the read starts").await;
    client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#)
        .await;
    client
        .expect_told("read", "the read is dropped when cancelled")
        .await;
    client
        .send(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["id"], 5);
}

#[tokio::test]
async fn subscriptions_listen_streams_list_changes_until_cancelled() {
    let mut client = start(1 << 20);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let listen = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["x://y"]}}});
    client.send(&listen.to_string()).await;
    let ack = client.receive().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    client.version.send_modify(|v| *v += 1);
    let changed = client.receive().await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#)
        .await;
    client
        .send(r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#)
        .await;
    assert_eq!(
        client.receive().await["id"],
        10,
        "the cancelled subscription ends without an answer"
    );
}

/// A client that closes its input and never reads what is written to it does not keep the
/// front from returning: what is left to write gets a moment, then is dropped.
#[tokio::test]
async fn a_client_that_stops_reading_does_not_keep_the_front_from_stopping() {
    let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
    // Room for a few answers only, and nobody reads them.
    let (server_out, _unread) = tokio::io::duplex(256);
    let (backend, _version, _cancelled) = support::fake_backend();
    let options = with_grace(Duration::from_millis(200));
    let served = spawn_front(backend, (server_in, server_out), options);
    for id in 0..200 {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        client_in
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
    }
    drop(client_in);
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("the front returns though its answers are never read")
        .expect("join");
}

#[tokio::test]
async fn a_listening_subscription_does_not_hold_the_front_open_once_input_ends() {
    let (mut client_in, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_out) = tokio::io::duplex(1 << 20);
    let mut output = BufReader::new(client_out).lines();
    let (backend, _version, _cancelled) = support::fake_backend();
    let options = with_grace(Duration::from_secs(60));
    let served = spawn_front(backend, (server_in, server_out), options);
    let listen = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}"#;
    client_in
        .write_all(format!("{listen}\n").as_bytes())
        .await
        .expect("write");
    let acknowledged = tokio::time::timeout(Duration::from_secs(5), output.next_line())
        .await
        .expect("acknowledged in time")
        .expect("read")
        .unwrap_or_default();
    assert!(acknowledged.contains("acknowledged"), "{acknowledged}");
    drop(client_in);
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("the front returns at once, not after the 60 s grace calls get")
        .expect("join");
}

/// A client that keeps sending requests but does not read its answers is not buffered for
/// without end: once it is owed `MAX_OWED_ANSWERS` answers, `MAX_WAITING_REQUESTS` more wait
/// and those past them are refused, and once `REFUSAL_BUDGET_BYTES` of refusals are unwritten
/// its input stops being read; once it reads again every request is answered or refused.
#[tokio::test]
async fn a_client_that_does_not_read_its_answers_stops_being_read() {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const REQUESTS: usize = 20_000;
    const PIPE: usize = 4096;
    let (mut client_in, server_in) = tokio::io::duplex(PIPE);
    let (server_out, client_out) = tokio::io::duplex(PIPE);
    let (backend, _version, _cancelled) = support::fake_backend();
    let options = StdioOptions {
        max_message_bytes: 1 << 20,
        grace: Duration::from_secs(1),
        max_owed_answers: MAX_OWED_ANSWERS,
    };
    spawn_front(backend, (server_in, server_out), options);
    let sent = Arc::new(AtomicUsize::new(0));
    let sending = tokio::spawn({
        let sent = sent.clone();
        async move {
            for id in 0..REQUESTS {
                let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
                client_in.write_all(line.as_bytes()).await.expect("write");
                sent.fetch_add(1, Ordering::SeqCst);
            }
            client_in
        }
    });
    // Nobody reads: the sender must come to a stop, short of all it has to send.
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = sent.load(Ordering::SeqCst);
        assert!(
            now < REQUESTS,
            "all {REQUESTS} requests were read though no answer was taken"
        );
        if now == last {
            break;
        }
        last = now;
    }
    // What the front holds is the owed answers, the requests waiting, the refusals unwritten
    // (counted as short as one gets: its message alone is longer) plus what its read buffer
    // (64 KiB) and the pipes can hold of the client's lines (counted as short as a line gets).
    let line = r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.len() + 1;
    let refusals = REFUSAL_BUDGET_BYTES / 100 + 1;
    let held = MAX_OWED_ANSWERS + MAX_WAITING_REQUESTS + refusals;
    let slack = (64 * 1024 + 2 * PIPE) / line + 2;
    assert!(
        last <= held + slack,
        "{last} requests read with no answer taken; at most {} expected",
        held + slack
    );
    // Reading again: every request is answered or refused, and the rest of the input is read.
    let mut output = BufReader::new(client_out).lines();
    let mut answered = BTreeSet::new();
    while answered.len() < REQUESTS {
        let line = tokio::time::timeout(Duration::from_secs(10), output.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert!(
            answer.get("result").is_some() || answer["error"]["code"] == -32011,
            "{answer}"
        );
        assert!(
            answered.insert(answer["id"].as_u64().expect("a numeric id")),
            "answered twice: {answer}"
        );
    }
    assert_eq!(answered.len(), REQUESTS);
    let _client_in = sending.await.expect("the sender finishes");
}

/// Owed the most answers it may be, a client's notifications are still read: its calls may be
/// waiting on them. Two reads that hang until cancelled fill the bound, a ping waits for room,
/// and the cancellations behind it in the input end both reads; then the ping is answered.
#[tokio::test]
async fn a_cancellation_is_read_while_the_most_answers_are_owed() {
    let mut client = owing_two_hanging_reads().await;
    client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
        .await;
    client.cancel_reads().await;
    for _ in [1, 2] {
        client
            .expect_told("read", "cancelled though the most answers are owed")
            .await;
    }
    let ping = client.receive().await;
    assert_eq!(
        ping["id"], 3,
        "the request that waited for room runs: {ping}"
    );
    assert_eq!(ping["result"], json!({}));
    // The front reads on, and the cancelled reads were never answered.
    client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["id"], 4);
}

/// Owed the most answers it may be by calls that wait on its answers to questions relayed to
/// it, a client that sends more requests before those answers is still read: its requests wait
/// for room, the one past the most that may wait is refused at once with its id, and the
/// answers behind them all end the calls — then every waiting request is answered.
#[tokio::test]
async fn requests_sent_before_the_answers_owed_calls_wait_on_do_not_stall_the_client() {
    use std::collections::BTreeMap;

    let mut client = start_with(StdioOptions {
        max_message_bytes: 1 << 20,
        grace: Duration::from_secs(1),
        max_owed_answers: 2,
    });
    client.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}"#).await;
    assert_eq!(client.receive().await["id"], 0);
    client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    for id in [1, 2] {
        client
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"ask","arguments":{{}}}}}}"#
            ))
            .await;
    }
    // Both calls ask the client something: the most answers are owed now.
    let mut questions = Vec::new();
    for _ in [1, 2] {
        let question = client.receive().await;
        assert_eq!(question["method"], "roots/list", "{question}");
        questions.push(question["id"].as_str().expect("a string id").to_owned());
    }
    // More requests than may wait for room, and only then the answers the calls wait on.
    let first = 10;
    let refused = first + MAX_WAITING_REQUESTS as u64;
    for id in first..=refused {
        client
            .send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
    }
    for question in &questions {
        client
            .send(&format!(
                r#"{{"jsonrpc":"2.0","id":"{question}","result":{{"roots":[{{"uri":"file:///{question}"}}]}}}}"#
            ))
            .await;
    }
    let mut answers = BTreeMap::new();
    for _ in 0..2 + MAX_WAITING_REQUESTS + 1 {
        let answer = client.receive().await;
        let id = answer["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("an answer: {answer}"));
        assert!(answers.insert(id, answer).is_none(), "answered twice: {id}");
    }
    let mut asked: Vec<_> = [1, 2]
        .iter()
        .map(|id| answers[id]["result"]["content"][0]["text"].clone())
        .collect();
    asked.sort_by_key(ToString::to_string);
    let mut expected: Vec<_> = questions
        .iter()
        .map(|q| json!(format!("file:///{q}")))
        .collect();
    expected.sort_by_key(ToString::to_string);
    assert_eq!(asked, expected, "each call got its answer");
    for id in first..refused {
        assert_eq!(answers[&id]["result"], json!({}), "{}", answers[&id]);
    }
    let refusal = &answers[&refused]["error"];
    assert_eq!(refusal["code"], -32011, "{refusal}");
    assert_eq!(refusal["data"]["owedAnswers"], 2, "{refusal}");
    // Nothing more was owed, and the front reads on.
    client
        .send(r#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#)
        .await;
    assert_eq!(client.receive().await["id"], 99);
}

/// Owed the most answers it may be, a client's unreadable lines take no owed answer and no
/// place in line: each is answered at once with its error, more of them than may wait for
/// room, and a request sent after them still waits for room (it is not refused) and runs once
/// the calls holding the owed answers end.
#[tokio::test]
async fn unreadable_lines_are_answered_while_the_most_answers_are_owed() {
    let mut client = owing_two_hanging_reads().await;
    let garbage = MAX_WAITING_REQUESTS + 2;
    for n in 0..garbage {
        if n % 2 == 0 {
            client.send("not json at all").await;
        } else {
            client
                .send(r#"{"jsonrpc":"2.0","id":"bad","nonsense":true}"#)
                .await;
        }
    }
    for n in 0..garbage {
        let answer = client.receive().await;
        let expected = if n % 2 == 0 { -32700 } else { -32600 };
        assert_eq!(answer["error"]["code"], expected, "line {n}: {answer}");
    }
    client
        .send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#)
        .await;
    client.cancel_reads().await;
    let ping = client.receive().await;
    assert_eq!(ping["id"], 3, "the request waited for room: {ping}");
    assert_eq!(ping["result"], json!({}), "{ping}");
}
