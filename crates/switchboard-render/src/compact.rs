//! The compact listing: one line per tool —
//! `github__create_issue(owner, repo, title, body?, labels?: string[]): Create a new issue.` —
//! required parameters first, optional ones marked `?`, types shown when not a plain string,
//! enums as `a|b`, and the description cut to its first sentence (at most 80 characters).
//! Every choice was measured in o200k tokens (`bench tokens`): the `: ` separator and bare
//! enum words each saved about 3% over an em dash and quoted values.

use serde_json::Value;
use switchboard_core::ToolDefinition;

use crate::RenderTool;

/// Abbreviations whose period does not end a sentence.
const ABBREVIATIONS: [&str; 8] = [
    "e.g.", "i.e.", "etc.", "vs.", "approx.", "incl.", "resp.", "cf.",
];

/// Longest description kept on a line, in characters (cut at a word, marked with `…`).
const MAX_DESCRIPTION_CHARS: usize = 80;

/// The first sentence of a description, whitespace collapsed.
pub fn first_sentence(text: &str) -> String {
    let first_paragraph = text.split("\n\n").next().unwrap_or("");
    let mut line = String::with_capacity(first_paragraph.len().min(256));
    for word in first_paragraph.split_whitespace() {
        if !line.is_empty() {
            line.push(' ');
        }
        let ends = matches!(word.chars().last(), Some('.' | '!' | '?'))
            && !ABBREVIATIONS.contains(&word.to_lowercase().as_str());
        line.push_str(word);
        // A period inside a word ("v1.2", "example.com") never ends the sentence.
        if ends {
            break;
        }
        if line.len() > MAX_DESCRIPTION_CHARS * 4 {
            break;
        }
    }
    shorten(line.trim())
}

/// Cuts a line to [`MAX_DESCRIPTION_CHARS`] at a word boundary.
fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_DESCRIPTION_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |space| &cut[..space]);
    format!("{}…", at_word.trim_end_matches([',', ';', ':']))
}

fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        // Plain words are shown bare (`open|closed`); anything else as JSON.
        let shown: Vec<String> = values
            .iter()
            .take(3)
            .map(|value| match value.as_str() {
                Some(word)
                    if !word.is_empty()
                        && word
                            .chars()
                            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.')) =>
                {
                    word.to_owned()
                }
                _ => value.to_string(),
            })
            .collect();
        let more = if values.len() > 3 { "|…" } else { "" };
        return format!("{}{more}", shown.join("|"));
    }
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "array" => {
            let items = schema
                .get("items")
                .map(type_of)
                .unwrap_or_else(|| "any".to_owned());
            format!("{items}[]")
        }
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| *k != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => "any".to_owned(),
        _ if schema.get("properties").is_some() => "object".to_owned(),
        _ => "any".to_owned(),
    }
}

/// The parameter list of a definition.
pub fn parameters(definition: &ToolDefinition) -> String {
    let schema = &definition.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let mut ordered: Vec<(&String, &Value)> = properties.iter().collect();
    ordered.sort_by_key(|(name, _)| !required.contains(&name.as_str()));
    ordered
        .iter()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let kind = type_of(property);
            if kind == "string" {
                format!("{name}{optional}")
            } else {
                format!("{name}{optional}: {kind}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line for one tool.
pub fn line(name: &str, definition: &ToolDefinition) -> String {
    let description = first_sentence(definition.description.as_deref().unwrap_or(""));
    let params = parameters(definition);
    if description.is_empty() {
        format!("{name}({params})")
    } else {
        format!("{name}({params}): {description}")
    }
}

/// The whole listing.
pub fn listing(tools: &[RenderTool<'_>]) -> String {
    let mut out = String::with_capacity(tools.len() * 96);
    for tool in tools {
        out.push_str(&line(tool.name, tool.definition));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lines_show_required_optional_and_types() {
        let definition = ToolDefinition::new(
            "create_issue",
            "Create a new issue in a GitHub repository.  Needs push access, e.g. as a collaborator.",
            json!({"type": "object", "required": ["owner", "repo", "title"], "properties": {
                "labels": {"type": "array", "items": {"type": "string"}},
                "owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"},
                "body": {"type": "string"}, "state": {"enum": ["open", "closed"]}, "count": {"type": ["integer", "null"]}}}),
        );
        assert_eq!(
            line("github__create_issue", &definition),
            "github__create_issue(owner, repo, title, labels?: string[], body?, state?: open|closed, count?: integer): Create a new issue in a GitHub repository."
        );
    }

    #[test]
    fn first_sentences_survive_abbreviations_versions_and_urls() {
        let cases = [
            (
                "Fetch a URL, e.g. https://example.com. Then more.",
                "Fetch a URL, e.g. https://example.com.",
            ),
            (
                "Uses API v1.2 for calls. Second.",
                "Uses API v1.2 for calls.",
            ),
            ("No period at all", "No period at all"),
            ("Line one\nstill one. Two.", "Line one still one."),
            ("First paragraph\n\nSecond paragraph.", "First paragraph"),
            ("Really? Yes.", "Really?"),
            ("", ""),
            (
                "Ends at the exclamation! Not here.",
                "Ends at the exclamation!",
            ),
        ];
        for (text, first) in cases {
            assert_eq!(first_sentence(text), first, "{text:?}");
        }
        let long = "word ".repeat(60);
        let cut = first_sentence(&long);
        assert!(
            cut.chars().count() <= MAX_DESCRIPTION_CHARS + 1 && cut.ends_with("word…"),
            "{cut}"
        );
    }
}
