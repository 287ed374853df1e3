//! The MCP headers of a Streamable HTTP request that the upstream client adds besides
//! `MCP-Protocol-Version` ([`crate::era::VERSION_HEADER`]): `Mcp-Session-Id`, and the
//! 2026-07-28 routing headers `Mcp-Method` / `Mcp-Name` and a tool's `Mcp-Param-*` (SEP-2243;
//! their values and encoding are [`crate::routing_headers`]).

use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use switchboard_core::param_headers::ParamHeader;

use crate::jsonrpc::Message;
use crate::routing_headers::{METHOD, NAME, encode_value, name_of, param_headers};

pub const SESSION_ID: &str = "mcp-session-id";
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
    if let Some(value) = name_of(method, params.as_ref())
        .and_then(|name| HeaderValue::from_str(&encode_value(name)).ok())
    {
        headers.insert(NAME, value);
    }
}

/// Adds the `Mcp-Param-*` headers of a `tools/call` whose tool declares arguments to mirror
/// (`declared`, by tool name).
pub fn add_param_headers(
    headers: &mut HeaderMap,
    message: &Message,
    declared: &HashMap<String, Arc<[ParamHeader]>>,
) {
    let Message::Request {
        method,
        params: Some(params),
        ..
    } = message
    else {
        return;
    };
    if method != "tools/call" || declared.is_empty() {
        return;
    }
    let Some(tool) = params.get("name").and_then(Value::as_str) else {
        return;
    };
    let (Some(declared), Some(arguments)) = (
        declared.get(tool),
        params.get("arguments").and_then(Value::as_object),
    ) else {
        return;
    };
    for (name, value) in param_headers(declared, arguments) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::RequestId;

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
