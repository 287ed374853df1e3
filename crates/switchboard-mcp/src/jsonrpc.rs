//! JSON-RPC 2.0 messages as MCP uses them, parsed once at the edge.
//!
//! Messages are kept close to the wire (`serde_json::Value` params and results) because the
//! gateway routes most of them without looking inside; only the parts it acts on are typed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Standard JSON-RPC error codes used by MCP.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: the requested resource does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP (2026-07-28): an HTTP routing header is missing or contradicts the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// MCP (2026-07-28): a request needs a client capability the client did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// MCP (2026-07-28): the request's protocol version is not one the server speaks.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// Switchboard's own, in the implementation-defined sub-range (-32000 to -32019) that
    /// MCP leaves to implementations (-32020 to -32099 are the specification's): a stdio
    /// client sent a request while it was owed the most answers and the most requests waited
    /// for room already; the request was not run.
    pub const TOO_MANY_REQUESTS_WAITING: i64 = -32011;
}

/// A request or notification id: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s}"),
        }
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32021: answering needs `capability`, which the client did not declare; `data` names
    /// it as a `ClientCapabilities` object (`{"requiredCapabilities": {"sampling": {}}}`).
    pub fn missing_capability(capability: &str) -> Self {
        Self {
            code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            message: format!("the client did not declare the '{capability}' capability"),
            data: Some(serde_json::json!({"requiredCapabilities": {capability: {}}})),
        }
    }
}

/// The client capability a server's request to its client needs (`sampling/createMessage` →
/// `sampling`, `elicitation/create` → `elicitation`, `roots/list` → `roots`); `None` for
/// any other method.
/// The requests a server may make of its client during a call (sampling, elicitation, roots),
/// each needing the client capability [`client_capability_for`] names.
pub const CLIENT_REQUEST_METHODS: [&str; 3] =
    ["elicitation/create", "sampling/createMessage", "roots/list"];

pub fn client_capability_for(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        id: RequestId,
        result: Value,
    },
    Error {
        id: Option<RequestId>,
        error: RpcError,
    },
    /// A response whose result is already serialized JSON (a cached listing), so a large
    /// answer is not rebuilt value by value on every request. Never produced by parsing.
    PreparedResponse {
        id: RequestId,
        result: std::sync::Arc<str>,
    },
}

/// The shape every JSON-RPC message fits, before classification.
#[derive(Deserialize)]
struct Raw {
    jsonrpc: Option<Version>,
    /// `Some(Value::Null)` for `"id": null`, which a request may not have; `None` when absent.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<RpcError>,
}

/// A member that is there, even as `null` (`Option<Value>` alone reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Whether a message's `jsonrpc` member is "2.0", read without keeping the string (one
/// allocation less per message).
struct Version(bool);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IsTwo;
        impl serde::de::Visitor<'_> for IsTwo {
            type Value = Version;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_str<E>(self, text: &str) -> Result<Version, E> {
                Ok(Version(text == "2.0"))
            }
        }
        deserializer.deserialize_str(IsTwo)
    }
}

/// Why bytes are not a JSON-RPC message; carries the id when one could be read, so the
/// answer can name the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    pub id: Option<RequestId>,
    pub error: RpcError,
}

impl Message {
    /// Parses one message. Batches (arrays) are refused: MCP removed them in 2025-06-18.
    ///
    /// The bytes are checked as UTF-8 once, whole, and then read as text: read from bytes,
    /// serde_json checks every string it meets on its own, which costs more per message.
    pub fn parse(bytes: &[u8]) -> Result<Self, Malformed> {
        let text = std::str::from_utf8(bytes).map_err(|error| Malformed {
            id: None,
            error: RpcError::new(
                code::PARSE_ERROR,
                format!(
                    "parse error: the message is not UTF-8 (an invalid byte at offset {})",
                    error.valid_up_to()
                ),
            ),
        })?;
        // serde reads a struct from an array too (its fields in order): only an object is a
        // message, and an array is what a batch would be.
        if text.trim_start().starts_with('[') {
            return Err(not_an_object());
        }
        let raw: Raw = serde_json::from_str(text).map_err(|error| {
            let kind = if error.is_data() {
                code::INVALID_REQUEST
            } else {
                code::PARSE_ERROR
            };
            let what = if kind == code::PARSE_ERROR {
                "parse error"
            } else {
                "invalid request"
            };
            Malformed {
                id: None,
                error: RpcError::new(kind, format!("{what}: {error}")),
            }
        })?;
        Self::classify(raw)
    }

