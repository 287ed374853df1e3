//! The Gemini renderer against hand-written schemas: what each rule of the module doc sends,
//! says in the description, or drops.

use serde_json::json;
use switchboard_core::ToolDefinition;

use super::*;

fn declared(name: &str, schema: serde_json::Value) -> serde_json::Value {
    let definition = ToolDefinition::new(name, "A tool.", schema);
    let rendered = tools(&[RenderTool {
        name,
        definition: &definition,
    }]);
    rendered["functionDeclarations"][0].clone()
}

/// Enums are non-empty strings on string schemas; other types keep their type and carry
/// the values in the description; `const` is an enum of one; null becomes nullable.
#[test]
fn enums_are_strings_or_move_to_the_description() {
    let declaration = declared(
        "pick",
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["fast", "", null]},
            "level": {"type": "integer", "description": "How hard", "enum": [1, 2, 3]},
            "bare": {"enum": [0, 2, 4]},
            "kind": {"const": "page"},
        }}),
    );
    let properties = &declaration["parameters"]["properties"];
    assert_eq!(
        properties["mode"],
        json!({"type": "string", "enum": ["fast"], "nullable": true,
               "description": "(may also be \"\")"})
    );
    assert_eq!(
        properties["level"],
        json!({"type": "integer", "description": "How hard (one of 1, 2, 3)"})
    );
    assert_eq!(
        properties["bare"],
        json!({"type": "integer", "description": "(one of 0, 2, 4)"})
    );
    assert_eq!(
        properties["kind"],
        json!({"type": "string", "enum": ["page"]})
    );
}

/// Values of several types are not stringified (the model would send `"1"` where the tool
/// takes `1`) but said, leaving the schema without a type, so the tool is declared as
/// JSON Schema; a union of types the values do not fit as its first is not sent as it.
#[test]
fn mixed_enums_are_said_not_stringified() {
    let declaration = declared(
        "mixed",
        json!({"type": "object", "properties": {
            "size": {"enum": [1, "two", null]},
            "flag": {"enum": [true, "x"]},
            "either": {"type": ["integer", "string"], "enum": [1, "a"]},
            "ratio": {"type": ["number", "string"], "enum": [1, 2.5]},
            "word": {"enum": ["a", "b"]},
            "shape": {"enum": [{"a": 1}, {"b": 2}]},
        }}),
    );
    let properties = &declaration["parametersJsonSchema"]["properties"];
    assert_eq!(
        properties["size"],
        json!({"description": "(one of 1, \"two\", null)"})
    );
    assert_eq!(
        properties["flag"],
        json!({"description": "(one of true, \"x\")"})
    );
    assert_eq!(
        properties["either"],
        json!({"description": "(one of 1, \"a\")"})
    );
    assert_eq!(
        properties["ratio"],
        json!({"type": "number", "description": "(one of 1, 2.5)"})
    );
    assert_eq!(
        properties["word"],
        json!({"type": "string", "enum": ["a", "b"]})
    );
    assert_eq!(
        properties["shape"],
        json!({"description": "(one of {\"a\":1}, {\"b\":2})"})
    );
}

/// A `const` beside an `enum` wins (it is the narrower) and is said; an empty string,
/// which Gemini refuses in an enum, is said in the hint rather than lost.
#[test]
fn const_wins_over_enum_and_empty_strings_are_said() {
    let declaration = declared(
        "pick",
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "const": "a"},
            "level": {"type": "integer", "enum": [1, 2], "const": 2},
            "blank": {"const": ""},
            "prefix": {"type": "string", "enum": ["x-", ""], "maxLength": 4},
        }}),
    );
    check_said_not_sent(
        &declaration["parameters"],
        [
            ("mode", json!({"type": "string", "enum": ["a"]})),
            (
                "level",
                json!({"type": "integer", "description": "(must be 2)"}),
            ),
            (
                "blank",
                json!({"type": "string", "description": "(must be \"\")"}),
            ),
            (
                "prefix",
                json!({"type": "string", "enum": ["x-"],
                       "description": "(may also be \"\"; at most 4 characters)"}),
            ),
        ],
    );
}

