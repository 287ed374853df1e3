//! Anthropic Messages API: `{"name", "description", "input_schema"}`.

use serde_json::{Value, json};

use crate::{RenderTool, names::llm_name, slim::slim};

pub fn tools(tools: &[RenderTool<'_>]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                json!({"name": llm_name(tool.name), "description": tool.description(),
                       "input_schema": slim(&tool.definition.input_schema)})
            })
            .collect(),
    )
}
