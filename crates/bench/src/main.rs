//! Switchboard's benchmark harness. Every comparison runs both sides in the same process run,
//! alternating, and reports them side by side.
//!
//! `cargo run -p bench --release -- quick` builds nothing itself: it runs the `switchboard`
//! and `switchboard-fixture` binaries next to its own executable (build them with
//! `cargo build --release -p switchboard-cli -p switchboard-fixtures`).

mod admin;
mod compare;
mod cpu;
mod drive;
mod era;
mod http_client;
mod live;
mod machine;
mod manager;
mod memory;
mod peers;
mod plot;
mod report;
mod scenarios;
mod search;
mod targets;
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
    /// Side by side in one run: direct vs Switchboard vs the peer gateways (when
    /// scripts/bench-peers.sh installed them), stdio → stdio, HTTP → stdio, HTTP → HTTP;
    /// throughput over HTTP against concurrency; resident memory. Writes PNG plots.
    Compare {
        #[arg(long, default_value_t = 3000)]
        calls: usize,
        /// Calls of each target in the sparse pass, each after the machine sat idle for
        /// --gap-ms (0 leaves the pass out).
        #[arg(long, default_value_t = 200)]
        sparse_calls: usize,
        /// Idle time before every call of the sparse pass: an agent's model time.
        #[arg(long, default_value_t = 20, value_name = "MS")]
        gap_ms: u64,
        /// Concurrencies of the throughput runs.
        #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
        concurrency: Vec<usize>,
        /// Seconds per throughput measurement (split over two alternating rounds).
        #[arg(long, default_value_t = 4.0)]
        seconds: f64,
        /// Leave the peer gateways out.
        #[arg(long)]
        no_peers: bool,
        /// Where the PNG plots go.
        #[arg(long, default_value = "docs/bench")]
        plots: PathBuf,
        /// The TrueType font of the plots (default: DejaVu Sans where Debian's
        /// fonts-dejavu-core or a matplotlib installation keeps it).
        #[arg(long, value_name = "PATH", conflicts_with = "no_plots")]
        font: Option<PathBuf>,
        /// Draw no plots (and need no font).
        #[arg(long)]
        no_plots: bool,
        /// Another build of `switchboard`, measured as one more target of every latency
        /// scenario in the same run; only the latency scenarios run then (no throughput,
        /// memory or plots).
        #[arg(long, value_name = "SWITCHBOARD_BINARY")]
        against: Option<PathBuf>,
    },
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
    if let Command::Compare {
        calls,
        sparse_calls,
        gap_ms,
        concurrency,
        seconds,
        no_peers,
        plots,
        font,
        no_plots,
        against,
    } = &args.command
    {
        let passes = compare::Passes {
            calls: *calls,
            sparse: compare::SparsePass {
                calls: *sparse_calls,
                gap: Duration::from_millis(*gap_ms),
            },
        };
        if let Some(against) = against {
            let comparisons = compare::latency(&bins, passes, !*no_peers, Some(against))?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&comparisons)?);
            } else {
                comparisons
                    .iter()
                    .flat_map(compare_rows)
                    .for_each(|table| report::print(&table));
                print_idle_cores();
            }
            return Ok(());
        }
        // Before measuring: a run that cannot draw its plots fails now, not in minutes.
        let plots = if *no_plots {
            None
        } else {
            Some(plot::Plots::prepare(plots, font.as_deref())?)
        };
        return run_compare(
            &bins,
            passes,
            concurrency,
            *seconds,
            !*no_peers,
            plots.as_ref(),
            args.json,
        );
    }
    if let Command::Memory { sessions } = &args.command {
        let memory = memory::measure(&bins, 10, *sessions)?;
        return print_memory(&memory, args.json);
    }
    let results = match args.command {
        Command::Quick => vec![
            scenarios::startup(&bins, 10, 300, 3)?,
            scenarios::list(&bins, &PathBuf::from("../shared/catalog/tools.json"), 200)?,
            scenarios::latency(&bins, 2000, None, 0)?,
        ]
        .into_iter()
        .chain(
            compare::latency(&bins, QUICK_PASSES, false, None)?
                .iter()
                .flat_map(compare_rows),
        )
        .chain(
            throughput::measure(&bins, &[32], 1.0, false)?
                .iter()
                .map(throughput_rows),
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
        | Command::Memory { .. } => Vec::new(),
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

/// A comparison as printed tables: calls spaced (alternating call by call), back to back,
/// and sparse (when that pass ran).
fn compare_rows(comparison: &compare::Comparison) -> Vec<report::ScenarioResult> {
    let mut notes = added_notes(comparison, |t| t.added_p50_us);
    notes.extend(comparison.targets.iter().filter_map(|t| {
        t.server_cpu_us
            .map(|cpu| format!("{}: server-side CPU per call {cpu:.0} µs", t.target))
    }));
    notes.extend(
        comparison
            .missing
            .iter()
            .map(|m| format!("not measured: {m}")),
    );
    let spaced = report::ScenarioResult {
        scenario: format!(
            "tools/call echo, sequential, {} ({} calls each, alternating call by call)",
            comparison.scenario, comparison.calls
        ),
        rows: comparison
            .targets
            .iter()
            .map(|t| (t.target.clone(), t.latency.clone()))
            .collect(),
        notes,
    };
    let back_to_back = report::ScenarioResult {
        scenario: format!(
            "tools/call echo, sequential back to back, {} ({} calls each, alternating in blocks of {})",
            comparison.scenario,
            comparison.calls,
            compare::BLOCK
        ),
        rows: comparison
            .targets
            .iter()
            .map(|t| (t.target.clone(), t.back_to_back.clone()))
            .collect(),
        notes: added_notes(comparison, |t| t.back_to_back_added_p50_us),
    };
    let sparse_rows: Vec<_> = comparison
        .targets
        .iter()
        .filter_map(|t| Some((t.target.clone(), t.sparse.clone()?)))
        .collect();
    let mut tables = vec![spaced, back_to_back];
    if let Some((_, first)) = sparse_rows.first() {
        tables.push(report::ScenarioResult {
            scenario: format!(
                "tools/call echo, sparse, {} ({} calls each, after {} ms idle)",
                comparison.scenario,
                first.samples,
                comparison.sparse_gap_ms.unwrap_or_default()
            ),
            rows: sparse_rows,
            notes: added_notes(comparison, |t| t.sparse_added_p50_us),
        });
    }
    tables
}

/// "<target>: added at p50 …" for every target with a figure in the pass `added` reads.
fn added_notes(
    comparison: &compare::Comparison,
    added: impl Fn(&compare::TargetResult) -> Option<f64>,
) -> Vec<String> {
    comparison
        .targets
        .iter()
        .filter_map(|t| added(t).map(|us| format!("{}: added at p50 {us:+.1} µs", t.target)))
        .collect()
}

/// A throughput run as notes of a table.
fn throughput_rows(run: &throughput::Throughput) -> report::ScenarioResult {
    let mut notes: Vec<String> = run
        .targets
        .iter()
        .map(|(name, rate, ratio)| format!("{name}: {rate:.0} calls/s ({ratio:.2}× direct)"))
        .collect();
    notes.extend(run.cpu.iter().map(|cpu| {
        format!(
            "{}: CPU per call {:.0} µs client + {:.0} µs server → at most {:.0} calls/s on this machine's cores",
            cpu.target, cpu.client_us, cpu.server_us, cpu.ceiling_per_second
        )
    }));
    notes.extend(run.missing.iter().map(|m| format!("not measured: {m}")));
    report::ScenarioResult {
        scenario: format!("{}, concurrency {}", run.scenario, run.concurrency),
        rows: Vec::new(),
        notes,
    }
}

fn print_memory(memory: &memory::Memory, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(memory)?);
    } else {
        println!(
            "RSS with {} idle upstreams: {:.1} MB",
            memory.idle_upstreams,
            memory.rss_with_idle_upstreams_kb as f64 / 1024.0
        );
        println!(
            "RSS per open HTTP session ({} sessions): {:.1} KB ({} → {} kB)",
            memory.sessions,
            memory.per_session_bytes / 1024.0,
            memory.rss_before_sessions_kb,
            memory.rss_after_sessions_kb
        );
    }
    Ok(())
}

