//! One HTTP/1.1 connection of the upstream client, spoken by the task that sends on it: the
//! request written in one piece, the response's head parsed with `httparse`, and its body
//! handed out as it arrives (by `Content-Length`, chunked, or up to the connection's end).
//!
//! It replaced hyper's client connection, whose driver was a task of its own: every call
//! went to that task through a channel and its answer came back through another, two task
//! wake-ups and ~11k of the ~124k instructions of an HTTP → HTTP call (BENCHMARKS.md). A
//! connection here has no task: the caller's future owns it while a request is in flight
//! (dropping that future closes it) and the pool holds it between requests.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use http::uri::PathAndQuery;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// The most a response's head (status line and headers) may take.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most headers a response may have.
const MAX_HEADERS: usize = 100;
/// How much the read buffer grows by when it needs room.
const READ_CHUNK: usize = 8 * 1024;
/// The longest chunk-size line (with extensions) a chunked body may have.
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// The most informational (1xx) answers skipped before the final one.
const MAX_INFORMATIONAL: usize = 16;

/// A connection's byte stream: plain TCP, or TLS over it.
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Stream::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A response's status line and headers, and how its body is framed.
pub(super) struct Head {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: Framing,
    /// Whether the connection may carry another request once the body has been read.
    pub(super) keep_alive: bool,
}

/// How a response's body ends (RFC 9112, section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// This many bytes are left.
    Length(u64),
    /// Chunked transfer coding, at this point of a chunk.
    Chunked(Chunk),
    /// Up to the end of the connection.
    UntilClose,
}

/// Where a chunked body's reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// Within a chunk's data, this many bytes left.
    Data(u64),
    /// After a chunk's data, before its CRLF.
    DataEnd,
    /// After the last chunk, in the trailer section, this many bytes of it read.
    Trailers(usize),
}

/// One HTTP/1.1 connection and what has been read from it but not yet used.
pub(super) struct Connection {
    stream: Stream,
    buffer: BytesMut,
}

impl Connection {
    pub(super) fn new(stream: Stream) -> Connection {
        Connection {
            stream,
            buffer: BytesMut::new(),
        }
    }

    /// Whether an idle connection can take a request: the server has neither closed it nor
    /// sent anything unasked. Looks without waiting, and outside tokio's cooperative budget
    /// (a task that spent it would otherwise be told `Pending` without a look at the socket).
    pub(super) fn is_idle_and_open(&mut self) -> bool {
        if !self.buffer.is_empty() {
            return false;
        }
        let mut probe = [0u8; 1];
        let stream = &mut self.stream;
        let look = std::future::poll_fn(|context| {
            let mut read = ReadBuf::new(&mut probe);
            Pin::new(&mut *stream).poll_read(context, &mut read)
        });
        let mut look = std::pin::pin!(tokio::task::coop::unconstrained(look));
        let mut context = Context::from_waker(Waker::noop());
        look.as_mut().poll(&mut context).is_pending()
    }

