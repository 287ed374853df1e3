//! The Gemini render of every real tool definition of `../shared/catalog/tools.json` (324
//! tools of 20 servers, referenced from the workspace's parent like the search crate's recall
//! test) stays inside the schema subset Gemini takes: one declaration it refuses fails the
//! whole request (HTTP 400).
//!
//! What Gemini takes is written here from its API reference, not read from the renderer (its
//! `KEEP` and `FORMATS` could then hold a wrong entry and still pass): the fields of the
//! Gemini API's `Schema` object, "a select subset of an OpenAPI 3.0 schema object"
//! (<https://ai.google.dev/api/caching#Schema>; the Vertex AI reference,
//! <https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Schema>, lists
//! the same and a few more), its `Type` values, and the `format`s the Gemini API takes per
//! type.

use std::path::PathBuf;

use serde_json::Value;
use switchboard_core::ToolDefinition;
use switchboard_render::{Format, RenderTool, render_value};

/// The fields of the Gemini API's `Schema` object.
const SCHEMA_FIELDS: [&str; 22] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// The `Type`s of a `Schema` (`STRING`, …, `OBJECT`), lower-case as the renderer sends them.
const TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

/// The `format`s the Gemini API takes, per type (any other is HTTP 400).
const FORMATS: [(&str, &[&str]); 3] = [
    ("string", &["enum", "date-time"]),
    ("integer", &["int32", "int64"]),
    ("number", &["float", "double"]),
];

/// What in `schema` (at `path`) Gemini would refuse, each as `path: why`.
fn refused(schema: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        problems.push(format!("{path}: not an object schema: {schema}"));
        return;
    };
    let kind = map.get("type").and_then(Value::as_str);
    // "type must be specified when not using one_of, any_of or all_of fields"; Vertex AI:
    // "When using any_of, it must be the only field set".
    if map.contains_key("anyOf") {
        if map.len() != 1 {
            problems.push(format!("{path}: anyOf beside other fields"));
        }
    } else if kind.is_none() {
        problems.push(format!("{path}: no type and no anyOf"));
    }
    for (key, value) in map {
        let at = format!("{path}.{key}");
        match key.as_str() {
            key if !SCHEMA_FIELDS.contains(&key) => {
                problems.push(format!("{at}: not a field of Gemini's Schema"));
            }
            "type" if !kind.is_some_and(|kind| TYPES.contains(&kind)) => {
                problems.push(format!("{at}: {value} is not one of Gemini's types"));
            }
            "required" => {
                let properties = map.get("properties").and_then(Value::as_object);
                for name in value.as_array().into_iter().flatten() {
                    let declared = name
                        .as_str()
                        .is_some_and(|name| properties.is_some_and(|p| p.contains_key(name)));
                    if !declared {
                        problems.push(format!("{at}: {name} is not among the properties"));
                    }
                }
                if !value.is_array() {
                    problems.push(format!("{at}: not a list: {value}"));
                }
            }
            "properties" => match value.as_object() {
                Some(properties) if !properties.is_empty() => {
                    for (name, property) in properties {
                        refused(property, &format!("{at}.{name}"), problems);
                    }
                }
                _ => problems.push(format!("{at}: empty or not an object")),
            },
            "items" => refused(value, &at, problems),
            "anyOf" => {
                for (index, member) in value.as_array().into_iter().flatten().enumerate() {
                    refused(member, &format!("{at}[{index}]"), problems);
                }
            }
            "enum" => {
                let strings = value.as_array().is_some_and(|values| {
                    values
                        .iter()
                        .all(|v| v.as_str().is_some_and(|text| !text.is_empty()))
                });
                if kind != Some("string") || !strings {
                    problems.push(format!("{at}: not non-empty strings on a string: {value}"));
                }
            }
            "format" => {
                let taken = FORMATS.iter().any(|(type_, formats)| {
                    Some(*type_) == kind && formats.iter().any(|format| value == format)
                });
                if !taken {
                    problems.push(format!("{at}: {value} on {kind:?}"));
                }
            }
            _ => {}
        }
    }
    match kind {
        Some("object") if !map.contains_key("properties") => {
            problems.push(format!("{path}: an object without properties"));
        }
        Some("array") if !map.contains_key("items") => {
            problems.push(format!("{path}: an array without items"));
        }
        _ => {}
    }
}

