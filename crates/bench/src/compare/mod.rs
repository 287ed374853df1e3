//! `bench compare`: Switchboard side by side, in one run, with direct, the floor, the peer
//! gateways and optionally another build of itself — the latency passes ([`latency`]),
//! throughput, memory, and on request throughput against cores and against a pool of stdio
//! servers ([`parts`] says which run). Before measuring anything it checks that the plots
//! can be drawn and says which peers it found; each table is printed as soon as it is
//! measured (with `--json`, to stderr, the JSON going to stdout at the end), so a run cut
//! short still shows what it measured.

mod latency;
mod parts;
mod tables;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use serde_json::{Map, Value, json};

pub use latency::{Comparison, Passes, SparsePass, latency};
pub use tables::latency as latency_tables;
pub use tables::memory as memory_table;
pub use tables::throughput_notes as throughput_table;

use parts::Part;

use crate::plot::Plots;
use crate::scenarios::Binaries;
use crate::targets::{Against, Lineup};
use crate::{instances, machine, memory, peers, scaling, throughput};

/// `bench compare`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
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
    /// Seconds per throughput measurement of each target (split over two alternating
    /// rounds), in the throughput, scaling and instances parts.
    #[arg(long, default_value_t = 4.0)]
    seconds: f64,
    /// Leave the peer gateways (and, in the latency and throughput tables, the floor) out.
    #[arg(long)]
    no_peers: bool,
    /// Where the peer gateways are installed (default: .bench-peers/ in the repository the
    /// binaries were built in, where scripts/bench-peers.sh puts them). A peer whose program
    /// is not there is left out with a note.
    #[arg(long, value_name = "DIR", conflicts_with = "no_peers")]
    peers_dir: Option<PathBuf>,
    /// Where the PNG plots go.
    #[arg(long, default_value = "docs/bench")]
    plots: PathBuf,
    /// The TrueType font of the plots (default: DejaVu Sans where Debian's fonts-dejavu-core
    /// or a matplotlib installation keeps it).
    #[arg(long, value_name = "PATH", conflicts_with = "no_plots")]
    font: Option<PathBuf>,
    /// Draw no plots (and need no font).
    #[arg(long)]
    no_plots: bool,
    /// Another build of `switchboard`, measured as one more target of every latency
    /// scenario, of the throughput runs and of the scaling table, in the same run.
    #[arg(long, value_name = "SWITCHBOARD_BINARY")]
    against: Option<PathBuf>,
    /// The --against build's name in the tables (default "switchboard (against)"); this
    /// build is then "switchboard (this build)".
    #[arg(long, value_name = "NAME", requires = "against")]
    against_label: Option<String>,
    /// Run only these parts: latency, throughput, memory, scaling, instances.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PARTS")]
    only: Vec<Part>,
    /// Leave these parts out of the default run (latency, throughput, memory, and scaling /
    /// instances when --cores / --instances are given).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PARTS")]
    skip: Vec<Part>,
    /// The scaling part: the gateway's core counts, each gateway pinned to that many cores
    /// (Switchboard with `serve --threads N`), the clients and fixtures on the others; a
    /// count above this machine's cores is left out with a note. Giving it adds the part.
    /// [default: 2,4,8,16]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    cores: Vec<usize>,
    /// Concurrency of the scaling and instances parts.
    #[arg(long, default_value_t = 64, value_name = "C")]
    scaling_concurrency: usize,
    /// The instances part: Switchboard over HTTP → stdio with `instances = N` in the echo
    /// server's entry (written only for N > 1), for each N. Giving it adds the part.
    /// [default: 1,2,4]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    instances: Vec<usize>,
}

const DEFAULT_CORES: [usize; 4] = [2, 4, 8, 16];
const DEFAULT_INSTANCES: [usize; 3] = [1, 2, 4];

/// Where the tables go as they are measured: stdout, or stderr when stdout is for `--json`.
struct Out {
    json: bool,
}

