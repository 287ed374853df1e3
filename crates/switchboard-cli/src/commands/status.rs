//! `switchboard status`: each server's state, era, tool count and last error.

use std::path::Path;
use std::process::ExitCode;

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print JSON: an array of {server, state, era, protocol_version, transport, tools, error, notes}.
    #[arg(long)]
    json: bool,
}

pub async fn run(config: Option<&Path>, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let host = super::start_host(config, None).await?;
    let reports = host.status();
    let problems = host.catalog_problems();
    host.shutdown().await;
    if args.json {
        print_json(&reports)?;
        return Ok(ExitCode::SUCCESS);
    }
    print_line(&format!(
        "{:20}  {:8}  {:8}  {:15}  {:>5}  ERROR",
        "SERVER", "STATE", "ERA", "TRANSPORT", "TOOLS"
    ))?;
    for report in &reports {
        print_line(&format!(
            "{:20}  {:8}  {:8}  {:15}  {:>5}  {}",
            report.server,
            report.state,
            report.era.as_deref().unwrap_or("-"),
            report.transport,
            report.tools,
            report.error.as_deref().unwrap_or("")
        ))?;
        for note in &report.notes {
            print_line(&format!("    note: {note}"))?;
        }
    }
    for problem in problems.iter().filter(|p| p.server().is_none()) {
        print_line(&format!("note: {problem}"))?;
    }
    Ok(ExitCode::SUCCESS)
}
