//! Gemini: `{"functionDeclarations": [{"name", "description", "parameters"}]}`. Gemini reads
//! an OpenAPI subset of JSON Schema, so keys it rejects (`additionalProperties`, `$schema`,
//! `$ref`/`$defs` after inlining is not attempted, `default`, `examples`, …) are dropped and
//! type unions become their first non-null type.

use serde_json::{Map, Value, json};

use crate::{RenderTool, names::llm_name, slim::slim};

const KEEP: [&str; 12] = [
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "format",
    "nullable",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];

fn subset(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if !KEEP.contains(&key.as_str()) {
                    continue;
                }
                let value = match key.as_str() {
                    "properties" => Value::Object(
                        value
                            .as_object()
                            .map(|p| p.iter().map(|(k, v)| (k.clone(), subset(v))).collect())
                            .unwrap_or_default(),
                    ),
                    "items" => subset(value),
                    "type" => match value {
                        Value::Array(types) => {
                            if types.iter().any(|t| t == "null") {
                                out.insert("nullable".into(), Value::Bool(true));
                            }
                            types
                                .iter()
                                .find(|t| *t != "null")
                                .cloned()
                                .unwrap_or(json!("string"))
                        }
                        other => other.clone(),
                    },
                    _ => value.clone(),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

pub fn tools(tools: &[RenderTool<'_>]) -> Value {
    let declarations: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({"name": llm_name(tool.name), "description": tool.description(),
                   "parameters": subset(&slim(&tool.definition.input_schema))})
        })
        .collect();
    json!({"functionDeclarations": declarations})
}
