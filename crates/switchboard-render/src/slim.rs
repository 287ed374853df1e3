//! Schema slimming for LLM formats, keeping meaning: drops `$schema`, `$comment`, the root's
//! `$id` (a nested one stays: a `$ref` may name it),
//! empty `required` and `description`, `default: null`, and `title`s that only repeat the
//! property name. Constraints the model must respect (`additionalProperties`, enums, ranges,
//! formats, patterns) are kept. Measured by the `tokens` benchmark.

use serde_json::{Map, Value};

fn repeats(title: &str, key: &str) -> bool {
    let simple = |text: &str| -> String {
        text.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    simple(title) == simple(key)
}

fn slim_value(value: &Value, property: Option<&str>) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (key, inner) in map {
                let drop = match key.as_str() {
                    "$schema" | "$comment" => true,
                    "required" => inner.as_array().is_some_and(Vec::is_empty),
                    "description" => inner.as_str().is_some_and(|d| d.trim().is_empty()),
                    "default" => inner.is_null(),
                    "title" => property
                        .zip(inner.as_str())
                        .is_some_and(|(p, t)| repeats(t, p)),
                    _ => false,
                };
                if drop {
                    continue;
                }
                let slimmed = match key.as_str() {
                    "properties" | "$defs" | "definitions" | "patternProperties" => Value::Object(
                        inner
                            .as_object()
                            .map(|props| {
                                props
                                    .iter()
                                    .map(|(k, v)| (k.clone(), slim_value(v, Some(k))))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    "enum" | "const" | "examples" | "default" | "required" => inner.clone(),
                    _ => slim_value(inner, None),
                };
                out.insert(key.clone(), slimmed);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| slim_value(v, None)).collect()),
        other => other.clone(),
    }
}

/// A slimmed copy of an input schema.
pub fn slim(schema: &Value) -> Value {
    let mut slimmed = slim_value(schema, None);
    if let Value::Object(root) = &mut slimmed {
        root.remove("$id");
    }
    slimmed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A nested `$id` is a `$ref`'s target: it stays; the root's goes.
    #[test]
    fn a_nested_id_that_a_ref_names_is_kept() {
        let schema = json!({
            "$id": "urn:root",
            "$defs": {"a": {"$id": "urn:a", "type": "object"}},
            "properties": {"x": {"$ref": "urn:a"}}
        });
        let slimmed = super::slim(&schema);
        assert_eq!(slimmed["$defs"]["a"]["$id"], "urn:a");
        assert!(slimmed.get("$id").is_none());
    }

    #[test]
    fn drops_only_what_carries_no_meaning() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "owner": {"type": "string", "title": "Owner", "description": ""},
                "count": {"type": "integer", "title": "How many", "default": null, "minimum": 1},
                "mode": {"enum": ["a", "b"], "default": "a"}
            },
            "required": [],
            "additionalProperties": false
        });
        assert_eq!(
            super::slim(&schema),
            json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "string"},
                    "count": {"type": "integer", "title": "How many", "minimum": 1},
                    "mode": {"enum": ["a", "b"], "default": "a"}
                },
                "additionalProperties": false
            })
        );
    }
}
