//! A POST's URI, headers and body, moved out of the request.
//!
//! axum's `Uri` and `HeaderMap` extractors clone what they extract (the header map: its index,
//! its entries and every value's handle), and every call comes as a POST; [`Posted`] takes
//! them out of the request instead. The body is collected here, part by part (one part, the
//! usual case, is taken as it is: no copy, no allocation), against `max_message_bytes`.
//! It must keep arriving (else 408): each part of it within [`PostLimits::body_timeout`] of
//! the headers or of the part before — as nginx's `client_body_timeout` — and the whole within
//! [`WHOLE_BODY_TIMEOUTS`] of them. The header timeout alone let a client that sent its
//! headers and part of a body hold its connection for ever; a bound on the whole body alone
//! (the header timeout, 30 s) cut a live upload of a large argument over a slow link (16 MiB
//! in 30 s takes 4.5 Mbit/s; in 5 minutes, 0.45). A body past [`PostLimits::max_body_bytes`]
//! is answered 413 with a JSON-RPC error naming the limit and the key that sets it — at once
//! when its `Content-Length` says so, before any of it is read.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use http_body_util::BodyExt;

use crate::jsonrpc::{Message, RpcError, code};

/// The bounds on a POST's body.
#[derive(Debug, Clone, Copy)]
pub(super) struct PostLimits {
    /// How long the body may pause: each part of it must come within this of the headers or
    /// of the part before. The connections' header timeout (none: no bound).
    pub(super) body_timeout: Option<Duration>,
    /// The largest body taken, `gateway.max_message_bytes` (the router's
    /// [`axum::extract::DefaultBodyLimit`] too).
    pub(super) max_body_bytes: usize,
}

/// The whole body must arrive within this many [`PostLimits::body_timeout`]s of the headers
/// (5 minutes at the default 30 s, Node's `requestTimeout`), so a client that sends a byte now
/// and then cannot hold its connection for ever either.
pub(super) const WHOLE_BODY_TIMEOUTS: u32 = 10;

/// Why a POST's body was not read whole.
#[derive(Debug)]
enum Unread {
    /// Its next part did not come within the pause bound.
    Paused(Duration),
    /// It grew past the limit.
    TooLarge,
    /// The connection broke (or the body was otherwise unreadable).
    Broken(axum::Error),
}

/// The parts of a POST the front reads.
pub(super) struct Posted {
    pub(super) uri: Uri,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl<S: Send + Sync> FromRequest<S> for Posted
where
    PostLimits: FromRef<S>,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let limits = PostLimits::from_ref(state);
        let (mut parts, body) = request.into_parts();
        let uri = std::mem::take(&mut parts.uri);
        let headers = std::mem::take(&mut parts.headers);
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
        if let Some(length) = declared
            && length > limits.max_body_bytes as u64
        {
            return Err(too_large(limits.max_body_bytes, Some(length)));
        }
        let reading = collect(body, limits.body_timeout, limits.max_body_bytes);
        let read = match limits.body_timeout {
            Some(pause) => {
                let whole = pause.saturating_mul(WHOLE_BODY_TIMEOUTS);
                tokio::time::timeout(whole, reading).await.map_err(|_| {
                    too_slow(format!(
                        "did not arrive within {} s of its headers",
                        whole.as_secs()
                    ))
                })?
            }
            None => reading.await,
        };
        let body = read.map_err(|unread| match unread {
            Unread::Paused(pause) => {
                too_slow(format!("paused longer than {} ms", pause.as_millis()))
            }
            Unread::TooLarge => too_large(limits.max_body_bytes, None),
            Unread::Broken(error) => (
                StatusCode::BAD_REQUEST,
                format!("the request body could not be read: {error}"),
            )
                .into_response(),
        })?;
        Ok(Self { uri, headers, body })
    }
}

/// `body`, whole, if it is at most `limit` bytes and no part of it comes later than `pause`
/// after the one before (or the headers). A part already there is taken without arming a
/// timer, so a body that came with its headers costs no clock read.
async fn collect(mut body: Body, pause: Option<Duration>, limit: usize) -> Result<Bytes, Unread> {
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    let mut read = 0;
    loop {
        let mut next = body.frame();
        let frame = match ((&mut next).now_or_never(), pause) {
            (Some(frame), _) => frame,
            (None, Some(pause)) => tokio::time::timeout(pause, next)
                .await
                .map_err(|_| Unread::Paused(pause))?,
            (None, None) => next.await,
        };
        let Some(frame) = frame else { break };
        let Ok(data) = frame.map_err(Unread::Broken)?.into_data() else {
            continue; // trailers: nothing of the message
        };
        read += data.len();
        if read > limit {
            return Err(Unread::TooLarge);
        }
        match &first {
            None => first = Some(data),
            Some(head) => {
                if rest.is_empty() {
                    rest.reserve(read);
                    rest.extend_from_slice(head);
                }
                rest.extend_from_slice(&data);
            }
        }
    }
    Ok(if rest.is_empty() {
        first.unwrap_or_default()
    } else {
        Bytes::from(rest)
    })
}

