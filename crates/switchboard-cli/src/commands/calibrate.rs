//! `switchboard calibrate`: measure tools here by calling them — only tools that are
//! read-only or idempotent, never a destructive one — so latency tiers rest on facts before
//! real traffic arrives. The figures go to the stats file the gateway reads at start.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use switchboard::latency::calibrate::{CalibrateOptions, Calibration};

use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Only this server's tools.
    #[arg(long, value_name = "SERVER")]
    server: Option<String>,
    /// Only this tool (its exposed name).
    #[arg(long, value_name = "TOOL")]
    tool: Option<String>,
    /// Calls per tool.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    calls: u32,
    /// Print the results as JSON (no progress bar).
    #[arg(long)]
    json: bool,
}

/// Draws `[#####-----] done/total tool` on stderr, in place.
fn progress_bar(done: usize, total: usize, tool: &str) {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
    crate::output::note_part!(
        "\r[{}{}] {done}/{total} {tool:<40.40}",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled)
    );
    if done == total {
        crate::output::note!();
    }
}

pub async fn run(config: Option<&Path>, args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let host = super::start_host(config, None).await?;
    let options = CalibrateOptions {
        server: args.server,
        tool: args.tool,
        calls: args.calls,
    };
    let interactive = !args.json && std::io::stderr().is_terminal();
    let quiet = |_: usize, _: usize, _: &str| {};
    let progress: &(dyn Fn(usize, usize, &str) + Sync) =
        if interactive { &progress_bar } else { &quiet };
    // SIGINT or SIGTERM stops the probing; the figures measured so far are saved on close.
    let results = host
        .unless_stopped(host.calibrate(&options, progress))
        .await;
    host.close().await?;
    let results = results??;
    if args.json {
        print_json(&results)?;
    } else {
        print_table(&results)?;
    }
    let probed = results.iter().filter(|r| r.skipped.is_none()).count();
    if probed == 0 {
        crate::output::note!(
            "nothing was probed: no selected tool is read-only or idempotent and reachable"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(results: &[Calibration]) -> anyhow::Result<()> {
    let width = results
        .iter()
        .map(|r| r.tool.len())
        .max()
        .unwrap_or(4)
        .max(4);
    print_line(&format!(
        "{:width$}  {:>5}  {:>6}  {:>8}  {:>8}  NOTE",
        "TOOL", "CALLS", "ERRORS", "P50 MS", "P99 MS"
    ))?;
    for row in results {
        let figure = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.1}"));
        print_line(&format!(
            "{:width$}  {:>5}  {:>6}  {:>8}  {:>8}  {}",
            row.tool,
            row.calls,
            row.errors + row.timeouts,
            figure(row.p50_ms),
            figure(row.p99_ms),
            row.skipped
                .as_deref()
                .map_or_else(String::new, |why| format!("skipped: {why}")),
        ))?;
    }
    Ok(())
}
