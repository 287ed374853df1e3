//! Probe inputs: a minimal valid instance of a tool's input schema, for calibration calls when
//! the operator configured no probe input. (Which tools may be probed at all is
//! [`crate::safety`]'s call: a destructive tool never is.)
//!
//! The instance holds **required properties only** (plus optional ones when `minProperties`
//! asks for more). Supported: `type` (one or a list; `null` last), `const`, `enum` (first
//! value), `minimum`/`maximum`/`exclusive*` (both drafts)/`multipleOf`, `minLength`/`maxLength`,
//! basic `format`s (date-time, date, time, email, hostname, ipv4, ipv6, uri, uuid, duration),
//! nested objects, arrays (`minItems`, `items`, `prefixItems`), `allOf` (properties and required
//! merged), `anyOf`/`oneOf` (first branch that generates) and `$ref` to the same document
//! (`#/$defs/..`, `#/definitions/..`). Not honoured: `pattern`, `uniqueItems`, `not`,
//! conditionals — validate the result (`switchboard_core::schema::InputSchema`) and fall back to
//! configured input when it fails.

use serde_json::{Map, Number, Value};

/// Why no instance could be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    #[error("`$ref` {0} does not resolve within the schema")]
    UnresolvableRef(String),
    #[error("the schema at {0} accepts nothing")]
    Unsatisfiable(String),
    #[error("the schema nests deeper than {MAX_DEPTH} levels (a recursive `$ref`?)")]
    TooDeep,
}

const MAX_DEPTH: usize = 32;

/// A minimal valid instance of `schema` (see the module doc).
pub fn minimal_instance(schema: &Value) -> Result<Value, InstanceError> {
    Generator { root: schema }.generate(schema, "$", 0)
}

struct Generator<'a> {
    root: &'a Value,
}

