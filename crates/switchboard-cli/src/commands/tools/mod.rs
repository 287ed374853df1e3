//! `switchboard tools`: what the gateway would expose, as a table or JSON; `tools search`
//! finds tools for a task. The listing is the caller's view — every tool it may call — or,
//! with `--as-sent`, what its `tools/list` is answered: for a `categories` or `search`
//! exposure (chosen, or fitted to `max_listing_tokens`), the meta-tools and pinned tools.

pub mod pins;
mod rendered;
pub mod search;
mod stats;

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::exposure_flag::ExposureFlag;
use crate::output::{print_json, print_line};
use crate::usage::usage;

#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    action: Option<ToolsAction>,
    /// Output: table, json (one object per tool), or a rendering for an LLM API: mcp,
    /// mcp-compact (MCP as the compact listing mode sends it), openai, openai-responses,
    /// openai-realtime, anthropic, gemini, compact, toon.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only the tools this agent (one of the config's [agents]) may see and call.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// List (as a table) or render an offline catalog file (JSON {"tools": [...]}, each an
    /// MCP tool definition with its "server", or an "id" server/tool; docs/cli.md) instead of
    /// the configured servers; nothing is started.
    #[arg(long, value_name = "FILE")]
    catalog: Option<std::path::PathBuf>,
    /// Only the tools that fit this latency tier (one of the config's [tiers]).
    #[arg(long, value_name = "TIER")]
    tier: Option<String>,
    /// Print the o200k_base token count of the rendering instead of the rendering (mcp and
    /// mcp-compact count what max_listing_tokens is compared with).
    #[arg(long)]
    count_tokens: bool,
    /// Latency figures per tool (p50/p90/p99, errors, samples, declared vs measured, badge,
    /// health, tiers, rank in its category); with --format json, as JSON.
    #[arg(long)]
    stats: bool,
    /// List what the agent's tools/list is answered instead of its view: in a categories or
    /// search exposure, the meta-tools and its pinned tools; --format json prints the
    /// definitions as sent.
    #[arg(long)]
    as_sent: bool,
    /// With --as-sent: list as a gateway started with this --exposure would (as `serve
    /// --exposure`, over gateway.exposure, for agents that do not choose).
    #[command(flatten)]
    exposure: ExposureFlag,
}

#[derive(Debug, clap::Subcommand)]
enum ToolsAction {
    /// Find tools for a task (BM25F over names, descriptions, parameters, servers, categories).
    Search(search::SearchArgs),
    /// Tools held back because their pinned definitions changed (servers with trust =
    /// "pinned"): list, diff, approve — on the running gateway.
    Pins(pins::PinsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Mcp,
    McpCompact,
    Openai,
    OpenaiResponses,
    OpenaiRealtime,
    Anthropic,
    Gemini,
    Compact,
    Toon,
}

impl Format {
    /// The renderer of an LLM-facing format.
    fn rendering(self) -> Option<switchboard_render::Format> {
        use switchboard_render::Format as R;
        Some(match self {
            Self::Table | Self::Json => return None,
            Self::Mcp => R::Mcp,
            Self::McpCompact => R::McpCompact,
            Self::Openai => R::OpenAiChat,
            Self::OpenaiResponses => R::OpenAiResponses,
            Self::OpenaiRealtime => R::OpenAiRealtime,
            Self::Anthropic => R::Anthropic,
            Self::Gemini => R::Gemini,
            Self::Compact => R::Compact,
            Self::Toon => R::Toon,
        })
    }

