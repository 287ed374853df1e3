//! `http-echo`: the echo tool set over Streamable HTTP (2025 era, JSON answers), for the
//! HTTP → HTTP benchmarks. A plain HTTP/1.1 server on std threads — one per connection,
//! keep-alive — so the fixture is never the bottleneck and depends on nothing of Switchboard's;
//! over TLS with `--tls-cert` and `--tls-key` (`https`).
//! Prints `listening on 127.0.0.1:PORT` on stdout once bound.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::server::{Out, initialize};
use crate::tools::{Call, Toolset};

/// Largest request body accepted.
const MAX_BODY: usize = 16 << 20;

/// Binds 127.0.0.1:`port` and prints `listening on ADDRESS`; `None` (having said why on
/// stderr, as `mode`) when it cannot.
pub(crate) fn listen(mode: &str, port: u16) -> Option<TcpListener> {
    let listener = match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("switchboard-fixture {mode}: cannot bind 127.0.0.1:{port}: {error}");
            return None;
        }
    };
    match listener.local_addr() {
        Ok(address) => println!("listening on {address}"),
        Err(error) => {
            eprintln!("switchboard-fixture {mode}: {error}");
            return None;
        }
    }
    Some(listener)
}

/// Serves until killed, over TLS when given its files; returns an exit code when it cannot
/// bind or a TLS file is unusable.
pub fn serve(port: u16, tls: Option<&crate::https::TlsFiles<'_>>) -> i32 {
    let tls = match tls.map(crate::https::server_config).transpose() {
        Ok(tls) => tls,
        Err(error) => {
            eprintln!("switchboard-fixture http-echo: {error}");
            return 2;
        }
    };
    let Some(listener) = listen("http-echo", port) else {
        return 2;
    };
    let toolset = Arc::new(Toolset::echo());
    let sessions = Arc::new(AtomicU64::new(0));
    for stream in listener.incoming().flatten() {
        let (toolset, sessions, tls) = (toolset.clone(), sessions.clone(), tls.clone());
        std::thread::spawn(move || {
            let answer = |request: Request| answer(&request.body, &toolset, &sessions);
            match tls {
                Some(tls) => crate::https::serve_connection(stream, tls, answer),
                None => serve_connection(stream, answer),
            }
        });
    }
    0
}

/// Answers one connection's requests to `/mcp` with `answer` until it closes.
pub(crate) fn serve_connection(stream: TcpStream, answer: impl FnMut(Request) -> String) {
    let _ = stream.set_nodelay(true);
    serve_requests(&mut BufReader::new(stream), answer);
}

/// Answers the requests read from `connection` (plain or TLS) to `/mcp` with `answer`, each
/// written back on it, until it closes.
pub(crate) fn serve_requests<S: Read + Write>(
    connection: &mut BufReader<S>,
    mut answer: impl FnMut(Request) -> String,
) {
    while let Some(request) = read_message(connection) {
        let response = if request.start != "/mcp" {
            reply(404, &[], "")
        } else if request.method != "POST" {
            // No SSE stream on GET and no session to DELETE: what the spec asks of such a
            // server, so a client in front (the gateway) takes it quietly.
            reply(405, &["Allow: POST".to_owned()], "")
        } else {
            answer(request)
        };
        let stream = connection.get_mut();
        if stream.write_all(response.as_bytes()).is_err() || stream.flush().is_err() {
            return;
        }
    }
}

/// One HTTP/1.1 message as the fixtures read it.
pub(crate) struct Request {
    /// The start line's first word: a request's method (a response's protocol version).
    pub method: String,
    /// The start line's second word: a request's path, a response's status.
    pub start: String,
    /// Its `Mcp-Session-Id` header.
    pub session: Option<String>,
    pub body: Vec<u8>,
}

/// The next message on a connection (a request, or for the forwarder a response with a
/// `Content-Length`); `None` at the end of the connection.
pub(crate) fn read_message(reader: &mut BufReader<impl Read>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let start = words.next()?.to_owned();
    let mut length = 0usize;
    let mut session = None;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.trim().to_owned());
            }
        }
    }
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        start,
        session,
        body,
    })
}

fn answer(body: &[u8], toolset: &Arc<Toolset>, sessions: &AtomicU64) -> String {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}});
        return reply(400, &[], &error.to_string());
    };
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let Some(id) = message.get("id").cloned() else {
        return reply(202, &[], "");
    };
    let mut headers = Vec::new();
    let result = match method {
        "initialize" => {
            let session = sessions.fetch_add(1, Ordering::Relaxed) + 1;
            headers.push(format!("Mcp-Session-Id: fixture-{session}"));
            Ok(initialize("fixture-http-echo", &params))
        }
        "ping" => Ok(json!({})),
        "tools/list" => toolset.list(None, usize::MAX),
        "tools/call" => Call {
            params,
            cancelled: Arc::new(AtomicBool::new(false)),
            out: Out::stdout(),
            toolset: toolset.clone(),
        }
        .run(),
        other => Err((-32601, format!("Method not found: {other}"))),
    };
    let body = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        }
    };
    reply(200, &headers, &body.to_string())
}

/// A whole HTTP/1.1 response with a JSON body (or none), to be written at once.
pub(crate) fn reply(status: u16, headers: &[String], body: &str) -> String {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        405 => "Method Not Allowed",
        502 => "Bad Gateway",
        _ => "Not Found",
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for header in headers {
        response.push_str(header);
        response.push_str("\r\n");
    }
    response.push_str("\r\n");
    response.push_str(body);
    response
}
