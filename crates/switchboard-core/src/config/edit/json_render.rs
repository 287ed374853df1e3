//! The text of a new JSON server entry: its keys in the order a person writes them, strings
//! escaped by `serde_json`, on one line (`{"command": "npx", "args": ["-y"]}`) or one key a
//! line.

use super::fields::{Field, sandbox_field, transport_fields, trust_field};
use super::json::Form;
use super::{EntryTransport, ServerEntry};

/// The keys of a new entry, in the order a person writes them.
pub(super) fn fields(form: Form, id: &str, entry: &ServerEntry) -> Vec<(&'static str, Field)> {
    let mut fields = Vec::new();
    if form == Form::Array {
        fields.push(("id", Field::Text(id.to_owned())));
    }
    if form == Form::VsCode {
        let kind = match &entry.transport {
            EntryTransport::Stdio { .. } => Some("stdio"),
            EntryTransport::Http { .. } => Some("http"),
            EntryTransport::Sse { .. } => Some("sse"),
            EntryTransport::Builtin { .. } => None,
        };
        fields.extend(kind.map(|kind| ("type", Field::Text(kind.to_owned()))));
    }
    // VS Code's "type" above already says "sse".
    let sse_key = (form != Form::VsCode).then_some("type");
    fields.extend(transport_fields(&entry.transport, sse_key));
    fields.extend(entry.sandbox.as_deref().map(sandbox_field));
    fields.extend(entry.trust.map(trust_field));
    match (entry.enabled, form) {
        (None, _) => {}
        (Some(enabled), Form::Array) => fields.push(("enabled", Field::Bool(enabled))),
        (Some(enabled), _) => fields.push(("disabled", Field::Bool(!enabled))),
    }
    fields
}

pub(super) fn quote(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

fn scalar(field: &Field, pad: bool) -> String {
    match field {
        Field::Text(text) => quote(text),
        Field::Bool(value) => value.to_string(),
        Field::Integer(value) => value.to_string(),
        Field::List(items) => {
            let items: Vec<String> = items.iter().map(|item| quote(item)).collect();
            format!("[{}]", items.join(", "))
        }
        Field::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
                .collect();
            braces(&entries.join(", "), pad)
        }
        Field::Table(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", quote(k), scalar(v, pad)))
                .collect();
            braces(&entries.join(", "), pad)
        }
    }
}

fn braces(inside: &str, pad: bool) -> String {
    if pad {
        format!("{{ {inside} }}")
    } else {
        format!("{{{inside}}}")
    }
}

pub(super) fn one_line(fields: &[(&str, Field)], pad: bool) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(key, value)| format!("{}: {}", quote(key), scalar(value, pad)))
        .collect();
    braces(&parts.join(", "), pad)
}

pub(super) fn multi_line(
    fields: &[(&str, Field)],
    indent: &str,
    inner: &str,
    unit: &str,
    eol: &str,
) -> String {
    let mut out = format!("{{{eol}");
    for (n, (key, value)) in fields.iter().enumerate() {
        let value = match value {
            Field::Map(entries) => {
                let deeper = format!("{inner}{unit}");
                let lines: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{deeper}{}: {}", quote(k), quote(v)))
                    .collect();
                format!("{{{eol}{}{eol}{inner}}}", lines.join(&format!(",{eol}")))
            }
            other => scalar(other, false),
        };
        let comma = if n + 1 < fields.len() { "," } else { "" };
        out.push_str(&format!("{inner}{}: {value}{comma}{eol}", quote(key)));
    }
    out.push_str(indent);
    out.push('}');
    out
}
