//! The checks a 2026-07-28 request passes on HTTP before it is dispatched, first failure wins:
//!
//! 1. `params._meta` is an object with the protocol version and the client's capabilities,
//!    else `-32602` (invalid params);
//! 2. the `MCP-Protocol-Version` header is there and equals that version, and the routing
//!    headers match the body ([`crate::routing_headers`]: `Mcp-Method`, `Mcp-Name`, and the
//!    `Mcp-Param-*` headers of the called tool's `x-mcp-header` arguments), else `-32020`
//!    (header mismatch) — before the version rung, so a client that contradicts itself is
//!    told so;
//! 3. the version is one the gateway speaks, else `-32022` (unsupported protocol version) with
//!    `data = {"supported": […], "requested": …}`.
//!
//! Each refusal is HTTP 400. Which requests are modern is [`is_modern`]; on HTTP an unknown
//! `MCP-Protocol-Version` is judged by these checks too, so it is refused with the versions
//! the gateway does speak — at once, as `-32022`, when the request carries no `_meta`.

use http::HeaderMap;
use serde_json::{Value, json};
use switchboard_core::param_headers::ParamHeader;

use crate::era::{
    LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSION,
    VERSION_HEADER, missing_envelope_keys,
};
use crate::jsonrpc::{RpcError, code, params_meta};
use crate::routing_headers;

/// Whether a request speaks the stateless 2026-07-28 era: `server/discover`, a body whose
/// `_meta` names a protocol version, or an `MCP-Protocol-Version` header that is not one of
/// the handshake era's.
pub fn is_modern(headers: &HeaderMap, method: &str, params: Option<&Value>) -> bool {
    method == "server/discover"
        || params_meta(params).is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
        || header(headers, VERSION_HEADER)
            .is_some_and(|version| !LEGACY_VERSIONS.contains(&version))
}

