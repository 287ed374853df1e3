//! Constraints a reader's schema subset cannot express — `not` and `if`/`then`/`else` —
//! said in words for the description of the value they constrain, so the model still learns
//! them (Gemini's subset has neither; [`crate::gemini`]). Each becomes one short sentence
//! that depends only on the schema:
//!
//! * a simple `not` (of `enum`, `const`, `type`, `required` or `pattern`) as
//!   `Must not be: "a", "b".`, `Must not be of type: null.`, `Must not have all of: a, b.`,
//!   `Must not match ^x.`;
//! * a conditional whose parts only name required properties and property values as
//!   `If kind is "file", path must be given; otherwise url must be given.`;
//! * anything else as the minified JSON Schema it is (`Must not match the JSON Schema: {…}.`).
//!
//! A sentence is at most [`MAX_WORDED_CHARS`] characters: a longer one becomes a sentence
//! saying that such a constraint applies, so a large schema cannot flood the description.

use serde_json::{Map, Value};

/// Longest sentence a constraint becomes, in characters.
pub const MAX_WORDED_CHARS: usize = 200;

/// Values listed in a sentence before the rest is cut to `…`.
const MAX_LISTED_VALUES: usize = 8;

/// Keys that say nothing a value must satisfy.
const ANNOTATIONS: [&str; 4] = ["description", "title", "examples", "default"];

/// `sentence`, or `too_long` when `sentence` is longer than [`MAX_WORDED_CHARS`].
pub fn bounded(sentence: String, too_long: &str) -> String {
    if sentence.chars().count() <= MAX_WORDED_CHARS {
        sentence
    } else {
        too_long.to_owned()
    }
}

/// `values` as JSON, comma-separated, the ones past [`MAX_LISTED_VALUES`] cut to `…`.
fn listed<'a>(values: impl IntoIterator<Item = &'a Value>) -> String {
    let values: Vec<&Value> = values.into_iter().collect();
    let mut shown: Vec<String> = values
        .iter()
        .take(MAX_LISTED_VALUES)
        .map(ToString::to_string)
        .collect();
    if values.len() > MAX_LISTED_VALUES {
        shown.push("…".to_owned());
    }
    shown.join(", ")
}

/// Names (of properties) comma-separated, as written.
fn names(list: &[Value]) -> Option<String> {
    let names: Option<Vec<&str>> = list.iter().map(Value::as_str).collect();
    names
        .filter(|names| !names.is_empty())
        .map(|n| n.join(", "))
}

/// The one key of `schema` that constrains its value (annotations aside), if it has exactly
/// one.
fn only_constraint(schema: &Value) -> Option<(&str, &Value)> {
    let mut constraints = schema
        .as_object()?
        .iter()
        .filter(|(key, _)| !ANNOTATIONS.contains(&key.as_str()));
    let only = constraints.next()?;
    constraints
        .next()
        .is_none()
        .then_some((only.0.as_str(), only.1))
}

/// What `not` forbids, in one sentence (module doc).
pub fn negation(not: &Value) -> String {
    let simple = match only_constraint(not) {
        Some(("enum", Value::Array(values))) if !values.is_empty() => {
            Some(format!("Must not be: {}.", listed(values)))
        }
        Some(("const", value)) => Some(format!("Must not be: {value}.")),
        Some(("type", Value::String(kind))) => Some(format!("Must not be of type: {kind}.")),
        Some(("type", Value::Array(kinds))) => {
            names(kinds).map(|kinds| format!("Must not be of type: {kinds}."))
        }
        Some(("required", Value::Array(required))) => {
            names(required).map(|required| format!("Must not have all of: {required}."))
        }
        Some(("pattern", Value::String(pattern))) => Some(format!("Must not match {pattern}.")),
        _ => None,
    };
    let sentence = simple.unwrap_or_else(|| format!("Must not match the JSON Schema: {not}."));
    bounded(
        sentence,
        "Some values are excluded by a further constraint (not).",
    )
}

/// Whether a clause states a condition or a requirement.
#[derive(Clone, Copy)]
enum Mood {
    /// `kind is "file"`, `path is given`.
    States,
    /// `kind must be "file"`, `path must be given`.
    Requires,
}