    /// The `--format` values that render for an LLM API, as a sentence's list
    /// ("mcp, …, compact or toon"): what an error about a table or JSON listing offers instead.
    fn llm_renderings() -> String {
        use clap::ValueEnum;
        let names: Vec<String> = Self::value_variants()
            .iter()
            .filter(|format| format.rendering().is_some())
            .filter_map(|format| format.to_possible_value())
            .map(|value| value.get_name().to_owned())
            .collect();
        match names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

pub async fn run(config: Option<&Path>, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(ToolsAction::Search(search)) => return search::run(config, search).await,
        Some(ToolsAction::Pins(pins)) => return pins::run(config, pins).await,
        None => {}
    }
    if args.count_tokens && args.format.rendering().is_none() {
        return Err(usage(format!(
            "--count-tokens needs an LLM rendering: --format {}",
            Format::llm_renderings()
        )));
    }
    if let Some(path) = &args.catalog {
        if args.agent.is_some()
            || args.tier.is_some()
            || args.stats
            || args.as_sent
            || args.exposure.is_set()
        {
            // A catalog file knows no agents, tiers, measurements or exposure.
            return Err(usage(
                "--catalog renders the file's tools as they are: --agent, --tier, --stats, --as-sent and --exposure need the configured gateway (drop --catalog)",
            ));
        }
        if args.format == Format::Table {
            let tools = rendered::offline_by_server(path)?;
            let rows: Vec<(&str, &str, Option<&str>)> = tools
                .iter()
                .map(|(name, server, definition)| {
                    (
                        name.as_str(),
                        server.as_str(),
                        definition.description.as_deref(),
                    )
                })
                .collect();
            print_table(&rows)?;
            return Ok(ExitCode::SUCCESS);
        }
        let rendering = args.format.rendering().ok_or_else(|| {
            usage(format!(
                "--catalog prints a table or renders for an LLM API, not JSON: drop --format or pick --format {}",
                Format::llm_renderings()
            ))
        })?;
        rendered::print(rendering, &rendered::offline(path)?, args.count_tokens)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.exposure.is_set() && !args.as_sent {
        return Err(usage(
            "--exposure changes only what tools/list is sent, not the tools an agent may call: add --as-sent",
        ));
    }
    if args.stats && args.as_sent {
        return Err(usage(
            "--stats measures the tools an agent may call, --as-sent shows its listing: pick one",
        ));
    }
    if args.stats && args.format.rendering().is_some() {
        return Err(usage(
            "--stats prints a table (or --format json): it has no LLM rendering",
        ));
    }
    let exposure = args.exposure;
    let host = super::start_host_with(config, args.agent.as_deref(), |config| {
        exposure.apply(config);
    })
    .await?;
    // With `[storage] url`, the figures (tiers, stats) are the fleet's.
    host.sync_latency_stats().await;
    if let Some(tier) = &args.tier
        && let Err(unknown) = host.check_tier(tier)
    {
        host.close().await?;
        return Err(unknown.into());
    }
    if args.stats {
        let caller = switchboard_core::Caller::new(args.agent.clone(), None)
            .with_tier(args.tier.as_ref().map(|t| t.to_lowercase()));
        let visible: std::collections::HashSet<String> = host
            .visible_for(&caller)
            .iter()
            .map(|entry| entry.exposed.clone())
            .collect();
        let rows: Vec<_> = host
            .latency_report()
            .into_iter()
            .filter(|row| visible.contains(&row.tool))
            .collect();
        host.close().await?;
        stats::print(&rows, args.format == Format::Json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let caller = switchboard_core::Caller::new(args.agent.clone(), None)
        .with_tier(args.tier.as_ref().map(|t| t.to_lowercase()));
    let entries = host.visible_for(&caller);
    if args.as_sent {
        let listed = host.listed_tools(&caller);
        host.close().await?;
        print_as_sent(args.format, &listed, &entries, args.count_tokens)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(rendering) = args.format.rendering() {
        host.close().await?;
        let tools: Vec<_> = entries
            .iter()
            .map(|entry| (entry.exposed.clone(), entry.spec.definition.clone()))
            .collect();
        rendered::print(rendering, &tools, args.count_tokens)?;
        return Ok(ExitCode::SUCCESS);
    }
    let status = host.status();
    host.close().await?;
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
        _ => {
            let rows: Vec<(&str, &str, Option<&str>)> = entries
                .iter()
                .map(|entry| {
                    (
                        entry.exposed.as_str(),
                        entry.spec.server.as_str(),
                        entry.spec.definition.description.as_deref(),
                    )
                })
                .collect();
            print_table(&rows)?;
            for report in status.iter().filter(|s| s.state != "up") {
                crate::output::note!(
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

/// `listed`, the definitions a `tools/list` sends, in `format`: the table (a meta-tool's
/// server is `-`: the gateway's own), the definitions as JSON, or a rendering (or its count).
fn print_as_sent(
    format: Format,
    listed: &[switchboard_core::ToolDefinition],
    visible: &[std::sync::Arc<switchboard_core::CatalogEntry>],
    count_tokens: bool,
) -> anyhow::Result<()> {
    if let Some(rendering) = format.rendering() {
        let tools: Vec<_> = listed
            .iter()
            .map(|definition| (definition.name.clone(), definition.clone()))
            .collect();
        return rendered::print(rendering, &tools, count_tokens);
    }
    if format == Format::Json {
        return print_json(&listed);
    }
    let server_of = |name: &str| {
        visible
            .iter()
            .find(|entry| entry.exposed == name)
            .map_or("-", |entry| entry.spec.server.as_str())
    };
    let rows: Vec<(&str, &str, Option<&str>)> = listed
        .iter()
        .map(|definition| {
            (
                definition.name.as_str(),
                server_of(&definition.name),
                definition.description.as_deref(),
            )
        })
        .collect();
    print_table(&rows)
}

/// The NAME, SERVER, DESCRIPTION table (a description's first line, cut at 80 characters).
fn print_table(rows: &[(&str, &str, Option<&str>)]) -> anyhow::Result<()> {
    let width = rows.iter().map(|row| row.0.len()).max().unwrap_or(4).max(4);
    let server_width = rows.iter().map(|row| row.1.len()).max().unwrap_or(6).max(6);
    print_line(&format!(
        "{:width$}  {:server_width$}  DESCRIPTION",
        "NAME", "SERVER"
    ))?;
    for (name, server, description) in rows {
        let first_line = description.unwrap_or("").lines().next().unwrap_or("");
        print_line(&format!(
            "{name:width$}  {server:server_width$}  {}",
            truncate(first_line, 80)
        ))?;
    }
    Ok(())
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}
