//! MCP: the `tools` array of a `tools/list` result, names as exposed — as the full listing,
//! or as the gateway's compact listing mode sends it ([`compacted`]: first-sentence
//! descriptions, slimmed schemas, no output schemas), which is what `max_listing_tokens` is
//! measured against.

use serde_json::Value;
use switchboard_core::ToolDefinition;

use crate::{RenderTool, compact::first_sentence, slim::slim};

pub fn tools(tools: &[RenderTool<'_>]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                let mut value = serde_json::to_value(tool.definition).unwrap_or(Value::Null);
                if let Value::Object(map) = &mut value {
                    map.insert("name".into(), Value::String(tool.name.to_owned()));
                }
                value
            })
            .collect(),
    )
}

/// A definition as the gateway's compact listing mode lists it.
pub fn compacted(definition: &ToolDefinition) -> ToolDefinition {
    let mut compact = definition.clone();
    compact.description = definition.description.as_deref().map(first_sentence);
    compact.input_schema = slim(&definition.input_schema);
    compact.output_schema = None;
    compact
}

/// The compact listing mode's `tools` array.
pub fn compact_tools(tools: &[RenderTool<'_>]) -> Value {
    let definitions: Vec<ToolDefinition> = tools
        .iter()
        .map(|tool| compacted(tool.definition))
        .collect();
    let compacted: Vec<RenderTool<'_>> = tools
        .iter()
        .zip(&definitions)
        .map(|(tool, definition)| RenderTool {
            name: tool.name,
            definition,
        })
        .collect();
    self::tools(&compacted)
}