/// `required` and property values (`const`, `enum`) of `schema` as a clause joined by
/// `and`; `None` when it constrains anything else.
fn clause(schema: &Value, mood: Mood) -> Option<String> {
    let schema = schema.as_object()?;
    let mut parts = Vec::new();
    for (key, value) in schema {
        match (key.as_str(), value) {
            (key, _) if ANNOTATIONS.contains(&key) => {}
            ("required", Value::Array(required)) => {
                // A condition on a property's value already says it is given.
                let valued = schema.get("properties").and_then(Value::as_object);
                let required: Vec<Value> = required
                    .iter()
                    .filter(|name| {
                        !matches!(mood, Mood::States)
                            || !name
                                .as_str()
                                .is_some_and(|name| valued.is_some_and(|v| v.contains_key(name)))
                    })
                    .cloned()
                    .collect();
                if required.is_empty() {
                    continue;
                }
                let verb = match (mood, required.len()) {
                    (Mood::States, 1) => "is given",
                    (Mood::States, _) => "are given",
                    (Mood::Requires, _) => "must be given",
                };
                parts.push(format!("{} {verb}", names(&required)?));
            }
            ("properties", Value::Object(properties)) => {
                parts.extend(property_values(properties, mood)?);
            }
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// `name is "value"` (or `is one of …`, `must be …`) for each property that `properties`
/// gives a `const` or an `enum`; `None` when one says anything else.
fn property_values(properties: &Map<String, Value>, mood: Mood) -> Option<Vec<String>> {
    let verb = match mood {
        Mood::States => "is",
        Mood::Requires => "must be",
    };
    properties
        .iter()
        .map(|(name, schema)| match only_constraint(schema)? {
            ("const", value) => Some(format!("{name} {verb} {value}")),
            ("enum", Value::Array(values)) if !values.is_empty() => {
                Some(format!("{name} {verb} one of {}", listed(values)))
            }
            _ => None,
        })
        .collect()
}

/// The `if`/`then`/`else` of `schema` in one sentence (module doc); `None` without an `if`
/// and a `then` or an `else` (an `if` alone constrains nothing).
pub fn conditional(schema: &Map<String, Value>) -> Option<String> {
    let condition = schema.get("if")?;
    let (then, otherwise) = (schema.get("then"), schema.get("else"));
    if then.is_none() && otherwise.is_none() {
        return None;
    }
    let brief = || -> Option<String> {
        let condition = clause(condition, Mood::States)?;
        // A part that is present but cannot be said makes the whole JSON Schema.
        let requirement = |part: Option<&Value>| match part {
            Some(part) => clause(part, Mood::Requires).map(Some),
            None => Some(None),
        };
        let then = requirement(then)?;
        let otherwise = requirement(otherwise)?;
        Some(match (then, otherwise) {
            (Some(then), Some(otherwise)) => {
                format!("If {condition}, {then}; otherwise {otherwise}.")
            }
            (Some(then), None) => format!("If {condition}, {then}."),
            (None, Some(otherwise)) => format!("Unless {condition}, {otherwise}."),
            (None, None) => return None,
        })
    };
    let sentence = brief().unwrap_or_else(|| {
        let mut parts = Map::new();
        for key in ["if", "then", "else"] {
            if let Some(part) = schema.get(key) {
                parts.insert(key.to_owned(), part.clone());
            }
        }
        format!(
            "Must match the conditional JSON Schema: {}.",
            Value::Object(parts)
        )
    });
    Some(bounded(
        sentence,
        "A further conditional constraint (if/then/else) applies.",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn conditional_of(schema: Value) -> Option<String> {
        conditional(schema.as_object().expect("an object schema"))
    }

    /// Simple negations read as sentences; any other is its JSON Schema; a long one says
    /// only that it applies.
    #[test]
    fn negations_in_words() {
        let cases = [
            (json!({"enum": ["a", 1]}), "Must not be: \"a\", 1."),
            (
                json!({"const": "root", "description": "x"}),
                "Must not be: \"root\".",
            ),
            (json!({"type": "null"}), "Must not be of type: null."),
            (
                json!({"type": ["string", "null"]}),
                "Must not be of type: string, null.",
            ),
            (
                json!({"required": ["a", "b"]}),
                "Must not have all of: a, b.",
            ),
            (json!({"pattern": "^/"}), "Must not match ^/."),
            (
                json!({"type": "string", "minLength": 3}),
                "Must not match the JSON Schema: {\"type\":\"string\",\"minLength\":3}.",
            ),
            (
                json!({"enum": (0..20).collect::<Vec<u32>>()}),
                "Must not be: 0, 1, 2, 3, 4, 5, 6, 7, ….",
            ),
            (
                json!({"pattern": "x".repeat(300)}),
                "Some values are excluded by a further constraint (not).",
            ),
        ];
        for (not, expected) in cases {
            assert_eq!(negation(&not), expected, "{not}");
        }
    }

    /// Conditionals on property values and required properties read as sentences; others
    /// are their JSON Schema, bounded.
    #[test]
    fn conditionals_in_words() {
        assert_eq!(
            conditional_of(json!({
                "if": {"properties": {"kind": {"const": "file"}}, "required": ["kind"]},
                "then": {"required": ["path"]},
                "else": {"required": ["url", "method"]},
            })),
            Some(
                "If kind is \"file\", path must be given; otherwise url, method must be given."
                    .to_owned()
            )
        );
        assert_eq!(
            conditional_of(json!({"if": {"properties": {"mode": {"enum": ["a", "b"]}}},
                                  "else": {"properties": {"level": {"const": 3}}}})),
            Some("Unless mode is one of \"a\", \"b\", level must be 3.".to_owned())
        );
        assert_eq!(
            conditional_of(json!({"if": {"type": "string"}, "then": {"minLength": 1}})),
            Some(
                "Must match the conditional JSON Schema: {\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":1}}."
                    .to_owned()
            )
        );
        assert_eq!(
            conditional_of(json!({"if": {"pattern": "y".repeat(300)}, "then": {"minLength": 1}})),
            Some("A further conditional constraint (if/then/else) applies.".to_owned())
        );
        assert_eq!(conditional_of(json!({"if": {"required": ["a"]}})), None);
        assert_eq!(conditional_of(json!({"type": "object"})), None);
    }
}
