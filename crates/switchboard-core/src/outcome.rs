//! A call and its result in domain terms: [`ToolCall`] in, [`ToolOutcome`] out.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    #[serde(default)]
    pub content: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    #[serde(flatten)]
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
}
