//! Switchboard's benchmark harness. Every comparison runs both sides in the same process run,
//! alternating, and reports them side by side.
//!
//! `cargo run -p bench --release -- quick` builds nothing itself: it runs the `switchboard`
//! and `switchboard-fixture` binaries next to its own executable (build them with
//! `cargo build --release -p switchboard-cli -p switchboard-fixtures`).

mod admin;
mod affinity;
mod compare;
mod cpu;
mod drive;
mod era;
mod http_client;
mod instances;
mod live;
mod machine;
mod manager;
mod memory;
mod peers;
mod plot;
mod report;
mod scaling;
mod scenarios;
mod search;
mod targets;
mod tasks;
mod throughput;
mod tokens;

use std::path::PathBuf;
use std::time::Duration;

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
        /// A second gateway binary (another build of `switchboard`), taking turns with this
        /// one in blocks of 50 calls in the same run: the way to compare two builds on a
        /// noisy machine.
        #[arg(long, value_name = "SWITCHBOARD_BINARY")]
        against: Option<PathBuf>,
        /// Threads spinning on the CPU during the run: other work on the machine, which puts
        /// the client, the gateway and the upstream on shared cores.
        #[arg(long, default_value_t = 0, value_name = "N")]
        busy_threads: usize,
    },
    /// Side by side in one run: direct vs Switchboard vs the floor and the peer gateways
    /// (when scripts/bench-peers.sh installed them, or --peers-dir has them), stdio → stdio,
    /// HTTP → stdio, HTTP → HTTP; throughput over HTTP against concurrency; resident memory;
    /// on request throughput against the gateway's cores (--cores) and against a pool of
    /// stdio servers (--instances). Prints each table as it is measured; writes PNG plots.
    Compare(Box<compare::Args>),
    /// Any MCP target: N calls of a tool at concurrency C after a warm-up; latency
    /// percentiles and calls per second. The target is --url, or a stdio command after `--`
    /// (`bench drive --calls 5000 -- target/release/switchboard serve`).
    Drive(drive::Args),
    /// Live configuration on a gateway of its own: add → callable, calls to an untouched
    /// server while others are added and removed, hand edit → tools/list_changed.
    Live(live::Args),
    /// The server manager's background installs beside a call load: a__echo p99 while
    /// installs of the npm memory server run vs idle, in the same run.
    Manager(manager::Args),
    /// Tasks: creating a gateway-run task (p50/p90/p99 of the round trip), and resident
    /// memory with N finished tasks held and after their TTL.
    Tasks {
        #[arg(long, default_value_t = 10_000)]
        tasks: usize,
        /// The TTL of each task, in seconds.
        #[arg(long, default_value_t = 5)]
        ttl_secs: u64,
    },
    /// Resident memory: with 10 idle upstreams, and per open HTTP session.
    Memory {
        #[arg(long, default_value_t = 1000)]
        sessions: usize,
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
    if let Command::Drive(drive) = &args.command {
        return drive::main(drive, args.json);
    }
    if let Command::Live(live) = &args.command {
        return live::main(live, args.json);
    }
    if let Command::Manager(manager) = &args.command {
        return manager::main(manager, args.json);
    }
    let bins = scenarios::Binaries::locate()?;
    if let Command::Compare(compare) = &args.command {
        return compare::main(compare, &bins, args.json);
    }
    if let Command::Tasks { tasks, ttl_secs } = &args.command {
        let figures = tasks::measure(&bins, *tasks, std::time::Duration::from_secs(*ttl_secs))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&figures)?);
        } else {
            print!("{}", tasks::table(&figures));
        }
        return Ok(());
    }
    if let Command::Memory { sessions } = &args.command {
        let memory = memory::measure(&bins, 10, *sessions)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&memory)?);
        } else {
            print!("{}", compare::memory_table(&memory));
        }
        return Ok(());
    }
    // Switchboard alone beside direct: no other build, no peers.
    let alone = targets::Lineup {
        bins: &bins,
        against: None,
        peers: None,
    };
    let results = match args.command {
        Command::Quick => vec![
            scenarios::startup(&bins, 10, 300, 3)?,
            scenarios::list(&bins, &PathBuf::from("../shared/catalog/tools.json"), 200)?,
            scenarios::latency(&bins, 2000, None, 0)?,
        ]
        .into_iter()
        .chain(
            compare::latency(&alone, QUICK_PASSES, &mut |_| ())?
                .iter()
                .flat_map(compare::latency_tables),
        )
        .chain(
            throughput::measure(&alone, &[32], 1.0, &mut |_| ())?
                .iter()
                .map(compare::throughput_table),
        )
        .collect(),
        Command::Startup {
            servers,
            delay_ms,
            runs,
        } => vec![scenarios::startup(&bins, servers, delay_ms, runs)?],
        Command::List { catalog, calls } => vec![scenarios::list(&bins, &catalog, calls)?],
        Command::Latency {
            calls,
            against,
            busy_threads,
        } => {
            vec![scenarios::latency(
                &bins,
                calls,
                against.as_deref(),
                busy_threads,
            )?]
        }
        Command::Search { .. }
        | Command::Tokens { .. }
        | Command::Drive(_)
        | Command::Live(_)
        | Command::Manager(_)
        | Command::Compare { .. }
        | Command::Memory { .. }
        | Command::Tasks { .. } => Vec::new(),
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

/// `quick`'s latency passes; the sparse one makes enough calls to show it works, in ~2 s.
const QUICK_PASSES: compare::Passes = compare::Passes {
    calls: 500,
    sparse: compare::SparsePass {
        calls: 20,
        gap: Duration::from_millis(20),
    },
};
