//! Constraints a reader's schema subset cannot express — `not`, `if`/`then`/`else`, and the
//! limits on a value's pattern, length, range, items and keys — said in words for the
//! description of the value they constrain, so the model still learns them (Gemini's subset
//! has none of them; [`crate::gemini`]). `not` and a conditional each become one short
//! sentence that depends only on the schema:
//!
//! * a simple `not` (of `enum`, `const`, `type`, `required` or `pattern`) as
//!   `Must not be: "a", "b".`, `Must not be of type: null.`, `Must not have all of: a, b.`,
//!   `Must not match ^x.`;
//! * a conditional whose parts only name required properties and property values as
//!   `If kind is "file", path must be given; otherwise url must be given.` (a value of a
//!   property its part does not require is met by its absence too: `kind is "file" or not
//!   given`, `mode must be "r" if given`);
//! * anything else as the minified JSON Schema it is (`Must not match the JSON Schema: {…}.`).
//!
//! The limits become clauses for one parenthesised hint ([`limits`]): `pattern: ^[a-z]+$`,
//! `1–64 characters` (`minLength`/`maxLength`), `greater than 0` / `less than 9`
//! (`exclusiveMinimum`/`exclusiveMaximum`, a number, or `true` beside `minimum`/`maximum` in
//! draft 4), `a multiple of 5`, `unique items`, `at most 3 keys`
//! (`minProperties`/`maxProperties`), `if a is given, b must be too` (`dependentRequired`,
//! or draft-7 `dependencies` of the array form), `if a is given, b must be given`
//! (`dependentSchemas`, or `dependencies` of the schema form: a requirement in words where it
//! only names required properties and values, else the object's JSON Schema). A limit is said only where the schema
//! declares a type it applies to, or no type (`minLength` on a number constrains nothing).
//!
//! A map's values ([`value_limits`]) add what the subset would keep for a schema of their own:
//! `one of "a", "b"`, `format: uri`, `at least 0`, `1–5 items`.
//!
//! A sentence (and a pattern or dependencies clause) is at most [`MAX_WORDED_CHARS`]
//! characters: a longer one becomes one saying that such a constraint applies, so a large
//! schema cannot flood the description.

use serde_json::{Map, Value};

/// Longest sentence a constraint becomes, in characters.
pub const MAX_WORDED_CHARS: usize = 200;

/// Values listed in a sentence before the rest is cut to `…`.
const MAX_LISTED_VALUES: usize = 8;

