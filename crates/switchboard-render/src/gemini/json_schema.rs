//! Gemini's `parameters` (its OpenAPI-subset `Schema`) refuse a node without `type` unless
//! it is an `anyOf` and nothing else ("must be specified when not using one_of, any_of or
//! all_of fields"; Gemini 3 refuses an unspecified type, Vertex AI an `anyOf` beside other
//! fields), and one refused declaration fails the whole request. A tool whose subset render
//! holds such a node (a property of any JSON value, a nested map, items that are a map, an
//! `anyOf` with a description) is declared through `parametersJsonSchema` instead, the JSON
//! Schema Gemini also reads, where a node without a type means any value: the same render,
//! with a map an object of its values again and `nullable` said as JSON Schema's `null`
//! type.

use serde_json::{Map, Value, json};

/// The key under which the subset keeps, on a map it sent without a type, its values as
/// the subset renders them (`true` for any): never sent as is, it makes the map's tool
/// JSON Schema, where it becomes `type: object` with those `additionalProperties`.
pub(super) const MAP_VALUES: &str = "x-switchboard-map-values";

/// Whether `node` (a subset render) or a schema inside it is one `parameters` refuses: one
/// without `type` that is not an `anyOf` alone, or an `anyOf` beside other fields.
pub(super) fn refused_by_parameters(node: &Value) -> bool {
    let Some(map) = node.as_object() else {
        return true;
    };
    let refused = if map.contains_key(MAP_VALUES) {
        true
    } else if map.contains_key("anyOf") {
        map.len() != 1
    } else {
        !map.contains_key("type")
    };
    refused || sub_schemas(map).any(refused_by_parameters)
}

/// The schemas `map` holds: its properties', its items' and its `anyOf` members'.
fn sub_schemas(map: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    let properties = map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(Map::values);
    let members = map
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    properties.chain(map.get("items")).chain(members)
}

/// A subset render as JSON Schema: a map sent without a type is an object of its values
/// again ([`MAP_VALUES`]); `nullable: true` (an OpenAPI field) becomes a `null`
/// type beside the type (`["string", "null"]`, and `null` in its `enum`) or a `{"type":
/// "null"}` member of its `anyOf`; on a node without either, which any value meets, it is
/// dropped.
pub(super) fn as_json_schema(node: Value) -> Value {
    let Value::Object(mut map) = node else {
        return node;
    };
    let nullable = map.remove("nullable") == Some(Value::Bool(true));
    if let Some(values) = map.remove(MAP_VALUES) {
        map.insert("type".into(), json!("object"));
        if values.is_object() {
            map.insert("additionalProperties".into(), as_json_schema(values));
        }
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for property in properties.values_mut() {
            *property = as_json_schema(property.take());
        }
    }
    if let Some(items) = map.get_mut("items") {
        *items = as_json_schema(items.take());
    }
    if let Some(Value::Array(members)) = map.get_mut("anyOf") {
        for member in members.iter_mut() {
            *member = as_json_schema(member.take());
        }
        if nullable {
            members.push(json!({"type": "null"}));
        }
    } else if nullable && let Some(kind) = map.get("type").cloned() {
        map.insert("type".into(), json!([kind, "null"]));
        if let Some(Value::Array(values)) = map.get_mut("enum") {
            values.push(Value::Null);
        }
    }
    Value::Object(map)
}
