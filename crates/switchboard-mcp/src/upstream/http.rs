//! HTTP transports (being written): Streamable HTTP and the legacy HTTP+SSE transport.

use std::collections::BTreeMap;

use super::transport::{Opened, TransportError};

pub fn open_streamable_http(
    _server: &str,
    url: &str,
    _headers: &BTreeMap<String, String>,
    _max_message_bytes: usize,
) -> Result<Opened, TransportError> {
    Err(TransportError::new(format!(
        "streamable HTTP upstreams are not available yet ({url})"
    )))
}

pub async fn open_legacy_sse(
    _server: &str,
    url: &str,
    _headers: &BTreeMap<String, String>,
    _max_message_bytes: usize,
) -> Result<Opened, TransportError> {
    Err(TransportError::new(format!(
        "SSE upstreams are not available yet ({url})"
    )))
}
