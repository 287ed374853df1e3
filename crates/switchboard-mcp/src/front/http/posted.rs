//! A POST's URI, headers and body, moved out of the request.
//!
//! axum's `Uri` and `HeaderMap` extractors clone what they extract (the header map: its index,
//! its entries and every value's handle), and every call comes as a POST; [`Posted`] takes
//! them out of the request instead. The body is read by axum's own `Bytes` extractor, so the
//! body limit ([`axum::extract::DefaultBodyLimit`]) and its rejection are the same as before.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};

/// The parts of a POST the front reads.
pub(super) struct Posted {
    pub(super) uri: Uri,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl<S: Send + Sync> FromRequest<S> for Posted {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let uri = std::mem::take(&mut parts.uri);
        let headers = std::mem::take(&mut parts.headers);
        let body = Bytes::from_request(Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self { uri, headers, body })
    }
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
        let posted = Posted::from_request(post("{\"id\":1}"), &())
            .await
            .unwrap_or_else(|_| panic!("extracts"));
        assert_eq!(posted.uri, "/mcp?x=1");
        assert_eq!(posted.headers["mcp-session-id"], "abc");
        assert_eq!(posted.body, "{\"id\":1}");
    }
}