impl Out {
    fn show(&self, text: &str) {
        // A closed pipe loses the tables, not the run.
        let _ = if self.json {
            std::io::stderr().lock().write_all(text.as_bytes())
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
        };
    }
}

/// Runs `bench compare`.
pub fn main(args: &Args, bins: &Binaries, json: bool) -> anyhow::Result<()> {
    let parts = parts::select(&parts::Choice {
        only: &args.only,
        skip: &args.skip,
        cores: !args.cores.is_empty(),
        instances: !args.instances.is_empty(),
    })?;
    check_numbers(args)?;
    let against = match &args.against {
        Some(binary) => Some(Against {
            bins: bins.with_switchboard(binary)?,
            label: args
                .against_label
                .clone()
                .unwrap_or_else(|| "switchboard (against)".to_owned()),
        }),
        None => None,
    };
    let peers = match (&args.peers_dir, args.no_peers) {
        (_, true) => None,
        (Some(dir), false) if !dir.is_dir() => {
            bail!("--peers-dir {}: no such directory", dir.display())
        }
        (Some(dir), false) => Some(dir.clone()),
        (None, false) => Some(peers::default_dir(bins)),
    };
    let draws = [Part::Latency, Part::Throughput, Part::Scaling];
    let plots = if args.no_plots || !draws.iter().any(|part| parts.contains(part)) {
        None
    } else {
        Some(Plots::prepare(&args.plots, args.font.as_deref())?)
    };
    let lineup = Lineup {
        bins,
        against,
        peers,
    };
    let out = Out { json };
    out.show(&preamble(&parts, &lineup, plots.as_ref(), &args.plots));
    let mut run = Run {
        args,
        lineup,
        plots,
        out,
        written: Vec::new(),
        failures: Vec::new(),
    };
    let mut report = Map::new();
    for part in &parts {
        // A part that fails is reported and the others still run: a long run keeps what it
        // could measure.
        match run.part(*part) {
            Ok(value) => {
                report.insert(part.name().to_owned(), value);
            }
            Err(error) => {
                let failure = format!("{}: {error:#}", part.name());
                run.out
                    .show(&format!("\n{} failed: {error:#}\n", part.name()));
                run.failures.push(failure);
            }
        }
    }
    if !run.written.is_empty() {
        run.out
            .show(&format!("\nplots: {}\n", run.written.join(", ")));
    }
    if let Some(line) = machine::idle_config() {
        run.out.show(&format!("{line}\n"));
    }
    if json {
        report.insert("plots".into(), json!(run.written));
        report.insert("idle_cores".into(), json!(machine::idle_config()));
        println!("{}", serde_json::to_string_pretty(&Value::Object(report))?);
    }
    if !run.failures.is_empty() {
        bail!("{}", run.failures.join("; "));
    }
    Ok(())
}

/// A comparison run under way: what it measures with, where its tables and plots go, and
/// what went wrong so far.
struct Run<'a> {
    args: &'a Args,
    lineup: Lineup<'a>,
    plots: Option<Plots>,
    out: Out,
    /// The plots drawn so far.
    written: Vec<String>,
    /// Parts and plots that failed, and why.
    failures: Vec<String>,
}

