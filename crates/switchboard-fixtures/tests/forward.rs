//! `switchboard-fixture forward`, the benchmarks' bare forwarder, over real HTTP on 127.0.0.1:
//! in front of the stdio echo fixture, two connections' requests with the same id share the
//! pipe and each gets its own answer, under its own id, even out of order; in front of the
//! HTTP echo fixture, requests and session ids go through as they came; both answer a GET
//! (an SSE stream neither offers) 405, as the spec asks; a wrong command line says what is
//! wrong.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

fn fixture() -> Command {
    Command::new(env!("CARGO_BIN_EXE_switchboard-fixture"))
}

/// A server process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` and returns it with the address it prints ("listening on ADDRESS").
fn listening(mut command: Command) -> (Running, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the fixture");
    let stdout = child.stdout.take().expect("stdout");
    let running = Running(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the address");
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (running, address)
}

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Connection {
    fn open(address: &str) -> Connection {
        let writer = TcpStream::connect(address).expect("connect");
        let reader = BufReader::new(writer.try_clone().expect("clone"));
        Connection { writer, reader }
    }

    fn send(&mut self, message: &Value, session: Option<&str>) {
        let body = message.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(session) = session {
            request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        self.writer.write_all(request.as_bytes()).expect("send");
    }

    /// The status, the session header and the JSON body (null when empty) of the next answer.
    fn answer(&mut self) -> (u16, Option<String>, Value) {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let (mut length, mut session) = (0, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            let Some((name, value)) = line.trim_end().split_once(':') else {
                break;
            };
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().expect("length");
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                session = Some(value.trim().to_owned());
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        let json = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).expect("a JSON body")
        };
        (status, session, json)
    }

    /// `initialize`, then `notifications/initialized`; the session id given.
    fn initialize(&mut self) -> Option<String> {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}),
            None,
        );
        let (status, session, answer) = self.answer();
        assert_eq!(status, 200, "{answer}");
        assert!(
            answer["result"]["serverInfo"]["name"].is_string(),
            "{answer}"
        );
        self.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            session.as_deref(),
        );
        assert_eq!(self.answer().0, 202);
        session
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

#[test]
fn requests_of_two_connections_share_the_pipe_and_each_gets_its_own_answer() {
    let mut command = fixture();
    command
        .args(["forward", "--"])
        .arg(env!("CARGO_BIN_EXE_switchboard-fixture"))
        .arg("echo");
    let (_forwarder, address) = listening(command);
    let (mut slow, mut fast) = (Connection::open(&address), Connection::open(&address));
    let (slow_session, fast_session) = (slow.initialize(), fast.initialize());
    assert!(slow_session.is_some(), "initialize gives a session");
    assert_ne!(slow_session, fast_session, "one session per initialize");
    // Same client id on both; the slow call is sent first and answered last.
    slow.send(
        &call(7, "sleep", json!({"ms": 300})),
        slow_session.as_deref(),
    );
    fast.send(
        &call(7, "echo", json!({"message": "fast"})),
        fast_session.as_deref(),
    );
    let (status, _, answer) = fast.answer();
    assert_eq!(status, 200);
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "fast", "{answer}");
    let (_, _, answer) = slow.answer();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "slept 300 ms",
        "{answer}"
    );
    // A string id comes back as the client sent it.
    fast.send(
        &json!({"jsonrpc": "2.0", "id": "s-1", "method": "ping"}),
        fast_session.as_deref(),
    );
    let (_, _, answer) = fast.answer();
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "s-1", "result": {}}));
}

/// `http-echo` and a forwarder in front of it, each with its address.
fn http_echo_behind_a_forwarder() -> [(Running, String); 2] {
    let mut upstream = fixture();
    upstream.arg("http-echo");
    let (upstream, upstream_address) = listening(upstream);
    let mut command = fixture();
    command.args([
        "forward",
        "--upstream",
        &format!("http://{upstream_address}/mcp"),
    ]);
    [(upstream, upstream_address), listening(command)]
}

#[test]
fn in_front_of_an_http_server_requests_and_sessions_go_through() {
    let [(_upstream, _), (_forwarder, address)] = http_echo_behind_a_forwarder();
    let mut connection = Connection::open(&address);
    let session = connection.initialize();
    assert!(
        session
            .as_deref()
            .is_some_and(|s| s.starts_with("fixture-")),
        "the upstream's own session id: {session:?}"
    );
    for (id, message) in [(1, "one"), (2, "two")] {
        connection.send(
            &call(id, "echo", json!({"message": message})),
            session.as_deref(),
        );
        let (status, _, answer) = connection.answer();
        assert_eq!(status, 200);
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], message, "{answer}");
    }
}

#[test]
fn a_get_is_answered_405_by_the_echo_server_and_the_forwarder() {
    let [(_upstream, upstream_address), (_forwarder, address)] = http_echo_behind_a_forwarder();
    for address in [&upstream_address, &address] {
        let mut connection = Connection::open(address);
        connection
            .writer
            .write_all(b"GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            .expect("send");
        let (status, _, body) = connection.answer();
        assert_eq!(status, 405, "GET on {address}: {body}");
        // The connection stays usable for the POSTs that follow.
        assert!(connection.initialize().is_some(), "{address}");
    }
}

/// The exit code and stderr of a `switchboard-fixture` run expected to fail at once.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let output = fixture().args(args).output().expect("run");
    assert!(!output.status.success(), "{args:?} should fail");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr)
}

#[test]
fn a_forwarder_without_an_upstream_or_with_a_bad_one_says_what_is_wrong() {
    let (_, stderr) = refused(&["forward"]);
    assert!(
        stderr.contains("required arguments were not provided") && stderr.contains("<COMMAND>"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["forward", "--upstream", "ftp://somewhere"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--upstream must be http://HOST:PORT/PATH, not ftp://somewhere"),
        "{stderr}"
    );

    let (code, stderr) = refused(&["forward", "--", "/no/such/server"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("cannot start"), "{stderr}");
}