/// Gemini reads a property's schema as an object: `true`, and `{}` like it, become one
/// without a type that says it takes anything; a `false` property cannot be given, so it leaves `properties`
/// and `required`, and the holder says so.
#[test]
fn boolean_property_schemas_become_what_gemini_takes() {
    let declaration = declared(
        "flags",
        json!({"type": "object", "required": ["any", "never", "id"], "properties": {
            "any": true,
            "empty": {},
            "never": false,
            "id": {"type": "string"},
            "nested": {"type": "object", "required": ["gone"],
                       "properties": {"gone": false, "kept": true}},
        }}),
    );
    let parameters = &declaration["parametersJsonSchema"];
    assert_eq!(
        parameters,
        &json!({"type": "object", "required": ["any", "id"],
                "description": "(never cannot be given)",
                "properties": {
            "any": {"description": "(any JSON value)"},
            "empty": {"description": "(any JSON value)"},
            "id": {"type": "string"},
            "nested": {"type": "object", "description": "(gone cannot be given)",
                       "properties": {"kept": {"description": "(any JSON value)"}}},
        }})
    );
}

/// A property of annotations only (a description, a title, an example) takes any JSON value,
/// like `{}`: it says so too, after its own description. One standing for a reference that
/// could not be inlined says the JSON Schema it must match instead.
#[test]
fn a_property_of_annotations_only_is_said_to_take_any_value() {
    let declaration = declared(
        "notes",
        json!({"type": "object", "properties": {
            "payload": {"description": "What to store"},
            "meta": {"title": "Meta", "examples": [1], "deprecated": true},
            "remote": {"$ref": "https://example.com/schema.json"},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [
            (
                "payload",
                json!({"description": "What to store (any JSON value)"}),
            ),
            ("meta", json!({"description": "(any JSON value)"})),
            (
                "remote",
                json!({"description":
                    "(JSON Schema: {\"$ref\":\"https://example.com/schema.json\"})"}),
            ),
        ],
    );
}

/// Gemini takes `format` only as `enum`/`date-time` on strings, `int32`/`int64` on
/// integers and `float`/`double` on numbers (any other is HTTP 400 for the whole
/// request): the rest move into the description, nested ones too.
#[test]
fn formats_gemini_rejects_move_to_the_description() {
    let declaration = declared(
        "fetch",
        json!({"type": "object", "properties": {
            "url": {"type": "string", "format": "uri", "description": "Page to fetch"},
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "format": "int64"},
            "ratio": {"type": "number", "format": "double"},
            "id": {"type": "integer", "format": "uint32"},
            "links": {"type": "array", "items": {"type": "string", "format": "uri"}},
        }}),
    );
    let properties = &declaration["parameters"]["properties"];
    assert_eq!(
        properties["url"],
        json!({"type": "string", "description": "Page to fetch (format: uri)"})
    );
    assert_eq!(
        properties["when"],
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        properties["count"],
        json!({"type": "integer", "format": "int64"})
    );
    assert_eq!(
        properties["ratio"],
        json!({"type": "number", "format": "double"})
    );
    assert_eq!(
        properties["id"],
        json!({"type": "integer", "description": "(format: uint32)"})
    );
    assert_eq!(
        properties["links"]["items"],
        json!({"type": "string", "description": "(format: uri)"})
    );
}

/// Gemini refuses an object without properties and an array without items (HTTP 400
/// for the whole request), nested ones too: a map loses its type and says what it is,
/// tuples become items of their types, a bare array takes strings.
#[test]
fn nested_maps_and_tuples_become_what_gemini_takes() {
    let declaration = declared(
        "shape",
        json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Labels"},
            "extra": {"type": "object"},
            "tags": {"type": "array"},
            "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "old": {"type": "array", "items": [{"type": "boolean"}]},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        }}),
    );
    let properties = &declaration["parametersJsonSchema"]["properties"];
    assert_eq!(
        properties["labels"],
        json!({"type": "object", "description": "Labels (a JSON object; each value: string)", "additionalProperties": {"type": "string"}})
    );
    assert_eq!(
        properties["extra"],
        json!({"type": "object", "description": "(a JSON object)"})
    );
    assert_eq!(
        properties["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        properties["point"],
        json!({"type": "array", "items": {"type": "number"}, "description": "(in order: number, number)"})
    );
    assert_eq!(
        properties["pair"],
        json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
               "description": "(in order: string, integer)"})
    );
    assert_eq!(
        properties["old"],
        json!({"type": "array", "items": {"type": "boolean"}, "description": "(in order: boolean)"})
    );
    assert_eq!(
        properties["rows"]["items"],
        json!({"type": "object", "properties": {"id": {"type": "integer"}}})
    );
}

/// Items that are a map (an object of `additionalProperties`) stay one the way a property
/// would: without a type, said to be a JSON object of their values' type — they became
/// strings, and the model sent strings where the tool takes objects. Tuple members too.
#[test]
fn array_items_that_are_maps_stay_objects() {
    let declaration = declared(
        "batch",
        json!({"type": "object", "properties": {
            "counts": {"type": "array", "items": {"type": "object",
                       "additionalProperties": {"type": "integer"}, "description": "Counts"}},
            "rows": {"type": "array", "prefixItems": [{"type": "string"},
                     {"type": "object", "additionalProperties": {"type": "string"}}]},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [
            (
                "counts",
                json!({"type": "array", "items":
                       {"type": "object", "description": "Counts (a JSON object; each value: integer)", "additionalProperties": {"type": "integer"}}}),
            ),
            (
                "rows",
                json!({"type": "array",
                       "items": {"anyOf": [{"type": "string"},
                                           {"type": "object", "description": "(a JSON object; each value: string)", "additionalProperties": {"type": "string"}}]},
                       "description": "(in order: string, object)"}),
            ),
        ],
    );
}

/// Gemini refuses a `false` schema: a `false` union member is left out (a union of only
/// `false` cannot be given, like a `false` property); `items: true` are items of any value,
/// not strings; `items: false` make the array empty, or closed past its tuple.
#[test]
fn false_union_members_and_boolean_items_become_what_gemini_takes() {
    let declaration = declared(
        "shapes",
        json!({"type": "object", "required": ["id", "never"], "properties": {
            "id": {"anyOf": [{"type": "string"}, false, {"type": "integer"}]},
            "one": {"oneOf": [false, {"type": "boolean"}]},
            "never": {"anyOf": [false, false]},
            "anything": {"type": "array", "items": true},
            "none": {"type": "array", "items": false, "description": "Unused"},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "items": false, "maxItems": 5},
            "old": {"type": "array", "items": [{"type": "boolean"}], "additionalItems": false},
        }}),
    );
    let parameters = &declaration["parametersJsonSchema"];
    assert_eq!(parameters["required"], json!(["id"]));
    assert_eq!(parameters["description"], "(never cannot be given)");
    check_said_in_json_schema(
        parameters,
        [
            (
                "id",
                json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            ),
            ("one", json!({"type": "boolean"})),
            ("never", Value::Null),
            (
                "anything",
                json!({"type": "array", "items": {"description": "(any JSON value)"}}),
            ),
            (
                "none",
                json!({"type": "array", "items": {"type": "string"}, "maxItems": 0,
                       "description": "Unused (must be empty)"}),
            ),
            (
                "pair",
                json!({"type": "array", "maxItems": 2,
                       "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                       "description": "(in order: string, integer)"}),
            ),
            (
                "old",
                json!({"type": "array", "maxItems": 1, "items": {"type": "boolean"},
                       "description": "(in order: boolean)"}),
            ),
        ],
    );
    let unmet = declared(
        "unmet",
        json!({"type": "object", "properties": {"a": {"type": "string"}},
               "anyOf": [false]}),
    );
    assert_eq!(unmet["parameters"]["description"], "(cannot be given)");
}

/// Map values that are maps themselves lose their type as any map does, but are still said
/// (and, in a `parametersJsonSchema` root, sent) to be maps of their own values' type.
#[test]
fn map_values_that_are_maps_say_their_own_values() {
    let nested = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let declaration = declared(
        "groups",
        json!({"type": "object", "properties": {
            "groups": {"type": "object", "additionalProperties": nested.clone(),
                       "description": "Groups"},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [(
            "groups",
            json!({"type": "object", "description": "Groups (a JSON object; each value: a map of string)", "additionalProperties": {"type": "object", "description": "(a JSON object; each value: string)", "additionalProperties": {"type": "string"}}}),
        )],
    );
    let root = declared(
        "sections",
        json!({"type": "object", "additionalProperties": nested}),
    );
    assert_eq!(
        root["parametersJsonSchema"],
        json!({"type": "object", "description": "(a JSON object; each value: a map of string)",
               "additionalProperties": {"type": "object",
                                        "additionalProperties": {"type": "string"}}})
    );
    let open = declared(
        "open",
        json!({"type": "object", "additionalProperties": {"type": "object"}}),
    );
    assert_eq!(
        open["parametersJsonSchema"],
        json!({"type": "object", "description": "(a JSON object; each value: object)",
               "additionalProperties": {"type": "object"}})
    );
}

/// pydantic's `$ref` into `$defs` and a root `allOf` keep their parameters.
#[test]
fn references_and_all_of_keep_their_parameters() {
    let declaration = declared(
        "search",
        json!({"type": "object", "properties": {"opts": {"$ref": "#/$defs/Opts"}},
               "$defs": {"Opts": {"type": "object", "properties": {"depth": {"type": "integer"}}}}}),
    );
    assert_eq!(
        declaration["parameters"],
        json!({"type": "object", "properties": {"opts": {"type": "object",
            "properties": {"depth": {"type": "integer"}}}}})
    );
    let declaration = declared(
        "query",
        json!({"allOf": [{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}]}),
    );
    assert_eq!(
        declaration["parameters"],
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    );
}

/// `anyOf` / `oneOf` become `anyOf` in the subset; a null member is `nullable`, one member
/// left is inlined.
#[test]
fn unions_become_any_of_in_the_subset() {
    let declaration = declared(
        "union",
        json!({"type": "object", "properties": {
            "either": {"oneOf": [{"type": "string", "pattern": "x"}, {"type": "integer", "enum": [1, 2]}]},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "Maybe"},
        }}),
    );
    let properties = &declaration["parameters"]["properties"];
    // `pattern` is not sent (the subset has none); the member's description says it.
    assert_eq!(
        properties["either"],
        json!({"anyOf": [{"type": "string", "description": "(pattern: x)"},
                         {"type": "integer", "description": "(one of 1, 2)"}]})
    );
    assert_eq!(
        properties["maybe"],
        json!({"type": "string", "nullable": true, "description": "Maybe"})
    );
}

/// pydantic's `Optional[constr(pattern=…)]`: the one member left after the null is
/// inlined, and what its description says joins the holder's instead of being lost to it.
#[test]
fn an_inlined_members_constraints_join_the_holders_description() {
    let declaration = declared(
        "optional",
        json!({"type": "object", "properties": {
            "code": {"anyOf": [{"type": "string", "pattern": "^[A-Z]{3}$"}, {"type": "null"}],
                     "description": "Currency"},
            "link": {"anyOf": [{"type": "string", "format": "uri"}, {"type": "null"}]},
        }}),
    );
    let properties = &declaration["parameters"]["properties"];
    assert_eq!(
        properties["code"],
        json!({"type": "string", "nullable": true, "description": "Currency (pattern: ^[A-Z]{3}$)"})
    );
    assert_eq!(
        properties["link"],
        json!({"type": "string", "nullable": true, "description": "(format: uri)"})
    );
}

/// The keys of `schema` (and of the schemas inside it) outside the subset, `anyOf`,
/// `enum` and `also`: none may be sent.
fn keys_outside_the_subset(schema: &Value, also: &[&str]) -> Vec<String> {
    let mut outside = Vec::new();
    let mut unsent = Vec::new();
    let mut inside = |inner: &Value| outside.extend(keys_outside_the_subset(inner, also));
    if let Some(map) = schema.as_object() {
        for (key, value) in map {
            match key.as_str() {
                "properties" => value
                    .as_object()
                    .into_iter()
                    .flat_map(|properties| properties.values())
                    .for_each(&mut inside),
                "anyOf" => value.as_array().into_iter().flatten().for_each(&mut inside),
                "items" => inside(value),
                key if also.contains(&key) => inside(value),
                key if KEEP.contains(&key) || key == "enum" => {}
                other => unsent.push(other.to_owned()),
            }
        }
    }
    outside.extend(unsent);
    outside
}

/// Checks that `parameters` send no key outside the subset and render each `(property,
/// rendering)` as given.
fn check_said_not_sent<const N: usize>(parameters: &Value, expected: [(&str, Value); N]) {
    check_said(parameters, &[], expected);
}

/// Checks that `parameters` declared as JSON Schema send no key outside the subset but a
/// map's `additionalProperties`, and render each `(property, rendering)` as given.
fn check_said_in_json_schema<const N: usize>(parameters: &Value, expected: [(&str, Value); N]) {
    check_said(parameters, &["additionalProperties"], expected);
}

fn check_said<const N: usize>(parameters: &Value, also: &[&str], expected: [(&str, Value); N]) {
    assert_eq!(
        keys_outside_the_subset(parameters, also),
        Vec::<String>::new()
    );
    for (name, rendering) in expected {
        assert_eq!(parameters["properties"][name], rendering, "{name}");
    }
}

/// A string's `pattern` and `minLength`/`maxLength`, a number's exclusive bounds (draft
/// 2020-12 numbers, draft-4 booleans) and `multipleOf` are not sent but said in one
/// parenthesised hint, after a moved format and an enum's values, never repeating them.
#[test]
fn string_and_number_limits_are_said_not_sent() {
    let declaration = declared(
        "limits",
        json!({"type": "object", "properties": {
            "login": {"type": "string", "description": "Login", "pattern": "^[a-z]+$",
                      "minLength": 1, "maxLength": 64},
            "email": {"type": "string", "format": "email", "maxLength": 254},
            "step": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 5, "maximum": 100},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
            "size": {"const": 3, "exclusiveMaximum": 4},
            "mode": {"type": "string", "enum": ["a", "b"], "minLength": 1},
        }}),
    );
    check_said_not_sent(
        &declaration["parameters"],
        [
            (
                "login",
                json!({"type": "string",
                       "description": "Login (pattern: ^[a-z]+$; 1–64 characters)"}),
            ),
            (
                "email",
                json!({"type": "string",
                       "description": "(format: email; at most 254 characters)"}),
            ),
            (
                "step",
                json!({"type": "integer", "maximum": 100,
                       "description": "(greater than 0; a multiple of 5)"}),
            ),
            (
                "ratio",
                json!({"type": "number", "minimum": 0, "description": "(greater than 0)"}),
            ),
            (
                "size",
                json!({"type": "integer", "description": "(must be 3; less than 4)"}),
            ),
            (
                "mode",
                json!({"type": "string", "enum": ["a", "b"],
                       "description": "(at least 1 character)"}),
            ),
        ],
    );
}

/// `uniqueItems`, `minProperties`/`maxProperties`, `dependentRequired` (and draft-7
/// `dependencies`) and `additionalProperties: false` beside properties are not sent but
/// said in the hint, beside what it says of an array's or a map's shape.
#[test]
fn item_and_key_limits_are_said_not_sent() {
    let declaration = declared(
        "keys",
        json!({"type": "object", "additionalProperties": false,
               "dependencies": {"start": ["end"]},
               "properties": {
            "start": {"type": "integer"},
            "end": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string", "minLength": 1},
                     "uniqueItems": true, "maxItems": 5},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                     "uniqueItems": true},
            "options": {"type": "object", "additionalProperties": false, "minProperties": 1,
                        "properties": {"a": {"type": "string"}},
                        "dependentRequired": {"a": ["b"]}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                       "maxProperties": 3},
            "headers": {"type": "object", "additionalProperties": false,
                        "properties": {"host": {"type": "string"}},
                        "patternProperties": {"^x-": {"type": "string"}}},
        }}),
    );
    let parameters = &declaration["parametersJsonSchema"];
    assert_eq!(
        parameters["description"],
        "(if start is given, end must be too)"
    );
    check_said_in_json_schema(
        parameters,
        [
            (
                "tags",
                json!({"type": "array", "maxItems": 5, "description": "(unique items)",
                       "items": {"type": "string", "description": "(at least 1 character)"}}),
            ),
            (
                "pair",
                json!({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                       "description": "(in order: string, integer; unique items)"}),
            ),
            (
                "options",
                json!({"type": "object", "properties": {"a": {"type": "string"}},
                       "description": "(no other keys; at least 1 key; if a is given, b must be too)"}),
            ),
            (
                "labels",
                json!({"type": "object", "description": "(a JSON object; each value: string; at most 3 keys)", "additionalProperties": {"type": "string"}}),
            ),
            (
                "headers",
                json!({"type": "object", "properties": {"host": {"type": "string"}},
                       "description": "(keys matching ^x-: string; no other keys)"}),
            ),
        ],
    );
}

/// Gemini's subset has no `not`, `if`/`then`/`else` or `patternProperties`: they were
/// dropped without a word; now the description says them.
#[test]
fn constraints_the_subset_cannot_express_are_said_in_the_description() {
    let declaration = declared(
        "configure",
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "User", "not": {"enum": ["root", "admin"]}},
            "headers": {"type": "object", "patternProperties": {"^x-": {"type": "string"}},
                        "additionalProperties": false},
            "env": {"type": "object", "properties": {"path": {"type": "string"}},
                    "patternProperties": {"^[A-Z_]+$": {"type": "integer"}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                       "patternProperties": {"^n": {"type": "number"}}},
        },
        "if": {"properties": {"kind": {"const": "file"}}}, "then": {"required": ["path"]}}),
    );
    let parameters = &declaration["parametersJsonSchema"];
    assert_eq!(
        parameters["description"],
        "If kind is \"file\" or not given, path must be given."
    );
    let properties = &parameters["properties"];
    assert_eq!(
        properties["name"],
        json!({"type": "string", "description": "User Must not be: \"root\", \"admin\"."})
    );
    assert_eq!(
        properties["headers"],
        json!({"type": "object", "description": "(a JSON object; keys matching ^x-: string; no other keys)"})
    );
    assert_eq!(
        properties["env"],
        json!({"type": "object", "properties": {"path": {"type": "string"}},
               "description": "(keys matching ^[A-Z_]+$: integer)"})
    );
    assert_eq!(
        properties["labels"],
        json!({"type": "object", "description": "(a JSON object; each other value: string; keys matching ^n: number)", "additionalProperties": {"type": "string"}})
    );
}

/// A root that is only a map of arguments had no parameters at all (an object without
/// properties is refused as `parameters`): it is declared as `parametersJsonSchema`.
#[test]
fn a_root_map_of_arguments_is_declared_as_json_schema() {
    let declaration = declared(
        "env",
        json!({"type": "object", "description": "Variables",
               "additionalProperties": {"type": "string", "minLength": 1}}),
    );
    assert_eq!(
        declaration,
        json!({"name": "env", "description": "A tool.", "parametersJsonSchema": {
            "type": "object",
            "description": "Variables (a JSON object; each value: string (at least 1 character))",
            "additionalProperties": {"type": "string", "minLength": 1}}})
    );
    let free = declared("free", json!({"additionalProperties": true}));
    assert_eq!(
        free["parametersJsonSchema"],
        json!({"type": "object", "description": "(a JSON object)"})
    );
    let keyed = declared(
        "keyed",
        json!({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}}),
    );
    assert_eq!(
        keyed["parametersJsonSchema"],
        json!({"type": "object", "description": "(a JSON object; keys matching ^x-: integer)"})
    );
    assert!(keyed.get("parameters").is_none(), "{keyed}");
}

