//! The MCP headers of a Streamable HTTP request: `MCP-Protocol-Version`, `Mcp-Session-Id`,
//! and the 2026-07-28 routing headers `Mcp-Method` / `Mcp-Name` (SEP-2243), whose values are
//! sent as-is when they are plain visible ASCII and as `=?base64?…?=` otherwise.

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::jsonrpc::Message;

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const SESSION_ID: &str = "mcp-session-id";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";

/// Adds `Mcp-Method` (and `Mcp-Name` where the method names a tool, prompt or resource).
pub fn add_routing_headers(headers: &mut HeaderMap, message: &Message) {
    let (method, params) = match message {
        Message::Request { method, params, .. } | Message::Notification { method, params } => {
            (method, params)
        }
        _ => return,
    };
    if let Ok(value) = HeaderValue::from_str(&encode_value(method)) {
        headers.insert(METHOD, value);
    }
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => params.as_ref().and_then(|p| p.get("name")),
        "resources/read" => params.as_ref().and_then(|p| p.get("uri")),
        _ => None,
    };
    if let Some(value) = name
        .and_then(Value::as_str)
        .and_then(|name| HeaderValue::from_str(&encode_value(name)).ok())
    {
        headers.insert(NAME, value);
    }
}

/// A value as an MCP header carries it: unchanged when it is visible ASCII without
/// surrounding whitespace (and does not look encoded), else Base64 of its UTF-8 bytes.
pub fn encode_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64(value.as_bytes()))
    }
}

/// Standard Base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::RequestId;

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"=?base64?literal?="), "PT9iYXNlNjQ/bGl0ZXJhbD89");
    }

    #[test]
    fn values_are_encoded_only_when_needed() {
        assert_eq!(encode_value("get_weather"), "get_weather");
        assert_eq!(encode_value("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(encode_value("météo"), "=?base64?bcOpdMOpbw==?=");
        assert_eq!(encode_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(encode_value("a\r\nb"), "=?base64?YQ0KYg==?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn names_come_from_name_or_uri() {
        let mut headers = HeaderMap::new();
        let call = Message::Request {
            id: RequestId::Number(1),
            method: "resources/read".into(),
            params: Some(json!({"uri": "mem://x", "name": "ignored"})),
        };
        add_routing_headers(&mut headers, &call);
        assert_eq!(
            headers.get(METHOD).map(|v| v.as_bytes()),
            Some(&b"resources/read"[..])
        );
        assert_eq!(
            headers.get(NAME).map(|v| v.as_bytes()),
            Some(&b"mem://x"[..])
        );
        let mut headers = HeaderMap::new();
        let list = Message::Request {
            id: RequestId::Number(2),
            method: "tools/list".into(),
            params: Some(json!({"name": "not a routing name"})),
        };
        add_routing_headers(&mut headers, &list);
        assert!(headers.get(NAME).is_none());
    }
}