    /// Classifies an already-parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, Malformed> {
        if !value.is_object() {
            return Err(not_an_object());
        }
        let raw: Raw = serde_json::from_value(value).map_err(|error| Malformed {
            id: None,
            error: RpcError::new(code::INVALID_REQUEST, format!("invalid request: {error}")),
        })?;
        Self::classify(raw)
    }

    fn classify(raw: Raw) -> Result<Self, Malformed> {
        if matches!(raw.id, Some(Value::Null)) && raw.method.is_some() {
            return Err(invalid(
                None,
                "id must not be null (a request's id is a string or an integer; a \
                 notification has none)",
            ));
        }
        let id = match raw.id {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_i64() {
                Some(n) => Some(RequestId::Number(n)),
                None if is_integer_beyond_i64(&n) => {
                    return Err(invalid(
                        None,
                        "an integer id must fit in 64 bits (-9223372036854775808 to \
                         9223372036854775807); send a larger one as a string",
                    ));
                }
                None => return Err(invalid(None, "id must be a string or an integer")),
            },
            Some(Value::String(s)) => Some(RequestId::String(s)),
            Some(_) => return Err(invalid(None, "id must be a string or an integer")),
        };
        if !matches!(raw.jsonrpc, Some(Version(true))) {
            return Err(invalid(id, "jsonrpc must be \"2.0\""));
        }
        if let Some(params) = &raw.params
            && !params.is_object()
            && !params.is_array()
        {
            return Err(invalid(id, "params must be an object"));
        }
        match (raw.method, id, raw.result, raw.error) {
            (Some(method), Some(id), None, None) => Ok(Self::Request {
                id,
                method,
                params: raw.params,
            }),
            (Some(method), None, None, None) => Ok(Self::Notification {
                method,
                params: raw.params,
            }),
            (None, Some(id), Some(result), None) => Ok(Self::Response { id, result }),
            (None, id, None, Some(error)) => Ok(Self::Error { id, error }),
            (_, id, _, _) => Err(invalid(id, "not a request, notification or response")),
        }
    }

    /// Serializes to one line of JSON (no trailing newline).
    pub fn to_json(&self) -> Value {
        match self {
            Self::PreparedResponse { id, result } => {
                let mut object = envelope();
                object.insert("id".into(), id_value(id));
                object.insert(
                    "result".into(),
                    serde_json::from_str(result).unwrap_or(Value::Null),
                );
                Value::Object(object)
            }
            Self::Request { id, method, params } => {
                let mut object = envelope();
                object.insert("id".into(), id_value(id));
                object.insert("method".into(), Value::String(method.clone()));
                if let Some(params) = params {
                    object.insert("params".into(), params.clone());
                }
                Value::Object(object)
            }
            Self::Notification { method, params } => {
                let mut object = envelope();
                object.insert("method".into(), Value::String(method.clone()));
                if let Some(params) = params {
                    object.insert("params".into(), params.clone());
                }
                Value::Object(object)
            }
            Self::Response { id, result } => {
                let mut object = envelope();
                object.insert("id".into(), id_value(id));
                object.insert("result".into(), result.clone());
                Value::Object(object)
            }
            Self::Error { id, error } => {
                let mut object = envelope();
                // JSON-RPC 2.0: an error about a request whose id could not be read has id null.
                object.insert("id".into(), id.as_ref().map_or(Value::Null, id_value));
                object.insert(
                    "error".into(),
                    serde_json::to_value(error).unwrap_or(Value::Null),
                );
                Value::Object(object)
            }
        }
    }

    /// The message as one line of JSON (no trailing newline), written straight from the
    /// message's parts: nothing is cloned into an intermediate `Value` (this is on every
    /// call's path, twice).
    pub fn to_line(&self) -> String {
        String::from_utf8(self.to_bytes()).unwrap_or_default()
    }

    /// [`Message::to_line`] as bytes, for an HTTP body: UTF-8 all the same (its pieces are
    /// serde_json's output and `String`s), without checking it again.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut line = Vec::with_capacity(256);
        line.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self {
            Self::PreparedResponse { id, result } => {
                push_id(&mut line, Some(id));
                line.extend_from_slice(br#","result":"#);
                line.extend_from_slice(result.as_bytes());
            }
            Self::Request { id, method, params } => {
                push_id(&mut line, Some(id));
                push_field(&mut line, "method", method);
                if let Some(params) = params {
                    push_field(&mut line, "params", params);
                }
            }
            Self::Notification { method, params } => {
                push_field(&mut line, "method", method);
                if let Some(params) = params {
                    push_field(&mut line, "params", params);
                }
            }
            Self::Response { id, result } => {
                push_id(&mut line, Some(id));
                push_field(&mut line, "result", result);
            }
            Self::Error { id, error } => {
                // JSON-RPC 2.0: an error about a request whose id could not be read has id null.
                push_id(&mut line, id.as_ref());
                push_field(&mut line, "error", error);
            }
        }
        line.push(b'}');
        line
    }

    pub fn notification(method: &str, params: Value) -> Self {
        Self::Notification {
            method: method.to_owned(),
            params: Some(params),
        }
    }

    pub fn error(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Self {
        Self::Error {
            id,
            error: RpcError::new(code, message),
        }
    }
}

