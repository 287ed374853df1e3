//! `switchboard tools pins list|diff NAME|approve NAME`: tools of `trust = "pinned"` servers
//! held back because their definitions changed since they were pinned, on the running
//! gateway (admin endpoint). `approve` makes the new definition the pin and serves the tool
//! again; with the `--fingerprint` that `diff` printed, only the definition shown then.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use crate::admin::client::AdminClient;
use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct PinsArgs {
    #[command(subcommand)]
    action: PinsAction,
    /// Print JSON.
    #[arg(long, global = true)]
    json: bool,
    /// The running gateway's admin file.
    #[arg(long, global = true, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum PinsAction {
    /// The tools held back, with the fields that changed.
    List,
    /// What changed in a held-back tool's definition (NAME: its exposed name or SERVER:TOOL).
    Diff { name: String },
    /// Accept a held-back tool's new definition: it becomes the pin, the tool is served again.
    Approve {
        name: String,
        /// The fingerprint `diff` printed: approve that definition only (a tool that changed
        /// again since stays held). Without it, the definition held now is approved.
        #[arg(long, value_name = "HEX")]
        fingerprint: Option<String>,
    },
}

pub async fn run(config: Option<&std::path::Path>, args: PinsArgs) -> anyhow::Result<ExitCode> {
    let admin = AdminClient::for_config(args.admin_file.as_deref(), config)?;
    match args.action {
        PinsAction::List => {
            let pins = admin.get("/pins").await?;
            if args.json {
                print_json(&pins)?;
                return Ok(ExitCode::SUCCESS);
            }
            let held = pins["held"].as_array().cloned().unwrap_or_default();
            if held.is_empty() {
                print_line("no tool is held back")?;
            }
            for tool in &held {
                print_line(&format!(
                    "{}  ({}:{}) changed: {}",
                    tool["name"].as_str().unwrap_or("?"),
                    tool["server"].as_str().unwrap_or("?"),
                    tool["tool"].as_str().unwrap_or("?"),
                    names(&tool["changed"]),
                ))?;
            }
        }
        PinsAction::Diff { name } => {
            let pins = admin.get("/pins").await?;
            let tool = pins["held"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| {
                    t["name"] == name.as_str()
                        || format!("{}:{}", text(&t["server"]), text(&t["tool"])) == name
                })
                .with_context(|| {
                    format!("no tool held back is named '{name}' (switchboard tools pins list)")
                })?;
            if args.json {
                print_json(tool)?;
                return Ok(ExitCode::SUCCESS);
            }
            let pretty =
                |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
            let diff = switchboard_core::config::edit::unified_diff(
                &name,
                &pretty(&tool["pinned"]),
                &pretty(&tool["now"]),
            );
            print_line(diff.trim_end())?;
            print_line(&format!(
                "fingerprint {} (switchboard tools pins approve {name} --fingerprint {})",
                text(&tool["fingerprint"]),
                text(&tool["fingerprint"])
            ))?;
        }
        PinsAction::Approve { name, fingerprint } => {
            let body = json!({"name": name, "actor": std::env::var("USER").ok(), "fingerprint": fingerprint});
            let approved = admin.post("/pins/approve", body).await?;
            if args.json {
                print_json(&approved)?;
            } else {
                print_line(&format!(
                    "approved {}: its new definition is pinned and it is served again",
                    approved["name"].as_str().unwrap_or(&name)
                ))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn names(value: &Value) -> String {
    value
        .as_array()
        .map(|items| items.iter().map(text).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}
