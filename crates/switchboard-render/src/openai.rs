//! OpenAI: Chat Completions `tools` (`{"type": "function", "function": {...}}`), the
//! Responses API's flat function tools, and Realtime session tools (the same flat shape,
//! used by speech-to-speech sessions). Names are made LLM-safe; schemas slimmed, a root `$ref`
//! or `allOf` merged into the root (nested `$ref`s and `$defs` stay: OpenAI follows them).

use serde_json::{Value, json};

use crate::{RenderTool, inline::root_merged, names::llm_name, slim::slim};

/// The slimmed schema, a root `$ref` or `allOf` merged into the root: OpenAI refuses
/// parameters whose root is not an object schema.
fn parameters(tool: &RenderTool<'_>) -> Value {
    root_merged(&slim(&tool.definition.input_schema))
}

/// Chat Completions.
pub fn chat(tools: &[RenderTool<'_>]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": llm_name(tool.name),
                    "description": tool.description(),
                    "parameters": parameters(tool),
                }})
            })
            .collect(),
    )
}

/// The Responses API.
pub fn responses(tools: &[RenderTool<'_>]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "name": llm_name(tool.name), "description": tool.description(),
                       "parameters": parameters(tool)})
            })
            .collect(),
    )
}

/// A Realtime session's `tools`.
pub fn realtime(tools: &[RenderTool<'_>]) -> Value {
    responses(tools)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_core::ToolDefinition;

    use crate::RenderTool;

    /// A root `allOf` (or `$ref`) is merged into an object root, for OpenAI and Anthropic
    /// alike: both refuse a root that is not an object schema.
    #[test]
    fn a_root_all_of_becomes_an_object_root() {
        let definition = ToolDefinition::new(
            "query",
            "Query.",
            json!({"allOf": [{"$ref": "#/$defs/Q"}], "$defs": {"Q": {"type": "object",
                "properties": {"q": {"type": "string"}}, "required": ["q"]}}}),
        );
        let tool = RenderTool {
            name: "query",
            definition: &definition,
        };
        let openai = super::chat(&[tool]);
        let anthropic = crate::anthropic::tools(&[tool]);
        for root in [
            &openai[0]["function"]["parameters"],
            &anthropic[0]["input_schema"],
        ] {
            assert_eq!(root["type"], "object", "{root}");
            assert_eq!(root["properties"]["q"], json!({"type": "string"}), "{root}");
            assert_eq!(root["required"], json!(["q"]), "{root}");
            assert!(root.get("allOf").is_none(), "{root}");
        }
    }
}
