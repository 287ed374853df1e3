//! The 2026-07-28 routing headers of Streamable HTTP (SEP-2243): every POST carries its
//! JSON-RPC method as `Mcp-Method`, and a request that names a tool, prompt or resource carries
//! that name (`params.name`, or `params.uri` for `resources/read`) as `Mcp-Name`, so proxies and
//! load balancers can route without reading the body. A value is sent as-is when it is visible
//! ASCII without surrounding whitespace, else as `=?base64?…?=` of its UTF-8 bytes.
//!
//! The upstream client adds them ([`name_of`], [`encode_value`]); the HTTP front checks
//! that a modern request's headers are there and match its body ([`check`]), since a proxy that
//! routed on a header the body contradicts would send the call somewhere else.

use http::HeaderMap;
use serde_json::Value;

pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";

/// The body value `Mcp-Name` mirrors for `method`, if the method names something.
pub fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return None,
    };
    params?.get(field)?.as_str()
}

/// Why a modern request's routing headers were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderMismatch {
    #[error("the Mcp-{header} header is required on a {method} request")]
    Missing {
        header: &'static str,
        method: String,
    },
    #[error("header Mcp-{header} '{sent}' does not match the body's {field} '{body}'")]
    Differs {
        header: &'static str,
        field: &'static str,
        sent: String,
        body: String,
    },
    #[error("header Mcp-{header} is not valid: {reason}")]
    Malformed {
        header: &'static str,
        reason: &'static str,
    },
}

/// Checks a modern request's `Mcp-Method` and `Mcp-Name` against its body. Values compare
/// exactly (case matters) after Base64 decoding.
pub fn check(
    headers: &HeaderMap,
    method: &str,
    params: Option<&Value>,
) -> Result<(), HeaderMismatch> {
    compare(headers, METHOD, "Method", "method", method, method)?;
    if let Some(name) = name_of(method, params) {
        let field = if method == "resources/read" {
            "params.uri"
        } else {
            "params.name"
        };
        compare(headers, NAME, "Name", field, method, name)?;
    }
    Ok(())
}

fn compare(
    headers: &HeaderMap,
    header_name: &str,
    header: &'static str,
    field: &'static str,
    method: &str,
    body: &str,
) -> Result<(), HeaderMismatch> {
    let Some(raw) = headers.get(header_name) else {
        return Err(HeaderMismatch::Missing {
            header,
            method: method.to_owned(),
        });
    };
    let raw = raw.to_str().map_err(|_| HeaderMismatch::Malformed {
        header,
        reason: "not visible ASCII",
    })?;
    let sent = decode_value(raw).ok_or(HeaderMismatch::Malformed {
        header,
        reason: "bad =?base64?…?= encoding",
    })?;
    if sent != body {
        return Err(HeaderMismatch::Differs {
            header,
            field,
            sent,
            body: body.to_owned(),
        });
    }
    Ok(())
}

/// A value as an MCP header carries it: unchanged when it is visible ASCII without
/// surrounding whitespace (and does not look encoded), else Base64 of its UTF-8 bytes.
pub fn encode_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !is_encoded(value);
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64_encode(value.as_bytes()))
    }
}

/// The value a header carries: decoded from `=?base64?…?=`, or as it is. `None` when the
/// encoded form is not valid Base64 of UTF-8.
pub fn decode_value(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(base64_decode(encoded)?).ok(),
        None => Some(raw.to_owned()),
    }
}

fn is_encoded(value: &str) -> bool {
    value.starts_with("=?base64?") && value.ends_with("?=")
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard Base64 with padding.
fn base64_encode(bytes: &[u8]) -> String {
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

/// Standard Base64, padding optional; `None` on any other character or a bad length.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.trim_end_matches('=');
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for byte in digits.bytes() {
        let value = ALPHABET.iter().position(|&c| c == byte)? as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_both_ways() {
        for (plain, encoded) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"=?base64?literal?=", "PT9iYXNlNjQ/bGl0ZXJhbD89"),
        ] {
            assert_eq!(base64_encode(plain), encoded);
            assert_eq!(base64_decode(encoded).as_deref(), Some(plain));
        }
        assert_eq!(base64_decode("Zg").as_deref(), Some(&b"f"[..]));
        assert_eq!(base64_decode("Z"), None);
        assert_eq!(base64_decode("Zm9v!"), None);
        assert_eq!(base64_decode("Zg==="), None);
    }

    #[test]
    fn values_are_encoded_only_when_needed_and_decode_back() {
        assert_eq!(encode_value("get_weather"), "get_weather");
        assert_eq!(encode_value("file:///a b.txt"), "file:///a b.txt");
        assert_eq!(encode_value("météo"), "=?base64?bcOpdMOpbw==?=");
        assert_eq!(encode_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(encode_value("a\r\nb"), "=?base64?YQ0KYg==?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for value in [
            "get_weather",
            "météo",
            " padded",
            "a\r\nb",
            "=?base64?literal?=",
        ] {
            assert_eq!(decode_value(&encode_value(value)).as_deref(), Some(value));
        }
        assert_eq!(decode_value("=?base64?%%?="), None);
    }

    #[test]
    fn names_come_from_name_or_uri() {
        let params = json!({"uri": "mem://x", "name": "n"});
        assert_eq!(name_of("resources/read", Some(&params)), Some("mem://x"));
        assert_eq!(name_of("tools/call", Some(&params)), Some("n"));
        assert_eq!(name_of("prompts/get", Some(&params)), Some("n"));
        assert_eq!(name_of("tools/list", Some(&params)), None);
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("header value"));
        }
        map
    }

    #[test]
    fn a_modern_request_needs_matching_method_and_name_headers() {
        let call = json!({"name": "météo"});
        let good = headers(&[(METHOD, "tools/call"), (NAME, &encode_value("météo"))]);
        assert_eq!(check(&good, "tools/call", Some(&call)), Ok(()));
        let list = headers(&[(METHOD, "tools/list")]);
        assert_eq!(check(&list, "tools/list", None), Ok(()));

        let missing_method = headers(&[(NAME, "x")]);
        assert!(matches!(
            check(&missing_method, "tools/list", None),
            Err(HeaderMismatch::Missing {
                header: "Method",
                ..
            })
        ));
        let upper = headers(&[(METHOD, "TOOLS/LIST")]);
        assert!(matches!(
            check(&upper, "tools/list", None),
            Err(HeaderMismatch::Differs {
                header: "Method",
                ..
            })
        ));
        let missing_name = headers(&[(METHOD, "tools/call")]);
        let error = check(&missing_name, "tools/call", Some(&call)).expect_err("no name");
        assert_eq!(
            error.to_string(),
            "the Mcp-Name header is required on a tools/call request"
        );
        let other_name = headers(&[(METHOD, "tools/call"), (NAME, "other")]);
        let error = check(&other_name, "tools/call", Some(&call)).expect_err("other name");
        assert_eq!(
            error.to_string(),
            "header Mcp-Name 'other' does not match the body's params.name 'météo'"
        );
        let bad = headers(&[(METHOD, "tools/call"), (NAME, "=?base64?%%?=")]);
        assert!(matches!(
            check(&bad, "tools/call", Some(&call)),
            Err(HeaderMismatch::Malformed { header: "Name", .. })
        ));
    }
}
