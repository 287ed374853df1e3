//! A lean Streamable HTTP client for the benchmarks: one keep-alive HTTP/1.1 connection over
//! std's `TcpStream`, requests written by hand, answers read as JSON (`Content-Length` or
//! chunked) or as an SSE stream whose `data:` event carries the answer — so what is measured
//! is the target, not a client stack (the rmcp client alone costs ~180 µs per call).
//! It speaks either protocol era: the 2025-11-25 handshake and session ([`HttpClient::initialize`]),
//! or stateless 2026-07-28 requests ([`HttpClient::discover`]), each carrying the version and
//! the client's capabilities in `_meta` and the routing headers `Mcp-Method` and `Mcp-Name`.
//! Loopback only: the URL must be `http://127.0.0.1:PORT/PATH`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::era::{self, Era};

/// One connection to one MCP endpoint, with its session.
pub struct HttpClient {
    host: String,
    path: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    session: Option<String>,
    /// Whether requests speak the stateless 2026-07-28 era.
    modern: bool,
    next_id: u64,
}

/// The host and path of an `http://127.0.0.1:PORT/PATH` URL; any other is refused
/// (benchmarks talk to loopback only).
pub fn loopback_target(url: &str) -> anyhow::Result<(&str, &str)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: only http:// URLs"))?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !host.starts_with("127.0.0.1:") {
        bail!("{url}: benchmarks talk to 127.0.0.1 only");
    }
    Ok((host, path))
}

impl HttpClient {
    /// Connects to `url` (`http://127.0.0.1:PORT/PATH`).
    pub fn connect(url: &str) -> anyhow::Result<Self> {
        let (host, path) = loopback_target(url)?;
        let stream = TcpStream::connect(host).with_context(|| format!("connect {host}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Self {
            host: host.to_owned(),
            path: format!("/{path}"),
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            session: None,
            modern: false,
            next_id: 1,
        })
    }

    /// How long a read may wait for the target (30 s unless set).
    pub fn set_timeout(&mut self, limit: Duration) -> anyhow::Result<()> {
        self.writer.set_read_timeout(Some(limit))?;
        Ok(())
    }

    /// The legacy session's id, once `initialize` was answered with one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// `initialize` + `notifications/initialized`; keeps the session id.
    pub fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self.request("initialize", era::initialize_params())?;
        self.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            None,
            "",
        )?;
        Ok(result)
    }

    /// Switches to the stateless 2026-07-28 era: `server/discover`, and from then on every
    /// request carries the era's `_meta` and routing headers. Returns the discovery result; a
    /// target that does not speak the era fails here.
    pub fn discover(&mut self) -> anyhow::Result<Value> {
        self.modern = true;
        self.request("server/discover", json!({})).with_context(|| {
            format!(
                "{}{} does not speak {}",
                self.host,
                self.path,
                Era::Modern.version()
            )
        })
    }

    /// Sends a request and returns its `result` (an error answer is an `Err`).
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let answer = self.exchange(method, params)?;
        if let Some(error) = answer.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }

    /// Sends a request and returns the whole JSON-RPC answer, an error answer included.
    pub fn exchange(&mut self, method: &str, mut params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut routing = String::new();
        if self.modern {
            if let Value::Object(params) = &mut params {
                era::add_modern_meta(params);
            }
            routing = routing_headers(method, &params)?;
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post(&body.to_string(), Some(id), &routing)?
            .with_context(|| format!("{method}: no answer"))
    }

    /// Posts one message with `extra` header lines; returns the answer to `id` when one is
    /// expected.
    fn post(&mut self, body: &str, id: Option<u64>, extra: &str) -> anyhow::Result<Option<Value>> {
        let version = if self.modern {
            Era::Modern
        } else {
            Era::Legacy
        }
        .version();
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\n\
             Content-Length: {}\r\n{extra}",
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
        // Head and body in one write, so they leave in one segment, as hyper's and undici's
        // clients send a small request: two writes would make the target's kernel ACK the
        // first segment on its own, a cost of this client rather than of the target.
        head.push_str(body);
        self.writer.write_all(head.as_bytes())?;
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

/// The `Mcp-Method` and `Mcp-Name` header lines of a 2026-07-28 request.
fn routing_headers(method: &str, params: &Value) -> anyhow::Result<String> {
    let mut lines = format!("Mcp-Method: {method}\r\n");
    let field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(name) = field.and_then(|field| params.get(field)?.as_str()) {
        // Other values would need the header's Base64 form, which this client leaves out.
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
            bail!(
                "{method} names {name:?}: the benchmark client sends Mcp-Name only for visible ASCII names"
            );
        }
        lines.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    Ok(lines)
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
