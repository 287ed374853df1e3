//! HTTP transports to upstream servers: Streamable HTTP (both eras) and the legacy HTTP+SSE
//! transport of 2024-11-05. Both deliver what the server sends into the inbound channel,
//! like the stdio transport, so the JSON-RPC client above them does not care which it has.

mod exchange;
mod headers;
mod legacy_sse;
mod sse;
mod streamable;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

pub use legacy_sse::open_legacy_sse;
pub use streamable::open_streamable_http;

use super::transport::TransportError;
use crate::jsonrpc::{Message, RequestId, RpcError, code};

/// One HTTP client for every upstream: connection pooling, no proxy (upstreams on loopback
/// must not be routed through an environment proxy).
fn http_client() -> Result<&'static reqwest::Client, TransportError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .no_proxy()
                .connect_timeout(Duration::from_secs(10))
                .pool_idle_timeout(Duration::from_secs(90))
                .tcp_keepalive(Duration::from_secs(30))
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| TransportError::new(format!("cannot create the HTTP client: {error}")))
}

/// Configured headers as a header map; an invalid name or value is a start-up error.
fn header_map(
    headers: &BTreeMap<String, String>,
) -> Result<reqwest::header::HeaderMap, TransportError> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| TransportError::new(format!("invalid header name '{name}'")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| TransportError::new(format!("invalid value for header '{name}'")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The answer a waiting request gets when its HTTP exchange failed.
fn failed_request(id: &RequestId, message: String) -> Message {
    Message::Error {
        id: Some(id.clone()),
        error: RpcError::new(code::INTERNAL_ERROR, message),
    }
}

/// The causes of a reqwest error on one line ("connection refused" is deep inside).
fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The first bytes of an error body, for messages.
fn snippet(body: &str) -> String {
    let trimmed: String = body.trim().chars().take(200).collect();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(": {trimmed}")
    }
}
