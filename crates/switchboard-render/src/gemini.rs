//! Gemini: `{"functionDeclarations": [{"name", "description", "parameters"}]}`. Gemini reads
//! an OpenAPI subset of JSON Schema, and one declaration it rejects fails the whole request
//! (HTTP 400), so every schema is brought inside that subset:
//!
//! * local `$ref`s are inlined and `allOf` members merged into their holder first
//!   ([`crate::inline`]; a recursive or foreign reference becomes a description holding the
//!   minified schema it stood for, and one met once the copies exceed the inlining budget a
//!   description naming the reference);
//! * only the keys in `KEEP` are sent (type, description, properties, required, items,
//!   format, nullable, minimum, maximum, minItems, maxItems; some Gemini API versions refuse
//!   others; `minimum`/`maximum` only on a number or an integer, `minItems`/`maxItems` only on
//!   an array, or where no type is declared — one dropped from a union of types is said, as
//!   `at least 0`) with `anyOf` and `enum`; `$schema`, `default`, `examples`, … are dropped, and
//!   the constraints it cannot express are said in the description: `not` and
//!   `if`/`then`/`else` as a sentence ([`crate::in_words`]), the rest as clauses of one
//!   parenthesised hint — a map's or a tuple's shape (below), `patternProperties` as `keys
//!   matching ^x-: string`, `additionalProperties: false` beside properties as `no other
//!   keys` (not at the root: a model fills the declared parameters only), a moved format (below), then the limits [`in_words::limits`] words: `pattern`,
//!   `minLength`/`maxLength`, `exclusiveMinimum`/`exclusiveMaximum`, `multipleOf`,
//!   `uniqueItems`, `minProperties`/`maxProperties`, `dependentRequired` and `dependentSchemas` (or
//!   `dependencies` of either form) — as in `(format: email; pattern: ^[a-z]+$; 1–64 characters)`;
//! * `format` stays only where Gemini takes it (`enum`/`date-time` on strings, `int32`/`int64`
//!   on integers, `float`/`double` on numbers); any other (`uri`, `email`, `uuid`, …) moves
//!   into the hint as `format: uri`;
//! * type unions become their first non-null type, `nullable` for the null;
//! * `anyOf` and `oneOf` become `anyOf` of their members in the subset (a `{"type": "null"}`
//!   member becomes `nullable`; a `false` member, which Gemini refuses, is left out — a union
//!   of only `false` is said as `cannot be given`, and a property of one leaves `properties`
//!   like a `false` one; a single member left is inlined, its description joining the
//!   holder's);
//! * `enum` (or `const`, which wins beside an `enum`: it is the narrower) is a list of
//!   non-empty strings on a string schema — Gemini refuses `""`, which the hint says instead
//!   (`may also be ""`, or `must be ""` when it is the only value): a schema with
//!   no type whose values are all of one type takes that type, and on a non-string
//!   schema the values move to the hint (`(one of 1, 2, 3)`, `(must be 3)`) —
//!   stringified, they would make the model send `"1"` where the tool takes `1`; values of
//!   several types (`1`, `"two"`), or ones a union of types sent as its first does not hold
//!   (`["integer", "string"]` of `1`, `"a"`), leave the schema without a type, the values
//!   said (`(one of 1, "two", null)`);
//! * an object without properties (a map of `additionalProperties` or `patternProperties`,
//!   or any object) is refused: it loses its type and says `(a JSON object; each value:
//!   string)` in its description, with the values' limits in words (`each value: string
//!   (at most 8 characters)`, [`in_words::value_limits`]; values defined by `anyOf` say
//!   their members' types: `each value: string or number`; values that are maps themselves
//!   `each value: a map of integer`, or `object`); an array needs `items`: items
//!   that are a map stay one the same way (no type, `(a JSON object; each value: integer)`),
//!   tuple items (`prefixItems`) become `items` of their one type or `anyOf` their types, the
//!   order in the description (`(in order: string, integer)`), and an array that says nothing
//!   of its items takes strings; `items: true` are items without a type, said `(any JSON
//!   value)`, and `items: false` (or draft-04 `additionalItems: false`) a `maxItems` of the
//!   tuple's length, `must be empty` said where there is no tuple;
//! * a tool without parameters declares none (an object schema without properties is
//!   refused); a tool whose arguments are a map (a root of `additionalProperties` or
//!   `patternProperties` and no properties) declares them as `parametersJsonSchema`, the
//!   JSON Schema Gemini also reads: an object whose values have the map's value type (values
//!   that are maps with their own values' schema) and the limits that apply to it (`minLength`, `pattern`, `minimum`, …; a draft-4
//!   `exclusiveMinimum: true` beside `minimum: 0` as `exclusiveMinimum: 0`), with the
//!   description a nested map would have;
//! * `parameters` refuse a schema without a type that is not an `anyOf` alone (a property of
//!   any value, a map, items that are either) and an `anyOf` beside other fields (a
//!   description, `nullable`): a tool whose render holds one is declared as
//!   `parametersJsonSchema` instead, the same render with a map an object of its values
//!   again (`type: object`, `additionalProperties`) and `nullable` as JSON Schema's `null`
//!   type ([`json_schema`]);
//! * a property of schema `true`, `{}` or annotations only (`{"description": "x"}`: anything)
//!   becomes one without a type, described `(any JSON value)` (`x (any JSON value)`); one of schema `false` (nothing) leaves `properties` and `required`, and
//!   its holder's hint says `x cannot be given`;
//! * a name must start with a letter or `_`: one that does not is prefixed with `_`.

