//! Switchboard's benchmark harness. Every comparison runs both sides in the same process run,
//! alternating, and reports them side by side.
//!
//! `cargo run -p bench --release -- quick` builds nothing itself: it runs the `switchboard`
//! and `switchboard-fixture` binaries next to its own executable (build them with
//! `cargo build --release -p switchboard-cli -p switchboard-fixtures`).

mod report;
mod scenarios;
mod search;
mod tokens;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Switchboard benchmarks")]
struct Args {
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every scenario, small sizes (< 60 s).
    Quick,
    /// Gateway start-up with N stdio servers that each take DELAY ms to start.
    Startup {
        #[arg(long, default_value_t = 10)]
        servers: usize,
        #[arg(long, default_value_t = 300)]
        delay_ms: u64,
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// tools/list through the gateway over a replayed catalog.
    List {
        /// A catalog in the shape of shared/catalog/tools.json.
        #[arg(long, default_value = "../shared/catalog/tools.json")]
        catalog: PathBuf,
        #[arg(long, default_value_t = 500)]
        calls: usize,
    },
    /// Sequential tools/call latency: direct to the echo fixture vs through the gateway.
    Latency {
        #[arg(long, default_value_t = 5000)]
        calls: usize,
    },
    /// Tokens of a catalog in every rendering (o200k_base), and compact-listing render time.
    Tokens {
        #[arg(long, default_value = "../shared/catalog/tools.json")]
        catalog: PathBuf,
    },
    /// Tool search: recall on the labelled task set (baseline vs final) and latency.
    Search {
        /// The directory holding livemcpbench_tools.json, queries.jsonl and tools.json.
        #[arg(long, default_value = "../shared/catalog")]
        catalog_dir: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Command::Search { catalog_dir } = &args.command {
        return search::run(catalog_dir, args.json);
    }
    if let Command::Tokens { catalog } = &args.command {
        return tokens::run(catalog, args.json);
    }
    let bins = scenarios::Binaries::locate()?;
    let results = match args.command {
        Command::Quick => vec![
            scenarios::startup(&bins, 10, 300, 3)?,
            scenarios::list(&bins, &PathBuf::from("../shared/catalog/tools.json"), 200)?,
            scenarios::latency(&bins, 2000)?,
        ],
        Command::Startup {
            servers,
            delay_ms,
            runs,
        } => vec![scenarios::startup(&bins, servers, delay_ms, runs)?],
        Command::List { catalog, calls } => vec![scenarios::list(&bins, &catalog, calls)?],
        Command::Latency { calls } => vec![scenarios::latency(&bins, calls)?],
        Command::Search { .. } | Command::Tokens { .. } => Vec::new(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        for result in &results {
            report::print(result);
        }
    }
    Ok(())
}
