//! Local `$ref`s and `allOf`, resolved into the schema that holds them, for the renderers
//! whose readers do not follow them: Gemini's subset drops `$ref`, `$defs` and `allOf`, and
//! the compact listing reads only a schema's own `properties`. Without this, a pydantic
//! model's nested parameter (`{"$ref": "#/$defs/Opts"}`) or a root `allOf` of parameter
//! groups renders as no parameters at all.
//!
//! [`inlined`] replaces every local reference (`#` plus a JSON pointer: `#/$defs/X`,
//! `#/definitions/X`) by its target and merges every `allOf` member into the schema holding
//! it (`properties`, `patternProperties` and `required` united; a property both define, the
//! `items` and the `additionalProperties` merged the same way). Where both constrain the
//! same value, the stricter constraint is kept: `enum` the values in both
//! (in the holder's order), `type` the types in both (`integer` where one says `number`), the
//! larger of two `minimum`, `exclusiveMinimum`, `minLength`, `minItems`, `minProperties` and
//! the smaller of two `maximum`, `exclusiveMaximum`, `maxLength`, `maxItems`,
//! `maxProperties`; where no value could satisfy both (no common type or value), and for
//! every other key (`description`, `format`, `pattern`, …), the holder's own stays. A value
//! the holder allows anything (`true`) takes the member's schema; one a member allows nothing
//! (`false`) allows nothing. Merging copies no definition: the members were inlined within
//! the budget below, so the result stays within it. A reference that cannot be inlined —
//! not local, pointing nowhere, recursive, or deeper than [`MAX_DEPTH`] — becomes a schema
//! whose description holds the minified JSON Schema it stood for, so the model still reads
//! it.
//!
//! Every copy of a definition costs its size, so the inlined references together may copy at
//! most [`MAX_INLINED_BYTES`] of definitions (descriptions of what could not be inlined
//! included): without a bound, definitions that each use the next ten times grow as ten to the
//! power of their depth (a 2 KB schema into 10⁸ objects), and two thousand uses of one 100 KB
//! definition into 200 MB, from a model's `search_tools` call. A reference met past the budget
//! is described by the reference alone (`{"$ref": "#/$defs/X"}`, with a note that it was left
//! out), so the result is at most the schema's own size, the budget, and one short description
//! per reference site.
//!
//! [`root_merged`] does the same at the root only, for the APIs that follow `$ref` themselves
//! (OpenAI, Anthropic) but need an object schema at the root.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// References followed inside one another before the rest is described instead.
pub const MAX_DEPTH: usize = 8;

/// Bytes of (minified) definitions the inlined references of one schema may copy before
/// further references are described by the reference alone (module doc).
pub const MAX_INLINED_BYTES: usize = 256 * 1024;

/// The target of a local reference in `root`.
fn target<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    root.pointer(reference.strip_prefix('#')?)
}

/// Merges `member` into `out`: properties and `required` united, the stricter of two
/// constraints kept, other keys kept where `out` already has them (module doc).
fn merge(out: &mut Map<String, Value>, member: Value) {
    let Value::Object(member) = member else {
        return;
    };
    for (key, value) in member {
        match (key.as_str(), out.get_mut(&key), value) {
            (
                "properties" | "patternProperties",
                Some(Value::Object(mine)),
                Value::Object(theirs),
            ) => {
                for (name, schema) in theirs {
                    match mine.get_mut(&name) {
                        Some(existing) => merge_schema(existing, schema),
                        None => {
                            mine.insert(name, schema);
                        }
                    }
                }
            }
            ("items" | "additionalProperties", Some(mine), theirs) => merge_schema(mine, theirs),
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (key, Some(mine), theirs) => {
                if let Some(kept) = stricter(key, mine, &theirs) {
                    *mine = kept;
                }
            }
            (_, None, value) => {
                out.insert(key, value);
            }
        }
    }
}

/// Merges a member's schema for one value (a property, the items, the other properties'
/// values) into the holder's: both objects merge (the member's constraints stay, the
/// stricter where both speak); a holder allowing anything (`true`) takes the member's, a
/// member allowing nothing (`false`) wins; otherwise the holder's stays.
fn merge_schema(mine: &mut Value, theirs: Value) {
    match (mine, theirs) {
        (Value::Object(mine), Value::Object(theirs)) => merge(mine, Value::Object(theirs)),
        (mine @ Value::Bool(true), theirs) | (mine, theirs @ Value::Bool(false)) => *mine = theirs,
        _ => {}
    }
}

