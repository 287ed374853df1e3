//! `forward`: the floor under every gateway in the benchmarks. It serves Streamable HTTP
//! (2025 era, JSON answers) with `http-echo`'s own HTTP/1.1 code — std threads, one per
//! connection, keep-alive — and hands each message to one MCP server and its answer back,
//! doing nothing else: no catalog, no names, no validation, no policy, no ledger. What it adds
//! to a call is what any gateway must add on this machine just to move the call one hop
//! further, so a gateway's figures can be read against it.
//!
//! Behind it, either a stdio server (its command line): every connection's requests share the
//! one pipe, so their ids are swapped for the forwarder's own on the way in and back on the
//! way out, the least a multiplexing proxy must do; or an HTTP server (`--upstream URL`):
//! each client connection gets a keep-alive connection of its own to it, and a request's body
//! and session header go through as they came.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::http::{Request, listen, read_message, reply, serve_connection};

/// Where the forwarder sends what it is given.
pub enum Upstream {
    /// A stdio server's command line.
    Stdio(Vec<String>),
    /// A Streamable HTTP endpoint on 127.0.0.1 (`http://127.0.0.1:PORT/mcp`).
    Http(String),
}

/// Serves until killed; returns an exit code when it cannot start its upstream or bind.
pub fn serve(port: u16, upstream: Upstream) -> i32 {
    match upstream {
        Upstream::Stdio(command) => {
            let pipe = match Pipe::start(&command) {
                Ok(pipe) => pipe,
                Err(error) => {
                    eprintln!("switchboard-fixture forward: cannot start {command:?}: {error}");
                    return 2;
                }
            };
            let Some(listener) = listen("forward", port) else {
                return 2;
            };
            for stream in listener.incoming().flatten() {
                let pipe = pipe.clone();
                std::thread::spawn(move || serve_connection(stream, |request| pipe.send(request)));
            }
        }
        Upstream::Http(url) => {
            let Some((address, path)) = url
                .strip_prefix("http://")
                .and_then(|rest| rest.split_once('/'))
                .map(|(address, path)| (address.to_owned(), format!("/{path}")))
            else {
                eprintln!(
                    "switchboard-fixture forward: --upstream must be http://HOST:PORT/PATH, not {url}"
                );
                return 2;
            };
            let Some(listener) = listen("forward", port) else {
                return 2;
            };
            for stream in listener.incoming().flatten() {
                let (address, path) = (address.clone(), path.clone());
                std::thread::spawn(move || {
                    let mut upstream = None;
                    serve_connection(stream, |request| {
                        relay_http(&mut upstream, &address, &path, request)
                    });
                });
            }
        }
    }
    0
}

/// One stdio server shared by every connection: requests written under a lock, answers read
/// by one thread and handed to whoever waits for their id.
#[derive(Clone)]
struct Pipe {
    stdin: Arc<Mutex<ChildStdin>>,
    waiting: Arc<Mutex<HashMap<u64, Waiter>>>,
    next_id: Arc<AtomicU64>,
    sessions: Arc<AtomicU64>,
}

/// A request on its way: the id its client gave it, and where its answer goes.
struct Waiter {
    id: Value,
    answer: mpsc::Sender<String>,
}

impl Pipe {
    fn start(command: &[String]) -> std::io::Result<Pipe> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| std::io::Error::other("no command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the child has no pipes"));
        };
        let pipe = Pipe {
            stdin: Arc::new(Mutex::new(stdin)),
            waiting: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicU64::new(1)),
            sessions: Arc::new(AtomicU64::new(0)),
        };
        let waiting = pipe.waiting.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n').map_while(Result::ok) {
                let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                let Some(id) = message.get("id").and_then(Value::as_u64) else {
                    continue; // a notification or the server's own request: nobody waits
                };
                let Some(waiter) = waiting.lock().ok().and_then(|mut w| w.remove(&id)) else {
                    continue;
                };
                message.insert("id".into(), waiter.id);
                let _ = waiter.answer.send(Value::Object(message).to_string());
            }
            // The server is gone: every waiting request hears so from its dropped sender.
            if let Ok(mut waiting) = waiting.lock() {
                waiting.clear();
            }
            let _ = child.wait();
        });
        Ok(pipe)
    }

    /// Sends one client message down the pipe; a request's answer comes back as the reply.
    fn send(&self, request: Request) -> String {
        let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(&request.body) else {
            return reply(
                400,
                &[],
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
            );
        };
        let Some(client_id) = message.remove("id") else {
            return match self.write(&Value::Object(message)) {
                Ok(()) => reply(202, &[], ""),
                Err(why) => reply(502, &[], &why),
            };
        };
        let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        message.insert("id".into(), Value::from(id));
        let (answer_tx, answer_rx) = mpsc::channel();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(
                id,
                Waiter {
                    id: client_id,
                    answer: answer_tx,
                },
            );
        }
        if let Err(why) = self.write(&Value::Object(message)) {
            if let Ok(mut waiting) = self.waiting.lock() {
                waiting.remove(&id);
            }
            return reply(502, &[], &why);
        }
        let Ok(answer) = answer_rx.recv() else {
            return reply(502, &[], "the stdio server is gone");
        };
        let mut headers = Vec::new();
        if initialize {
            let session = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
            headers.push(format!("Mcp-Session-Id: forward-{session}"));
        }
        reply(200, &headers, &answer)
    }

    /// Writes one message and its newline in one write.
    fn write(&self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let mut stdin = self
            .stdin
            .lock()
            .map_err(|_| "the pipe's lock is poisoned")?;
        stdin
            .write_all(&line)
            .map_err(|error| format!("the stdio server is gone: {error}"))
    }
}

/// Sends one client request to the HTTP upstream on this connection's own keep-alive
/// connection (opened on first use, and again once after a failure), and its answer back.
fn relay_http(
    connection: &mut Option<(TcpStream, BufReader<TcpStream>)>,
    address: &str,
    path: &str,
    request: Request,
) -> String {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        request.body.len()
    );
    if let Some(session) = &request.session {
        head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&request.body);
    for _attempt in 0..2 {
        if connection.is_none() {
            let Ok(stream) = TcpStream::connect(address) else {
                break;
            };
            let _ = stream.set_nodelay(true);
            let Ok(reading) = stream.try_clone() else {
                break;
            };
            *connection = Some((stream, BufReader::new(reading)));
        }
        let Some((stream, reader)) = connection.as_mut() else {
            break;
        };
        if stream.write_all(&bytes).is_ok()
            && let Some(answer) = read_message(reader)
        {
            let status = answer.start.parse().unwrap_or(502);
            let headers: Vec<String> = answer
                .session
                .iter()
                .map(|session| format!("Mcp-Session-Id: {session}"))
                .collect();
            return reply(status, &headers, &String::from_utf8_lossy(&answer.body));
        }
        *connection = None;
    }
    reply(502, &[], "the HTTP upstream is gone")
}