/// The declaration Gemini is sent for the tool `name` of `definition`, and what in its `parameters`
/// (where it has them) Gemini would refuse.
fn render(name: &str, definition: &ToolDefinition) -> (Value, Vec<String>) {
    let rendered = render_value(Format::Gemini, &[RenderTool { name, definition }])
        .expect("Gemini renders a value");
    let declaration = rendered["functionDeclarations"][0].clone();
    let mut problems = Vec::new();
    if let Some(parameters) = declaration.get("parameters") {
        refused(parameters, name, &mut problems);
    }
    if let Some(map) = declaration.get("parametersJsonSchema") {
        assert_eq!(map["type"], "object", "{name}");
    }
    (declaration, problems)
}

/// Schemas the catalog has few of: typeless nodes (any value, nested maps, items that are
/// maps or anything, open objects) and unions with a description, which `parameters`
/// refuses, so they are declared as `parametersJsonSchema`.
#[test]
fn odd_schemas_render_inside_the_gemini_subset() {
    let odd = serde_json::json!([
        {"type": "object", "properties": {"x": true}},
        {"type": "object", "properties": {"x": {}}},
        {"type": "object", "properties": {"x": {"description": "anything", "title": "X"}}},
        {"type": "object", "properties": {"x": {"type": "object",
            "additionalProperties": {"type": "integer"}}}},
        {"type": "object", "properties": {"x": {"type": "object"}}},
        {"type": "object", "properties": {"x": {"type": "array", "items": true}}},
        {"type": "object", "properties": {"x": {"type": "array",
            "items": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        {"type": "object", "properties": {"x": {"description": "a or b",
            "anyOf": [{"type": "string"}, {"type": "integer"}]}}},
        {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"},
            {"type": "integer"}, {"type": "null"}]}}},
        {"type": "object", "properties": {"x": {"not": {"type": "string"}}}},
        {"type": "object", "properties": {"x": {"enum": [1, "two", null]}}},
        {"type": "object", "properties": {"ok": {"type": "string"}}},
    ]);
    let mut problems = Vec::new();
    let mut declared_as_json_schema = 0;
    for (index, schema) in odd.as_array().into_iter().flatten().enumerate() {
        let definition: ToolDefinition = serde_json::from_value(serde_json::json!({
            "name": "odd", "description": "An odd tool.", "inputSchema": schema
        }))
        .expect("an MCP tool definition");
        let (declaration, refused) = render(&format!("odd_{index}"), &definition);
        problems.extend(refused);
        declared_as_json_schema += usize::from(declaration.get("parametersJsonSchema").is_some());
    }
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(
        declared_as_json_schema,
        odd.as_array().map_or(0, Vec::len) - 1
    );
}

#[test]
fn every_catalog_tool_renders_inside_the_gemini_subset() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/catalog/tools.json");
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("the catalog at {}: {error}", file.display()));
    let catalog: Value = serde_json::from_str(&text).expect("the catalog is JSON");
    let tools = catalog["tools"].as_array().expect("the catalog's tools");
    assert_eq!(tools.len(), 324);
    let mut problems = Vec::new();
    for tool in tools {
        let name = tool["id"].as_str().expect("a tool id").replace('/', "__");
        let definition: ToolDefinition =
            serde_json::from_value(tool.clone()).expect("an MCP tool definition");
        problems.extend(render(&name, &definition).1);
    }
    assert_eq!(problems, Vec::<String>::new());
}
