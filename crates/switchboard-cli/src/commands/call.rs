//! `switchboard call TOOL`: one call through the full pipeline.
//!
//! Arguments come from `--args JSON` and/or `key=value` pairs (values are parsed as JSON when
//! they parse, else taken as strings: `n=3` is a number, `name=bob` a string).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Map, Value};
use switchboard_core::CallContext;

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The tool's exposed name (see `switchboard tools`).
    tool: String,
    /// Arguments as key=value pairs.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Arguments as one JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Print the MCP CallToolResult as JSON.
    #[arg(long)]
    json: bool,
    /// Call as this agent (one of the config's [agents]), within its permissions.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
}

pub async fn run(config: Option<&Path>, args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = parse_arguments(args.args.as_deref(), &args.pairs)?;
    let host = super::start_host(config, args.agent.as_deref()).await?;
    let ctx = CallContext {
        agent: args.agent.clone(),
        ..CallContext::default()
    };
    let result = host.call(&ctx, &args.tool, arguments).await;
    host.shutdown().await;
    let outcome = result.map_err(|error| {
        anyhow::anyhow!("{error}\n  hint: `switchboard tools` lists the tools that can be called")
    })?;
    if args.json {
        print_json(&outcome)?;
    } else if let Some(structured) = outcome
        .structured_content
        .as_ref()
        .filter(|_| outcome.text_content().is_empty())
    {
        print_json(structured)?;
    } else {
        for block in &outcome.content {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    print_line(block.get("text").and_then(Value::as_str).unwrap_or(""))?
                }
                _ => print_line(&block.to_string())?,
            }
        }
    }
    Ok(if outcome.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn parse_arguments(json: Option<&str>, pairs: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut arguments = match json {
        None => Map::new(),
        Some(text) => {
            match serde_json::from_str::<Value>(text).context("--args is not valid JSON")? {
                Value::Object(map) => map,
                other => bail!(
                    "--args must be a JSON object, got {}",
                    switchboard_core::json_kind(&other)
                ),
            }
        }
    };
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            bail!("argument '{pair}' is not KEY=VALUE");
        };
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        arguments.insert(key.to_owned(), value);
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pairs_are_json_when_they_parse() {
        let parsed = parse_arguments(
            Some(r#"{"a": 1}"#),
            &["n=3".into(), "name=bob".into(), "flag=true".into()],
        )
        .expect("parses");
        assert_eq!(
            Value::Object(parsed),
            json!({"a": 1, "n": 3, "name": "bob", "flag": true})
        );
        assert!(parse_arguments(Some("[1]"), &[]).is_err());
        assert!(parse_arguments(None, &["novalue".into()]).is_err());
    }
}
