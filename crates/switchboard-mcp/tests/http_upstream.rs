//! The Streamable HTTP upstream transport against a small axum server on 127.0.0.1: JSON and
//! SSE answers, sessions, the 2026-07-28 headers, HTTP failures, resumption and cancellation.

mod http_upstream_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http_upstream_support::start;
use serde_json::{Value, json};
use switchboard_mcp::jsonrpc::{Message, RequestId};
use switchboard_mcp::upstream::http::open_streamable_http;
use switchboard_mcp::upstream::transport::{DirectAnswers, Inbound, Opened};

fn open(url: &str) -> Opened {
    let headers = BTreeMap::from([("authorization".to_owned(), "Bearer t".to_owned())]);
    open_streamable_http("test", url, &headers, None, None, false, 1 << 20).expect("open")
}

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::Request {
        id: RequestId::Number(id),
        method: method.to_owned(),
        params: Some(params),
    }
}

async fn next(opened: &mut Opened) -> Inbound {
    tokio::time::timeout(Duration::from_secs(5), opened.inbound.recv())
        .await
        .expect("something arrives in time")
        .expect("the channel is open")
}

async fn next_message(opened: &mut Opened) -> Message {
    match next(opened).await {
        Inbound::Message(message) | Inbound::OnStream { message, .. } => message,
        Inbound::Closed(reason) => panic!("closed: {reason}"),
    }
}

async fn wait_for(what: impl Fn() -> bool) {
    for _ in 0..200 {
        if what() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting");
}

fn error_text(message: &Message, id: i64) -> String {
    match message {
        Message::Error {
            id: Some(got),
            error,
        } if *got == RequestId::Number(id) => error.message.clone(),
        other => panic!("expected an error answer to {id}, got {other:?}"),
    }
}

#[tokio::test]
async fn json_answers_sessions_and_delete() {
    let (server, url) = start().await;
    let mut opened = open(&url);
    opened
        .transport
        .send(request(1, "initialize", json!({})))
        .await
        .expect("send");
    assert!(matches!(
        next_message(&mut opened).await,
        Message::Response { .. }
    ));
    opened.transport.set_protocol_version("2025-11-25");
    opened
        .transport
        .send(request(2, "tools/list", json!({})))
        .await
        .expect("send");
    let Message::Response { id, result } = next_message(&mut opened).await else {
        panic!("expected a response");
    };
    assert_eq!(
        (id, result),
        (RequestId::Number(2), json!({"method": "tools/list"}))
    );

    let init = server.find("POST", "initialize").expect("initialize seen");
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("authorization"), Some("Bearer t"));
    assert_eq!(init.header("mcp-protocol-version"), None);
    assert_eq!(init.header("mcp-session-id"), None);
    let list = server.find("POST", "tools/list").expect("tools/list seen");
    assert_eq!(list.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(
        list.header("mcp-method"),
        None,
        "legacy era: no routing headers"
    );

    opened.transport.close().await;
    let delete = server
        .seen()
        .into_iter()
        .find(|s| s.verb == "DELETE")
        .expect("DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("sess-1"));
}

#[tokio::test]
async fn sse_answers_deliver_notifications_first() {
    let (_server, url) = start().await;
    let mut opened = open(&url);
    opened
        .transport
        .send(request(7, "sse", json!({})))
        .await
        .expect("send");
    // On the request's own response stream: it says whose call the notification belongs to.
    let Inbound::OnStream {
        message: Message::Notification { method, params },
        of,
    } = next(&mut opened).await
    else {
        panic!("expected the progress notification first, on request 7's stream");
    };
    assert_eq!(of, RequestId::Number(7));
    assert_eq!(method, "notifications/progress");
    assert_eq!(params.expect("params")["progress"], 1);
    let Message::Response { id, result } = next_message(&mut opened).await else {
        panic!("expected the answer");
    };
    assert_eq!((id, result), (RequestId::Number(7), json!({"done": true})));
}

#[tokio::test]
async fn modern_requests_carry_routing_headers() {
    let (server, url) = start().await;
    let mut opened = open(&url);
    opened
        .transport
        .send(request(1, "server/discover", json!({})))
        .await
        .expect("send");
    next_message(&mut opened).await;
    let probe = server.find("POST", "server/discover").expect("probe seen");
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(probe.header("mcp-method"), Some("server/discover"));

    opened.transport.set_protocol_version("2026-07-28");
    let call = request(2, "tools/call", json!({"name": "météo", "arguments": {}}));
    opened.transport.send(call).await.expect("send");
    next_message(&mut opened).await;
    let read = request(3, "resources/read", json!({"uri": "mem://notes/1"}));
    opened.transport.send(read).await.expect("send");
    next_message(&mut opened).await;

    let call = server.find("POST", "tools/call").expect("call seen");
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("=?base64?bcOpdMOpbw==?="));
    let read = server.find("POST", "resources/read").expect("read seen");
    assert_eq!(read.header("mcp-name"), Some("mem://notes/1"));
}

#[tokio::test]
async fn an_expired_session_closes_the_connection() {
    let (_server, url) = start().await;
    let mut opened = open(&url);
    // Without a session, a 404 is an answer to the request, not the end of the connection.
    opened
        .transport
        .send(request(1, "fail", json!({})))
        .await
        .expect("send");
    let text = error_text(&next_message(&mut opened).await, 1);
    assert!(text.contains("HTTP 500") && text.contains("boom"), "{text}");

    opened
        .transport
        .send(request(2, "initialize", json!({})))
        .await
        .expect("send");
    next_message(&mut opened).await;
    opened
        .transport
        .send(request(3, "expire", json!({})))
        .await
        .expect("send");
    match next(&mut opened).await {
        Inbound::Closed(reason) => assert!(reason.contains("session expired"), "{reason}"),
        other => panic!("expected the end of the connection, got {other:?}"),
    }
}

#[tokio::test]
async fn connection_refused_answers_the_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    drop(listener);
    let mut opened = open(&url);
    opened
        .transport
        .send(request(9, "initialize", json!({})))
        .await
        .expect("send");
    let text = error_text(&next_message(&mut opened).await, 9);
    assert!(text.contains(&url), "{text}");
}