/// Where the holder (`mine`) and a member both constrain a value by `key`, the constraint
/// that admits less; `None` keeps the holder's.
fn stricter(key: &str, mine: &Value, theirs: &Value) -> Option<Value> {
    match key {
        "enum" => {
            let (Value::Array(mine), Value::Array(theirs)) = (mine, theirs) else {
                return None;
            };
            let both: Vec<Value> = mine
                .iter()
                .filter(|value| theirs.contains(value))
                .cloned()
                .collect();
            (!both.is_empty()).then_some(Value::Array(both))
        }
        "type" => common_types(mine, theirs),
        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" | "minProperties" => {
            (theirs.as_f64()? > mine.as_f64()?).then(|| theirs.clone())
        }
        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" | "maxProperties" => {
            (theirs.as_f64()? < mine.as_f64()?).then(|| theirs.clone())
        }
        _ => None,
    }
}

/// The types two `type`s (a name or a list of names) both allow, `integer` where one allows
/// `number`; `None` when they share none.
fn common_types(mine: &Value, theirs: &Value) -> Option<Value> {
    let names = |types: &Value| -> Option<Vec<String>> {
        match types {
            Value::String(name) => Some(vec![name.clone()]),
            Value::Array(names) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect(),
            _ => None,
        }
    };
    let (mine, theirs) = (names(mine)?, names(theirs)?);
    let allows = |list: &[String], name: &str| list.iter().any(|t| t == name);
    let mut both: Vec<String> = Vec::new();
    for name in &mine {
        let common = if allows(&theirs, name) {
            name.as_str()
        } else if (name == "number" && allows(&theirs, "integer"))
            || (name == "integer" && allows(&theirs, "number"))
        {
            "integer"
        } else {
            continue;
        };
        if !allows(&both, common) {
            both.push(common.to_owned());
        }
    }
    match both.as_slice() {
        [] => None,
        [one] => Some(Value::String(one.clone())),
        _ => Some(Value::Array(both.into_iter().map(Value::String).collect())),
    }
}

/// An object with `properties` but no `type` is an object.
fn typed(out: &mut Map<String, Value>) {
    if !out.contains_key("type") && out.contains_key("properties") {
        out.insert("type".into(), Value::String("object".into()));
    }
}

/// `description` (a schema's, if any) with `hint` after it.
pub(crate) fn with_hint(description: Option<&Value>, hint: &str) -> String {
    match description.and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => format!("{} {hint}", text.trim_end()),
        _ => hint.to_owned(),
    }
}

/// The hint that opens what [`described`] says of the JSON Schema a reference stood for.
const STANDS_FOR: &str = "(JSON Schema: ";

/// A schema saying, in its description, the JSON Schema `original` it stands for, and `note`.
fn described(description: Option<&Value>, original: &Value, note: &str) -> Value {
    let text = with_hint(description, &format!("{STANDS_FOR}{original}{note})"));
    let mut out = Map::new();
    out.insert("description".into(), Value::String(text));
    Value::Object(out)
}

/// Whether `schema` is one [`described`] made of a reference that could not be inlined: its
/// description alone constrains the value (it must match the JSON Schema said there), though
/// no key of its own does.
pub(crate) fn stands_for_a_schema(schema: &Map<String, Value>) -> bool {
    schema.len() == 1
        && schema
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(|text| text.contains(STANDS_FOR) && text.ends_with(')'))
}

/// The schema `{"$ref": reference}`.
fn reference_only(reference: &str) -> Value {
    let mut out = Map::new();
    out.insert("$ref".into(), Value::String(reference.to_owned()));
    Value::Object(out)
}

/// Why a reference is not inlined.
enum NotInlined {
    /// Described by the JSON Schema it stands for (its target, or the reference itself).
    Described(Value),
    /// Past the budget: described by the reference alone.
    LeftOut,
}

struct Inliner<'a> {
    root: &'a Value,
    /// The references being inlined, outermost first.
    following: Vec<String>,
    /// Bytes of definitions copied so far (at most [`MAX_INLINED_BYTES`]).
    copied: usize,
    /// The minified size of each reference's target, measured once.
    sizes: HashMap<String, usize>,
}