/// The answer to a body past the limit (`declared`: its `Content-Length`, when it said so):
/// 413 with a JSON-RPC error (id null: the request was not read) naming the limit and its
/// key. The connection closes with it, as the body is left unread.
fn too_large(limit: usize, declared: Option<u64>) -> Response {
    let size = declared.map_or_else(String::new, |length| format!(" ({length} bytes)"));
    let refusal = Message::Error {
        id: None,
        error: RpcError {
            code: code::INVALID_REQUEST,
            message: format!(
                "the request body{size} is larger than the {limit}-byte limit \
                 (gateway.max_message_bytes)"
            ),
            data: Some(serde_json::json!({"maxMessageBytes": limit})),
        },
    };
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CONNECTION, "close"),
        ],
        refusal.to_line(),
    )
        .into_response()
}

/// The answer to a body that did not arrive in time; the connection closes with it.
fn too_slow(what: String) -> Response {
    (
        StatusCode::REQUEST_TIMEOUT,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CONNECTION, "close"),
        ],
        format!("the request body {what} (gateway.header_timeout)"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &'static str) -> Request {
        axum::http::Request::post("/mcp?x=1")
            .header("mcp-session-id", "abc")
            .body(Body::from(body))
            .expect("a request")
    }

    const UNBOUNDED: PostLimits = PostLimits {
        body_timeout: None,
        max_body_bytes: usize::MAX,
    };

    /// Limits that cut a body pausing longer than `ms`, of any size.
    fn paused_after(ms: u64) -> PostLimits {
        PostLimits {
            body_timeout: Some(Duration::from_millis(ms)),
            max_body_bytes: usize::MAX,
        }
    }

    /// A body sent in `parts` parts, `every` apart, then (if `stall`) never ended.
    fn trickled(parts: usize, every: Duration, stall: bool) -> Request {
        let stream = futures::stream::unfold(0, move |sent| async move {
            if sent == parts {
                if stall {
                    futures::future::pending::<()>().await;
                }
                return None;
            }
            tokio::time::sleep(every).await;
            Some((Ok::<_, std::io::Error>(Bytes::from_static(b"x")), sent + 1))
        });
        axum::http::Request::post("/mcp")
            .body(Body::from_stream(stream))
            .expect("a request")
    }

    /// A live upload slower than the pause bound as a whole, each part within it, is read
    /// whole (a bound on the whole body of one header timeout cut it with 408).
    #[tokio::test]
    async fn a_body_that_keeps_arriving_is_read_whole() {
        let pause = paused_after(400);
        let request = trickled(8, Duration::from_millis(100), false);
        let posted = Posted::from_request(request, &pause)
            .await
            .unwrap_or_else(|refused| panic!("read: {}", refused.status()));
        assert_eq!(posted.body, "xxxxxxxx");
    }

    /// A body of several parts without a declared length is cut as soon as it grows past the
    /// limit: 413 naming it.
    #[tokio::test]
    async fn a_body_of_parts_past_the_limit_is_413() {
        let limits = PostLimits {
            max_body_bytes: 5,
            ..paused_after(400)
        };
        let request = trickled(8, Duration::from_millis(1), false);
        let Err(refused) = Posted::from_request(request, &limits).await else {
            panic!("a body past the limit was read");
        };
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let text = axum::body::to_bytes(refused.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("5-byte limit"), "{text}");
    }

    /// A body that stops coming is answered 408, saying it paused, and the connection closes.
    #[tokio::test]
    async fn a_body_that_pauses_too_long_is_408() {
        let pause = paused_after(100);
        let request = trickled(2, Duration::from_millis(10), true);
        let Err(refused) = Posted::from_request(request, &pause).await else {
            panic!("a stalled body was read");
        };
        assert_eq!(refused.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(refused.headers()[header::CONNECTION], "close");
        let text = axum::body::to_bytes(refused.into_body(), 1 << 16)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("paused longer than 100 ms"), "{text}");
    }

    #[tokio::test]
    async fn the_uri_headers_and_body_come_out_whole() {
        let posted = Posted::from_request(post("{\"id\":1}"), &UNBOUNDED)
            .await
            .unwrap_or_else(|_| panic!("extracts"));
        assert_eq!(posted.uri, "/mcp?x=1");
        assert_eq!(posted.headers["mcp-session-id"], "abc");
        assert_eq!(posted.body, "{\"id\":1}");
    }
}
