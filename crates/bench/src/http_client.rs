//! A lean Streamable HTTP client for the benchmarks: one keep-alive HTTP/1.1 connection over
//! std's `TcpStream`, requests written by hand, answers read as JSON (`Content-Length` or
//! chunked) or as an SSE stream whose `data:` event carries the answer — so what is measured
//! is the target, not a client stack (the rmcp client alone costs ~180 µs per call).
//! Loopback only: the URL must be `http://127.0.0.1:PORT/PATH`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// One connection to one MCP endpoint, with its session.
pub struct HttpClient {
    host: String,
    path: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    session: Option<String>,
    next_id: u64,
}

impl HttpClient {
    /// Connects to `url` (`http://127.0.0.1:PORT/PATH`).
    pub fn connect(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("{url}: only http:// URLs"))?;
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if !host.starts_with("127.0.0.1:") {
            bail!("{url}: benchmarks talk to 127.0.0.1 only");
        }
        let stream = TcpStream::connect(host).with_context(|| format!("connect {host}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Self {
            host: host.to_owned(),
            path: format!("/{path}"),
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            session: None,
            next_id: 1,
        })
    }

    /// `initialize` + `notifications/initialized`; keeps the session id.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "switchboard-bench", "version": "1"}}),
        )?;
        self.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            None,
        )?;
        Ok(result)
    }

    /// Sends a request and returns its `result` (an error answer is an `Err`).
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = self
            .post(&body.to_string(), Some(id))?
            .with_context(|| format!("{method}: no answer"))?;
        if let Some(error) = answer.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// Posts one message; returns the answer to `id` when one is expected.
    fn post(&mut self, body: &str, id: Option<u64>) -> anyhow::Result<Option<Value>> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
             Content-Length: {}\r\n",
            self.path,
            self.host,
            body.len()
        );
        if let Some(session) = &self.session {
            head.push_str("Mcp-Session-Id: ");
            head.push_str(session);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        self.writer.write_all(head.as_bytes())?;
        self.writer.write_all(body.as_bytes())?;
        let response = self.read_response()?;
        if let Some(session) = response.session {
            self.session = Some(session);
        }
        if !(200..300).contains(&response.status) {
            bail!(
                "HTTP {}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            );
        }
        let Some(id) = id else {
            return Ok(None);
        };
        if response.event_stream {
            return Ok(Some(answer_in_events(&response.body, id)?));
        }
        Ok(Some(serde_json::from_slice(&response.body)?))
    }

    fn read_response(&mut self) -> anyhow::Result<Response> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let (mut length, mut chunked, mut event_stream, mut session) = (None, false, false, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<usize>().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "content-type" => event_stream = value.starts_with("text/event-stream"),
                "mcp-session-id" => session = Some(value.to_owned()),
                _ => {}
            }
        }
        let body = if chunked {
            self.read_chunks()?
        } else {
            let mut body = vec![0; length.unwrap_or(0)];
            self.reader.read_exact(&mut body)?;
            body
        };
        Ok(Response {
            status,
            event_stream,
            session,
            body,
        })
    }

    /// A chunked body (an event stream answering one request ends after its answer).
    fn read_chunks(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            if size == 0 {
                line.clear();
                self.reader.read_line(&mut line)?;
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.reader.read_exact(&mut body[start..])?;
            line.clear();
            self.reader.read_line(&mut line)?;
        }
    }
}

struct Response {
    status: u16,
    event_stream: bool,
    session: Option<String>,
    body: Vec<u8>,
}

/// The JSON-RPC answer to `id` among the `data:` lines of an SSE body.
fn answer_in_events(body: &[u8], id: u64) -> anyhow::Result<Value> {
    let text = String::from_utf8_lossy(body);
    for data in text.lines().filter_map(|line| line.strip_prefix("data:")) {
        if let Ok(message) = serde_json::from_str::<Value>(data.trim())
            && message.get("id") == Some(&json!(id))
        {
            return Ok(message);
        }
    }
    bail!("no answer to request {id} in the event stream")
}
