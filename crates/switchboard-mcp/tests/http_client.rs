//! The upstream HTTP client at the connection level, against a raw HTTP/1.1 server on
//! 127.0.0.1 that counts connections: keep-alive reuse (JSON and SSE answers), connections
//! the server closed, redirects within the origin and to another one, and TLS actually
//! being spoken for `https` URLs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_mcp::jsonrpc::{Message, RequestId};
use switchboard_mcp::upstream::http::open_streamable_http;
use switchboard_mcp::upstream::transport::{Inbound, Opened};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// What the raw server does after each answer, and which path it redirects.
#[derive(Clone, Default)]
struct Behaviour {
    close_after_each: bool,
    /// Answer as a chunked SSE stream that ends after the answer (the TypeScript SDK's way).
    sse: bool,
    /// `(path, Location)`: a POST to `path` is answered 307 with that `Location`.
    redirect: Option<(&'static str, String)>,
}

struct RawServer {
    connections: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
    address: String,
}

async fn raw_server(behaviour: Behaviour) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (connections.clone(), paths.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            // Without it the stream's end waits for the client's delayed ACK (Nagle).
            let _ = stream.set_nodelay(true);
            tokio::spawn(serve_connection(stream, behaviour.clone(), seen.clone()));
        }
    });
    RawServer {
        connections,
        paths,
        address,
    }
}

/// Answers requests on one connection until the client closes it (or after one answer).
async fn serve_connection(
    stream: tokio::net::TcpStream,
    behaviour: Behaviour,
    paths: Arc<Mutex<Vec<String>>>,
) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if stream.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if stream.read_exact(&mut body).await.is_err() {
            return;
        }
        paths.lock().expect("lock").push(path.clone());
        let answer = match &behaviour.redirect {
            Some((from, to)) if *from == path => {
                format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n"
                )
            }
            _ => {
                let id = serde_json::from_slice::<Value>(&body)
                    .map(|request| request["id"].clone())
                    .unwrap_or(Value::Null);
                let json =
                    json!({"jsonrpc": "2.0", "id": id, "result": {"path": path}}).to_string();
                if behaviour.sse {
                    let event = format!("event: message\ndata: {json}\n\n");
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                        event.len()
                    )
                } else {
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{json}",
                        json.len()
                    )
                }
            }
        };
        if stream.get_mut().write_all(answer.as_bytes()).await.is_err() {
            return;
        }
        if behaviour.sse {
            // The stream's end comes in a later write, as when a server ends the response
            // after sending the answer.
            tokio::time::sleep(Duration::from_millis(5)).await;
            if stream.get_mut().write_all(b"0\r\n\r\n").await.is_err() {
                return;
            }
        }
        if behaviour.close_after_each {
            let _ = stream.get_mut().shutdown().await;
            return;
        }
    }
}

fn open(url: &str) -> Opened {
    open_streamable_http("test", url, &BTreeMap::new(), None, None, false, 1 << 20).expect("open")
}

/// Sends request `id` and returns what answers it.
async fn call(opened: &mut Opened, id: i64) -> Message {
    let request = Message::Request {
        id: RequestId::Number(id),
        method: "tools/list".to_owned(),
        params: Some(json!({})),
    };
    opened.transport.send(request).await.expect("send");
    match tokio::time::timeout(Duration::from_secs(5), opened.inbound.recv()).await {
        Ok(Some(Inbound::Message(message) | Inbound::OnStream { message, .. })) => message,
        other => panic!("no answer to request {id}: {other:?}"),
    }
}

fn answered_path(message: &Message, id: i64) -> String {
    match message {
        Message::Response { id: got, result } if *got == RequestId::Number(id) => {
            result["path"].as_str().unwrap_or_default().to_owned()
        }
        other => panic!("expected the answer to {id}, got {other:?}"),
    }
}

fn error_text(message: &Message) -> String {
    match message {
        Message::Error { error, .. } => error.message.clone(),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

/// Makes `calls` sequential calls with `pause` after each; returns the connections opened.
async fn connections_for(behaviour: Behaviour, calls: i64, pause: Duration) -> usize {
    let server = raw_server(behaviour).await;
    let mut opened = open(&format!("http://{}/mcp", server.address));
    for id in 1..=calls {
        let answer = call(&mut opened, id).await;
        assert_eq!(answered_path(&answer, id), "/mcp");
        tokio::time::sleep(pause).await;
    }
    server.connections.load(Ordering::SeqCst)
}

#[tokio::test]
async fn keep_alive_connections_are_reused() {
    let opened = connections_for(Behaviour::default(), 20, Duration::ZERO).await;
    assert_eq!(
        opened, 1,
        "twenty sequential requests should share one connection"
    );
}

#[tokio::test]
async fn connections_that_answered_with_a_stream_are_reused() {
    let sse = Behaviour {
        sse: true,
        ..Behaviour::default()
    };
    // The stream's end follows the answer; the client reads it, then pools the connection.
    let opened = connections_for(sse, 10, Duration::from_millis(20)).await;
    assert_eq!(
        opened, 1,
        "ten streamed answers should share one connection"
    );
}

#[tokio::test]
async fn a_connection_the_server_closed_is_not_reused() {
    let server = raw_server(Behaviour {
        close_after_each: true,
        ..Behaviour::default()
    })
    .await;
    let mut opened = open(&format!("http://{}/mcp", server.address));
    for id in 1..=5 {
        let answer = call(&mut opened, id).await;
        assert_eq!(answered_path(&answer, id), "/mcp");
        // An idle connection closed by the server (as uvicorn does after 5 s).
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.connections.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_body() {
    let server = raw_server(Behaviour {
        redirect: Some(("/mcp", "/mcp/".to_owned())),
        ..Behaviour::default()
    })
    .await;
    let mut opened = open(&format!("http://{}/mcp", server.address));
    let answer = call(&mut opened, 7).await;
    assert_eq!(answered_path(&answer, 7), "/mcp/");
    assert_eq!(*server.paths.lock().expect("lock"), ["/mcp", "/mcp/"]);
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused() {
    let elsewhere = raw_server(Behaviour::default()).await;
    let server = raw_server(Behaviour {
        redirect: Some(("/mcp", format!("http://{}/mcp", elsewhere.address))),
        ..Behaviour::default()
    })
    .await;
    let mut opened = open(&format!("http://{}/mcp", server.address));
    let text = error_text(&call(&mut opened, 3).await);
    assert!(text.contains("another origin"), "{text}");
    assert!(text.contains(&elsewhere.address), "{text}");
    assert_eq!(elsewhere.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn https_speaks_tls() {
    // A plain-HTTP server behind an https URL: the client must start a TLS handshake,
    // never fall back to plain text.
    let server = raw_server(Behaviour::default()).await;
    let mut opened = open(&format!("https://{}/mcp", server.address));
    let text = error_text(&call(&mut opened, 4).await);
    assert!(text.contains("TLS with"), "{text}");
    assert!(server.paths.lock().expect("lock").is_empty());
}

#[test]
fn a_url_that_is_not_http_is_refused_at_open() {
    let refused = open_streamable_http(
        "test",
        "ftp://127.0.0.1/mcp",
        &BTreeMap::new(),
        None,
        None,
        false,
        1 << 20,
    );
    let Err(error) = refused else {
        panic!("an ftp URL was accepted")
    };
    assert!(
        error.0.contains("unsupported URL scheme 'ftp'"),
        "{}",
        error.0
    );
}
