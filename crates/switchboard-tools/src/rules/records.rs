//! JSON records files, and a record as readable text ([`render_record`], shared with the SRD
//! import). The accepted shapes are described in [`super::parse`].

use serde_json::{Map, Value};

use super::parse::{Fragments, Parsed, Section, clean_system, slug};

const RECORD_ARRAYS: [&str; 6] = ["rules", "records", "entries", "items", "results", "data"];

pub fn json_records(text: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let mut parsed = Parsed::default();
    let records = match &value {
        Value::Array(records) => records,
        Value::Object(object) => {
            let string = |k: &str| object.get(k).and_then(Value::as_str).map(str::to_owned);
            parsed.system = string("system").and_then(|s| clean_system(&s));
            parsed.attribution = string("attribution").map(|a| (string("license"), a));
            let arrays: Vec<&Vec<Value>> = object
                .values()
                .filter_map(Value::as_array)
                .filter(|a| a.iter().any(Value::is_object))
                .collect();
            RECORD_ARRAYS
                .iter()
                .find_map(|k| object.get(*k).and_then(Value::as_array))
                .or(if arrays.len() == 1 { Some(arrays[0]) } else { None })
                .ok_or("expected an array of records, or an object with one (under \"rules\", \"records\", \"entries\", \"items\", \"results\" or \"data\")")?
        }
        _ => return Err("expected an array of records, or an object with one".to_owned()),
    };
    let mut fragments = Fragments::default();
    for (i, record) in records.iter().enumerate() {
        let Some(record) = record.as_object() else {
            parsed
                .warnings
                .push(format!("record {i} is not an object; skipped"));
            continue;
        };
        let field = |k: &str| {
            record
                .get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
        };
        let Some(title) = field("name").or_else(|| field("title")) else {
            parsed
                .warnings
                .push(format!("record {i} has no \"name\" or \"title\"; skipped"));
            continue;
        };
        let key = field("id")
            .or_else(|| field("index"))
            .or_else(|| field("slug"))
            .map_or_else(|| slug(title), slug);
        parsed.sections.push(Section {
            fragment: Some(fragments.unique("", key)),
            title: title.to_owned(),
            headings: vec![title.to_owned()],
            body: render_record(record),
        });
    }
    Ok(parsed)
}

/// Keys that hold a record's prose, rendered first, in this order.
const PROSE: [&str; 8] = [
    "text",
    "body",
    "content",
    "description",
    "desc",
    "summary",
    "details",
    "higher_level",
];
/// Keys that identify a record rather than describe it.
const IDENTITY: [&str; 10] = [
    "name",
    "title",
    "id",
    "index",
    "slug",
    "url",
    "image",
    "system",
    "attribution",
    "license",
];

fn number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

/// A value on one line: scalars as written, `{name}` pointers by name, costs as `10 gp`.
fn inline(value: &Value, depth: usize) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => (if *b { "yes" } else { "no" }).to_owned(),
        Value::Number(n) => number(n),
        Value::String(s) => s.trim().to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|v| inline(v, depth + 1))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(if items.iter().all(|v| !v.is_object()) {
                ", "
            } else {
                "; "
            }),
        Value::Object(o) => {
            if let Some(name) = o.get("name").and_then(Value::as_str) {
                return name.to_owned();
            }
            if let (Some(q), Some(u)) = (o.get("quantity"), o.get("unit").and_then(Value::as_str)) {
                return format!("{} {u}", inline(q, depth + 1));
            }
            if depth > 3 {
                return String::new();
            }
            o.iter()
                .filter(|(k, _)| !IDENTITY.contains(&k.as_str()))
                .map(|(k, v)| (label(k), inline(v, depth + 1)))
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| format!("{} {v}", k.to_lowercase()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

fn label(key: &str) -> String {
    let spaced = key.replace('_', " ");
    let mut chars = spaced.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

fn prose(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.trim().to_owned()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_owned())
            .collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect()
}

/// A record as readable text: its prose fields as paragraphs, then every other field as a
/// `Label: value` line, and lists of named entries (`actions: [{name, desc}]`) as one
/// paragraph per entry. Identity fields (`name`, `index`, `url`…) are left out.
pub fn render_record(record: &Map<String, Value>) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    for key in PROSE {
        let Some(value) = record.get(key) else {
            continue;
        };
        let mut texts = prose(value);
        if let Some(first) = texts.first_mut().filter(|_| key == "higher_level") {
            *first = format!("At higher levels: {first}");
        }
        paragraphs.extend(texts);
    }
    let mut facts = Vec::new();
    let mut blocks = Vec::new();
    for (key, value) in record {
        if PROSE.contains(&key.as_str()) || IDENTITY.contains(&key.as_str()) {
            continue;
        }
        let entries: Vec<&Map<String, Value>> = value.as_array().map_or_else(Vec::new, |a| {
            a.iter()
                .filter_map(Value::as_object)
                .filter(|o| o.contains_key("desc") && o.contains_key("name"))
                .collect()
        });
        if !entries.is_empty() {
            let lines: Vec<String> = entries
                .iter()
                .map(|e| format!("{}. {}", inline(&e["name"], 1), prose(&e["desc"]).join(" ")))
                .collect();
            blocks.push(format!("{}:\n{}", label(key), lines.join("\n")));
            continue;
        }
        let text = inline(value, 0);
        if !text.is_empty() {
            facts.push(format!("{}: {text}", label(key)));
        }
    }
    if !facts.is_empty() {
        paragraphs.push(facts.join("\n"));
    }
    paragraphs.extend(blocks);
    paragraphs.join("\n\n")
}