    /// Writes one request: its head and body in one write where they fit. An error means
    /// the server has not read the whole request.
    pub(super) async fn send(
        &mut self,
        method: &Method,
        path: &PathAndQuery,
        host: &HeaderValue,
        headers: &HeaderMap,
        body: &[u8],
    ) -> io::Result<()> {
        let mut request = Vec::with_capacity(256 + body.len());
        request.extend_from_slice(method.as_str().as_bytes());
        request.push(b' ');
        request.extend_from_slice(path.as_str().as_bytes());
        request.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        request.extend_from_slice(host.as_bytes());
        request.extend_from_slice(b"\r\n");
        for (name, value) in headers {
            // The framing and the host are this writer's to say.
            if name == HOST || name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
                continue;
            }
            request.extend_from_slice(name.as_str().as_bytes());
            request.extend_from_slice(b": ");
            request.extend_from_slice(value.as_bytes());
            request.extend_from_slice(b"\r\n");
        }
        if !body.is_empty() || expects_body(method) {
            request.extend_from_slice(b"content-length: ");
            push_decimal(&mut request, body.len());
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body);
        self.stream.write_all(&request).await?;
        self.stream.flush().await
    }

    /// Reads the head of the response to a `method` request (informational 1xx responses
    /// skipped).
    pub(super) async fn read_head(&mut self, method: &Method) -> Result<Head, String> {
        let mut informational = 0;
        loop {
            let parsed = parse_head(&self.buffer, method)?;
            if let Some((length, head)) = parsed {
                self.buffer.advance(length);
                match head {
                    Some(head) => return Ok(head),
                    None if informational < MAX_INFORMATIONAL => {
                        informational += 1;
                        continue;
                    }
                    None => {
                        return Err(format!(
                            "more than {MAX_INFORMATIONAL} informational answers before the answer"
                        ));
                    }
                }
            }
            if self.buffer.len() >= MAX_HEAD_BYTES {
                return Err(format!(
                    "the answer's head is larger than {MAX_HEAD_BYTES} bytes"
                ));
            }
            if self.fill().await.map_err(read_error)? == 0 {
                return Err("the connection closed before an answer came".to_owned());
            }
        }
    }

    /// The next piece of a body framed as `framing` (which it moves on); `None` at the
    /// body's end.
    pub(super) async fn body_chunk(
        &mut self,
        framing: &mut Framing,
    ) -> Result<Option<Bytes>, String> {
        loop {
            match framing {
                Framing::Length(0) => return Ok(None),
                Framing::Length(left) => {
                    if self.buffer.is_empty() && self.fill().await.map_err(read_error)? == 0 {
                        return Err(ended_early());
                    }
                    let take = self
                        .buffer
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    *left -= take as u64;
                    return Ok(Some(self.buffer.split_to(take).freeze()));
                }
                Framing::UntilClose => {
                    if self.buffer.is_empty() && self.fill().await.map_err(read_error)? == 0 {
                        return Ok(None);
                    }
                    let all = self.buffer.len();
                    return Ok(Some(self.buffer.split_to(all).freeze()));
                }
                Framing::Chunked(chunk) => match self.step_chunked(chunk)? {
                    Step::Data(data) => return Ok(Some(data)),
                    Step::Done => {
                        *framing = Framing::Length(0);
                        return Ok(None);
                    }
                    Step::Again => {}
                    Step::NeedMore => {
                        if self.fill().await.map_err(read_error)? == 0 {
                            return Err(ended_early());
                        }
                    }
                },
            }
        }
    }

    /// One step of reading a chunked body from what is buffered.
    fn step_chunked(&mut self, chunk: &mut Chunk) -> Result<Step, String> {
        match *chunk {
            Chunk::Size => {
                let Some(line) = take_line(&mut self.buffer, MAX_CHUNK_LINE)? else {
                    return Ok(Step::NeedMore);
                };
                let size = chunk_size(&line)?;
                *chunk = if size == 0 {
                    Chunk::Trailers(0)
                } else {
                    Chunk::Data(size)
                };
                Ok(Step::Again)
            }
            Chunk::Data(left) => {
                if self.buffer.is_empty() {
                    return Ok(Step::NeedMore);
                }
                let take = self
                    .buffer
                    .len()
                    .min(usize::try_from(left).unwrap_or(usize::MAX));
                let left = left - take as u64;
                *chunk = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
                Ok(Step::Data(self.buffer.split_to(take).freeze()))
            }
            Chunk::DataEnd => {
                // CRLF, or a bare LF as line ends are taken elsewhere (RFC 9112 §2.2).
                let end = match self.buffer.first() {
                    None => return Ok(Step::NeedMore),
                    Some(b'\n') => 1,
                    Some(b'\r') if self.buffer.len() < 2 => return Ok(Step::NeedMore),
                    Some(b'\r') if self.buffer[1] == b'\n' => 2,
                    Some(_) => {
                        return Err("a chunk of the answer does not end with CRLF".to_owned());
                    }
                };
                self.buffer.advance(end);
                *chunk = Chunk::Size;
                Ok(Step::Again)
            }
            Chunk::Trailers(read) => match take_line(&mut self.buffer, MAX_HEAD_BYTES - read)? {
                None => Ok(Step::NeedMore),
                Some(line) if line.is_empty() => Ok(Step::Done),
                Some(line) => {
                    // Counted with its line ending, so even short lines add up.
                    let read = read + line.len() + 2;
                    if read > MAX_HEAD_BYTES {
                        return Err(format!(
                            "the answer's trailers are larger than {MAX_HEAD_BYTES} bytes"
                        ));
                    }
                    *chunk = Chunk::Trailers(read);
                    Ok(Step::Again)
                }
            },
        }
    }

    /// Whether everything read belongs to what was asked: nothing is left over to mistake
    /// for the next answer.
    pub(super) fn is_drained(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Reads more into the buffer; 0 at the end of the connection.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.buffer.capacity() - self.buffer.len() < 1024 {
            self.buffer.reserve(READ_CHUNK);
        }
        self.stream.read_buf(&mut self.buffer).await
    }
}

/// What one step of a chunked body gave.
enum Step {
    Data(Bytes),
    Done,
    Again,
    NeedMore,
}