impl Inliner<'_> {
    fn schema(&mut self, value: &Value) -> Value {
        match value {
            Value::Object(map) => self.object(map),
            Value::Array(members) => Value::Array(members.iter().map(|m| self.schema(m)).collect()),
            other => other.clone(),
        }
    }

    fn object(&mut self, map: &Map<String, Value>) -> Value {
        let resolved = match map.get("$ref").and_then(Value::as_str) {
            Some(reference) => match self.reference(reference) {
                Ok(resolved) => Some(resolved),
                Err(NotInlined::Described(original)) => {
                    return described(map.get("description"), &original, "");
                }
                Err(NotInlined::LeftOut) => {
                    let note = format!(
                        "; its definition is left out: the schema's references copy more than {MAX_INLINED_BYTES} bytes"
                    );
                    return described(map.get("description"), &reference_only(reference), &note);
                }
            },
            None => None,
        };
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            let inlined = match key.as_str() {
                "$ref" | "$defs" | "definitions" | "allOf" => continue,
                "properties" | "patternProperties" => Value::Object(
                    value
                        .as_object()
                        .map(|named| {
                            named
                                .iter()
                                .map(|(name, schema)| (name.clone(), self.schema(schema)))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                "enum" | "const" | "default" | "examples" | "required" => value.clone(),
                _ => self.schema(value),
            };
            out.insert(key.clone(), inlined);
        }
        if let Some(resolved) = resolved {
            merge(&mut out, resolved);
        }
        if let Some(members) = map.get("allOf").and_then(Value::as_array) {
            for member in members {
                let member = self.schema(member);
                merge(&mut out, member);
            }
        }
        if map.contains_key("$ref") || map.contains_key("allOf") {
            typed(&mut out);
        }
        Value::Object(out)
    }

    /// The target of `reference`, inlined; or why it is not.
    fn reference(&mut self, reference: &str) -> Result<Value, NotInlined> {
        let Some(found) = target(self.root, reference) else {
            return Err(NotInlined::Described(reference_only(reference)));
        };
        // Inlined or described, the copy costs the target's size.
        let size = *self
            .sizes
            .entry(reference.to_owned())
            .or_insert_with(|| found.to_string().len());
        if self.copied.saturating_add(size) > MAX_INLINED_BYTES {
            return Err(NotInlined::LeftOut);
        }
        self.copied += size;
        let recursive = self.following.iter().any(|seen| seen == reference);
        if recursive || self.following.len() >= MAX_DEPTH {
            return Err(NotInlined::Described(found.clone()));
        }
        self.following.push(reference.to_owned());
        let resolved = self.schema(found);
        self.following.pop();
        Ok(resolved)
    }
}

/// A copy of `schema` with its local references and `allOf`s inlined (module doc).
pub fn inlined(schema: &Value) -> Value {
    Inliner {
        root: schema,
        following: Vec::new(),
        copied: 0,
        sizes: HashMap::new(),
    }
    .schema(schema)
}

/// A copy of `schema` with only a root `$ref` and root `allOf` merged into the root (their
/// own references left for the reader to follow: `$defs` stays), so the root is an object
/// schema with its properties.
pub fn root_merged(schema: &Value) -> Value {
    let Value::Object(root) = schema else {
        return schema.clone();
    };
    if !root.contains_key("$ref") && !root.contains_key("allOf") {
        return schema.clone();
    }
    let one_level = |member: &Value| -> Option<Value> {
        match member.get("$ref").and_then(Value::as_str) {
            Some(reference) => target(schema, reference).cloned(),
            None => Some(member.clone()),
        }
    };
    let mut members = Vec::new();
    if root.contains_key("$ref") {
        members.push(one_level(schema));
    }
    if let Some(all) = root.get("allOf").and_then(Value::as_array) {
        members.extend(all.iter().map(one_level));
    }
    // A reference that points nowhere: the reader's own error says so better than a guess.
    let Some(members) = members.into_iter().collect::<Option<Vec<Value>>>() else {
        return schema.clone();
    };
    let mut out = root.clone();
    out.remove("$ref");
    out.remove("allOf");
    for member in members {
        merge(&mut out, member);
    }
    typed(&mut out);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// pydantic's nested model: the `$ref` is replaced by its definition, `$defs` goes, and
    /// the reference's own description stays over the definition's.
    #[test]
    fn local_references_are_inlined() {
        let schema = json!({
            "type": "object",
            "properties": {"opts": {"$ref": "#/$defs/Opts", "description": "Options"}},
            "$defs": {"Opts": {"type": "object", "description": "Theirs",
                               "properties": {"depth": {"type": "integer"}}}},
        });
        assert_eq!(
            inlined(&schema),
            json!({"type": "object", "properties": {"opts": {
                "description": "Options", "type": "object",
                "properties": {"depth": {"type": "integer"}}}}})
        );
    }

    /// `schema` inlined, within 2 seconds, and the size of the result minified.
    fn inlined_within_budget(schema: &Value) -> (Value, usize) {
        let started = std::time::Instant::now();
        let out = inlined(schema);
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(2), "{elapsed:?}");
        let size = out.to_string().len();
        (out, size)
    }

    /// Definitions that each use the next ten times would grow as ten to the power of their
    /// depth: past the budget references are left out, and the result stays small.
    #[test]
    fn nested_references_stop_growing_at_the_budget() {
        let mut defs = Map::new();
        for level in 0..8 {
            let next = json!({"$ref": format!("#/$defs/D{}", level + 1)});
            let properties: Map<String, Value> =
                (0..10).map(|k| (format!("p{k}"), next.clone())).collect();
            defs.insert(
                format!("D{level}"),
                json!({"type": "object", "properties": properties}),
            );
        }
        defs.insert("D8".into(), json!({"type": "string"}));
        let schema = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}},
                            "$defs": defs});
        let (out, size) = inlined_within_budget(&schema);
        assert!(size < 4 * MAX_INLINED_BYTES, "{size} bytes");
        // The first levels are inlined, the rest named.
        assert_eq!(
            out["properties"]["root"]["properties"]["p0"]["type"],
            "object"
        );
        assert!(out.to_string().contains("is left out"), "the rest is named");
    }

    /// Many uses of one large definition each cost its size: two thousand copies of 100 KB
    /// were 200 MB.
    #[test]
    fn many_uses_of_a_large_definition_stop_at_the_budget() {
        let properties: Map<String, Value> = (0..2000)
            .map(|k| (format!("p{k}"), json!({"$ref": "#/$defs/Big"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties, "$defs": {"Big": {
            "type": "string", "description": "x".repeat(100_000)}}});
        let (out, size) = inlined_within_budget(&schema);
        assert!(size < 2 * MAX_INLINED_BYTES, "{size} bytes");
        assert_eq!(out["properties"]["p0"]["type"], "string");
        let last = out["properties"]["p1999"]["description"]
            .as_str()
            .unwrap_or_default();
        assert!(
            last.contains("#/$defs/Big") && last.contains("left out"),
            "{last}"
        );
    }

    /// A property the holder only describes keeps the member's constraints on it.
    #[test]
    fn a_property_both_define_keeps_the_members_constraints() {
        let schema = json!({
            "type": "object",
            "properties": {"mode": {"description": "How to run"}},
            "allOf": [{"$ref": "#/$defs/Base"}],
            "$defs": {"Base": {"properties": {"mode": {"enum": ["a", "b"], "type": "string",
                                                      "description": "Base's"}},
                               "required": ["mode"]}},
        });
        assert_eq!(
            inlined(&schema),
            json!({"type": "object",
                   "properties": {"mode": {"description": "How to run", "enum": ["a", "b"],
                                           "type": "string"}},
                   "required": ["mode"]})
        );
    }

    /// Where holder and member both constrain a value, the stricter constraint stays: the
    /// holder's looser enum, type or bounds let through what the server then refuses.
    #[test]
    fn a_property_both_constrain_keeps_the_stricter_constraint() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"description": "How", "enum": ["c", "b", "a"], "type": ["string", "null"]},
                "count": {"type": "number", "minimum": 0, "maximum": 100, "format": "int32"},
                "tag": true,
                "odd": {"type": "string", "enum": ["x"]},
            },
            "allOf": [{"$ref": "#/$defs/Base"}],
            "$defs": {"Base": {"properties": {
                "mode": {"enum": ["a", "b"], "type": "string", "description": "Base's"},
                "count": {"type": "integer", "minimum": 1, "maximum": 200, "format": "int64"},
                "tag": {"type": "string"},
                "odd": {"type": "integer", "enum": ["y"]},
            }}},
        });
        let expected = json!({
            "mode": {"description": "How", "enum": ["b", "a"], "type": "string"},
            "count": {"type": "integer", "minimum": 1, "maximum": 100, "format": "int32"},
            "tag": {"type": "string"},
            // Nothing satisfies both: the holder's stays.
            "odd": {"type": "string", "enum": ["x"]},
        });
        assert_eq!(inlined(&schema)["properties"], expected);
        assert_eq!(root_merged(&schema)["properties"], expected);
    }

    /// An `allOf` member's constraints on the items, on the other properties' values and on
    /// the values of keys matching a pattern merge into the holder's as a property's do:
    /// the holder's whole `items` or `additionalProperties` used to win, losing the member's.
    #[test]
    fn all_of_merges_items_and_map_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string", "description": "A tag"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"},
                           "patternProperties": {"^x-": {"type": "string"}}},
                "any": {"type": "array", "items": true},
                "closed": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "allOf": [{"properties": {
                "tags": {"items": {"enum": ["a", "b"], "maxLength": 5}},
                "labels": {"additionalProperties": {"maxLength": 10},
                           "patternProperties": {"^x-": {"maxLength": 3}, "^y-": {"type": "integer"}}},
                "any": {"items": {"type": "integer"}},
                "closed": {"additionalProperties": false},
            }}],
        });
        assert_eq!(
            inlined(&schema)["properties"],
            json!({
                "tags": {"type": "array", "items": {"type": "string", "description": "A tag",
                                                    "enum": ["a", "b"], "maxLength": 5}},
                "labels": {"type": "object",
                           "additionalProperties": {"type": "string", "maxLength": 10},
                           "patternProperties": {"^x-": {"type": "string", "maxLength": 3},
                                                 "^y-": {"type": "integer"}}},
                "any": {"type": "array", "items": {"type": "integer"}},
                "closed": {"type": "object", "additionalProperties": false},
            })
        );
        let map = json!({"additionalProperties": {"type": "string"},
                         "allOf": [{"$ref": "#/$defs/M"}],
                         "$defs": {"M": {"type": "object", "additionalProperties": {"minLength": 1}}}});
        let expected = json!({"type": "object",
                              "additionalProperties": {"type": "string", "minLength": 1}});
        assert_eq!(inlined(&map), expected);
        assert_eq!(
            root_merged(&map)["additionalProperties"],
            expected["additionalProperties"]
        );
    }

    /// A root `allOf` of parameter groups (and a root `$ref`) is one object schema.
    #[test]
    fn all_of_members_merge_into_their_holder() {
        let schema = json!({
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"$ref": "#/definitions/B"},
            ],
            "definitions": {"B": {"properties": {"b": {"type": "integer"}}, "required": ["b"]}},
        });
        let expected = json!({"type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"]});
        assert_eq!(inlined(&schema), expected);
        let merged = root_merged(&schema);
        assert_eq!(merged["properties"]["a"], json!({"type": "string"}));
        assert_eq!(merged["properties"]["b"], json!({"type": "integer"}));
        assert_eq!(merged["required"], json!(["a", "b"]));
        assert_eq!(merged["type"], "object");
        let rooted = json!({"$ref": "#/$defs/Args", "$defs": {"Args": {"type": "object",
            "properties": {"q": {"$ref": "#/$defs/Q"}}}, "Q": {"type": "string"}}});
        let merged = root_merged(&rooted);
        assert_eq!(merged["properties"]["q"], json!({"$ref": "#/$defs/Q"}));
        assert!(merged.get("$defs").is_some(), "{merged}");
        assert_eq!(
            inlined(&rooted),
            json!({"type": "object", "properties": {"q": {"type": "string"}}})
        );
    }

    /// A recursive or dangling reference ends in a description of the schema it stood for,
    /// never a loop.
    #[test]
    fn references_that_cannot_be_inlined_are_described() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tree": {"$ref": "#/$defs/Node"},
                "far": {"$ref": "https://example.com/schema.json"},
            },
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        });
        let out = inlined(&schema);
        assert_eq!(
            out["properties"]["tree"]["properties"]["children"]["items"],
            json!({"description": format!("(JSON Schema: {})", schema["$defs"]["Node"])})
        );
        assert_eq!(
            out["properties"]["far"],
            json!({"description": "(JSON Schema: {\"$ref\":\"https://example.com/schema.json\"})"})
        );
    }
}
