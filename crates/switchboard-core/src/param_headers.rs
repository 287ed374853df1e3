//! A tool's `x-mcp-header` declarations (SEP-2243, protocol version 2026-07-28): an input
//! schema property annotated `"x-mcp-header": "Region"` is mirrored by HTTP clients into an
//! `Mcp-Param-Region` header on every `tools/call`, so proxies and load balancers can route
//! on it without reading the body.
//!
//! A declaration must sit on a property reached from the root through `properties` keys alone
//! (not under `items`, `anyOf`, `$defs`, …), name an RFC 9110 token that no other declaration
//! of the tool names (ignoring case), and annotate a `string`, `integer`, `number` or
//! `boolean` property; a tool breaking any of these has an invalid definition. The header
//! carries the argument as text (`42`, `true`); a null or absent argument has no header. How
//! the text rides in a header (`=?base64?…?=`) is the MCP crate's concern.

use serde_json::{Map, Value};

/// The annotation's key in a property's schema.
pub const ANNOTATION: &str = "x-mcp-header";

/// The prefix of every mirrored header's name.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

/// One declaration: the header's name (after the prefix) and the argument's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// As declared (`Region`); header names compare ignoring case.
    pub name: String,
    /// Property names from the root of the arguments.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The header's full name, lower-cased as HTTP header maps keep them.
    pub fn header_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.name).to_ascii_lowercase()
    }

    /// Where the argument sits, for messages (`arguments.target.region`).
    pub fn field(&self) -> String {
        format!("arguments.{}", self.path.join("."))
    }

    /// The argument as the header carries it; `None` when it is null or absent (or not a
    /// string, number or boolean, which the schema's validation reports).
    pub fn value_in(&self, arguments: &Map<String, Value>) -> Option<String> {
        let (first, rest) = self.path.split_first()?;
        let mut value = arguments.get(first)?;
        for key in rest {
            value = value.get(key)?;
        }
        match value {
            Value::String(text) => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            Value::Bool(flag) => Some(flag.to_string()),
            _ => None,
        }
    }
}

/// Schema keywords whose values are subschemas (objects, or arrays of them) other than
/// `properties`: a declaration under one of them is not reachable.
const SUBSCHEMA_KEYWORDS: [&str; 19] = [
    "items",
    "prefixItems",
    "contains",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentSchemas",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
    "additionalItems",
];

/// The declarations of an input schema, in document order; `Err` says what makes the
/// definition invalid, and where (a JSON pointer into the schema).
pub fn declared(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, "", Some(&mut Vec::new()), &mut found)?;
    let mut seen: Vec<String> = Vec::with_capacity(found.len());
    for declaration in &found {
        let lower = declaration.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!(
                "{ANNOTATION} '{}' is declared twice (header names ignore case)",
                declaration.name
            ));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Looks for declarations in the schema node at `pointer`; `chain` is the property path
/// when the node is reached through `properties` alone.
fn walk(
    node: &Value,
    pointer: &str,
    chain: Option<&mut Vec<String>>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Value::Object(node) = node else {
        return Ok(());
    };
    let mut chain = chain;
    if let Some(name) = node.get(ANNOTATION) {
        let path = match chain.as_deref() {
            Some(path) if !path.is_empty() => path.clone(),
            _ => {
                return Err(format!(
                    "{ANNOTATION} at '{pointer}' is not on a property reached through 'properties' alone"
                ));
            }
        };
        found.push(declaration(name, node, pointer, path)?);
    }
    if let Some(Value::Object(properties)) = node.get("properties") {
        for (key, property) in properties {
            let at = format!("{pointer}/properties/{}", escape(key));
            match chain.as_deref_mut() {
                Some(path) => {
                    path.push(key.clone());
                    let walked = walk(property, &at, Some(path), found);
                    path.pop();
                    walked?;
                }
                None => walk(property, &at, None, found)?,
            }
        }
    }
    for keyword in SUBSCHEMA_KEYWORDS {
        let at = format!("{pointer}/{keyword}");
        match node.get(keyword) {
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    walk(item, &format!("{at}/{index}"), None, found)?;
                }
            }
            Some(Value::Object(map)) if keyword_maps_names(keyword) => {
                for (key, item) in map {
                    walk(item, &format!("{at}/{}", escape(key)), None, found)?;
                }
            }
            Some(item) => walk(item, &at, None, found)?,
            None => {}
        }
    }
    Ok(())
}

/// Keywords whose object value maps names to subschemas (rather than being one).
fn keyword_maps_names(keyword: &str) -> bool {
    matches!(
        keyword,
        "patternProperties" | "dependentSchemas" | "$defs" | "definitions"
    )
}

fn declaration(
    name: &Value,
    node: &Map<String, Value>,
    pointer: &str,
    path: Vec<String>,
) -> Result<ParamHeader, String> {
    let Some(name) = name.as_str().filter(|name| is_token(name)) else {
        return Err(format!(
            "{ANNOTATION} at '{pointer}' must be a non-empty HTTP token (letters, digits and !#$%&'*+-.^_`|~), found {name}"
        ));
    };
    let kind = node.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("string" | "integer" | "number" | "boolean")) {
        return Err(format!(
            "{ANNOTATION} '{name}' at '{pointer}' is on a property whose type is not string, integer, number or boolean"
        ));
    }
    Ok(ParamHeader {
        name: name.to_owned(),
        path,
    })
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A JSON pointer's escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn declarations_on_nested_properties_are_found_with_their_paths() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "target": {"type": "object", "properties": {
                "priority": {"type": "integer", "x-mcp-header": "Priority"}
            }},
            "plain": {"type": "string"}
        }});
        let declared = declared(&schema).expect("valid");
        assert_eq!(
            declared,
            [
                ParamHeader {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
                ParamHeader {
                    name: "Priority".into(),
                    path: vec!["target".into(), "priority".into()]
                },
            ]
        );
        assert_eq!(declared[0].header_name(), "mcp-param-region");
        assert_eq!(declared[1].field(), "arguments.target.priority");
        let arguments = json!({"region": "eu-west", "target": {"priority": 42}});
        let arguments = arguments.as_object().expect("object");
        assert_eq!(declared[0].value_in(arguments).as_deref(), Some("eu-west"));
        assert_eq!(declared[1].value_in(arguments).as_deref(), Some("42"));
        let absent = json!({"region": null});
        assert_eq!(
            declared[0].value_in(absent.as_object().expect("object")),
            None
        );
        assert_eq!(
            declared[1].value_in(absent.as_object().expect("object")),
            None
        );
    }

    #[test]
    fn a_schema_without_declarations_has_none() {
        let schema = json!({"type": "object", "properties": {"x-mcp-header": {"type": "string"}}});
        assert_eq!(declared(&schema), Ok(Vec::new()));
    }

    #[test]
    fn invalid_declarations_say_what_and_where() {
        let cases = [
            (
                json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}}}}),
                "'/properties/tags/items' is not on a property reached through 'properties' alone",
            ),
            (
                json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "'/anyOf/0/properties/a' is not on a property",
            ),
            (
                json!({"type": "object", "x-mcp-header": "Root"}),
                "at '' is not on a property",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
                "must be a non-empty HTTP token",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
                "'A' at '/properties/a' is on a property whose type is not string",
            ),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Region"},
                    "b": {"type": "string", "x-mcp-header": "REGION"}
                }}),
                "'REGION' is declared twice",
            ),
        ];
        for (schema, expected) in cases {
            let problem = declared(&schema).expect_err("invalid");
            assert!(problem.contains(expected), "{problem} ∌ {expected}");
        }
    }
}
