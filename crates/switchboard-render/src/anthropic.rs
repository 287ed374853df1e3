//! Anthropic Messages API: `{"name", "description", "input_schema"}`. Names are made
//! LLM-safe; schemas slimmed, a root `$ref` or `allOf` merged into the root (Anthropic
//! refuses an `input_schema` whose root is not an object schema; it follows nested `$ref`s).

use serde_json::{Value, json};

use crate::{RenderTool, inline::root_merged, names::llm_name, slim::slim};

pub fn tools(tools: &[RenderTool<'_>]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({"name": llm_name(tool.name), "description": tool.description(),
                       "input_schema": root_merged(&slim(&tool.definition.input_schema))})
            })
            .collect(),
    )
}