/// Appends `,"id":<id>` (`null` for none).
fn push_id(line: &mut Vec<u8>, id: Option<&RequestId>) {
    line.extend_from_slice(br#","id":"#);
    match id {
        Some(RequestId::Number(n)) => push_json(line, n),
        Some(RequestId::String(s)) => push_json(line, s),
        None => line.extend_from_slice(b"null"),
    }
}

/// Appends `,"key":<value as JSON>`.
fn push_field(line: &mut Vec<u8>, key: &str, value: &(impl serde::Serialize + ?Sized)) {
    line.extend_from_slice(b",\"");
    line.extend_from_slice(key.as_bytes());
    line.extend_from_slice(b"\":");
    push_json(line, value);
}

fn push_json(line: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    let start = line.len();
    if serde_json::to_writer(&mut *line, value).is_err() {
        line.truncate(start);
        line.extend_from_slice(b"null");
    }
}

fn envelope() -> Map<String, Value> {
    let mut object = Map::with_capacity(4);
    object.insert("jsonrpc".into(), Value::String("2.0".into()));
    object
}

fn id_value(id: &RequestId) -> Value {
    match id {
        RequestId::Number(n) => Value::from(*n),
        RequestId::String(s) => Value::String(s.clone()),
    }
}

/// Whether `n`, which does not fit an `i64`, is still a whole number: one past `u64`'s range
/// arrives as a float with no fraction (serde_json keeps no integers wider than 64 bits).
fn is_integer_beyond_i64(n: &serde_json::Number) -> bool {
    n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0 && f.abs() >= 2f64.powi(63))
}

fn not_an_object() -> Malformed {
    invalid(
        None,
        "a message is one JSON object (batches, JSON arrays, were removed in 2025-06-18)",
    )
}

fn invalid(id: Option<RequestId>, message: &str) -> Malformed {
    Malformed {
        id,
        error: RpcError::new(code::INVALID_REQUEST, format!("invalid request: {message}")),
    }
}

