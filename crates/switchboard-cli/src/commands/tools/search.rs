//! `switchboard tools search "QUERY"`: find tools for a task — among the configured servers'
//! tools (within an agent's view), or in an offline catalog file with `--catalog` (no servers
//! started).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;
use switchboard_search::{SearchIndex, docs_from_catalog_file};

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What you want to do, in words.
    query: String,
    /// Most results.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print a JSON array of {id, name, server, score, description}, best first.
    #[arg(long)]
    json: bool,
    /// Search this offline catalog file (JSON {"tools": [...]}, each an MCP tool definition
    /// with its "server"; docs/cli.md) instead of the
    /// configured servers.
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// Only tools this agent may see.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
}

struct Found {
    id: String,
    name: String,
    server: String,
    score: f64,
    description: String,
}

fn first_line(text: Option<&str>) -> String {
    text.unwrap_or("")
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_owned()
}

pub async fn run(config: Option<&Path>, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let limit = args.limit.max(1);
    if args.catalog.is_some() && args.agent.is_some() {
        // A catalog file knows no agents.
        return Err(crate::usage::usage(
            "--catalog searches the file's tools as they are: --agent needs the configured gateway (drop --catalog)",
        ));
    }
    let found: Vec<Found> = match &args.catalog {
        Some(path) => {
            let docs = docs_from_catalog_file(path)?;
            let by_key: std::collections::HashMap<String, (String, String, String)> = docs
                .iter()
                .map(|d| {
                    (
                        d.key.clone(),
                        (
                            d.name.clone(),
                            d.server.clone(),
                            first_line(d.definition.description.as_deref()),
                        ),
                    )
                })
                .collect();
            let index = SearchIndex::build(docs);
            index
                .search(&args.query, limit, |_| true)
                .into_iter()
                .filter_map(|hit| {
                    let (name, server, description) = by_key.get(&hit.key)?.clone();
                    Some(Found {
                        id: hit.key,
                        name,
                        server,
                        score: hit.score,
                        description,
                    })
                })
                .collect()
        }
        None => {
            let host = super::super::start_host(config, args.agent.as_deref())
                .await
                .context("starting the configured servers (use --catalog FILE to search a file)")?;
            let found = host
                .search_tools(
                    &switchboard_core::Caller::new(args.agent.clone(), None),
                    &args.query,
                    limit,
                )
                .into_iter()
                .map(|(entry, score)| Found {
                    id: format!("{}/{}", entry.spec.server, entry.upstream_name),
                    name: entry.exposed.clone(),
                    server: entry.spec.server.to_string(),
                    score,
                    description: first_line(entry.spec.definition.description.as_deref()),
                })
                .collect();
            host.close().await?;
            found
        }
    };
    if args.json {
        let rows: Vec<_> = found
            .iter()
            .map(|f| json!({"id": f.id, "name": f.name, "server": f.server, "score": f.score, "description": f.description}))
            .collect();
        print_json(&rows)?;
    } else if found.is_empty() {
        print_line(&format!("no tools match '{}'", args.query))?;
    } else {
        let width = found.iter().map(|f| f.id.len()).max().unwrap_or(2);
        for f in &found {
            let mut description = f.description.clone();
            if description.chars().count() > 90 {
                description = description.chars().take(89).collect::<String>() + "…";
            }
            print_line(&format!("{:>6.2}  {:width$}  {description}", f.score, f.id))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