/// The first check a modern request fails, if any. `declared` are the `x-mcp-header`
/// declarations of the tool a `tools/call` names (empty otherwise).
pub fn check(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
    declared: &[ParamHeader],
) -> Result<(), RpcError> {
    let Some(meta) = params_meta(params) else {
        // A version header the gateway does not speak, on a request with no envelope: the
        // header is what is wrong (the client is not speaking 2026-07-28 at all).
        if let Some(sent) = header(headers, VERSION_HEADER)
            .filter(|sent| *sent != MODERN_VERSION && !LEGACY_VERSIONS.contains(sent))
        {
            let mut supported = vec![MODERN_VERSION];
            supported.extend(LEGACY_VERSIONS);
            return Err(RpcError {
                data: Some(json!({"supported": supported, "requested": sent})),
                ..RpcError::new(
                    code::UNSUPPORTED_PROTOCOL_VERSION,
                    format!(
                        "unsupported protocol version '{sent}' in the MCP-Protocol-Version header (this gateway speaks {})",
                        supported.join(", ")
                    ),
                )
            });
        }
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying '{META_PROTOCOL_VERSION}' and \
                 '{META_CLIENT_CAPABILITIES}' (protocol version {MODERN_VERSION})"
            ),
        ));
    };
    let missing = missing_envelope_keys(meta);
    if !missing.is_empty() {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta is missing the required key(s): {}",
                missing.join(", ")
            ),
        ));
    }
    let version = &meta[META_PROTOCOL_VERSION];
    let sent = header(headers, VERSION_HEADER);
    if sent.is_none() || sent != version.as_str() {
        return Err(RpcError::new(
            code::HEADER_MISMATCH,
            format!(
                "header MCP-Protocol-Version {} does not match the body's protocol version {version}",
                sent.map_or_else(|| "(missing)".to_owned(), |v| format!("'{v}'"))
            ),
        ));
    }
    routing_headers::check(headers, method, params)
        .and_then(|()| routing_headers::check_params(headers, declared, params))
        .map_err(|mismatch| RpcError::new(code::HEADER_MISMATCH, mismatch.to_string()))?;
    let Some(version) = version.as_str() else {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            "the protocol version in params._meta must be a string".to_owned(),
        ));
    };
    if version != MODERN_VERSION {
        return Err(RpcError {
            data: Some(json!({"supported": [MODERN_VERSION], "requested": version})),
            ..RpcError::new(
                code::UNSUPPORTED_PROTOCOL_VERSION,
                format!("unsupported protocol version '{version}'"),
            )
        });
    }
    Ok(())
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn modern_headers(version: &str, method: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [(VERSION_HEADER, version), (routing_headers::METHOD, method)] {
            headers.insert(name, HeaderValue::from_str(value).expect("value"));
        }
        headers
    }

    fn envelope(version: Value) -> Value {
        json!({"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn each_rung_refuses_with_its_code() {
        let good = modern_headers(MODERN_VERSION, "tools/list");
        assert_eq!(
            check(
                &good,
                "tools/list",
                Some(&envelope(json!(MODERN_VERSION))),
                &[]
            ),
            Ok(())
        );
        let no_meta = check(&good, "tools/list", Some(&json!({})), &[]).expect_err("no _meta");
        assert_eq!(no_meta.code, code::INVALID_PARAMS);
        let partial = json!({"_meta": {META_PROTOCOL_VERSION: MODERN_VERSION}});
        let missing = check(&good, "tools/list", Some(&partial), &[]).expect_err("no capabilities");
        assert!(
            missing.message.contains(META_CLIENT_CAPABILITIES),
            "{missing:?}"
        );

        let future = envelope(json!("v999.0.0"));
        let contradicts = check(&good, "tools/list", Some(&future), &[]).expect_err("mismatch");
        assert_eq!(contradicts.code, code::HEADER_MISMATCH);
        let unsupported = check(
            &modern_headers("v999.0.0", "tools/list"),
            "tools/list",
            Some(&future),
            &[],
        )
        .expect_err("unsupported");
        assert_eq!(unsupported.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            unsupported.data,
            Some(json!({"supported": [MODERN_VERSION], "requested": "v999.0.0"}))
        );
        let wrong_method = check(
            &modern_headers(MODERN_VERSION, "tools/call"),
            "tools/list",
            Some(&envelope(json!(MODERN_VERSION))),
            &[],
        )
        .expect_err("method header");
        assert_eq!(wrong_method.code, code::HEADER_MISMATCH);

        let mut call = envelope(json!(MODERN_VERSION));
        call["name"] = json!("t");
        call["arguments"] = json!({"region": "eu"});
        let mut headers = modern_headers(MODERN_VERSION, "tools/call");
        headers.insert(routing_headers::NAME, HeaderValue::from_static("t"));
        let declared = [ParamHeader {
            name: "Region".into(),
            path: vec!["region".into()],
        }];
        let no_param = check(&headers, "tools/call", Some(&call), &declared).expect_err("param");
        assert_eq!(no_param.code, code::HEADER_MISMATCH);
        assert!(
            no_param.message.contains("Mcp-Param-Region"),
            "{no_param:?}"
        );
        headers.insert("mcp-param-region", HeaderValue::from_static("eu"));
        assert_eq!(
            check(&headers, "tools/call", Some(&call), &declared),
            Ok(())
        );
    }

    /// A request with no `_meta` and `MCP-Protocol-Version: 1999-01-01` was told its `_meta`
    /// lacked the 2026-07-28 keys, never that its version is unknown.
    #[test]
    fn an_unknown_version_header_without_an_envelope_is_named_with_the_versions_spoken() {
        let headers = modern_headers("1999-01-01", "ping");
        let refused = check(&headers, "ping", None, &[]).expect_err("unsupported");
        assert_eq!(refused.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        assert!(refused.message.contains("'1999-01-01'"), "{refused:?}");
        let data = refused.data.unwrap_or_default();
        assert_eq!(data["requested"], "1999-01-01");
        assert!(
            data["supported"]
                .as_array()
                .is_some_and(|supported| supported.contains(&json!("2025-11-25"))),
            "{data}"
        );
        // A version the gateway speaks is not called unsupported: what is missing is `_meta`.
        for spoken in [MODERN_VERSION, "2025-11-25"] {
            let headers = modern_headers(spoken, "ping");
            let no_meta = check(&headers, "ping", None, &[]).expect_err("no _meta");
            assert_eq!(no_meta.code, code::INVALID_PARAMS, "{spoken}: {no_meta:?}");
        }
    }

    #[test]
    fn the_era_comes_from_the_method_the_body_or_an_unknown_version_header() {
        let none = HeaderMap::new();
        assert!(is_modern(&none, "server/discover", None));
        assert!(is_modern(&none, "tools/list", Some(&envelope(json!("x")))));
        assert!(!is_modern(&none, "tools/list", Some(&json!({}))));
        assert!(is_modern(
            &modern_headers("v999.0.0", "tools/list"),
            "tools/list",
            None
        ));
        assert!(!is_modern(
            &modern_headers("2025-11-25", "tools/list"),
            "tools/list",
            None
        ));
    }
}
