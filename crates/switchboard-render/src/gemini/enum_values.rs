//! An `enum` (or `const`) the way Gemini's `parameters` take it: non-empty strings on a
//! string schema; the values of any other type said in the hint rather than stringified
//! (the model would send `"1"` where the tool takes `1`); values of several types leaving
//! the schema without a type (see the parent module's doc).

use serde_json::{Map, Value, json};

/// The JSON type of an enum's `value` (`integer` for a whole number).
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The one type `values` (none null) are all of — an integer is a number too — or `None`
/// for values of several types (`1`, `"two"`) or none.
fn common_kind(values: &[Value]) -> Option<&'static str> {
    let mut kinds = values.iter().map(kind_of);
    let first = kinds.next()?;
    kinds.try_fold(first, |common, kind| match (common, kind) {
        _ if common == kind => Some(common),
        ("integer", "number") | ("number", "integer") => Some("number"),
        _ => None,
    })
}

/// `values` (of `enum` or `const`) into `out` the way Gemini takes them (module doc).
/// Gemini refuses `""` in an enum (`enum[1]: cannot be empty`): the empty string is left out
/// of it and returned as a clause for the hint, `may also be ""` (`must be ""` when it was
/// the only value), rather than lost; the values of a schema of another type are returned
/// as one too (`one of 1, 2`, `must be 3`). Values of several types (`1`, `"two"`), or ones a
/// union of types (`["integer", "string"]`, `declared`) sent as its first type does not
/// hold, leave `out` without a type: stringified, `1` would become `"1"`, and a type would
/// contradict the values said.
pub(super) fn enumeration(
    values: Vec<Value>,
    declared: Option<&Value>,
    out: &mut Map<String, Value>,
) -> Option<String> {
    if values.iter().any(Value::is_null) {
        out.insert("nullable".into(), Value::Bool(true));
    }
    let all = values.clone();
    let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    let common = common_kind(&values);
    let sent = out.get("type").and_then(Value::as_str);
    let held = |kind: &str| {
        common.is_some_and(|common| common == kind || (kind, common) == ("number", "integer"))
    };
    match sent {
        None => {
            // Objects or arrays as values are said, not taken as the schema's shape.
            let scalar = common.filter(|kind| !matches!(*kind, "object" | "array"));
            if let Some(kind) = scalar {
                out.insert("type".into(), json!(kind));
            }
        }
        Some(kind) if declared.is_some_and(Value::is_array) && !held(kind) => {
            out.remove("type");
        }
        Some(_) => {}
    }
    // Without a type, `nullable` says nothing (any value may be sent): `null` is listed.
    let values = if out.contains_key("type") {
        values
    } else {
        out.remove("nullable");
        all
    };
    if out.get("type").is_some_and(|t| t == "string") {
        let (empty, strings): (Vec<String>, Vec<String>) = values
            .iter()
            .map(|v| match v {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .partition(String::is_empty);
        let may_be_empty = !empty.is_empty();
        if strings.is_empty() {
            return may_be_empty.then(|| "must be \"\"".to_owned());
        }
        out.insert(
            "enum".into(),
            Value::Array(strings.into_iter().map(Value::String).collect()),
        );
        return may_be_empty.then(|| "may also be \"\"".to_owned());
    }
    match values.as_slice() {
        [] => None,
        [only] => Some(format!("must be {only}")),
        several => {
            let listed: Vec<String> = several.iter().map(Value::to_string).collect();
            Some(format!("one of {}", listed.join(", ")))
        }
    }
}
