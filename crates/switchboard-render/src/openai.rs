//! OpenAI: Chat Completions `tools` (`{"type": "function", "function": {...}}`), the
//! Responses API's flat function tools, and Realtime session tools (the same flat shape,
//! used by speech-to-speech sessions). Names are made LLM-safe; schemas slimmed.

use serde_json::{Value, json};

use crate::{RenderTool, names::llm_name, slim::slim};

fn parameters(tool: &RenderTool<'_>) -> Value {
    slim(&tool.definition.input_schema)
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
