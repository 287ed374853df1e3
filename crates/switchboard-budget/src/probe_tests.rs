//! Tests of minimal instances, validated by the catalog's own schema validator.

use serde_json::json;
use switchboard_core::schema::InputSchema;

use super::*;

fn valid_minimal(schema: Value) -> Value {
    let instance = minimal_instance(&schema).expect("generates");
    let compiled = InputSchema::compile(&schema).expect("schema compiles");
    let mut arguments = instance.as_object().expect("an object instance").clone();
    if let Err(violations) = compiled.validate(&mut arguments) {
        panic!("{instance} breaks {schema}: {violations:?}");
    }
    instance
}

#[test]
fn required_properties_only_with_types_and_bounds() {
    let instance = valid_minimal(json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 3},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "offset": {"type": "integer"},
            "score": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 2},
            "above": {"type": "integer", "exclusiveMinimum": 10, "multipleOf": 4},
            "below": {"type": "number", "maximum": -3.5},
            "flag": {"type": "boolean"},
            "nothing": {"type": ["null"]},
            "maybe": {"type": ["null", "integer"], "minimum": 2},
            "mode": {"enum": ["quick", "full"]},
            "version": {"const": 2},
            "when": {"type": "string", "format": "date-time"},
            "short": {"type": "string", "maxLength": 0}
        },
        "required": ["query", "limit", "score", "above", "below", "flag", "nothing", "maybe",
                     "mode", "version", "when", "short"]
    }));
    assert_eq!(
        instance,
        json!({"query": "aaa", "limit": 1, "score": 1, "above": 12, "below": -3.5,
               "flag": false, "nothing": null, "maybe": 2, "mode": "quick", "version": 2,
               "when": "1970-01-01T00:00:00Z", "short": ""})
    );
    assert!(
        instance.get("offset").is_none(),
        "optional properties are left out"
    );
}

#[test]
fn nested_objects_arrays_and_refs() {
    let instance = valid_minimal(json!({
        "type": "object",
        "$defs": {
            "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                      "required": ["x", "y"]},
            "tag": {"type": "string", "format": "uuid"}
        },
        "properties": {
            "path": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 2},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"$ref": "#/$defs/tag"}],
                     "minItems": 2},
            "owner": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 7}},
                      "required": ["id"]},
            "any": {}
        },
        "required": ["path", "pair", "owner", "any"]
    }));
    assert_eq!(
        instance["path"],
        json!([{"x": 0, "y": 0}, {"x": 0, "y": 0}])
    );
    assert_eq!(
        instance["pair"][1],
        json!("00000000-0000-0000-0000-000000000000")
    );
    assert_eq!(instance["owner"], json!({"id": 7}));
}

#[test]
fn combinators_and_draft_4_bounds() {
    valid_minimal(json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "definitions": {"base": {"properties": {"a": {"type": "string"}}, "required": ["a"]}},
        "allOf": [
            {"$ref": "#/definitions/base"},
            {"properties": {"b": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}},
             "required": ["b"]}
        ]
    }));
    let instance = valid_minimal(json!({
        "type": "object",
        "properties": {"choice": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "integer"}]}},
        "required": ["choice"],
        "minProperties": 1
    }));
    assert_eq!(instance, json!({"choice": "aa"}));
    let instance = valid_minimal(json!({
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "minProperties": 2
    }));
    assert_eq!(instance, json!({"x": 0, "y": 0}));
}

#[test]
fn reports_what_it_cannot_do() {
    assert_eq!(
        minimal_instance(
            &json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}},
                                 "required": ["a"]})
        ),
        Err(InstanceError::UnresolvableRef("#/$defs/missing".into()))
    );
    assert_eq!(
        minimal_instance(
            &json!({"type": "object", "properties": {"n": {"type": "integer",
            "minimum": 5, "maximum": 4}}, "required": ["n"]})
        ),
        Err(InstanceError::Unsatisfiable("$.n".into()))
    );
    let recursive = json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}},
                                               "required": ["next"]}},
                           "$ref": "#/$defs/node"});
    assert_eq!(minimal_instance(&recursive), Err(InstanceError::TooDeep));
    assert_eq!(
        minimal_instance(
            &json!({"type": "object", "properties": {"no": false}, "required": ["no"]})
        ),
        Err(InstanceError::Unsatisfiable("$.no".into()))
    );
}