mod enum_values;
mod json_schema;

use serde_json::{Map, Value, json};

use crate::{
    RenderTool, in_words,
    inline::{inlined, stands_for_a_schema, with_hint},
    names::gemini_name,
    slim::slim,
};

/// The keys of a schema sent as they are (with `anyOf` and `enum`, which are brought into
/// the subset first); any other is dropped or said in the description.
pub const KEEP: [&str; 11] = [
    "type",
    "description",
    "properties",
    "required",
    "items",
    "format",
    "nullable",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];

/// The hint of a schema that any JSON value meets.
const ANY_VALUE: &str = "(any JSON value)";

fn subset(schema: &Value) -> Value {
    let map = match schema {
        // Gemini reads a schema as an object: `true`, `{}` and one of annotations only
        // (anything) are one with no type, said to take anything.
        Value::Bool(true) => return json!({"description": ANY_VALUE}),
        Value::Object(map) if in_words::only_annotations(map) && !stands_for_a_schema(map) => {
            return json!({"description": with_hint(map.get("description"), ANY_VALUE)});
        }
        Value::Object(map) => map,
        other => return other.clone(),
    };
    let mut out = Map::new();
    for (key, value) in map {
        if !KEEP.contains(&key.as_str()) {
            continue;
        }
        let value = match key.as_str() {
            // A property of schema `false` cannot be given: [`forbidden_properties`].
            "properties" => Value::Object(
                value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .filter(|(_, v)| !admits_nothing(v))
                            .map(|(k, v)| (k.clone(), subset(v)))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            // Draft-04 tuple `items` (an array), items that admit nothing (`false`: the array
            // must be empty) and `true` beside `prefixItems` are read by `array_items`.
            "items"
                if value.is_array()
                    || admits_nothing(value)
                    || (value == &Value::Bool(true) && map.contains_key("prefixItems")) =>
            {
                continue;
            }
            "items" => subset(value),
            "type" => match value {
                Value::Array(types) => {
                    if types.iter().any(|t| t == "null") {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    types
                        .iter()
                        .find(|t| *t != "null")
                        .cloned()
                        .unwrap_or(json!("string"))
                }
                other => other.clone(),
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    let unmet = union(map, &mut out);
    // A `const` beside an `enum` is the narrower of the two (a value of both).
    let values = match (map.get("const"), map.get("enum")) {
        (Some(value), _) => Some(vec![value.clone()]),
        (_, Some(Value::Array(values))) => Some(values.clone()),
        _ => None,
    };
    let enum_words = values
        .map(|values| enum_values::enumeration(values, map.get("type"), &mut out))
        .unwrap_or_default();
    let misplaced_limits = typed_limits(map, &mut out);
    // What the subset drops, said in one parenthesised hint: the shape first, then the
    // format, the enum's values the subset could not send, then the limits.
    let moved_format = keep_format(&mut out);
    let forbidden = forbidden_properties(map, &mut out);
    let mut hints = match out.get("type").and_then(Value::as_str) {
        Some("object") => open_object(map, &mut out),
        Some("array") => array_items(map, &mut out),
        _ => Vec::new(),
    };
    hints.extend(unmet);
    hints.extend(forbidden);
    hints.extend(moved_format);
    hints.extend(enum_words);
    hints.extend(misplaced_limits);
    hints.extend(in_words::limits(map));
    if !hints.is_empty() {
        describe(&mut out, &format!("({})", hints.join("; ")));
    }
    if let Some(not) = map.get("not") {
        describe(&mut out, &in_words::negation(not));
    }
    if let Some(conditional) = in_words::conditional(map) {
        describe(&mut out, &conditional);
    }
    Value::Object(out)
}

/// The kept limits and the types they apply to: Gemini reads a `minimum` on a string or a
/// `minItems` on a number as nothing, or refuses it.
const TYPED_LIMITS: [(&[&str], &[&str]); 2] = [
    (&["number", "integer"], &["minimum", "maximum"]),
    (&["array"], &["minItems", "maxItems"]),
];

/// Keeps `out`'s [`TYPED_LIMITS`] only where `out`'s type is one they apply to (a schema
/// without a type may be of any). One dropped where `map` declares a union of types with one
/// it applies to (`["string", "integer"]`, sent as `string`) is returned in words for the
/// hint (`at least 0`), so the model still learns it.
fn typed_limits(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Vec<String> {
    let Some(kind) = out.get("type").and_then(Value::as_str).map(str::to_owned) else {
        return Vec::new();
    };
    let mut dropped = Map::new();
    for (kinds, keys) in TYPED_LIMITS {
        if kinds.contains(&kind.as_str()) {
            continue;
        }
        for key in keys {
            if let Some(limit) = out.remove(*key) {
                dropped.insert((*key).to_owned(), limit);
            }
        }
    }
    if dropped.is_empty() || !map.get("type").is_some_and(Value::is_array) {
        return Vec::new();
    }
    // Said beside the declared types (and a draft-4 exclusive flag, said elsewhere).
    for key in ["type", "exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(value) = map.get(key) {
            dropped.insert(key.to_owned(), value.clone());
        }
    }
    in_words::inclusive_limits(&dropped)
}

/// Whether no value meets `schema`: it is `false`, or a union (`anyOf`/`oneOf`) of such.
fn admits_nothing(schema: &Value) -> bool {
    match schema {
        Value::Bool(false) => true,
        Value::Object(map) => match map.get("anyOf").or_else(|| map.get("oneOf")) {
            Some(Value::Array(members)) => {
                !members.is_empty() && members.iter().all(admits_nothing)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The properties of `map` whose schema admits nothing (`false`: they cannot be given)
/// leave `out`'s `required` as they left its properties, and are said as `a, b cannot be
/// given`; `None` when there are none.
fn forbidden_properties(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Option<String> {
    let forbidden: Vec<&str> = map
        .get("properties")
        .and_then(Value::as_object)?
        .iter()
        .filter(|(_, schema)| admits_nothing(schema))
        .map(|(name, _)| name.as_str())
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(|name| forbidden.contains(&name)));
        if required.is_empty() {
            out.remove("required");
        }
    }
    Some(in_words::bounded(
        format!("{} cannot be given", forbidden.join(", ")),
        "some keys cannot be given",
    ))
}

/// The type `rendered` is sent with or, where the subset dropped it (a map: Gemini refuses an
/// object without properties), the one `source`, the schema it renders, declares.
fn sent_or_declared_kind<'a>(rendered: &'a Value, source: &'a Value) -> Option<&'a str> {
    rendered
        .get("type")
        .or_else(|| source.get("type"))
        .and_then(Value::as_str)
}

/// The type of a map's values (`additionalProperties`, a `patternProperties` member) as the
/// subset renders it (`object` for values that are maps themselves); `None` when it has none.
fn value_kind(values: &Value) -> Option<String> {
    let rendered = values.is_object().then(|| subset(values))?;
    sent_or_declared_kind(&rendered, values).map(str::to_owned)
}

/// The types of the `anyOf` members of `rendered` (a map's values, as the subset renders
/// them), distinct, in words: `string or number`; `None` when a member has no type (it may
/// be anything) or there is no union.
fn member_kinds(rendered: &Value) -> Option<String> {
    let mut kinds: Vec<&str> = Vec::new();
    for member in rendered.get("anyOf").and_then(Value::as_array)? {
        let kind = member.get("type").and_then(Value::as_str)?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    (!kinds.is_empty()).then(|| kinds.join(" or "))
}

/// The type of a map's values (or of the members of the union defining them) with their
/// constraints in words ([`in_words::value_limits`]): `string (pattern: ^[a-z]+$; at most 8
/// characters)`, `string or number`; `None` when they have no type.
fn value_words(values: &Value) -> Option<String> {
    let rendered = values.is_object().then(|| subset(values))?;
    let inner = values.get("additionalProperties");
    let kind = match sent_or_declared_kind(&rendered, values) {
        // Values that are maps of a type of their own: `a map of integer`.
        Some("object") if rendered.get("type").is_none() && inner.is_some_and(Value::is_object) => {
            match inner.and_then(value_words) {
                Some(inner) => format!("a map of {inner}"),
                None => "object".to_owned(),
            }
        }
        Some(kind) => kind.to_owned(),
        // Values defined by a union (`anyOf`/`oneOf`) have no type of their own.
        None => member_kinds(&rendered)?,
    };
    let clauses = values
        .as_object()
        .map(in_words::value_limits)
        .unwrap_or_default();
    if clauses.is_empty() {
        return Some(kind);
    }
    let too_long = format!("{kind}, further constrained");
    Some(in_words::bounded(
        format!("{kind} ({})", clauses.join("; ")),
        &too_long,
    ))
}

/// `patternProperties` in words: `keys matching ^x-: string` per pattern, `; no other keys`
/// where `additionalProperties` is `false`; `None` without patterns. Bounded like
/// [`in_words`]'s sentences.
fn keyed_values(map: &Map<String, Value>) -> Option<String> {
    let patterns = map
        .get("patternProperties")
        .and_then(Value::as_object)
        .filter(|patterns| !patterns.is_empty())?;
    let mut clauses: Vec<String> = patterns
        .iter()
        .map(|(pattern, values)| {
            let kind = value_words(values).unwrap_or_else(|| "any".to_owned());
            format!("keys matching {pattern}: {kind}")
        })
        .collect();
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        clauses.push("no other keys".to_owned());
    }
    Some(in_words::bounded(
        clauses.join("; "),
        "keys matching patterns have constrained values",
    ))
}

/// An object schema without properties (a map: `additionalProperties`, or no constraint at
/// all) is refused by Gemini ("properties: should be non-empty for OBJECT type"): it loses
/// its type — the model may then send any JSON value — and the hint says it is an object,
/// with the type of its values when `additionalProperties` gives one. An object with
/// properties keeps them; its hint says its `patternProperties`, or `no other keys` where
/// `additionalProperties` is `false`. Returns the hint's clauses.
fn open_object(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Vec<String> {
    let has_properties = out
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty());
    let keyed = keyed_values(map);
    if has_properties {
        let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
        // `keyed_values` says `no other keys` itself.
        return match keyed {
            Some(keyed) => vec![keyed],
            None if closed => vec!["no other keys".to_owned()],
            None => Vec::new(),
        };
    }
    out.remove("type");
    out.remove("properties");
    out.remove("required");
    // Marked so that, declared as JSON Schema, it is an object of its values again.
    let values = map
        .get("additionalProperties")
        .filter(|values| values.is_object())
        .map_or(Value::Bool(true), subset);
    out.insert(json_schema::MAP_VALUES.into(), values);
    let mut parts = vec!["a JSON object".to_owned()];
    if let Some(kind) = map.get("additionalProperties").and_then(value_words) {
        let which = if keyed.is_some() {
            "each other value"
        } else {
            "each value"
        };
        parts.push(format!("{which}: {kind}"));
    }
    parts.extend(keyed);
    parts
}

/// An array schema without usable `items` is refused by Gemini ("items: missing field"):
/// `items` of a schema stay as the subset renders them — without a type where they are a map
/// (`(a JSON object; each value: integer)`) or anything, as a property would be; tuple items
/// (`prefixItems`, or draft-04 `items` as an array) become `items` of their one type, or
/// `anyOf` their types, with the order in the description; an array that says nothing of its
/// items takes strings, and one whose items admit nothing (`items: false`) takes none past
/// its tuple: `maxItems` the tuple's length, `must be empty` said without a tuple. Returns the
/// hint's clauses.
fn array_items(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Vec<String> {
    if let Some(Value::Object(items)) = out.get_mut("items") {
        // Items whose constraints the subset can neither send nor say: as far as the model
        // can tell, any value.
        if items.is_empty() {
            items.insert("description".into(), json!(ANY_VALUE));
        }
        return Vec::new();
    }
    let tuple = map
        .get("prefixItems")
        .or_else(|| map.get("items"))
        .and_then(Value::as_array);
    let members: Vec<(&Value, Value)> = tuple
        .map(|members| members.iter().map(|m| (m, subset(m))).collect())
        .unwrap_or_default();
    let mut distinct: Vec<Value> = Vec::with_capacity(members.len());
    for (_, member) in &members {
        let usable = member.as_object().is_some_and(|member| !member.is_empty());
        if usable && !distinct.contains(member) {
            distinct.push(member.clone());
        }
    }
    let items = match <[Value; 1]>::try_from(distinct) {
        Ok([only]) => only,
        Err(distinct) if !distinct.is_empty() => json!({"anyOf": distinct}),
        Err(_) => json!({"type": "string"}),
    };
    out.insert("items".into(), items);
    // Items that admit nothing (`items: false`, draft-04 `additionalItems: false` beside
    // tuple `items`) allow none past the tuple: none at all without one.
    let closed = match map.get("items") {
        Some(Value::Array(_)) => map.get("additionalItems").is_some_and(admits_nothing),
        Some(items) => admits_nothing(items),
        None => false,
    };
    if closed {
        let most = members.len() as u64;
        let sent = out.get("maxItems").and_then(Value::as_u64);
        out.insert(
            "maxItems".into(),
            json!(sent.map_or(most, |sent| sent.min(most))),
        );
    }
    if members.is_empty() {
        return if closed {
            vec!["must be empty".to_owned()]
        } else {
            Vec::new()
        };
    }
    let order: Vec<&str> = members
        .iter()
        .map(|(source, member)| sent_or_declared_kind(member, source).unwrap_or("any"))
        .collect();
    vec![format!("in order: {}", order.join(", "))]
}

/// The `format`s Gemini takes, per type; it answers HTTP 400 to any other.
pub const FORMATS: [(&str, &[&str]); 3] = [
    ("string", &["enum", "date-time"]),
    ("integer", &["int32", "int64"]),
    ("number", &["float", "double"]),
];

/// Keeps `out`'s `format` where Gemini takes it for `out`'s type, else returns it as a clause
/// for the description's hint (`format: uri`): the model still learns what the tool expects.
fn keep_format(out: &mut Map<String, Value>) -> Option<String> {
    let format = out.remove("format")?;
    let kind = out.get("type").and_then(Value::as_str).unwrap_or("");
    let allowed = FORMATS
        .iter()
        .any(|(type_, formats)| *type_ == kind && formats.iter().any(|f| format == *f));
    if allowed {
        out.insert("format".into(), format);
        return None;
    }
    let named = format
        .as_str()
        .map_or_else(|| format.to_string(), str::to_owned);
    Some(format!("format: {named}"))
}

/// Appends `hint` to `out`'s description (or makes it the description).
fn describe(out: &mut Map<String, Value>, hint: &str) {
    let description = with_hint(out.get("description"), hint);
    out.insert("description".into(), Value::String(description));
}

/// `anyOf` / `oneOf` of `map` into `out`, as `anyOf` of subset members; a member that admits
/// nothing (`false`, which Gemini refuses) is left out. Returns `cannot be given` for the hint
/// where every member admits nothing.
fn union(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Option<String> {
    let Some(Value::Array(members)) = map.get("anyOf").or_else(|| map.get("oneOf")) else {
        return None;
    };
    if !members.is_empty() && members.iter().all(admits_nothing) {
        return Some("cannot be given".to_owned());
    }
    let mut kept = Vec::with_capacity(members.len());
    for member in members {
        if admits_nothing(member) {
            continue;
        }
        if member.get("type").is_some_and(|t| t == "null") {
            out.insert("nullable".into(), Value::Bool(true));
        } else {
            kept.push(subset(member));
        }
    }
    match <[Value; 1]>::try_from(kept) {
        Ok([Value::Object(only)]) => {
            for (key, value) in only {
                match (key.as_str(), &value, out.contains_key(&key)) {
                    // The member's description holds what its subset dropped (`(pattern: x)`):
                    // it joins the holder's rather than being lost to it.
                    ("description", Value::String(said), true) => describe(out, said),
                    _ => {
                        out.entry(key).or_insert(value);
                    }
                }
            }
        }
        Ok([other]) => {
            out.insert("anyOf".into(), Value::Array(vec![other]));
        }
        Err(kept) if !kept.is_empty() => {
            out.insert("anyOf".into(), Value::Array(kept));
        }
        Err(_) => {}
    }
    None
}

/// A tool's parameters and the key of the declaration that holds them, or none when it
/// takes none.
fn parameters(tool: &RenderTool<'_>) -> Option<(&'static str, Value)> {
    let source = inlined(&slim(&tool.definition.input_schema));
    // A model fills a declaration's parameters and nothing else: a closed root says nothing
    // more, and would cost every strict tool (pydantic's `extra="forbid"`, zod's `strict`)
    // a `(no other keys)` hint.
    let mut root = source.clone();
    if let Some(map) = root.as_object_mut()
        && map.get("additionalProperties") == Some(&Value::Bool(false))
    {
        map.remove("additionalProperties");
    }
    let parameters = subset(&root);
    let takes_some = parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| !properties.is_empty())
        || parameters.get("anyOf").is_some();
    if takes_some && json_schema::refused_by_parameters(&parameters) {
        return Some((
            "parametersJsonSchema",
            json_schema::as_json_schema(parameters),
        ));
    }
    if takes_some {
        return Some(("parameters", parameters));
    }
    map_of_arguments(&source).map(|map| ("parametersJsonSchema", map))
}

/// A root that is a map of arguments (`additionalProperties` or `patternProperties`, no
/// properties) as `parametersJsonSchema`: `parameters` refuses an object without
/// properties, and arguments nested under a made-up parameter would not be the tool's. The
/// JSON Schema is an object whose values have the map's value type, with the description
/// the subset gave it (`(a JSON object; each value: string)`); `None` for any other root.
fn map_of_arguments(source: &Value) -> Option<Value> {
    let values = source.get("additionalProperties");
    let patterned = source
        .get("patternProperties")
        .and_then(Value::as_object)
        .is_some_and(|patterns| !patterns.is_empty());
    if !patterned && !matches!(values, Some(Value::Object(_) | Value::Bool(true))) {
        return None;
    }
    // Rendered as an object, a root without `type` is described as one too.
    let mut root = source.as_object()?.clone();
    root.insert("type".into(), json!("object"));
    let rendered = subset(&Value::Object(root));
    let mut map = json!({"type": "object"});
    if let Some(description) = rendered.get("description") {
        map["description"] = description.clone();
    }
    if let Some(values) = values
        && let Some(kind) = value_kind(values)
    {
        map["additionalProperties"] = value_schema(values, kind);
    }
    Some(map)
}

/// The limits a map's values carry into `parametersJsonSchema`, which reads them as JSON
/// Schema, per type of values: numbers, `pattern` and `uniqueItems: true` (a draft-4 boolean
/// exclusive bound makes its inclusive one the exclusive number: [`value_schema`]).
const CARRIED_LIMITS: [(&[&str], &[&str]); 3] = [
    (&["string"], &["pattern", "minLength", "maxLength"]),
    (
        &["number", "integer"],
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
    ),
    (&["array"], &["minItems", "maxItems", "uniqueItems"]),
];

/// The JSON Schema of a root map's values: `kind` with the [`CARRIED_LIMITS`] of `values`
/// that apply to it. A draft-4 `exclusiveMinimum: true` beside `minimum: 0` is sent as
/// `exclusiveMinimum: 0` (the form JSON Schema has had since draft 6): `minimum: 0` alone
/// would allow the 0 the description says is excluded (`greater than 0`).
fn value_schema(values: &Value, kind: String) -> Value {
    let keys = CARRIED_LIMITS
        .iter()
        .filter(|(kinds, _)| kinds.contains(&kind.as_str()))
        .flat_map(|(_, keys)| keys.iter());
    let mut schema = Map::new();
    for key in keys {
        let Some(limit) = values.get(key) else {
            continue;
        };
        let carried = match (*key, limit) {
            ("pattern", Value::String(_)) | ("uniqueItems", Value::Bool(true)) => true,
            (_, limit) => limit.is_number(),
        };
        if carried {
            schema.insert((*key).into(), limit.clone());
        }
    }
    for (exclusive, inclusive) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if values.get(exclusive) == Some(&Value::Bool(true))
            && let Some(bound) = schema.remove(inclusive)
        {
            schema.insert(exclusive.into(), bound);
        }
    }
    // Values that are maps send their own values' schema: JSON Schema takes it.
    if kind == "object"
        && let Some(inner) = values.get("additionalProperties")
        && let Some(inner_kind) = value_kind(inner)
    {
        schema.insert(
            "additionalProperties".into(),
            value_schema(inner, inner_kind),
        );
    }
    schema.insert("type".into(), Value::String(kind));
    Value::Object(schema)
}

pub fn tools(tools: &[RenderTool<'_>]) -> Value {
    let declarations: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let mut declaration =
                json!({"name": gemini_name(tool.name), "description": tool.description()});
            if let Some((key, parameters)) = parameters(tool) {
                declaration[key] = parameters;
            }
            declaration
        })
        .collect();
    json!({"functionDeclarations": declarations})
}

#[cfg(test)]
mod tests;
