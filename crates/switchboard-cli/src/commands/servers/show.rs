//! `switchboard servers show NAME`: one server's report (as a `status` row) and its entry, a
//! `key  value` line each, secret values redacted as the gateway gives them; `--json` prints
//! the answer as it is.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use super::{One, encode, gateway, offline_config};
use crate::output::{print_json, print_line};

pub(super) async fn show(config: Option<&Path>, one: &One) -> anyhow::Result<ExitCode> {
    let answer = if one.common.offline {
        let (path, loaded) = offline_config(config)?;
        let entry = loaded
            .server(&one.name)
            .map(switchboard::live::redacted_entry)
            .with_context(|| format!("no server '{}' in {}", one.name, path.display()))?;
        json!({"entry": entry})
    } else {
        let admin = gateway(config, &one.common)?;
        admin
            .get(&format!("/servers/{}", encode(&one.name)))
            .await?
    };
    if one.common.json {
        print_json(&answer)?;
    } else {
        print_show(&answer)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The text form: the report's row (when a gateway gave one), then the entry.
fn print_show(answer: &Value) -> anyhow::Result<()> {
    if answer["server"].is_object() {
        crate::commands::status::print_status(&json!({"servers": [answer["server"]]}))?;
    }
    let Some(entry) = answer["entry"].as_object() else {
        return Ok(());
    };
    print_line("entry:")?;
    let width = entry.keys().map(String::len).max().unwrap_or(0);
    for (key, value) in entry {
        print_line(&format!("  {key:width$}  {}", entry_value(value)))?;
    }
    Ok(())
}

/// One entry value as text: strings as they are (quoted where they hold a space), lists
/// space-separated, tables as `KEY=VALUE` pairs.
fn entry_value(value: &Value) -> String {
    match value {
        Value::String(text) if text.is_empty() || text.contains(char::is_whitespace) => {
            format!("{text:?}")
        }
        Value::String(text) => text.clone(),
        Value::Array(items) if items.is_empty() => "(none)".to_owned(),
        Value::Array(items) => items.iter().map(entry_value).collect::<Vec<_>>().join(" "),
        Value::Object(map) if map.is_empty() => "(none)".to_owned(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| format!("{key}={}", entry_value(value)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn entry_values_read_as_text() {
        use super::entry_value;
        assert_eq!(entry_value(&json!("npx")), "npx");
        assert_eq!(entry_value(&json!("a b")), "\"a b\"");
        assert_eq!(entry_value(&json!(["-y", "pkg", "/tmp"])), "-y pkg /tmp");
        assert_eq!(
            entry_value(&json!({"API_KEY": "[redacted]", "MODE": "fast"})),
            "API_KEY=[redacted], MODE=fast"
        );
        assert_eq!(entry_value(&json!({})), "(none)");
        assert_eq!(entry_value(&json!(true)), "true");
        assert_eq!(entry_value(&Value::Null), "-");
    }
}