/// Methods whose request is sent with a `Content-Length` even when empty.
fn expects_body(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

/// Writes `n` in decimal, without a `String` in between.
fn push_decimal(out: &mut Vec<u8>, n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

fn read_error(error: io::Error) -> String {
    super::tls::client_cert_refusal(&error)
        .unwrap_or_else(|| format!("the connection failed: {error}"))
}

fn ended_early() -> String {
    "the connection closed before the answer ended".to_owned()
}

/// A response head parsed from the front of `buffer`: `None` when more bytes are needed;
/// `Some((length, None))` for an informational response to skip.
fn parse_head(buffer: &[u8], method: &Method) -> Result<Option<(usize, Option<Head>)>, String> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut slots);
    let length = match response.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(format!("the answer is not HTTP/1.1: {error}")),
    };
    let code = response.code.unwrap_or_default();
    let status = StatusCode::from_u16(code)
        .map_err(|_| format!("the answer's status {code} is not a valid HTTP status"))?;
    if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
        return Ok(Some((length, None)));
    }
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for header in response.headers.iter() {
        let name = HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|_| format!("the answer has an invalid header name '{}'", header.name))?;
        let value = HeaderValue::from_bytes(header.value)
            .map_err(|_| format!("the answer's header '{}' has an invalid value", header.name))?;
        headers.append(name, value);
    }
    let says = |token| {
        headers
            .get_all(CONNECTION)
            .iter()
            .any(|value| has_token(value, token))
    };
    let persistent = if response.version == Some(1) {
        !says("close")
    } else {
        says("keep-alive")
    };
    // Both framings at once is how responses are smuggled (RFC 9112, section 6.3): the body
    // is read by its chunks, and the connection is not trusted with another request.
    let ambiguous = headers.contains_key(TRANSFER_ENCODING) && headers.contains_key(CONTENT_LENGTH);
    let keep_alive = persistent && !ambiguous && status != StatusCode::SWITCHING_PROTOCOLS;
    let body = framing(status, &headers, method)?;
    Ok(Some((
        length,
        Some(Head {
            status,
            headers,
            keep_alive: keep_alive && body != Framing::UntilClose,
            body,
        }),
    )))
}

/// How the body of a `status` response to `method` is framed (RFC 9112, section 6.3).
fn framing(status: StatusCode, headers: &HeaderMap, method: &Method) -> Result<Framing, String> {
    if *method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Framing::Length(0));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        // Chunked only when it is the last coding; anything else runs to the close.
        let last = headers
            .get_all(TRANSFER_ENCODING)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .rfind(|coding| !coding.is_empty());
        return Ok(match last {
            Some(coding) if coding.eq_ignore_ascii_case("chunked") => Framing::Chunked(Chunk::Size),
            _ => Framing::UntilClose,
        });
    }
    let mut lengths = headers.get_all(CONTENT_LENGTH).iter();
    let Some(first) = lengths.next() else {
        return Ok(Framing::UntilClose);
    };
    let length = content_length(first)?;
    if lengths.any(|other| content_length(other).ok() != Some(length)) {
        return Err("the answer has conflicting Content-Length headers".to_owned());
    }
    Ok(Framing::Length(length))
}

/// A Content-Length value: a number, or a list of the same number (`5, 5`, which RFC 9112
/// §6.3 takes as that one value).
fn content_length(value: &HeaderValue) -> Result<u64, String> {
    let number = |text: &str| {
        let text = text.trim();
        (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse::<u64>().ok())
            .flatten()
    };
    let mut values = value
        .to_str()
        .ok()
        .into_iter()
        .flat_map(|text| text.split(','));
    let first = values.next().and_then(number);
    match first {
        Some(length) if values.all(|other| number(other) == Some(length)) => Ok(length),
        _ => Err("the answer's Content-Length is not a number".to_owned()),
    }
}

/// Whether a comma-separated header value lists `token` (case-insensitive).
fn has_token(value: &HeaderValue, token: &str) -> bool {
    value.to_str().is_ok_and(|text| {
        text.split(',')
            .any(|item| item.trim().eq_ignore_ascii_case(token))
    })
}

/// The first line of `buffer` without its line ending, taken out of it; `None` until a
/// whole line is there.
fn take_line(buffer: &mut BytesMut, max: usize) -> Result<Option<Bytes>, String> {
    let Some(end) = buffer.iter().position(|&b| b == b'\n') else {
        if buffer.len() > max {
            return Err(format!("a line of the answer is longer than {max} bytes"));
        }
        return Ok(None);
    };
    let mut line = buffer.split_to(end + 1);
    line.truncate(end);
    if line.last() == Some(&b'\r') {
        line.truncate(end - 1);
    }
    Ok(Some(line.freeze()))
}

/// A chunk-size line's size: hex digits, then spaces or tabs and extensions after `;`.
fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let invalid = || "a chunk of the answer has an invalid size".to_owned();
    let size = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = match size.iter().position(|&b| b == b' ' || b == b'\t') {
        Some(end) if size[end..].iter().all(|&b| b == b' ' || b == b'\t') => &size[..end],
        Some(_) => return Err(invalid()),
        None => size,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(invalid());
    }
    let significant = &digits[digits.iter().take_while(|&&b| b == b'0').count()..];
    if significant.len() > 15 {
        return Err(invalid());
    }
    Ok(significant.iter().fold(0u64, |size, &digit| {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => digit - b'A' + 10,
        };
        (size << 4) | u64::from(value)
    }))
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
