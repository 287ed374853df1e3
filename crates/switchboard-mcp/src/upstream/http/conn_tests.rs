//! The upstream client's HTTP/1.1 connection against real sockets on 127.0.0.1: what it
//! writes, each way a body is framed (split at every byte), keep-alive, and the answers it
//! refuses with a reason.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::super::client::{Target, http_client};
use super::*;

/// A connection to a socket the test plays the server on.
async fn pair() -> (Connection, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (client, accepted) = tokio::join!(TcpStream::connect(address), listener.accept());
    let client = client.expect("connect");
    let (server, _) = accepted.expect("accept");
    (Connection::new(Stream::Plain(client)), server)
}

/// Reads one request head and its `Content-Length` body from the server's side.
async fn read_request(server: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        assert_eq!(
            server.read(&mut byte).await.expect("read"),
            1,
            "request ended"
        );
        seen.push(byte[0]);
    }
    let head = String::from_utf8(seen).expect("utf-8");
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .map_or(0, |n| n.trim().parse::<usize>().expect("length"));
    let mut body = vec![0u8; length];
    server.read_exact(&mut body).await.expect("body");
    head + &String::from_utf8(body).expect("utf-8")
}

/// Writes `bytes` one at a time, flushed, so every read of the client may end anywhere.
async fn dribble(server: &mut TcpStream, bytes: &[u8]) {
    for byte in bytes {
        server.write_all(&[*byte]).await.expect("write");
        server.flush().await.expect("flush");
        tokio::task::yield_now().await;
    }
}

async fn whole_body(connection: &mut Connection, mut framing: Framing) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(piece) = connection.body_chunk(&mut framing).await? {
        body.extend_from_slice(&piece);
    }
    Ok(body)
}

fn path(text: &str) -> PathAndQuery {
    PathAndQuery::try_from(text).expect("path")
}

async fn post(connection: &mut Connection, headers: &HeaderMap, body: &[u8]) {
    let host = HeaderValue::from_static("127.0.0.1:9");
    connection
        .send(&Method::POST, &path("/mcp?x=1"), &host, headers, body)
        .await
        .expect("send");
}

/// A connection on which `{}` was POSTed and read by the server.
async fn asked() -> (Connection, TcpStream) {
    let (mut connection, mut server) = pair().await;
    post(&mut connection, &HeaderMap::new(), b"{}").await;
    read_request(&mut server).await;
    (connection, server)
}

/// [`asked`], answered with `answer` in one write.
async fn answered(answer: &[u8]) -> (Connection, TcpStream) {
    let (connection, mut server) = asked().await;
    server.write_all(answer).await.expect("write");
    (connection, server)
}

#[tokio::test]
async fn a_request_is_written_with_its_host_headers_and_length() {
    let (mut connection, mut server) = pair().await;
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("application/json"));
    // The writer frames the body itself: a caller's length is not sent twice.
    headers.insert(CONTENT_LENGTH, HeaderValue::from_static("999"));
    post(&mut connection, &headers, br#"{"a":1}"#).await;
    let request = read_request(&mut server).await;
    assert_eq!(
        request,
        "POST /mcp?x=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\naccept: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}"
    );
    // A GET without a body has no length at all.
    let host = HeaderValue::from_static("h");
    connection
        .send(&Method::GET, &path("/"), &host, &HeaderMap::new(), b"")
        .await
        .expect("send");
    assert_eq!(
        read_request(&mut server).await,
        "GET / HTTP/1.1\r\nhost: h\r\n\r\n"
    );
}

#[tokio::test]
async fn a_length_framed_answer_split_at_every_byte_is_read_and_the_connection_kept() {
    let (mut connection, mut server) = pair().await;
    for round in 0..2 {
        post(&mut connection, &HeaderMap::new(), b"{}").await;
        read_request(&mut server).await;
        let body = format!("{{\"round\":{round}}}");
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (head, ()) = tokio::join!(
            connection.read_head(&Method::POST),
            dribble(&mut server, answer.as_bytes())
        );
        let head = head.expect("head");
        assert_eq!(head.status, StatusCode::OK);
        assert_eq!(head.headers["content-type"], "application/json");
        assert!(head.keep_alive);
        assert_eq!(head.body, Framing::Length(body.len() as u64));
        let read = whole_body(&mut connection, head.body).await.expect("body");
        assert_eq!(read, body.as_bytes());
        assert!(connection.is_drained());
        assert!(connection.is_idle_and_open(), "round {round}");
    }
}

