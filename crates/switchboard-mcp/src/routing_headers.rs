//! The 2026-07-28 routing headers of Streamable HTTP (SEP-2243): every POST carries its
//! JSON-RPC method as `Mcp-Method`, and a request that names a tool, prompt or resource carries
//! that name (`params.name`, or `params.uri` for `resources/read`) as `Mcp-Name`, so proxies and
//! load balancers can route without reading the body. A value is sent as-is when it is visible
//! ASCII without surrounding whitespace, else as `=?base64?…?=` of its UTF-8 bytes.
//!
//! A tool may also declare arguments to mirror into `Mcp-Param-{Name}` headers
//! (`x-mcp-header`, [`switchboard_core::param_headers`]).
//!
//! The upstream client adds them ([`name_of`], [`param_headers`], [`encode_value`]); the HTTP
//! front checks that a modern request's headers are there and match its body ([`check`],
//! [`check_params`]), since a proxy that routed on a header the body contradicts would send
//! the call somewhere else.

use http::HeaderMap;
use serde_json::{Map, Value};
use switchboard_core::param_headers::ParamHeader;

pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";

/// The body value `Mcp-Name` mirrors for `method`, if the method names something (the tasks
/// extension adds the task methods, which name their task).
pub fn name_of<'a>(method: &str, params: Option<&'a Value>) -> Option<&'a str> {
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return None,
    };
    params?.get(field)?.as_str()
}

/// Why a modern request's routing headers were refused. `header` is the name after `Mcp-`
/// (`Method`, `Name`, `Param-Region`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderMismatch {
    #[error("the Mcp-{header} header is required on a {method} request")]
    Missing { header: String, method: String },
    #[error("header Mcp-{header} '{sent}' does not match the body's {field} '{body}'")]
    Differs {
        header: String,
        field: String,
        sent: String,
        body: String,
    },
    #[error("header Mcp-{header} is sent, but the body has no {field}")]
    Unexpected { header: String, field: String },
    #[error("header Mcp-{header} is not valid: {reason}")]
    Malformed {
        header: String,
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
    compare(headers, METHOD, "Method", "method", method, Some(method))?;
    if let Some(name) = name_of(method, params) {
        let field = if method == "resources/read" {
            "params.uri"
        } else {
            "params.name"
        };
        compare(headers, NAME, "Name", field, method, Some(name))?;
    }
    Ok(())
}

/// Checks a modern `tools/call`'s `Mcp-Param-*` headers against the arguments they mirror
/// (the tool's `x-mcp-header` declarations): each argument with a value needs its header,
/// with that value; a header without its argument is refused too.
pub fn check_params(
    headers: &HeaderMap,
    declared: &[ParamHeader],
    params: Option<&Value>,
) -> Result<(), HeaderMismatch> {
    if declared.is_empty() {
        return Ok(());
    }
    let empty = Map::new();
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for declaration in declared {
        let value = declaration.value_in(arguments);
        let header = format!("Param-{}", declaration.name);
        compare(
            headers,
            &declaration.header_name(),
            &header,
            &declaration.field(),
            "tools/call",
            value.as_deref(),
        )?;
    }
    Ok(())
}