/// A map's values keep their limits: said beside their type (with what the subset would
/// keep for a schema of their own), and sent in a `parametersJsonSchema` root — a draft-4
/// exclusive bound as the exclusive number, so schema and words agree (`minimum: 0` allowed
/// the 0 that `greater than 0` excludes).
#[test]
fn map_value_limits_are_said_and_sent_where_json_schema_takes_them() {
    let declaration = declared(
        "maps",
        json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties":
                       {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}},
            "env": {"type": "object", "patternProperties":
                    {"^X": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10}}},
            "modes": {"type": "object", "additionalProperties":
                      {"type": "string", "enum": ["r", "w"]}},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [
            (
                "labels",
                json!({"type": "object", "description":
                    "(a JSON object; each value: string (pattern: ^[a-z]+$; at most 8 characters))",
                    "additionalProperties": {"type": "string", "description": "(pattern: ^[a-z]+$; at most 8 characters)"}}),
            ),
            (
                "env",
                json!({"type": "object", "description":
                    "(a JSON object; keys matching ^X: integer (at least 0; less than 10))"}),
            ),
            (
                "modes",
                json!({"type": "object", "description": "(a JSON object; each value: string (one of \"r\", \"w\"))", "additionalProperties": {"type": "string", "enum": ["r", "w"]}}),
            ),
        ],
    );
    let root = declared(
        "scores",
        json!({"type": "object", "additionalProperties":
               {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMinimum": true,
                "multipleOf": 0.5, "minLength": 3}}),
    );
    assert_eq!(
        root["parametersJsonSchema"],
        json!({"type": "object",
               "description": "(a JSON object; each value: number (at most 1; greater than 0; a multiple of 0.5))",
               "additionalProperties": {"type": "number", "exclusiveMinimum": 0,
                                        "maximum": 1, "multipleOf": 0.5}})
    );
    // A draft-4 exclusive maximum too; an exclusive flag without its bound sends nothing.
    let root = declared(
        "ratios",
        json!({"type": "object", "additionalProperties":
               {"type": "integer", "maximum": 10, "exclusiveMaximum": true,
                "exclusiveMinimum": true}}),
    );
    assert_eq!(
        root["parametersJsonSchema"]["additionalProperties"],
        json!({"type": "integer", "exclusiveMaximum": 10})
    );
}

