//! A POST's URI, headers and body, moved out of the request.
//!
//! axum's `Uri` and `HeaderMap` extractors clone what they extract (the header map: its index,
//! its entries and every value's handle), and every call comes as a POST; [`Posted`] takes
//! them out of the request instead. The body is read by axum's own `Bytes` extractor, so the
//! body limit ([`axum::extract::DefaultBodyLimit`]) and its rejection are the same as before.
//! It must arrive within [`BodyTimeout`] of the headers (else 408): the header timeout alone
//! let a client that sent its headers and part of a body hold its connection for ever.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

/// How long a POST's body may take to arrive once its headers have: the connections' header
/// timeout (none: no bound).
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyTimeout(pub(super) Option<Duration>);

/// The parts of a POST the front reads.
pub(super) struct Posted {
    pub(super) uri: Uri,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl<S: Send + Sync> FromRequest<S> for Posted
where
    BodyTimeout: FromRef<S>,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let uri = std::mem::take(&mut parts.uri);
        let headers = std::mem::take(&mut parts.headers);
        let reading = Bytes::from_request(Request::from_parts(parts, body), state);
        let read = match BodyTimeout::from_ref(state).0 {
            Some(limit) => tokio::time::timeout(limit, reading)
                .await
                .map_err(|_| too_slow(limit))?,
            None => reading.await,
        };
        let body = read.map_err(IntoResponse::into_response)?;
        Ok(Self { uri, headers, body })
    }
}

/// The answer to a body that did not arrive in time; the connection closes with it.
fn too_slow(limit: Duration) -> Response {
    (
        StatusCode::REQUEST_TIMEOUT,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CONNECTION, "close"),
        ],
        format!(
            "the request body did not arrive within {} ms of its headers (gateway.header_timeout)",
            limit.as_millis()
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;

    use super::*;

    fn post(body: &'static str) -> Request {
        axum::http::Request::post("/mcp?x=1")
            .header("mcp-session-id", "abc")
            .body(Body::from(body))
            .expect("a request")
    }

    #[tokio::test]
    async fn the_uri_headers_and_body_come_out_whole() {
        let posted = Posted::from_request(post("{\"id\":1}"), &BodyTimeout(None))
            .await
            .unwrap_or_else(|_| panic!("extracts"));
        assert_eq!(posted.uri, "/mcp?x=1");
        assert_eq!(posted.headers["mcp-session-id"], "abc");
        assert_eq!(posted.body, "{\"id\":1}");
    }
}