/// The `Mcp-Param-*` headers a `tools/call` with `arguments` carries: (lower-case name,
/// encoded value) for each declared argument that has a value.
pub fn param_headers(
    declared: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Vec<(String, String)> {
    declared
        .iter()
        .filter_map(|declaration| {
            let value = declaration.value_in(arguments)?;
            Some((declaration.header_name(), encode_value(&value)))
        })
        .collect()
}

/// Compares one header with the body value it mirrors (`None`: the body has none, so
/// neither may the header).
fn compare(
    headers: &HeaderMap,
    header_name: &str,
    header: &str,
    field: &str,
    method: &str,
    body: Option<&str>,
) -> Result<(), HeaderMismatch> {
    let raw = match (headers.get(header_name), body) {
        (None, None) => return Ok(()),
        (None, Some(_)) => {
            return Err(HeaderMismatch::Missing {
                header: header.to_owned(),
                method: method.to_owned(),
            });
        }
        (Some(_), None) => {
            return Err(HeaderMismatch::Unexpected {
                header: header.to_owned(),
                field: field.to_owned(),
            });
        }
        (Some(raw), Some(_)) => raw,
    };
    let raw = raw.to_str().map_err(|_| HeaderMismatch::Malformed {
        header: header.to_owned(),
        reason: "not visible ASCII",
    })?;
    let sent = decode_value(raw).ok_or_else(|| HeaderMismatch::Malformed {
        header: header.to_owned(),
        reason: "bad =?base64?…?= encoding",
    })?;
    match body {
        Some(body) if sent != body => Err(HeaderMismatch::Differs {
            header: header.to_owned(),
            field: field.to_owned(),
            sent,
            body: body.to_owned(),
        }),
        _ => Ok(()),
    }
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

/// Standard Base64 with its padding (RFC 4648); `None` on any other character, a length
/// that is not a multiple of four, misplaced padding or stray bits in the last digit.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.trim_end_matches('=');
    let padding = text.len() - digits.len();
    if !text.len().is_multiple_of(4) || padding > 2 {
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
    // What is left over must be the zero bits that pad the last byte.
    (buffer == 0).then_some(out)
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
        assert_eq!(base64_decode("Zg"), None, "padding is required");
        assert_eq!(base64_decode("SGVsbG8"), None, "padding is required");
        assert_eq!(base64_decode("Zh=="), None, "stray bits");
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
        let task = json!({"taskId": "abc"});
        assert_eq!(name_of("tasks/get", Some(&task)), Some("abc"));
        assert_eq!(name_of("tasks/list", Some(&task)), None);
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
            Err(HeaderMismatch::Missing { header, .. }) if header == "Method"
        ));
        let upper = headers(&[(METHOD, "TOOLS/LIST")]);
        assert!(matches!(
            check(&upper, "tools/list", None),
            Err(HeaderMismatch::Differs { header, .. }) if header == "Method"
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
            Err(HeaderMismatch::Malformed { header, .. }) if header == "Name"
        ));
    }

    #[test]
    fn declared_arguments_need_their_param_headers_with_their_values() {
        let declared = [
            ParamHeader {
                name: "Region".into(),
                path: vec!["region".into()],
            },
            ParamHeader {
                name: "Priority".into(),
                path: vec!["priority".into()],
            },
        ];
        let call = json!({"name": "t", "arguments": {"region": "Hello", "priority": 42}});
        let arguments = call["arguments"].as_object().expect("object");
        let mirrored = param_headers(&declared, arguments);
        assert_eq!(
            mirrored,
            [
                ("mcp-param-region".to_owned(), "Hello".to_owned()),
                ("mcp-param-priority".to_owned(), "42".to_owned())
            ]
        );
        let sent =
            |region: &str| headers(&[("mcp-param-region", region), ("mcp-param-priority", "42")]);
        assert_eq!(check_params(&sent("Hello"), &declared, Some(&call)), Ok(()));
        assert_eq!(
            check_params(&sent("=?base64?SGVsbG8=?="), &declared, Some(&call)),
            Ok(()),
            "Base64 of the value"
        );
        for (region, expected) in [
            (
                "=?base64?SGVsbG8?=",
                "is not valid: bad =?base64?…?= encoding",
            ),
            (
                "=?base64?SGVs!!!bG8=?=",
                "is not valid: bad =?base64?…?= encoding",
            ),
            (
                "SGVsbG8=",
                "'SGVsbG8=' does not match the body's arguments.region 'Hello'",
            ),
        ] {
            let error = check_params(&sent(region), &declared, Some(&call)).expect_err(region);
            assert!(error.to_string().contains(expected), "{error}");
        }
        let without = headers(&[("mcp-param-priority", "42")]);
        let error = check_params(&without, &declared, Some(&call)).expect_err("missing");
        assert_eq!(
            error.to_string(),
            "the Mcp-Param-Region header is required on a tools/call request"
        );
        let no_region = json!({"name": "t", "arguments": {"priority": 42}});
        assert_eq!(check_params(&without, &declared, Some(&no_region)), Ok(()));
        let error = check_params(&sent("Hello"), &declared, Some(&no_region)).expect_err("extra");
        assert_eq!(
            error.to_string(),
            "header Mcp-Param-Region is sent, but the body has no arguments.region"
        );
    }
}
