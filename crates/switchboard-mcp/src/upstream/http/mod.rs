//! HTTP transports to upstream servers: Streamable HTTP (both eras) and the legacy HTTP+SSE
//! transport of 2024-11-05. Both deliver what the server sends into the inbound channel,
//! like the stdio transport, so the JSON-RPC client above them does not care which it has.
//! [`request`] lends their HTTP client to the gateway's other HTTP peers (the CLI's admin
//! commands, token endpoints). A server may get the gateway's own token or each caller's
//! exchanged for one of its own (`credentials`, `token_exchange`), and TLS settings of its
//! own: a private CA, a client certificate (`tls`, [`TlsFiles`]).

mod client;
mod conn;
mod credentials;
mod exchange;
mod headers;
mod held_tasks;
mod legacy_sse;
mod public_only;
mod sse;
mod streamable;
mod tls;
mod token_exchange;

use std::collections::BTreeMap;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};

pub use credentials::{ClientCredentials, UpstreamCredentials};
pub use legacy_sse::open_legacy_sse;
pub use streamable::open_streamable_http;
pub use tls::TlsFiles;

use super::transport::TransportError;
use crate::jsonrpc::{Message, RequestId, RpcError, code};

/// One request with the upstreams' HTTP client, its answer read whole (refused past
/// `max_bytes`), for the gateway's other HTTP peers: the CLI's admin commands use it. An
/// error names the URL.
pub async fn request(
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    max_bytes: usize,
) -> Result<(StatusCode, Vec<u8>), String> {
    let target = client::Target::parse(url)?;
    request_to(method, url, headers, body, max_bytes, target).await
}

/// [`request`] to `target` as made by the caller: a server's token endpoint with the
/// server's TLS settings (`credentials`).
async fn request_to(
    method: Method,
    url: &str,
    headers: HeaderMap,
    body: Bytes,
    max_bytes: usize,
    target: client::Target,
) -> Result<(StatusCode, Vec<u8>), String> {
    let response = client::http_client()
        .send(method, &target, headers, body)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    let status = response.status();
    let body = response
        .read_limited(max_bytes)
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    Ok((status, body))
}

/// Configured headers as a header map; an invalid name or value is a start-up error.
fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, TransportError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| TransportError::new(format!("invalid header name '{name}'")))?;
        let value = HeaderValue::from_str(value)
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

/// The first bytes of an error body, for messages: a failed answer is reported as
/// `HTTP {status} from {url}{snippet}` ([`before_answer_body`] takes the body off again).
fn snippet(body: &str) -> String {
    let trimmed: String = body.trim().chars().take(200).collect();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(": {trimmed}")
    }
}

/// A failure's `reason` up to the body of the failed HTTP answer it quotes (as [`snippet`]
/// writes it), for those who must not pass a remote's words on; `None` when it quotes none.
pub fn before_answer_body(reason: &str) -> Option<&str> {
    let http = reason.find("HTTP ")?;
    let from = http + reason[http..].find(" from ")? + " from ".len();
    let body = reason[from..].find(": ")?;
    Some(&reason[..from + body])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_answer_body_comes_off_as_it_was_put_on() {
        let url = "http://10.0.0.5:8080/admin";
        let reason = format!(
            "it did not start: HTTP 500 Internal Server Error from {url}{}",
            snippet("{\"users\": [\"root\"]}")
        );
        assert_eq!(
            before_answer_body(&reason),
            Some(format!("it did not start: HTTP 500 Internal Server Error from {url}").as_str())
        );
        let bodiless = format!("HTTP 404 Not Found from {url}{}", snippet("  "));
        assert_eq!(before_answer_body(&bodiless), None);
        assert_eq!(
            before_answer_body("cannot reach http://x.example/mcp: refused"),
            None
        );
    }
}
