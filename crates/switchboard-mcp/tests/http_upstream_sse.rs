//! The legacy HTTP+SSE upstream transport (2024-11-05) against a small axum server on
//! 127.0.0.1: the `endpoint` event, POSTs answered on the stream, the end of the stream,
//! refused endpoints, and a POST whose answer never ends stopped by closing.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use serde_json::{Value, json};
use switchboard_mcp::jsonrpc::{Message, RequestId};
use switchboard_mcp::upstream::http::open_legacy_sse;
use switchboard_mcp::upstream::transport::{Inbound, Opened};
use tokio::sync::mpsc;

#[derive(Clone)]
struct Server {
    /// The endpoint the `endpoint` event announces.
    endpoint: String,
    /// Where the POST handler writes events for the open stream.
    stream: Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>,
    /// Query strings of the POSTs received.
    posts: Arc<Mutex<Vec<Option<String>>>>,
    /// Set when the endless answer to a `hang` POST is dropped (its connection closed).
    hang_closed: Arc<std::sync::atomic::AtomicBool>,
}

/// Sets its flag when dropped.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

async fn on_get(State(server): State<Server>, headers: HeaderMap) -> Response {
    assert_eq!(
        headers.get("accept").and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Split the endpoint event to exercise the parser across chunks.
    let _ = tx.send(": welcome\n\nevent: endpoint\n".to_owned());
    let _ = tx.send(format!("data: {}\n\n", server.endpoint));
    *server.stream.lock().expect("lock") = Some(tx);
    let events = futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|event| event.map(|e| Ok::<_, Infallible>(Bytes::from(e))))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(events),
    )
        .into_response()
}

async fn on_post(
    State(server): State<Server>,
    RawQuery(query): RawQuery,
    body: String,
) -> Response {
    server.posts.lock().expect("lock").push(query);
    let body: Value = serde_json::from_str(&body).expect("the client posts JSON");
    if body["method"] == "hang" {
        // An answer whose body never ends.
        let flag = DropFlag(server.hang_closed.clone());
        let stream = futures::stream::unfold(flag, |flag| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Some((Ok::<_, Infallible>(Bytes::from(" ")), flag))
        });
        return Body::from_stream(stream).into_response();
    }
    if let (Some(id), Some(method)) = (body.get("id"), body["method"].as_str()) {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "working"}});
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"method": method}});
        if let Some(stream) = server.stream.lock().expect("lock").as_ref() {
            let _ = stream.send(format!(
                "data: {note}\n\nevent: message\ndata: {answer}\n\n"
            ));
        }
    }
    StatusCode::ACCEPTED.into_response()
}

async fn start(endpoint: &str) -> (Server, String) {
    let server = Server {
        endpoint: endpoint.to_owned(),
        stream: Arc::default(),
        posts: Arc::default(),
        hang_closed: Arc::default(),
    };
    let app = Router::new()
        .route("/sse", get(on_get))
        .route("/messages", post(on_post))
        .route(
            "/empty",
            get(|| async { ([("content-type", "text/event-stream")], ": bye\n\n") }),
        )
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (server, format!("http://{address}/sse"))
}

async fn open(url: &str) -> Result<Opened, String> {
    let headers = BTreeMap::new();
    let opening = open_legacy_sse("test", url, &headers, None, false, 1 << 20);
    match tokio::time::timeout(Duration::from_secs(5), opening).await {
        Ok(result) => result.map_err(|error| error.0),
        Err(_) => panic!("opening blocked"),
    }
}

async fn next(opened: &mut Opened) -> Inbound {
    tokio::time::timeout(Duration::from_secs(5), opened.inbound.recv())
        .await
        .expect("something arrives in time")
        .expect("the channel is open")
}

#[tokio::test]
async fn messages_flow_through_the_announced_endpoint() {
    let (server, url) = start("/messages?session=abc").await;
    let mut opened = open(&url).await.expect("opened");
    let request = Message::Request {
        id: RequestId::Number(4),
        method: "tools/list".into(),
        params: Some(json!({})),
    };
    opened.transport.send(request).await.expect("send");
    let Inbound::Message(Message::Notification { method, .. }) = next(&mut opened).await else {
        panic!("expected the log notification first");
    };
    assert_eq!(method, "notifications/message");
    let Inbound::Message(Message::Response { id, result }) = next(&mut opened).await else {
        panic!("expected the answer");
    };
    assert_eq!(
        (id, result),
        (RequestId::Number(4), json!({"method": "tools/list"}))
    );
    assert_eq!(
        server.posts.lock().expect("lock").as_slice(),
        [Some("session=abc".to_owned())]
    );

    // The server ends the stream: the connection is over.
    server.stream.lock().expect("lock").take();
    match next(&mut opened).await {
        Inbound::Closed(reason) => assert_eq!(reason, "the SSE stream ended"),
        other => panic!("expected the end, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_post_answers_the_request() {
    let (_server, url) = start("/nowhere").await;
    let mut opened = open(&url).await.expect("opened");
    let request = Message::Request {
        id: RequestId::Number(1),
        method: "ping".into(),
        params: None,
    };
    opened.transport.send(request).await.expect("send");
    match next(&mut opened).await {
        Inbound::Message(Message::Error {
            id: Some(RequestId::Number(1)),
            error,
        }) => assert!(error.message.contains("HTTP 404"), "{}", error.message),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test]
async fn endpoints_on_another_origin_are_refused() {
    let (_server, url) = start("http://elsewhere.example/messages").await;
    let error = open(&url).await.err().expect("refused");
    assert!(error.contains("not on the origin"), "{error}");
}

#[tokio::test]
async fn an_unreachable_server_fails_fast() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/sse", listener.local_addr().expect("address"));
    drop(listener);
    let error = open(&url).await.err().expect("refused");
    assert!(error.contains(&url), "{error}");
}

#[tokio::test]
async fn a_stream_without_endpoint_fails_instead_of_waiting() {
    let (_server, url) = start("/messages").await;
    let error = open(&url.replace("/sse", "/empty"))
        .await
        .err()
        .expect("refused");
    assert!(error.contains("before sending its endpoint"), "{error}");
}

/// Closing the transport stops a POST still reading its answer (its connection closes).
#[tokio::test]
async fn closing_stops_a_post_still_under_way() {
    let (server, url) = start("/messages").await;
    let opened = open(&url).await.expect("opened");
    let request = Message::Request {
        id: RequestId::Number(9),
        method: "hang".into(),
        params: None,
    };
    opened.transport.send(request).await.expect("send");
    let started = std::time::Instant::now();
    while server.posts.lock().expect("lock").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the POST arrives"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    opened.transport.close().await;
    while !server.hang_closed.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the POST's connection outlived the transport"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
