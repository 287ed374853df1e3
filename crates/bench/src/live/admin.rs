//! The gateway's admin endpoint as `bench live` speaks to it: `POST {url}/changes` with the
//! bearer token of the admin file the gateway wrote, over a fresh loopback connection per
//! change (closed after the answer: a change costs milliseconds, a connect microseconds), and
//! the change report read back and checked.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// Where the admin endpoint is and the token it wants.
pub struct Admin {
    host: String,
    token: String,
    timeout: Duration,
}

impl Admin {
    /// Reads the admin file (`{url, token, ...}`); `timeout` bounds every change.
    pub fn read(path: &Path, timeout: Duration) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("the gateway wrote no admin file at {}", path.display()))?;
        let file: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        let field = |name: &str| {
            file.get(name)
                .and_then(Value::as_str)
                .with_context(|| format!("{} has no \"{name}\"", path.display()))
        };
        let url = field("url")?;
        let host = url
            .strip_prefix("http://")
            .with_context(|| format!("admin URL {url}: only http:// URLs"))?
            .trim_end_matches('/');
        if !host.starts_with("127.0.0.1:") {
            bail!("admin URL {url}: benchmarks talk to 127.0.0.1 only");
        }
        Ok(Self {
            host: host.to_owned(),
            token: field("token")?.to_owned(),
            timeout,
        })
    }

    /// Adds the stdio server `name` running `command args`; returns its part of the report.
    pub fn add_stdio(&self, name: &str, command: &str, args: &[&str]) -> anyhow::Result<Value> {
        let entry = json!({"transport": {"kind": "stdio", "command": command, "args": args}});
        let report = self
            .change(&json!({"op": "add", "server": name, "entry": entry}))
            .with_context(|| format!("adding server {name}"))?;
        outcome(&report, name).with_context(|| format!("adding server {name}"))
    }

    /// Removes the server `name`; returns its part of the report.
    pub fn remove(&self, name: &str) -> anyhow::Result<Value> {
        let report = self
            .change(&json!({"op": "remove", "server": name}))
            .with_context(|| format!("removing server {name}"))?;
        outcome(&report, name).with_context(|| format!("removing server {name}"))
    }

    /// One `POST /changes`; its change report.
    fn change(&self, body: &Value) -> anyhow::Result<Value> {
        let body = body.to_string();
        let mut stream =
            TcpStream::connect(&self.host).with_context(|| format!("connect {}", self.host))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(self.timeout))?;
        let request = format!(
            "POST /changes HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host,
            self.token,
            body.len()
        );
        stream.write_all(request.as_bytes())?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).with_context(|| {
            format!(
                "no answer from the admin endpoint within {:?}",
                self.timeout
            )
        })?;
        let (status, body) = parse_response(&raw)?;
        let answer: Value = serde_json::from_slice(&body).with_context(|| {
            format!(
                "HTTP {status}, not JSON: {}",
                String::from_utf8_lossy(&body)
            )
        })?;
        if !(200..300).contains(&status) {
            let error = answer.get("error").unwrap_or(&answer);
            bail!("HTTP {status}: {error}");
        }
        Ok(answer)
    }
}

/// `name`'s part of a change report, which must say it was applied without error.
pub fn outcome(report: &Value, name: &str) -> anyhow::Result<Value> {
    let server = report
        .get("servers")
        .and_then(Value::as_array)
        .and_then(|servers| {
            servers
                .iter()
                .find(|s| s.get("server") == Some(&json!(name)))
        })
        .with_context(|| format!("the change report does not name {name}: {report}"))?;
    if server.get("applied") != Some(&Value::Bool(true)) {
        bail!("not applied: {server}");
    }
    if let Some(error) = server.get("error").filter(|e| !e.is_null()) {
        bail!("applied with an error: {error}");
    }
    Ok(server.clone())
}

/// The new server's own start, handshake and listing time in an add's outcome, in ms.
pub fn connect_ms(outcome: &Value) -> anyhow::Result<f64> {
    outcome
        .get("connect_ms")
        .and_then(Value::as_f64)
        .with_context(|| format!("the add's report has no connect_ms: {outcome}"))
}

/// An HTTP/1.1 response read to its end: its status and body (de-chunked).
fn parse_response(raw: &[u8]) -> anyhow::Result<(u16, Vec<u8>)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("the admin endpoint answered no complete HTTP head")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("not an HTTP status line: {head:?}"))?;
    let chunked = head.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = &raw[split + 4..];
    if !chunked {
        return Ok((status, body.to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("a chunk without its size line")?;
        let size_text = String::from_utf8_lossy(&rest[..end]);
        let size = usize::from_str_radix(size_text.trim(), 16)
            .with_context(|| format!("bad chunk size {size_text:?}"))?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Ok((status, out));
        }
        let chunk = rest.get(..size).context("a chunk cut short")?;
        out.extend_from_slice(chunk);
        rest = rest.get(size + 2..).context("a chunk cut short")?;
    }
}