#[tokio::test]
async fn sends_do_not_wait_for_answers() {
    let (_server, url) = start().await;
    let mut opened = open(&url);
    opened
        .transport
        .send(request(1, "slow", json!({})))
        .await
        .expect("send");
    opened
        .transport
        .send(request(2, "fast", json!({})))
        .await
        .expect("send");
    let first = next_message(&mut opened).await;
    assert!(
        matches!(
            first,
            Message::Response {
                id: RequestId::Number(2),
                ..
            }
        ),
        "{first:?}"
    );
    let second = next_message(&mut opened).await;
    assert!(
        matches!(
            second,
            Message::Response {
                id: RequestId::Number(1),
                ..
            }
        ),
        "{second:?}"
    );
}

/// A transport to `url` whose session is initialized, in the 2025-11-25 era.
async fn legacy_session(url: &str) -> Opened {
    let mut opened = open(url);
    opened
        .transport
        .send(request(1, "initialize", json!({})))
        .await
        .expect("send");
    next_message(&mut opened).await;
    opened.transport.set_protocol_version("2025-11-25");
    opened
}

/// Sends the `resume` request, whose answer comes on a resumed stream, and checks it came.
async fn resume(opened: &mut Opened) {
    opened
        .transport
        .send(request(2, "resume", json!({})))
        .await
        .expect("send");
    let Message::Response { id, result } = next_message(opened).await else {
        panic!("expected the resumed answer");
    };
    assert_eq!(
        (id, result),
        (RequestId::Number(2), json!({"resumed": true}))
    );
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_with_last_event_id() {
    let (server, url) = start().await;
    let mut opened = legacy_session(&url).await;
    resume(&mut opened).await;
    let get = server
        .seen()
        .into_iter()
        .find(|s| s.verb == "GET" && s.header("last-event-id") == Some("ev-1"))
        .expect("a resuming GET");
    assert_eq!(get.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
}

/// A resuming GET answered 503 (busy) is asked again after its `Retry-After`, not given up.
#[tokio::test]
async fn a_busy_answer_to_a_resuming_get_is_asked_again() {
    let (server, url) = start().await;
    let mut opened = legacy_session(&url).await;
    *server.next_get.lock().expect("lock") = Some(axum::http::StatusCode::SERVICE_UNAVAILABLE);
    resume(&mut opened).await;
    let resuming = server
        .seen()
        .into_iter()
        .filter(|s| s.verb == "GET" && s.header("last-event-id") == Some("ev-1"))
        .count();
    assert_eq!(resuming, 2, "one refused, one answered");
}

/// A 404 to the session's GET stream is the session's end, as it is to a POST.
#[tokio::test]
async fn a_404_to_the_session_stream_ends_the_session() {
    let (server, url) = start().await;
    let mut opened = legacy_session(&url).await;
    *server.next_get.lock().expect("lock") = Some(axum::http::StatusCode::NOT_FOUND);
    let initialized = Message::Notification {
        method: "notifications/initialized".into(),
        params: None,
    };
    opened.transport.send(initialized).await.expect("send");
    let Inbound::Closed(reason) = next(&mut opened).await else {
        panic!("expected the session's end");
    };
    assert!(reason.contains("session expired"), "{reason}");
}

#[tokio::test]
async fn modern_cancel_closes_the_response_stream() {
    let (server, url) = start().await;
    let opened = open(&url);
    opened.transport.set_protocol_version("2026-07-28");
    opened
        .transport
        .send(request(5, "hang", json!({})))
        .await
        .expect("send");
    wait_for(|| server.find("POST", "hang").is_some()).await;
    let cancel = Message::notification(
        "notifications/cancelled",
        json!({"requestId": 5, "reason": "gave up"}),
    );
    opened.transport.send(cancel).await.expect("send");
    wait_for(|| server.hang_closed.load(Ordering::SeqCst)).await;
    assert!(
        server.find("POST", "notifications/cancelled").is_none(),
        "modern era: closing the stream is the cancel"
    );
}

#[tokio::test]
async fn the_session_stream_delivers_server_notifications() {
    let (server, url) = start().await;
    let mut opened = open(&url);
    opened
        .transport
        .send(request(1, "initialize", json!({})))
        .await
        .expect("send");
    next_message(&mut opened).await;
    opened.transport.set_protocol_version("2025-11-25");
    let initialized = Message::Notification {
        method: "notifications/initialized".into(),
        params: None,
    };
    opened.transport.send(initialized).await.expect("send");
    // The GET stream belongs to no request.
    let Inbound::Message(Message::Notification { method, .. }) = next(&mut opened).await else {
        panic!("expected a notification from the GET stream");
    };
    assert_eq!(method, "notifications/tools/list_changed");
    let get = server
        .seen()
        .into_iter()
        .find(|s| s.verb == "GET")
        .expect("GET");
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(get.header("mcp-session-id"), Some("sess-1"));
    opened.transport.close().await;
}

/// Takes every answer it is offered, as the client's table of requests in flight does.
#[derive(Default)]
struct TakenAnswers(std::sync::Mutex<Vec<Message>>);

impl DirectAnswers for TakenAnswers {
    fn answer(&self, message: Message) -> Option<Message> {
        match message {
            Message::Response { .. } | Message::Error { .. } => {
                self.0.lock().expect("lock").push(message);
                None
            }
            other => Some(other),
        }
    }
}

impl TakenAnswers {
    fn taken(&self) -> Vec<Message> {
        self.0.lock().expect("lock").clone()
    }
}

async fn send(opened: &Opened, message: Message) {
    opened.transport.send(message).await.expect("send");
}

/// A transport whose answers may go straight to their requests, and the table they go to
/// (held by the caller: the transport holds it weakly).
fn open_taking_answers(url: &str) -> (Opened, Arc<TakenAnswers>) {
    let opened = open(url);
    let answers = Arc::new(TakenAnswers::default());
    let direct: Arc<dyn DirectAnswers> = answers.clone();
    opened.transport.answer_directly(Arc::downgrade(&direct));
    (opened, answers)
}

#[tokio::test]
async fn an_answer_first_on_its_response_goes_straight_to_its_request() {
    let (_server, url) = start().await;
    let (mut opened, answers) = open_taking_answers(&url);
    send(&opened, request(3, "tools/list", json!({}))).await;
    wait_for(|| !answers.taken().is_empty()).await;
    assert!(matches!(
        answers.taken().as_slice(),
        [Message::Response {
            id: RequestId::Number(3),
            ..
        }]
    ));
    // A notification sent afterwards still comes on the channel, and the answer did not.
    send(&opened, request(7, "sse", json!({}))).await;
    let Inbound::OnStream {
        message: Message::Notification { method, .. },
        ..
    } = next(&mut opened).await
    else {
        panic!("expected request 7's progress notification on the channel, not request 3's answer");
    };
    assert_eq!(method, "notifications/progress");
}

#[tokio::test]
async fn an_answer_after_a_notification_on_its_stream_never_overtakes_it() {
    let (_server, url) = start().await;
    let (mut opened, answers) = open_taking_answers(&url);
    send(&opened, request(7, "sse", json!({}))).await;
    assert!(matches!(
        next_message(&mut opened).await,
        Message::Notification { .. }
    ));
    // The answer follows its stream's notification on the channel: taken straight to the
    // request, it could be handled before the notification is.
    assert!(matches!(
        next_message(&mut opened).await,
        Message::Response {
            id: RequestId::Number(7),
            ..
        }
    ));
    assert!(answers.taken().is_empty());
}
