//! MCP: the `tools` array of a `tools/list` result, names as exposed.

use serde_json::Value;

use crate::RenderTool;

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
