//! A legacy session's stream of server notifications: `GET /mcp` with the session's
//! `Mcp-Session-Id`, read on a thread of its own that stamps each JSON-RPC message with the
//! instant its event was complete, so the time a notification took is not the time the
//! reader happened to look. The least SSE needed: chunked (or plain) bodies, events split at
//! blank lines, their `data:` lines joined; comments (keep-alives) skipped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::era::Era;

/// What the reader thread reports.
enum Event {
    /// The stream's head arrived: 200, text/event-stream.
    Open,
    Message(Instant, Value),
    /// The stream failed or ended, and why.
    Closed(String),
}

/// An open notification stream; closed when dropped.
pub struct Stream {
    events: Receiver<Event>,
    socket: TcpStream,
}

impl Stream {
    /// Opens the stream of `session` at `url` (`http://127.0.0.1:PORT/PATH`) and waits up to
    /// `limit` for its head.
    pub fn open(url: &str, session: &str, limit: Duration) -> anyhow::Result<Self> {
        let (host, path) = crate::http_client::loopback_target(url)?;
        let mut socket = TcpStream::connect(host).with_context(|| format!("connect {host}"))?;
        socket.set_nodelay(true)?;
        let request = format!(
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\
             MCP-Protocol-Version: {}\r\nMcp-Session-Id: {session}\r\n\r\n",
            Era::Legacy.version()
        );
        socket.write_all(request.as_bytes())?;
        let reader = socket.try_clone()?;
        let (sender, events) = mpsc::channel();
        std::thread::spawn(move || {
            let why = match read(reader, &sender) {
                Ok(()) => "the gateway ended the stream".to_owned(),
                Err(error) => format!("{error:#}"),
            };
            let _ = sender.send(Event::Closed(why));
        });
        let stream = Self { events, socket };
        match stream.events.recv_timeout(limit) {
            Ok(Event::Open) => Ok(stream),
            Ok(Event::Closed(why)) => bail!("GET {url} (session {session}): {why}"),
            Ok(Event::Message(..)) => bail!("GET {url}: a message before the stream's head"),
            Err(_) => bail!("GET {url}: no stream within {limit:?}"),
        }
    }

    /// The next message and when it arrived, or `None` when none came within `limit`; a
    /// stream that ended is an error.
    pub fn next(&self, limit: Duration) -> anyhow::Result<Option<(Instant, Value)>> {
        match self.events.recv_timeout(limit) {
            Ok(Event::Message(at, message)) => Ok(Some((at, message))),
            Ok(Event::Open) => self.next(limit),
            Ok(Event::Closed(why)) => bail!("the notification stream closed: {why}"),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => bail!("the notification stream's reader ended"),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Wakes the reader thread from its blocking read; it ends.
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// Reads the response: the head, then events until the body ends.
fn read(socket: TcpStream, events: &Sender<Event>) -> anyhow::Result<()> {
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("not an HTTP status line: {line:?}"))?;
    let (mut chunked, mut event_stream) = (false, false);
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "content-type" => event_stream = value.starts_with("text/event-stream"),
                _ => {}
            }
        }
    }
    if status != 200 || !event_stream {
        let mut body = vec![0; 512];
        let read = reader.read(&mut body).unwrap_or(0);
        bail!(
            "HTTP {status}, event stream: {event_stream}: {}",
            String::from_utf8_lossy(&body[..read])
        );
    }
    if events.send(Event::Open).is_err() {
        return Ok(());
    }
    let mut pending = Vec::new();
    loop {
        let Some(bytes) = next_bytes(&mut reader, chunked)? else {
            return Ok(());
        };
        pending.extend(bytes.into_iter().filter(|&b| b != b'\r'));
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = pending.drain(..end + 2).collect();
            if let Some(message) = message_of(&event)
                && events
                    .send(Event::Message(Instant::now(), message))
                    .is_err()
            {
                return Ok(());
            }
        }
    }
}

/// The next bytes of the body: one chunk, or what a read returns; `None` at its end.
fn next_bytes(reader: &mut BufReader<TcpStream>, chunked: bool) -> anyhow::Result<Option<Vec<u8>>> {
    if !chunked {
        let mut buffer = vec![0; 4096];
        let read = reader.read(&mut buffer)?;
        buffer.truncate(read);
        return Ok((read > 0).then_some(buffer));
    }
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(line.trim(), 16)
        .with_context(|| format!("bad chunk size {line:?}"))?;
    if size == 0 {
        return Ok(None);
    }
    let mut chunk = vec![0; size];
    reader.read_exact(&mut chunk)?;
    line.clear();
    reader.read_line(&mut line)?;
    Ok(Some(chunk))
}

/// The JSON-RPC message of one event (its `data:` lines joined), if it carries one.
fn message_of(event: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(event);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}