#[tokio::test]
async fn a_chunked_answer_with_extensions_and_trailers_is_read_whole() {
    let (mut connection, mut server) = asked().await;
    let answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n\
        5;name=value\r\nhello\r\n7\r\n, world\r\n0\r\nExpires: never\r\n\r\n\
        HTTP/1.1 204 No Content\r\n\r\n";
    let (head, ()) = tokio::join!(
        connection.read_head(&Method::POST),
        dribble(&mut server, answer)
    );
    let head = head.expect("head");
    assert_eq!(head.body, Framing::Chunked(Chunk::Size));
    let body = whole_body(&mut connection, head.body).await.expect("body");
    assert_eq!(body, b"hello, world");
    // The next answer on the connection starts right after the trailers.
    let next = connection
        .read_head(&Method::POST)
        .await
        .expect("next head");
    assert_eq!(next.status, StatusCode::NO_CONTENT);
    assert_eq!(next.body, Framing::Length(0));
    assert!(connection.is_drained());
}

/// Bare LF line ends inside a chunked body, and a Content-Length listing one number twice
/// (RFC 9112 §2.2, §6.3), are read; a list of two numbers is refused.
#[tokio::test]
async fn bare_line_feeds_and_a_repeated_content_length_are_read() {
    let (mut connection, mut server) = asked().await;
    let answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n\
        HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok";
    let (head, ()) = tokio::join!(
        connection.read_head(&Method::POST),
        dribble(&mut server, answer)
    );
    let head = head.expect("head");
    let body = whole_body(&mut connection, head.body).await.expect("body");
    assert_eq!(body, b"hello");
    let next = connection
        .read_head(&Method::POST)
        .await
        .expect("next head");
    assert_eq!(next.body, Framing::Length(2));
    let reason = refusal(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok").await;
    assert!(reason.contains("Content-Length"), "{reason}");
}

#[tokio::test]
async fn informational_answers_are_skipped_and_a_body_without_framing_runs_to_the_close() {
    let (mut connection, mut server) =
        answered(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nevery byte until the end")
            .await;
    server.shutdown().await.expect("shutdown");
    let head = connection.read_head(&Method::POST).await.expect("head");
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.body, Framing::UntilClose);
    assert!(
        !head.keep_alive,
        "a body ended by the close cannot be followed"
    );
    let body = whole_body(&mut connection, head.body).await.expect("body");
    assert_eq!(body, b"every byte until the end");
}

#[tokio::test]
async fn connection_close_and_http_1_0_answers_are_not_kept() {
    for answer in [
        "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    ] {
        let (mut connection, _server) = answered(answer.as_bytes()).await;
        let head = connection.read_head(&Method::POST).await.expect("head");
        assert!(!head.keep_alive, "{answer}");
    }
}

#[tokio::test]
async fn a_closed_idle_connection_is_seen_without_waiting() {
    let (mut connection, server) = pair().await;
    assert!(connection.is_idle_and_open());
    drop(server);
    // The FIN may take a moment to arrive on loopback.
    let mut closed = false;
    for _ in 0..100 {
        if !connection.is_idle_and_open() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(closed, "the server's close was not noticed");
}

/// What the connection says about an answer the test server sends, then closes on.
async fn refusal(answer: &[u8]) -> String {
    let (mut connection, mut server) = answered(answer).await;
    server.shutdown().await.expect("shutdown");
    let head = match connection.read_head(&Method::POST).await {
        Ok(head) => head,
        Err(reason) => return reason,
    };
    whole_body(&mut connection, head.body)
        .await
        .expect_err("the body should be refused")
}

#[tokio::test]
async fn broken_answers_are_refused_with_a_reason() {
    let cases: [(&[u8], &str); 7] = [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "the answer is not HTTP/1.1"),
        (b"", "the connection closed before an answer came"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Len",
            "the connection closed before an answer came",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            "the connection closed before the answer ended",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            "the connection closed before the answer ended",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "conflicting Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "a chunk of the answer has an invalid size",
        ),
    ];
    for (answer, expected) in cases {
        let reason = refusal(answer).await;
        assert!(
            reason.contains(expected),
            "{:?}: {reason}",
            String::from_utf8_lossy(answer)
        );
    }
}

#[tokio::test]
async fn a_head_larger_than_the_limit_is_refused() {
    let mut answer = b"HTTP/1.1 200 OK\r\n".to_vec();
    while answer.len() <= MAX_HEAD_BYTES {
        answer.extend_from_slice(
            b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    let (mut connection, mut server) = asked().await;
    let writing = tokio::spawn(async move {
        let _ = server.write_all(&answer).await;
        server
    });
    match connection.read_head(&Method::POST).await {
        Err(reason) => {
            assert!(
                reason.contains("larger than") || reason.contains("not HTTP/1.1"),
                "{reason}"
            )
        }
        other => panic!("unexpected {:?}", other.map(|head| head.status)),
    }
    drop(writing.await);
}

/// A listener on 127.0.0.1 for the client-level tests, and the URL that reaches it.
async fn listening() -> (TcpListener, Target) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let target = Target::parse(&format!("http://{address}/mcp")).expect("target");
    (listener, target)
}

/// A POST of `body` to `target` through the upstreams' client.
async fn client_post(target: &Target, body: Bytes) -> super::super::client::Response {
    http_client()
        .send(Method::POST, target, HeaderMap::new(), body)
        .await
        .expect("send")
}

/// The client over this connection: a server that closes every connection after one answer
/// (without saying so) still gets every request once, each on a fresh connection.
#[tokio::test]
async fn a_pooled_connection_the_server_closed_is_not_used() {
    let (listener, target) = listening().await;
    let server = tokio::spawn(async move {
        let mut requests = 0;
        for _ in 0..3 {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let request = read_request(&mut socket).await;
            assert!(request.ends_with("ping"), "{request}");
            requests += 1;
            socket
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong")
                .await
                .expect("write");
        }
        requests
    });
    for _ in 0..3 {
        let response = client_post(&target, Bytes::from_static(b"ping")).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.read_limited(100).await.expect("body"), b"pong");
        // Let the server's close reach this side before the next checkout.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.await.expect("server"), 3);
}

#[test]
fn chunk_sizes_are_hex_digits_with_any_leading_zeros() {
    assert_eq!(chunk_size(b"1a"), Ok(26));
    assert_eq!(chunk_size(b"0000000000000000000A"), Ok(10));
    assert_eq!(chunk_size(b"5 \t;name=value"), Ok(5));
    assert_eq!(chunk_size(b"fffffffffffffff"), Ok(0xfff_ffff_ffff_ffff));
    for refused in [
        &b""[..],
        b"+5",
        b" 5",
        b"5 x",
        b"0x5",
        b"1000000000000000",
        b"g",
    ] {
        assert!(
            chunk_size(refused).is_err(),
            "{:?}",
            String::from_utf8_lossy(refused)
        );
    }
}

#[tokio::test]
async fn an_answer_framed_twice_is_read_by_its_chunks_and_not_kept_but_a_1_0_keep_alive_is() {
    let (mut connection, _server) = answered(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n").await;
    let head = connection.read_head(&Method::POST).await.expect("head");
    assert!(
        !head.keep_alive,
        "a smuggling-shaped answer must not be followed"
    );
    assert_eq!(
        whole_body(&mut connection, head.body).await.expect("body"),
        b"ok"
    );

    let (mut connection, _server) =
        answered(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n").await;
    assert!(
        connection
            .read_head(&Method::POST)
            .await
            .expect("head")
            .keep_alive
    );
}

#[tokio::test]
async fn endless_trailers_and_endless_informational_answers_are_cut_off() {
    let mut trailers = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
    while trailers.len() <= 2 * MAX_HEAD_BYTES {
        trailers.extend_from_slice(b"x: y\r\n");
    }
    let reason = refusal(&trailers).await;
    assert!(reason.contains("trailers are larger than"), "{reason}");
    let informational = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INFORMATIONAL + 1);
    let reason = refusal(&informational).await;
    assert!(reason.contains("informational answers"), "{reason}");
}

/// A server that refuses a large request with its head alone, and closes without reading
/// the body: the client gets the refusal, not a broken pipe.
#[tokio::test]
async fn an_answer_sent_before_the_body_was_read_is_returned() {
    let (listener, target) = listening().await;
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut seen = Vec::new();
        let mut piece = [0u8; 1024];
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut piece).await.expect("read");
            assert!(n > 0, "the request ended early");
            seen.extend_from_slice(&piece[..n]);
        }
        socket
            .write_all(b"HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo big!")
            .await
            .expect("write");
        // Closed with the body unread: the kernel resets the connection.
    });
    let body = Bytes::from(vec![b'x'; 64 * 1024 * 1024]);
    let response = client_post(&target, body).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(response.read_limited(100).await.expect("body"), b"too big!");
    server.await.expect("server");
}

/// The oldest idle connection is looked at when another is given back: one the server
/// closed meanwhile leaves the pool without waiting for its turn to be checked out.
#[tokio::test]
async fn a_closed_idle_connection_leaves_the_pool_when_another_comes_back() {
    let (listener, target) = listening().await;
    let server = tokio::spawn(async move {
        let (mut first, _) = listener.accept().await.expect("accept");
        let (mut second, _) = listener.accept().await.expect("accept");
        read_request(&mut first).await;
        read_request(&mut second).await;
        // The first answers and closes at once; the second answers later and stays open.
        first
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
            .await
            .expect("write");
        drop(first);
        tokio::time::sleep(Duration::from_millis(100)).await;
        second
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2")
            .await
            .expect("write");
        second
    });
    let call = || async {
        let response = client_post(&target, Bytes::from_static(b"{}")).await;
        response.read_limited(10).await.expect("body")
    };
    let (a, b) = tokio::join!(call(), call());
    let mut answers = [a, b];
    answers.sort();
    assert_eq!(answers, [b"1".to_vec(), b"2".to_vec()]);
    assert_eq!(super::super::client::idle_connections(&target), 1);
    drop(server.await.expect("server"));
}