/// The `_meta` object of a params value, if any.
pub fn params_meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_line_is_the_json_of_the_message() {
        let messages = [
            Message::Request {
                id: RequestId::Number(7),
                method: "tools/call".into(),
                params: Some(json!({"name": "é\"\n", "arguments": {"b": 1, "a": [true, null]}})),
            },
            Message::Request {
                id: RequestId::String("x\"y".into()),
                method: "ping".into(),
                params: None,
            },
            Message::notification("notifications/progress", json!({"progress": 0.5})),
            Message::Response {
                id: RequestId::Number(-1),
                result: json!({"content": [{"type": "text", "text": "hi"}]}),
            },
            Message::Error {
                id: None,
                error: RpcError::new(code::INVALID_REQUEST, "bad"),
            },
            Message::Error {
                id: Some(RequestId::String("a".into())),
                error: RpcError {
                    code: -32000,
                    message: "m".into(),
                    data: Some(json!({"k": [1]})),
                },
            },
        ];
        for message in messages {
            let line = message.to_line();
            assert_eq!(line, message.to_json().to_string());
            let parsed: Value = serde_json::from_str(&line).expect("valid JSON");
            assert_eq!(parsed, message.to_json());
        }
    }

    #[test]
    fn classifies_every_kind() {
        let request =
            Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).expect("request");
        assert_eq!(
            request,
            Message::Request {
                id: RequestId::Number(1),
                method: "ping".into(),
                params: None
            }
        );
        let note = Message::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .expect("note");
        assert!(matches!(note, Message::Notification { .. }));
        let response =
            Message::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).expect("response");
        assert_eq!(
            response,
            Message::Response {
                id: RequestId::String("a".into()),
                result: json!({})
            }
        );
        let error =
            Message::parse(br#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}"#)
                .expect("error");
        assert!(matches!(
            error,
            Message::Error {
                id: Some(RequestId::Number(2)),
                ..
            }
        ));
    }

    #[test]
    fn malformed_input_names_the_problem() {
        let garbage = Message::parse(b"this is not json").expect_err("garbage");
        assert_eq!(garbage.error.code, code::PARSE_ERROR);
        let batch =
            Message::parse(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).expect_err("batch");
        assert_eq!(batch.error.code, code::INVALID_REQUEST);
        // An array laid out in the fields' order is no message either.
        let fields = Message::parse(br#"["2.0",1,"tools/list",null,null,null]"#)
            .expect_err("an array is not a message");
        assert_eq!(fields.error.code, code::INVALID_REQUEST);
        assert!(
            Message::from_value(json!(["2.0", 1, "tools/list", null, null, null])).is_err(),
            "nor as a value"
        );
        // A request with a null id is refused, not taken for a notification.
        let null_id = Message::parse(br#"{"jsonrpc":"2.0","id":null,"method":"tools/call"}"#)
            .expect_err("null id");
        assert_eq!(null_id.error.code, code::INVALID_REQUEST);
        assert_eq!(null_id.id, None);
        assert!(
            null_id.error.message.contains("null"),
            "{:?}",
            null_id.error
        );
        // An error response may have one (the request's id could not be read).
        let answered = Message::parse(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
        )
        .expect("an error answer with a null id");
        assert!(matches!(answered, Message::Error { id: None, .. }));
        let version =
            Message::parse(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).expect_err("version");
        assert_eq!(version.id, Some(RequestId::Number(7)));
        // An integer id too large for 64 bits is an integer: the error says what is wrong.
        for id in [
            "18446744073709551615",
            "9223372036854775808",
            "-9223372036854775809",
            "1e30",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let wide = Message::parse(line.as_bytes()).expect_err("a 64-bit overflow");
            assert_eq!(wide.error.code, code::INVALID_REQUEST);
            assert!(
                wide.error.message.contains("64 bits"),
                "{id}: {:?}",
                wide.error
            );
        }
        let widest =
            Message::parse(br#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#)
                .expect("i64::MIN is an id");
        assert!(matches!(
            widest,
            Message::Request {
                id: RequestId::Number(i64::MIN),
                ..
            }
        ));
        let fraction = Message::parse(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#)
            .expect_err("a fraction");
        assert!(
            fraction.error.message.contains("string or an integer"),
            "{:?}",
            fraction.error
        );
        let params = Message::parse(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":3}"#)
            .expect_err("params");
        assert!(params.error.message.contains("params"));
        let latin1 =
            Message::parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"caf\xe9\"}").expect_err("latin-1");
        assert_eq!(latin1.error.code, code::PARSE_ERROR);
        assert!(
            latin1.error.message.contains("not UTF-8")
                && latin1.error.message.contains("offset 30"),
            "{}",
            latin1.error.message
        );
    }

    #[test]
    fn round_trips() {
        let message = Message::Request {
            id: RequestId::Number(3),
            method: "tools/list".into(),
            params: Some(json!({})),
        };
        assert_eq!(
            Message::parse(message.to_line().as_bytes()).expect("parses"),
            message
        );
    }
}
