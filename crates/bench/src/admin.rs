//! The gateway's admin endpoint as the benchmarks speak to it: the bearer token of the admin
//! file the gateway wrote, a fresh loopback connection per request (closed after the answer:
//! a request costs milliseconds, a connect microseconds), the JSON answer read back. `bench
//! live` sends its changes through it (`live::admin`), `bench manager` its operations
//! (`manager::admin`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

/// Where the admin endpoint is and the token it wants.
pub struct Admin {
    host: String,
    token: String,
    timeout: Duration,
}

impl Admin {
    /// Reads the admin file (`{url, token, ...}`), waiting up to `timeout` for it to appear;
    /// `timeout` also bounds every request.
    pub fn read(path: &Path, timeout: Duration) -> anyhow::Result<Self> {
        let deadline = Instant::now() + timeout;
        let file: Value = loop {
            let parsed = std::fs::read_to_string(path)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok());
            match parsed {
                Some(file) => break file,
                None if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                None => bail!(
                    "the gateway wrote no admin file at {} within {timeout:?}",
                    path.display()
                ),
            }
        };
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

    /// One request; the JSON it answered with (an answer outside 2xx is an error).
    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream =
            TcpStream::connect(&self.host).with_context(|| format!("connect {}", self.host))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(self.timeout))?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host,
            self.token,
            body.len()
        );
        stream.write_all(request.as_bytes())?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).with_context(|| {
            format!(
                "{method} {path}: no answer from the admin endpoint within {:?}",
                self.timeout
            )
        })?;
        let (status, body) = parse_response(&raw)?;
        let answer: Value = serde_json::from_slice(&body).with_context(|| {
            format!(
                "{method} {path}: HTTP {status}, not JSON: {}",
                String::from_utf8_lossy(&body)
            )
        })?;
        if !(200..300).contains(&status) {
            let error = answer.get("error").unwrap_or(&answer);
            bail!("{method} {path}: HTTP {status}: {error}");
        }
        Ok(answer)
    }
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
    let mut rest = &raw[split + 4..];
    if !chunked {
        return Ok((status, rest.to_vec()));
    }
    let mut out = Vec::new();
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
        out.extend_from_slice(rest.get(..size).context("a chunk cut short")?);
        rest = rest.get(size + 2..).context("a chunk cut short")?;
    }
}