fn run_compare(
    bins: &scenarios::Binaries,
    passes: compare::Passes,
    concurrency: &[usize],
    seconds: f64,
    with_peers: bool,
    plots: Option<&plot::Plots>,
    json: bool,
) -> anyhow::Result<()> {
    let comparisons = compare::latency(bins, passes, with_peers, None)?;
    let throughput = throughput::measure(bins, concurrency, seconds, with_peers)?;
    let memory = memory::measure(bins, 10, 1000)?;
    let mut written = Vec::new();
    if let Some(plots) = plots {
        for comparison in &comparisons {
            written.extend(plots.latency(comparison)?);
        }
        written.extend(plots.throughput(&throughput)?);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "latency": comparisons,
                "throughput": throughput,
                "memory": memory,
                "plots": written,
                "idle_cores": machine::idle_config(),
            }))?
        );
        return Ok(());
    }
    for table in comparisons.iter().flat_map(compare_rows) {
        report::print(&table);
    }
    for run in &throughput {
        report::print(&throughput_rows(run));
    }
    println!();
    print_memory(&memory, false)?;
    if let Some(plots) = plots {
        println!(
            "\nplots: {} (drawn with {})",
            written.join(", "),
            plots.font.display()
        );
    }
    print_idle_cores();
    Ok(())
}

/// How the machine's idle cores sleep, under a side-by-side table (it moves every figure).
fn print_idle_cores() {
    if let Some(line) = machine::idle_config() {
        println!("{line}");
    }
}