impl<'a> Generator<'a> {
    fn generate(&self, schema: &Value, path: &str, depth: usize) -> Result<Value, InstanceError> {
        if depth > MAX_DEPTH {
            return Err(InstanceError::TooDeep);
        }
        let object = match schema {
            Value::Bool(true) => return Ok(Value::Null),
            Value::Object(object) => object,
            _ => return Err(InstanceError::Unsatisfiable(path.to_owned())),
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return self.generate(self.resolve(reference)?, path, depth + 1);
        }
        if let Some(constant) = object.get("const") {
            return Ok(constant.clone());
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            return values
                .first()
                .cloned()
                .ok_or_else(|| InstanceError::Unsatisfiable(path.to_owned()));
        }
        if let Some(parts) = object.get("allOf").and_then(Value::as_array) {
            let merged = self.merge_all_of(object, parts, depth)?;
            return self.generate(&merged, path, depth + 1);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                let mut last_error = InstanceError::Unsatisfiable(path.to_owned());
                for branch in branches {
                    match self.generate(branch, path, depth + 1) {
                        Ok(value) => return Ok(value),
                        Err(error) => last_error = error,
                    }
                }
                return Err(last_error);
            }
        }
        match type_of(object) {
            "object" => self.object(object, path, depth),
            "array" => self.array(object, path, depth),
            "string" => Ok(Value::String(string(object))),
            "integer" => number(object, true, path),
            "number" => number(object, false, path),
            "boolean" => Ok(Value::Bool(false)),
            _ => Ok(Value::Null),
        }
    }

    fn resolve(&self, reference: &str) -> Result<&'a Value, InstanceError> {
        let unresolvable = || InstanceError::UnresolvableRef(reference.to_owned());
        let pointer = reference.strip_prefix('#').ok_or_else(unresolvable)?;
        self.root.pointer(pointer).ok_or_else(unresolvable)
    }

    /// Merges `allOf` parts (and the keywords beside it) into one schema: `properties` and
    /// `required` are united, other keywords are taken from the last part that has them.
    fn merge_all_of(
        &self,
        outer: &Map<String, Value>,
        parts: &[Value],
        depth: usize,
    ) -> Result<Value, InstanceError> {
        let mut merged = Map::new();
        let mut properties = Map::new();
        let mut required: Vec<Value> = Vec::new();
        let mut outer_without = outer.clone();
        outer_without.remove("allOf");
        let mut sources: Vec<Map<String, Value>> = vec![outer_without];
        for part in parts {
            let mut part: &Value = part;
            let mut hops = 0;
            while let Some(reference) = part.get("$ref").and_then(Value::as_str) {
                part = self.resolve(reference)?;
                hops += 1;
                if depth + hops > MAX_DEPTH {
                    return Err(InstanceError::TooDeep);
                }
            }
            if let Some(object) = part.as_object() {
                sources.push(object.clone());
            }
        }
        for source in sources {
            for (key, value) in source {
                match (key.as_str(), value) {
                    ("properties", Value::Object(more)) => properties.extend(more),
                    ("required", Value::Array(names)) => {
                        for name in names {
                            if !required.contains(&name) {
                                required.push(name);
                            }
                        }
                    }
                    (_, value) => {
                        merged.insert(key, value);
                    }
                }
            }
        }
        if !properties.is_empty() {
            merged.insert("properties".to_owned(), Value::Object(properties));
        }
        if !required.is_empty() {
            merged.insert("required".to_owned(), Value::Array(required));
        }
        Ok(Value::Object(merged))
    }

    fn object(
        &self,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Value, InstanceError> {
        let properties = object.get("properties").and_then(Value::as_object);
        let mut names: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|required| required.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let wanted = object
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        if let Some(properties) = properties {
            for name in properties.keys() {
                if names.len() >= wanted {
                    break;
                }
                if !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        let mut instance = Map::new();
        for name in names {
            let schema = properties
                .and_then(|properties| properties.get(name))
                .or_else(|| object.get("additionalProperties").filter(|a| a.is_object()));
            let child_path = format!("{path}.{name}");
            let value = match schema {
                Some(schema) => self.generate(schema, &child_path, depth + 1)?,
                None => Value::Null,
            };
            instance.insert(name.to_owned(), value);
        }
        Ok(Value::Object(instance))
    }

    fn array(
        &self,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Value, InstanceError> {
        let count = object.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let prefix = object.get("prefixItems").and_then(Value::as_array);
        let items = object.get("items");
        let mut instance = Vec::with_capacity(count);
        for index in 0..count {
            let child_path = format!("{path}[{index}]");
            let schema = prefix
                .and_then(|prefix| prefix.get(index))
                .or(items.filter(|items| !items.is_array()))
                .or_else(|| {
                    items
                        .and_then(Value::as_array)
                        .and_then(|tuple| tuple.get(index))
                });
            instance.push(match schema {
                Some(schema) => self.generate(schema, &child_path, depth + 1)?,
                None => Value::Null,
            });
        }
        Ok(Value::Array(instance))
    }
}

/// The type to generate: the declared one (the first non-null of a list), else inferred from
/// the keywords present.
fn type_of(object: &Map<String, Value>) -> &str {
    match object.get("type") {
        Some(Value::String(kind)) => kind,
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ => {
            let has = |keys: &[&str]| keys.iter().any(|key| object.contains_key(*key));
            if has(&[
                "properties",
                "required",
                "additionalProperties",
                "minProperties",
            ]) {
                "object"
            } else if has(&["items", "prefixItems", "minItems"]) {
                "array"
            } else if has(&["minLength", "maxLength", "format", "pattern"]) {
                "string"
            } else if has(&[
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
            ]) {
                "number"
            } else {
                "null"
            }
        }
    }
}

fn string(object: &Map<String, Value>) -> String {
    let format_value = object
        .get("format")
        .and_then(Value::as_str)
        .and_then(|format| {
            Some(match format {
                "date-time" => "1970-01-01T00:00:00Z",
                "date" => "1970-01-01",
                "time" => "00:00:00Z",
                "email" | "idn-email" => "probe@example.com",
                "hostname" | "idn-hostname" => "example.com",
                "ipv4" => "127.0.0.1",
                "ipv6" => "::1",
                "uri" | "iri" | "url" => "https://example.com/",
                "uri-reference" | "iri-reference" => "/",
                "uuid" => "00000000-0000-0000-0000-000000000000",
                "duration" => "PT1S",
                _ => return None,
            })
        });
    if let Some(value) = format_value {
        return value.to_owned();
    }
    let min = object.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let max = object
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX);
    // One letter reads as a real argument to most tools; never fewer than asked, never more.
    let length = min.max(1).min(max).min(4_096);
    "a".repeat(length as usize)
}

fn number(object: &Map<String, Value>, integer: bool, path: &str) -> Result<Value, InstanceError> {
    let get = |key: &str| object.get(key).and_then(Value::as_f64);
    let flag = |key: &str| object.get(key).and_then(Value::as_bool).unwrap_or(false);
    let step = if integer { 1.0 } else { 0.5 };
    // Draft 6+: exclusive bounds are numbers; draft 4: booleans beside minimum/maximum.
    let mut low = get("minimum").map(|min| {
        if flag("exclusiveMinimum") {
            min + step
        } else {
            min
        }
    });
    if let Some(bound) = get("exclusiveMinimum") {
        low = Some(low.map_or(bound + step, |low| low.max(bound + step)));
    }
    let mut high = get("maximum").map(|max| {
        if flag("exclusiveMaximum") {
            max - step
        } else {
            max
        }
    });
    if let Some(bound) = get("exclusiveMaximum") {
        high = Some(high.map_or(bound - step, |high| high.min(bound - step)));
    }
    if integer {
        low = low.map(f64::ceil);
        high = high.map(f64::floor);
    }
    let mut value = match (low, high) {
        (Some(low), _) if low > 0.0 => low,
        (_, Some(high)) if high < 0.0 => high,
        _ => 0.0,
    };
    if let Some(multiple) = get("multipleOf").filter(|m| *m > 0.0) {
        value = (value / multiple).ceil() * multiple;
    }
    if low.is_some_and(|low| value < low) || high.is_some_and(|high| value > high) {
        return Err(InstanceError::Unsatisfiable(path.to_owned()));
    }
    if integer || value.fract() == 0.0 && value.abs() < 9.0e15 {
        return Ok(Value::from(value as i64));
    }
    Number::from_f64(value)
        .map(Value::Number)
        .ok_or_else(|| InstanceError::Unsatisfiable(path.to_owned()))
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
