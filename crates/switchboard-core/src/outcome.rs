//! A call and its result in domain terms: [`ToolCall`] in, [`ToolOutcome`] out.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::pipeline::{CALL_META_KEY, CallEnvelope};

/// A request to run one tool, named as the caller sees it (the exposed name).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Map<String, Value>,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            arguments,
        }
    }
}

/// The result of a tool call, shaped as MCP's `CallToolResult`.
///
/// A tool-level failure (`is_error: true`) is an outcome, not an error: the model reads it
/// and can correct itself. Failures the caller must handle (unknown tool) are
/// [`crate::pipeline::CallError`]s instead.
///
/// In JSON: `content`, then `structuredContent`, `isError` (when true) and `_meta` when set
/// (with the gateway's envelope, `call`, as its last key), then every other member
/// (`extra`). Serialized and taken apart by hand
/// ([`ToolOutcome::from_result`]) rather than by serde's `flatten`, which buffers and
/// re-parses the whole result: every call's answer goes through here.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub content: Vec<Value>,
    pub structured_content: Option<Value>,
    pub is_error: bool,
    pub meta: Option<Map<String, Value>>,
    /// The gateway's envelope of the call that gave this result, once the pipeline has run
    /// it; written into `_meta` under [`CALL_META_KEY`]. Boxed: outcomes are moved from
    /// future to future, and most of them carry none until the last step.
    pub call: Option<Box<CallEnvelope>>,
    pub extra: Map<String, Value>,
}

impl ToolOutcome {
    /// A successful result holding one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![text_block(text)],
            structured_content: None,
            is_error: false,
            meta: None,
            call: None,
            extra: Map::new(),
        }
    }

    /// A tool error holding one text block the model can read.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// A successful result with structured content, and its JSON text as the text block
    /// (for clients that ignore `structuredContent`).
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        Self {
            structured_content: Some(value),
            ..Self::text(text)
        }
    }

    /// A successful result with structured content and a readable text of its own (instead
    /// of the JSON dump [`ToolOutcome::structured`] writes).
    pub fn structured_with_text(value: Value, text: impl Into<String>) -> Self {
        Self {
            structured_content: Some(value),
            ..Self::text(text)
        }
    }

    /// A `CallToolResult` as a server sent it, its members moved out one by one: missing
    /// `content` is empty, a `null` `structuredContent` or `_meta` is absent; anything else of
    /// the wrong type is an error naming the member.
    pub fn from_result(result: Value) -> Result<Self, String> {
        let Value::Object(members) = result else {
            return Err(format!(
                "the result is {}, not an object",
                json_kind(&result)
            ));
        };
        let mut outcome = Self {
            content: Vec::new(),
            structured_content: None,
            is_error: false,
            meta: None,
            call: None,
            extra: Map::new(),
        };
        for (name, value) in members {
            match (name.as_str(), value) {
                ("content", Value::Array(blocks)) => outcome.content = blocks,
                ("structuredContent", Value::Null) | ("_meta", Value::Null) => {}
                ("structuredContent", value) => outcome.structured_content = Some(value),
                ("isError", Value::Bool(is_error)) => outcome.is_error = is_error,
                ("_meta", Value::Object(meta)) => outcome.meta = Some(meta),
                ("content" | "isError" | "_meta", value) => {
                    let wanted = match name.as_str() {
                        "content" => "an array",
                        "isError" => "a boolean",
                        _ => "an object",
                    };
                    return Err(format!("{name} is {}, not {wanted}", json_kind(&value)));
                }
                (_, value) => {
                    outcome.extra.insert(name, value);
                }
            }
        }
        Ok(outcome)
    }

    /// The concatenated text of every text block.
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Serialize for ToolOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 1
            + usize::from(self.structured_content.is_some())
            + usize::from(self.is_error)
            + usize::from(self.meta.is_some() || self.call.is_some())
            + self.extra.len();
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("content", &self.content)?;
        if let Some(structured) = &self.structured_content {
            map.serialize_entry("structuredContent", structured)?;
        }
        if self.is_error {
            map.serialize_entry("isError", &true)?;
        }
        match (&self.meta, &self.call) {
            (Some(meta), None) => map.serialize_entry("_meta", meta)?,
            (meta, Some(call)) => map.serialize_entry(
                "_meta",
                &MetaWithCall {
                    meta: meta.as_ref(),
                    call,
                },
            )?,
            (None, None) => {}
        }
        for (name, value) in &self.extra {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// A result's `_meta` with the envelope as its last key.
struct MetaWithCall<'a> {
    meta: Option<&'a Map<String, Value>>,
    call: &'a CallEnvelope,
}