/// `minimum`/`maximum` are sent only on numbers and `minItems`/`maxItems` only on arrays
/// (or where no type is declared): on a string they constrain nothing. One dropped from a
/// union of types (sent as its first) is said, as a map's values say it.
#[test]
fn range_and_item_limits_are_sent_only_for_their_types() {
    let declaration = declared(
        "typed",
        json!({"type": "object", "properties": {
            "name": {"type": "string", "minimum": 1, "maxItems": 3},
            "count": {"type": "integer", "minimum": 1, "maximum": 9, "minItems": 2},
            "tags": {"type": "array", "items": {"type": "string"},
                     "minItems": 1, "maxItems": 5, "maximum": 4},
            "loose": {"minimum": 0, "maxItems": 2},
            "either": {"type": ["string", "integer"], "minimum": 0, "maxItems": 2},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [
            ("name", json!({"type": "string"})),
            (
                "count",
                json!({"type": "integer", "minimum": 1, "maximum": 9}),
            ),
            (
                "tags",
                json!({"type": "array", "items": {"type": "string"},
                       "minItems": 1, "maxItems": 5}),
            ),
            ("loose", json!({"minimum": 0, "maxItems": 2})),
            (
                "either",
                json!({"type": "string", "description": "(at least 0)"}),
            ),
        ],
    );
}

/// Map values defined only by a union have no type of their own: the members' types are
/// said (a member that may be anything leaves the values unsaid, as before).
#[test]
fn map_values_of_a_union_say_their_members_types() {
    let declaration = declared(
        "unions",
        json!({"type": "object", "properties": {
            "settings": {"type": "object", "additionalProperties":
                         {"anyOf": [{"type": "string"}, {"type": "number"},
                                    {"type": "string", "format": "uri"}]}},
            "env": {"type": "object", "patternProperties":
                    {"^X": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}}},
            "loose": {"type": "object", "additionalProperties":
                      {"anyOf": [{"type": "string"}, {}]}},
        }}),
    );
    check_said_in_json_schema(
        &declaration["parametersJsonSchema"],
        [
            (
                "settings",
                json!({"type": "object", "description": "(a JSON object; each value: string or number)", "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "string", "description": "(format: uri)"}]}}),
            ),
            (
                "env",
                json!({"type": "object", "description": "(a JSON object; keys matching ^X: integer or boolean)"}),
            ),
            (
                "loose",
                json!({"type": "object", "description": "(a JSON object)", "additionalProperties": {"anyOf": [{"type": "string"}, {"description": "(any JSON value)"}]}}),
            ),
        ],
    );
    let root = declared(
        "variables",
        json!({"type": "object", "additionalProperties":
               {"anyOf": [{"type": "string"}, {"type": "null"}, {"type": "integer"}]}}),
    );
    assert_eq!(
        root["parametersJsonSchema"],
        json!({"type": "object",
               "description": "(a JSON object; each value: string or integer)"})
    );
}

/// `parameters` refuse a node without a type that is not an `anyOf` alone, and an `anyOf`
/// beside other fields: a tool that would hold one is declared as `parametersJsonSchema`,
/// `nullable` said as JSON Schema's `null` type. One without stays in `parameters`.
#[test]
fn a_tool_parameters_would_refuse_is_declared_as_json_schema() {
    let declaration = declared(
        "mixed",
        json!({"type": "object", "properties": {
            "payload": {"description": "Anything"},
            "id": {"description": "An id", "anyOf": [{"type": "string"}, {"type": "integer"}]},
            "mode": {"type": ["string", "null"], "enum": ["r", "w"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        }}),
    );
    assert!(declaration.get("parameters").is_none(), "{declaration}");
    assert_eq!(
        declaration["parametersJsonSchema"],
        json!({"type": "object", "properties": {
            "payload": {"description": "Anything (any JSON value)"},
            "id": {"description": "An id", "anyOf": [{"type": "string"}, {"type": "integer"}]},
            "mode": {"type": ["string", "null"], "enum": ["r", "w", null]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
        }})
    );
    let plain = declared(
        "plain",
        json!({"type": "object", "properties": {
            "mode": {"type": ["string", "null"], "enum": ["r", "w"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        }}),
    );
    assert_eq!(
        plain["parameters"],
        json!({"type": "object", "properties": {
            "mode": {"type": "string", "nullable": true, "enum": ["r", "w"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        }})
    );
}

/// A tool without parameters declares none; a name must start with a letter or `_`.
#[test]
fn no_parameters_and_names_gemini_takes() {
    let declaration = declared("1password__list", json!({"type": "object"}));
    assert_eq!(
        declaration,
        json!({"name": "_1password__list", "description": "A tool."})
    );
    let kept = declared("files__read", json!({"type": "object", "properties": {}}));
    assert_eq!(kept["name"], "files__read");
    assert!(kept.get("parameters").is_none(), "{kept}");
}