/// Keys that say nothing a value must satisfy.
const ANNOTATIONS: [&str; 8] = [
    "description",
    "title",
    "examples",
    "default",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Whether `schema` holds annotations only (or nothing): any JSON value meets it.
pub fn only_annotations(schema: &Map<String, Value>) -> bool {
    schema.keys().all(|key| ANNOTATIONS.contains(&key.as_str()))
}

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

/// The constraints of `schema` on a value's pattern, length, range, items and keys that a
/// subset keeping only `minimum`, `maximum`, `minItems` and `maxItems` cannot express, as
/// clauses for one parenthesised hint (module doc), each only where `schema` may be of the
/// type it applies to; empty when it has none.
pub fn limits(schema: &Map<String, Value>) -> Vec<String> {
    let mut clauses = Vec::new();
    let declares = |kinds: &[&str]| declares_any(schema, kinds);
    if declares(&["string"]) {
        if let Some(Value::String(pattern)) = schema.get("pattern") {
            clauses.push(bounded(
                format!("pattern: {pattern}"),
                "a pattern too long to show",
            ));
        }
        clauses.extend(counted(schema, ("minLength", "maxLength"), "character"));
    }
    if declares(&["number", "integer"]) {
        clauses.extend(exclusive(
            schema,
            ("exclusiveMinimum", "minimum"),
            "greater than",
        ));
        clauses.extend(exclusive(
            schema,
            ("exclusiveMaximum", "maximum"),
            "less than",
        ));
        if let Some(step) = schema.get("multipleOf").filter(|step| step.is_number()) {
            clauses.push(format!("a multiple of {step}"));
        }
    }
    if declares(&["array"]) && schema.get("uniqueItems") == Some(&Value::Bool(true)) {
        clauses.push("unique items".to_owned());
    }
    if declares(&["object"]) {
        clauses.extend(counted(schema, ("minProperties", "maxProperties"), "key"));
        clauses.extend(dependencies(schema));
    }
    clauses
}

/// The constraints of a map's value schema (`additionalProperties`, a `patternProperties`
/// member) in words, for the clause naming the values' type — where the value is no
/// schema of its own, the subset's kept keys are lost too: the values (`one of "a", "b"`,
/// `must be "a"`), `format: uri`, inclusive bounds (`at least 0`, `at most 9`), item counts
/// (`1–5 items`), then [`limits`]; empty when it has none.
pub fn value_limits(schema: &Map<String, Value>) -> Vec<String> {
    let mut clauses = Vec::new();
    match (schema.get("const"), schema.get("enum")) {
        (Some(value), _) => clauses.push(format!("must be {value}")),
        (_, Some(Value::Array(values))) if !values.is_empty() => {
            clauses.push(format!("one of {}", listed(values)));
        }
        _ => {}
    }
    if let Some(Value::String(format)) = schema.get("format") {
        clauses.push(format!("format: {format}"));
    }
    clauses.extend(inclusive_limits(schema));
    clauses.extend(limits(schema));
    clauses
}

/// The inclusive bounds (`at least 0`, `at most 9`, where no draft-4 `exclusiveMinimum:
/// true` makes them [`limits`]' `greater than`) and item counts (`1–5 items`) of `schema`,
/// each only where it may be of the type the limit applies to; empty when it has none.
pub fn inclusive_limits(schema: &Map<String, Value>) -> Vec<String> {
    let mut clauses = Vec::new();
    if declares_any(schema, &["number", "integer"]) {
        let bounds = [
            ("minimum", "exclusiveMinimum", "at least"),
            ("maximum", "exclusiveMaximum", "at most"),
        ];
        for (inclusive, exclusive, relation) in bounds {
            // A draft-4 `exclusiveMinimum: true` makes the bound [`limits`]' `greater than`.
            let excluded = schema.get(exclusive) == Some(&Value::Bool(true));
            if let Some(bound) = schema.get(inclusive).filter(|bound| bound.is_number())
                && !excluded
            {
                clauses.push(format!("{relation} {bound}"));
            }
        }
    }
    if declares_any(schema, &["array"]) {
        clauses.extend(counted(schema, ("minItems", "maxItems"), "item"));
    }
    clauses
}

/// Whether `schema` may be of one of `kinds`: it declares one of them in `type` (a name or a
/// list), or declares no type at all. A limit applies only to values of its own type (a
/// `minLength` says nothing of a number), so one beside other declared types is not said:
/// `at least 3 characters` on a number would mislead.
fn declares_any(schema: &Map<String, Value>, kinds: &[&str]) -> bool {
    let declared = |kind: &Value| kind.as_str().is_some_and(|kind| kinds.contains(&kind));
    match schema.get("type") {
        Some(Value::Array(declared_kinds)) => declared_kinds.iter().any(declared),
        Some(kind @ Value::String(_)) => declared(kind),
        _ => true,
    }
}

/// A count between the `(least, most)` keys of `schema` in `unit`s: `1–64 characters`,
/// `at least 1 key`, `exactly 8 characters`; `None` when neither bounds it (a least of 0
/// does not).
fn counted(schema: &Map<String, Value>, (least, most): (&str, &str), unit: &str) -> Option<String> {
    let least = schema
        .get(least)
        .and_then(Value::as_u64)
        .filter(|least| *least > 0);
    let most = schema.get(most).and_then(Value::as_u64);
    let units = |count: u64| match count {
        1 => format!("1 {unit}"),
        count => format!("{count} {unit}s"),
    };
    match (least, most) {
        (Some(least), Some(most)) if least == most => Some(format!("exactly {}", units(most))),
        (Some(least), Some(most)) => Some(format!("{least}–{most} {unit}s")),
        (Some(least), None) => Some(format!("at least {}", units(least))),
        (None, Some(most)) => Some(format!("at most {}", units(most))),
        (None, None) => None,
    }
}

/// An exclusive bound as `greater than 0` (`relation` and the bound): the number of the
/// `exclusive` key (draft 6 on), or the `inclusive` key's number where `exclusive` is `true`
/// (draft 4); `None` otherwise.
fn exclusive(
    schema: &Map<String, Value>,
    (exclusive, inclusive): (&str, &str),
    relation: &str,
) -> Option<String> {
    let bound = match schema.get(exclusive)? {
        bound @ Value::Number(_) => bound,
        Value::Bool(true) => schema.get(inclusive).filter(|bound| bound.is_number())?,
        _ => return None,
    };
    Some(format!("{relation} {bound}"))
}

/// `if a is given, b must be too` for each property that `dependentRequired` (or a draft-7
/// `dependencies` entry of the array form) makes require others, and `if a is given, …` for
/// each that `dependentSchemas` (or a `dependencies` entry of the schema form) constrains
/// further ([`dependent_schema`]), as one bounded clause; `None` when there are none.
fn dependencies(schema: &Map<String, Value>) -> Option<String> {
    let mut clauses: Vec<String> = Vec::new();
    for key in ["dependentRequired", "dependencies", "dependentSchemas"] {
        let Some(Value::Object(entries)) = schema.get(key) else {
            continue;
        };
        for (name, dependent) in entries {
            let clause = match dependent {
                Value::Array(required) => match names(required) {
                    Some(required) => format!("if {name} is given, {required} must be too"),
                    None => continue,
                },
                other => match dependent_schema(name, other) {
                    Some(clause) => clause,
                    None => continue,
                },
            };
            if !clauses.contains(&clause) {
                clauses.push(clause);
            }
        }
    }
    (!clauses.is_empty()).then(|| {
        bounded(
            clauses.join("; "),
            "some keys, when given, need or constrain others",
        )
    })
}

/// What a schema dependency asks once `name` is given: `a cannot be given` for `false`;
/// the requirement in words where it only names required properties and property values
/// (`if a is given, b must be given`); else the object's JSON Schema. `None` for `true` or a
/// schema that constrains nothing.
fn dependent_schema(name: &str, dependent: &Value) -> Option<String> {
    match dependent {
        Value::Bool(false) => Some(format!("{name} cannot be given")),
        Value::Object(constraints)
            if constraints
                .keys()
                .any(|key| !ANNOTATIONS.contains(&key.as_str())) =>
        {
            Some(match clause(dependent, Mood::Requires) {
                Some(requirement) => format!("if {name} is given, {requirement}"),
                None => format!("if {name} is given, the object must match {dependent}"),
            })
        }
        _ => None,
    }
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
                // A required property's value, said, already says it is given.
                let valued = schema.get("properties").and_then(Value::as_object);
                let required: Vec<Value> = required
                    .iter()
                    .filter(|name| {
                        !name
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
                let required = schema.get("required").and_then(Value::as_array);
                let is_required =
                    |name: &str| required.is_some_and(|r| r.iter().any(|n| n == name));
                parts.extend(property_values(properties, mood, is_required)?);
            }
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// `name is "value"` (or `is one of …`, `must be …`) for each property that `properties`
/// gives a `const` or an `enum`; `None` when one says anything else. A property the same
/// schema does not require meets its value when absent too (JSON Schema's `properties` says
/// nothing of a missing key): `or not given` in a condition, `if given` in a requirement.
fn property_values(
    properties: &Map<String, Value>,
    mood: Mood,
    is_required: impl Fn(&str) -> bool,
) -> Option<Vec<String>> {
    let verb = match mood {
        Mood::States => "is",
        Mood::Requires => "must be",
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let value = match only_constraint(schema)? {
                ("const", value) => value.to_string(),
                ("enum", Value::Array(values)) if !values.is_empty() => {
                    format!("one of {}", listed(values))
                }
                _ => return None,
            };
            let absent = match (is_required(name), mood) {
                (true, _) => "",
                (false, Mood::States) => " or not given",
                (false, Mood::Requires) => " if given",
            };
            Some(format!("{name} {verb} {value}{absent}"))
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

    fn limits_of(schema: Value) -> Vec<String> {
        limits(schema.as_object().expect("an object schema"))
    }

    /// Checks each `(schema, clauses)` case against [`limits`].
    fn check_limits<const N: usize>(cases: [(Value, &[&str]); N]) {
        for (schema, expected) in cases {
            assert_eq!(limits_of(schema.clone()), expected, "{schema}");
        }
    }

    /// A string's pattern and length read as clauses; a bound of 0 characters below says
    /// nothing, a long pattern only that one applies.
    #[test]
    fn string_limits_in_words() {
        check_limits([
            (
                json!({"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 64}),
                &["pattern: ^[a-z]+$", "1–64 characters"],
            ),
            (json!({"minLength": 1}), &["at least 1 character"]),
            (json!({"maxLength": 10}), &["at most 10 characters"]),
            (
                json!({"minLength": 8, "maxLength": 8}),
                &["exactly 8 characters"],
            ),
            (json!({"minLength": 0, "description": "x"}), &[]),
            (
                json!({"pattern": "z".repeat(300)}),
                &["a pattern too long to show"],
            ),
        ]);
    }

    /// Exclusive bounds (numbers from draft 6 on, booleans beside `minimum`/`maximum` in
    /// draft 4) and `multipleOf` read as clauses; the inclusive bounds the subset keeps do not.
    #[test]
    fn number_limits_in_words() {
        check_limits([
            (
                json!({"exclusiveMinimum": 0, "multipleOf": 5, "maximum": 100}),
                &["greater than 0", "a multiple of 5"],
            ),
            (json!({"exclusiveMaximum": 1.5}), &["less than 1.5"]),
            (
                json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": true}),
                &["greater than 0", "less than 9"],
            ),
            (
                json!({"minimum": 0, "exclusiveMinimum": false, "exclusiveMaximum": true}),
                &[],
            ),
            (json!({"minimum": 1, "maximum": 10}), &[]),
        ]);
    }

    /// A limit reads as a clause only beside a type it applies to (or no type): a
    /// `minLength` on a number, a `multipleOf` on a string constrain nothing and are not said.
    #[test]
    fn limits_are_said_only_for_the_declared_types() {
        check_limits([
            (
                json!({"type": "number", "minLength": 3, "pattern": "^a"}),
                &[],
            ),
            (
                json!({"type": "string", "multipleOf": 5, "exclusiveMinimum": 0}),
                &[],
            ),
            (
                json!({"type": "integer", "uniqueItems": true, "maxProperties": 2}),
                &[],
            ),
            (
                json!({"type": "array", "minLength": 1, "uniqueItems": true}),
                &["unique items"],
            ),
            (
                json!({"type": ["string", "integer"], "minLength": 1, "multipleOf": 2,
                       "minProperties": 1}),
                &["at least 1 character", "a multiple of 2"],
            ),
            (
                json!({"type": "object", "pattern": "x", "dependentRequired": {"a": ["b"]}}),
                &["if a is given, b must be too"],
            ),
            (
                json!({"minLength": 1, "multipleOf": 2}),
                &["at least 1 character", "a multiple of 2"],
            ),
        ]);
    }

    /// `uniqueItems: true` reads as a clause; `false` and the item counts the subset keeps do
    /// not.
    #[test]
    fn item_limits_in_words() {
        check_limits([
            (
                json!({"uniqueItems": true, "maxItems": 3}),
                &["unique items"],
            ),
            (json!({"uniqueItems": false, "minItems": 1}), &[]),
        ]);
    }

    /// Key counts and keys that require others (`dependentRequired`, draft-7 `dependencies`
    /// of the array form) read as clauses.
    #[test]
    fn key_limits_in_words() {
        check_limits([
            (
                json!({"minProperties": 1, "maxProperties": 3}),
                &["1–3 keys"],
            ),
            (json!({"maxProperties": 1}), &["at most 1 key"]),
            (json!({"minProperties": 2}), &["at least 2 keys"]),
            (
                json!({"dependentRequired": {"a": ["b"], "c": ["d", "e"], "f": []}}),
                &["if a is given, b must be too; if c is given, d, e must be too"],
            ),
            (
                json!({"dependencies": {"a": ["b"], "x": {"required": ["y"]}},
                       "dependentRequired": {"a": ["b"]}}),
                &["if a is given, b must be too; if x is given, y must be given"],
            ),
            (
                json!({"dependentRequired": {"k".repeat(250): ["v"]}}),
                &["some keys, when given, need or constrain others"],
            ),
        ]);
    }

    /// A map value's constraints read as clauses, the ones the subset keeps for a schema of
    /// its own (values, format, inclusive bounds, item counts) too.
    #[test]
    fn map_value_limits_in_words() {
        let cases: [(Value, &[&str]); 4] = [
            (
                json!({"type": "string", "enum": ["a", "b"], "format": "email", "maxLength": 9}),
                &[
                    "one of \"a\", \"b\"",
                    "format: email",
                    "at most 9 characters",
                ],
            ),
            (
                json!({"type": "integer", "minimum": 0, "maximum": 10, "exclusiveMaximum": true,
                       "minLength": 2}),
                &["at least 0", "less than 10"],
            ),
            (
                json!({"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": true}),
                &["1–5 items", "unique items"],
            ),
            (json!({"const": 3, "description": "x"}), &["must be 3"]),
        ];
        for (schema, expected) in cases {
            let map = schema.as_object().expect("an object schema");
            assert_eq!(value_limits(map), expected, "{schema}");
        }
    }

    /// Schema dependencies (`dependentSchemas`, draft-7 `dependencies` of the schema form) read
    /// as clauses beside the array form: a requirement in words, a `false` as a key that
    /// cannot be given, any other schema as its JSON Schema; `true` says nothing.
    #[test]
    fn schema_dependencies_in_words() {
        check_limits([
            (
                json!({"dependentSchemas": {"card": {"required": ["billing"],
                                                     "properties": {"mode": {"const": "pay"}}}}}),
                &["if card is given, billing must be given and mode must be \"pay\" if given"],
            ),
            (
                json!({"dependencies": {"a": ["b"], "c": {"maxProperties": 2}, "d": true},
                       "dependentSchemas": {"e": false}}),
                &[
                    "if a is given, b must be too; if c is given, the object must match \
                   {\"maxProperties\":2}; e cannot be given",
                ],
            ),
            (
                json!({"dependentSchemas": {"k": {"required": ["v".repeat(250)]}}}),
                &["some keys, when given, need or constrain others"],
            ),
        ]);
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
            Some(
                "Unless mode is one of \"a\", \"b\" or not given, level must be 3 if given."
                    .to_owned()
            )
        );
        // A value the condition does not require is met by its absence too.
        assert_eq!(
            conditional_of(json!({"if": {"properties": {"kind": {"const": "file"}}},
                                  "then": {"properties": {"mode": {"const": "r"}},
                                           "required": ["mode"]}})),
            Some("If kind is \"file\" or not given, mode must be \"r\".".to_owned())
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