impl Serialize for MetaWithCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // A key of the envelope's own name in `meta` would be written twice: the stamp takes
        // it out, and so does this, for an outcome put together by hand.
        let members = self
            .meta
            .into_iter()
            .flatten()
            .filter(|(name, _)| name.as_str() != CALL_META_KEY);
        let mut map = serializer.serialize_map(Some(members.clone().count() + 1))?;
        for (name, value) in members {
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry(CALL_META_KEY, self.call)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ToolOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_result(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// What a JSON value is, for error messages ("an array", "null", …).
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn text_block(text: impl Into<String>) -> Value {
    serde_json::json!({"type": "text", "text": text.into()})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_outcome_serializes_as_call_tool_result() {
        let value = serde_json::to_value(ToolOutcome::error("boom")).expect("serializes");
        assert_eq!(
            value,
            serde_json::json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        );
    }

    #[test]
    fn a_result_round_trips_member_by_member_keeping_unknown_members_in_order() {
        let text = r#"{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":1},"isError":true,"_meta":{"k":"v"},"zeta":1,"alpha":[2]}"#;
        let value: Value = serde_json::from_str(text).expect("json");
        let outcome = ToolOutcome::from_result(value).expect("a valid result");
        assert_eq!(outcome.text_content(), "hi");
        assert_eq!(
            outcome.structured_content,
            Some(serde_json::json!({"n": 1}))
        );
        assert!(outcome.is_error);
        assert_eq!(
            outcome.meta.as_ref().map(|m| m["k"].clone()),
            Some("v".into())
        );
        assert_eq!(serde_json::to_string(&outcome).expect("serializes"), text);
        let parsed: ToolOutcome = serde_json::from_str(text).expect("deserializes");
        assert_eq!(parsed, outcome);
    }

    #[test]
    fn missing_and_null_members_are_absent_and_wrong_types_are_named() {
        let outcome = ToolOutcome::from_result(serde_json::json!({
            "structuredContent": null, "_meta": null
        }))
        .expect("a valid result");
        assert!(outcome.content.is_empty() && !outcome.is_error);
        assert_eq!(outcome.structured_content, None);
        assert_eq!(outcome.meta, None);
        for (result, message) in [
            (
                serde_json::json!({"content": "text"}),
                "content is a string, not an array",
            ),
            (
                serde_json::json!({"content": [], "isError": "yes"}),
                "isError is a string, not a boolean",
            ),
            (
                serde_json::json!({"content": [], "_meta": [1]}),
                "_meta is an array, not an object",
            ),
            (
                serde_json::json!([1]),
                "the result is an array, not an object",
            ),
        ] {
            assert_eq!(ToolOutcome::from_result(result), Err(message.to_owned()));
        }
    }

    #[test]
    fn the_envelope_is_the_last_key_of_meta_and_replaces_one_the_server_sent() {
        let result = serde_json::json!({
            "content": [],
            "_meta": {"switchboard.dev/call": {"id": "from a gateway behind"}, "k": "v"},
            "zeta": 1,
        });
        let mut outcome = ToolOutcome::from_result(result).expect("a valid result");
        let server = crate::ServerId::new("s");
        let took = std::time::Duration::from_micros(1_234_567);
        crate::pipeline::envelope::stamp(&mut outcome, "01CALL", took, &server, 0.5, false);
        assert_eq!(
            serde_json::to_string(&outcome).expect("serializes"),
            r#"{"content":[],"_meta":{"k":"v","switchboard.dev/call":{"id":"01CALL","duration_ms":1234.567,"server":"s","cost":0.5,"cached":false}},"zeta":1}"#
        );
        let mut bare = ToolOutcome::text("hi");
        crate::pipeline::envelope::stamp(&mut bare, "01B", took, &server, 0.0, true);
        bare.call.as_mut().expect("stamped").truncated = Some(crate::pipeline::Truncation {
            total_tokens: 9,
            shown_tokens: 4,
        });
        let value = serde_json::to_value(&bare).expect("serializes");
        assert_eq!(
            value["_meta"],
            serde_json::json!({"switchboard.dev/call": {"id": "01B", "duration_ms": 1234.567,
                "server": "s", "cost": 0.0, "cached": true,
                "truncated": {"total_tokens": 9, "shown_tokens": 4}}})
        );
    }
}
