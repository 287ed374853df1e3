//! TOON where it wins. TOON (via the `toon-format` crate, which follows the TOON spec) is
//! compact for uniform rows — a listing of name / parameters / description — and for JSON
//! results made of arrays of similar objects; for nested JSON Schemas it is *larger* than
//! minified JSON (FIELD.md, and the `tokens` benchmark), so schemas are never written in TOON.
//! [`adaptive`] returns TOON only when it has fewer o200k tokens than the minified JSON.

use serde_json::{Value, json};

use crate::{RenderTool, compact, tokens};

/// The listing as one TOON table of `name`, `params`, `description` rows.
pub fn listing(tools: &[RenderTool<'_>]) -> String {
    let rows: Vec<Value> = tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "params": compact::parameters(tool.definition),
                "description": compact::first_sentence(tool.description()),
            })
        })
        .collect();
    encode(&json!({"tools": rows})).unwrap_or_default()
}

/// `value` in TOON, if it can be written.
pub fn encode(value: &Value) -> Option<String> {
    toon_format::encode_default(value).ok()
}

/// TOON text for `value` when it is measurably smaller (in o200k tokens) than minified
/// JSON; `None` when JSON is as small or smaller.
pub fn adaptive(value: &Value) -> Option<String> {
    let toon = encode(value)?;
    let json = value.to_string();
    // A cheap bound first: TOON longer in bytes is rarely fewer tokens.
    if toon.len() > json.len() * 2 {
        return None;
    }
    (tokens::count(&toon) < tokens::count(&json)).then_some(toon)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn toon_only_where_it_is_smaller() {
        let rows = json!({"users": (0..20).map(|i| json!({"id": i, "name": format!("user{i}"), "active": i % 2 == 0})).collect::<Vec<_>>()});
        let table = super::adaptive(&rows).expect("uniform rows are smaller in TOON");
        assert!(table.contains("users[20]"), "{table}");
        let nested = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "string"}}}}}});
        assert!(
            super::adaptive(&nested).is_none(),
            "a nested schema stays JSON"
        );
    }
}
