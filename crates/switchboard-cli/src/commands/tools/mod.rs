//! `switchboard tools`: what the gateway would expose, as a table or JSON; `tools search`
//! finds tools for a task.

pub mod search;

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ToolsArgs {
    #[command(subcommand)]
    action: Option<ToolsAction>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only the tools this agent (one of the config's [agents]) may see and call.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum ToolsAction {
    /// Find tools for a task (BM25F over names, descriptions, parameters, servers, categories).
    Search(search::SearchArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

pub async fn run(config: Option<&Path>, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    if let Some(ToolsAction::Search(search)) = args.action {
        return search::run(config, search).await;
    }
    let host = super::start_host(config, args.agent.as_deref()).await?;
    let entries = host.visible_tools(args.agent.as_deref());
    let status = host.status();
    host.shutdown().await;
    let state_of = |server: &str| {
        status
            .iter()
            .find(|s| s.server == server)
            .map_or("unknown", |s| s.state)
    };
    match args.format {
        Format::Json => {
            let tools: Vec<_> = entries
                .iter()
                .map(|entry| {
                    json!({
                        "name": entry.exposed,
                        "server": entry.spec.server,
                        "tool": entry.upstream_name,
                        "title": entry.spec.definition.title,
                        "description": entry.spec.definition.description,
                        "status": state_of(entry.spec.server.as_str()),
                        "inputSchema": entry.spec.definition.input_schema,
                    })
                })
                .collect();
            print_json(&tools)?;
        }
        Format::Table => {
            let width = entries
                .iter()
                .map(|e| e.exposed.len())
                .max()
                .unwrap_or(4)
                .max(4);
            let server_width = entries
                .iter()
                .map(|e| e.spec.server.as_str().len())
                .max()
                .unwrap_or(6)
                .max(6);
            print_line(&format!(
                "{:width$}  {:server_width$}  DESCRIPTION",
                "NAME", "SERVER"
            ))?;
            for entry in &entries {
                let description = entry.spec.definition.description.as_deref().unwrap_or("");
                let first_line = description.lines().next().unwrap_or("");
                print_line(&format!(
                    "{:width$}  {:server_width$}  {}",
                    entry.exposed,
                    entry.spec.server.as_str(),
                    truncate(first_line, 80)
                ))?;
            }
            for report in status.iter().filter(|s| s.state != "up") {
                eprintln!(
                    "note: server '{}' is {}: {}",
                    report.server,
                    report.state,
                    report.error.as_deref().unwrap_or("no reason given")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}