impl Run<'_> {
    /// Measures `part`, printing its tables as they come and drawing its plots; returns its
    /// figures for the JSON report.
    fn part(&mut self, part: Part) -> anyhow::Result<Value> {
        let args = self.args;
        let (out, plots) = (&self.out, &self.plots);
        let (written, failures) = (&mut self.written, &mut self.failures);
        let mut drawn = |result: anyhow::Result<Vec<String>>| match result {
            Ok(paths) => written.extend(paths),
            Err(error) => {
                out.show(&format!("\nplot not drawn: {error:#}\n"));
                failures.push(format!("plot: {error:#}"));
            }
        };
        Ok(match part {
            Part::Latency => {
                let passes = Passes {
                    calls: args.calls,
                    sparse: SparsePass {
                        calls: args.sparse_calls,
                        gap: Duration::from_millis(args.gap_ms),
                    },
                };
                let comparisons = latency(&self.lineup, passes, &mut |comparison| {
                    for table in tables::latency(comparison) {
                        out.show(&crate::report::render(&table));
                    }
                    if let Some(plots) = plots {
                        drawn(plots.latency(comparison));
                    }
                })?;
                serde_json::to_value(&comparisons)?
            }
            Part::Throughput => {
                let runs = throughput::measure(
                    &self.lineup,
                    &args.concurrency,
                    args.seconds,
                    &mut |run| out.show(&tables::throughput(run).render()),
                )?;
                if let Some(plots) = plots {
                    drawn(plots.throughput(&runs));
                }
                serde_json::to_value(&runs)?
            }
            Part::Memory => {
                let measured = memory::measure(self.lineup.bins, 10, 1000)?;
                out.show(&tables::memory(&measured));
                serde_json::to_value(&measured)?
            }
            Part::Scaling => {
                let counts = or_default(&args.cores, &DEFAULT_CORES);
                let run = scaling::measure(
                    &self.lineup,
                    &counts,
                    args.scaling_concurrency,
                    args.seconds,
                    &mut |step| out.show(&tables::scaling_step(step).render()),
                )?;
                out.show(&tables::scaling_summary(&run).render());
                if let Some(plots) = plots {
                    drawn(plots.scaling(&run));
                }
                serde_json::to_value(&run)?
            }
            Part::Instances => {
                let counts = or_default(&args.instances, &DEFAULT_INSTANCES);
                let run = instances::measure(
                    &self.lineup,
                    &counts,
                    args.scaling_concurrency,
                    args.seconds,
                )?;
                out.show(&tables::instances(&run).render());
                serde_json::to_value(&run)?
            }
        })
    }
}

/// `given`, or `default` when it is empty.
fn or_default(given: &[usize], default: &[usize]) -> Vec<usize> {
    if given.is_empty() {
        default.to_vec()
    } else {
        given.to_vec()
    }
}

/// Refuses counts that would measure nothing.
fn check_numbers(args: &Args) -> anyhow::Result<()> {
    for (flag, values) in [
        ("--concurrency", &args.concurrency),
        ("--cores", &args.cores),
        ("--instances", &args.instances),
    ] {
        if values.contains(&0) {
            bail!("{flag} takes counts of at least 1");
        }
    }
    if args.scaling_concurrency == 0 {
        bail!("--scaling-concurrency must be at least 1");
    }
    if !(args.seconds > 0.0 && args.seconds.is_finite()) {
        bail!("--seconds must be a positive number, not {}", args.seconds);
    }
    Ok(())
}

/// What the run will do, before it does it: the parts, the builds, the peers, the plots.
fn preamble(
    parts: &BTreeSet<Part>,
    lineup: &Lineup<'_>,
    plots: Option<&Plots>,
    plots_dir: &Path,
) -> String {
    let names: Vec<&str> = parts.iter().map(|part| part.name()).collect();
    let mut text = format!("bench compare: {}\n", names.join(", "));
    for (build, label) in lineup.switchboards() {
        text.push_str(&format!("{label}: {}\n", build.switchboard.display()));
    }
    match &lineup.peers {
        None => text.push_str("peers: left out (--no-peers)\n"),
        Some(dir) => {
            let inventory = peers::inventory(lineup.bins, dir);
            let list = |there: bool| {
                let names: Vec<&str> = inventory
                    .iter()
                    .filter(|(_, found)| *found == there)
                    .map(|(name, _)| *name)
                    .collect();
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            };
            text.push_str(&format!(
                "peers in {}: {}; not there: {}\n",
                dir.display(),
                list(true),
                list(false)
            ));
        }
    }
    match plots {
        Some(plots) => text.push_str(&format!(
            "plots: into {}, drawn with {}\n",
            plots_dir.display(),
            plots.font.display()
        )),
        None => text.push_str("plots: none\n"),
    }
    text
}
