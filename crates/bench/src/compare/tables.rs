//! Every part of a comparison as printed tables: the latency passes, throughput, memory, the
//! scaling steps and their summary, and the instances table.

use super::latency::{self, Comparison, TargetResult};
use crate::instances::Instances;
use crate::memory::Memory;
use crate::report::{ScenarioResult, Table};
use crate::scaling::{Scaling, ScalingStep};
use crate::throughput::Throughput;

/// A comparison as printed tables: calls spaced (alternating call by call), back to back,
/// and sparse (when that pass ran).
pub fn latency(comparison: &Comparison) -> Vec<ScenarioResult> {
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
    let spaced = ScenarioResult {
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
    let back_to_back = ScenarioResult {
        scenario: format!(
            "tools/call echo, sequential back to back, {} ({} calls each, alternating in blocks of {})",
            comparison.scenario,
            comparison.calls,
            latency::BLOCK
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
        tables.push(ScenarioResult {
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
    comparison: &Comparison,
    added: impl Fn(&TargetResult) -> Option<f64>,
) -> Vec<String> {
    comparison
        .targets
        .iter()
        .filter_map(|t| added(t).map(|us| format!("{}: added at p50 {us:+.1} µs", t.target)))
        .collect()
}

/// A throughput run as a table: calls/s, the ratio to direct, CPU per call of either side,
/// and the rate that CPU would allow on this machine's cores.
pub fn throughput(run: &Throughput) -> Table {
    let rows = run
        .targets
        .iter()
        .zip(&run.cpu)
        .map(|((name, rate, ratio), cpu)| {
            vec![
                name.clone(),
                format!("{rate:.0}"),
                format!("{ratio:.2}×"),
                format!("{:.1} µs", cpu.server_us),
                format!("{:.1} µs", cpu.client_us),
                format!("{:.0}", cpu.ceiling_per_second),
            ]
        })
        .collect();
    let mut notes = vec![
        "server CPU per call: the gateway, the upstream it calls and their children; ceiling: \
         calls/s that client + server CPU per call allow on this machine's cores"
            .to_owned(),
    ];
    notes.extend(run.missing.iter().map(|m| format!("not measured: {m}")));
    Table {
        title: format!("{}, concurrency {}", run.scenario, run.concurrency),
        head: [
            "",
            "calls/s",
            "× direct",
            "server CPU/call",
            "client CPU/call",
            "ceiling",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
        notes,
    }
}

/// A throughput run as notes of a table (`bench quick`'s JSON keeps this shape).
pub fn throughput_notes(run: &Throughput) -> ScenarioResult {
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
    ScenarioResult {
        scenario: format!("{}, concurrency {}", run.scenario, run.concurrency),
        rows: Vec::new(),
        notes,
    }
}

/// Resident memory, as two lines.
pub fn memory(memory: &Memory) -> String {
    format!(
        "\nRSS with {} idle upstreams: {:.1} MB\nRSS per open HTTP session ({} sessions): {:.1} KB ({} → {} kB)\n",
        memory.idle_upstreams,
        memory.rss_with_idle_upstreams_kb as f64 / 1024.0,
        memory.sessions,
        memory.per_session_bytes / 1024.0,
        memory.rss_before_sessions_kb,
        memory.rss_after_sessions_kb
    )
}

/// What the server side of a scaling or instances row counts.
const SERVER_CPU: &str = "server CPU per call: the gateway and every process below it (its stdio \
     upstream), plus the HTTP fixture for HTTP → HTTP";

/// One scaling step: every target at N cores.
pub fn scaling_step(step: &ScalingStep) -> Table {
    let placement = match (&step.gateway_cores, &step.other_cores) {
        (Some(gateway), Some(other)) => {
            format!("gateways on cores {gateway}, clients and fixtures on {other}")
        }
        _ => "every core, nothing pinned".to_owned(),
    };
    let mut notes = vec![SERVER_CPU.to_owned()];
    notes.extend(step.missing.iter().map(|m| format!("not measured: {m}")));
    Table {
        title: format!(
            "scaling: the gateway on {} ({placement}), concurrency {}",
            cores(step.cores),
            step.concurrency
        ),
        head: [
            "",
            "calls/s",
            "× floor",
            "server CPU/call",
            "client CPU/call",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: step
            .rows
            .iter()
            .map(|row| {
                vec![
                    format!("{}  {}", row.scenario, row.target),
                    format!("{:.0}", row.calls_per_second),
                    row.to_floor.map_or("—".to_owned(), |r| format!("{r:.2}×")),
                    format!("{:.1} µs", row.server_cpu_us),
                    format!("{:.1} µs", row.client_cpu_us),
                ]
            })
            .collect(),
        notes,
    }
}

/// Every scaling step side by side: calls/s (and × floor) of each target by cores, and what
/// it gained from the fewest cores to the most.
pub fn scaling_summary(scaling: &Scaling) -> Table {
    let mut head = vec![String::new()];
    head.extend(scaling.steps.iter().map(|step| cores(step.cores)));
    head.push("gain".to_owned());
    let mut names: Vec<(&str, &str)> = Vec::new();
    for row in scaling.steps.iter().flat_map(|step| &step.rows) {
        if !names.contains(&(row.scenario.as_str(), row.target.as_str())) {
            names.push((&row.scenario, &row.target));
        }
    }
    let rows = names
        .iter()
        .map(|&(scenario, target)| {
            let rates: Vec<Option<(f64, Option<f64>)>> = scaling
                .steps
                .iter()
                .map(|step| {
                    step.rows
                        .iter()
                        .find(|row| row.scenario == scenario && row.target == target)
                        .map(|row| (row.calls_per_second, row.to_floor))
                })
                .collect();
            let mut cells = vec![format!("{scenario}  {target}")];
            cells.extend(rates.iter().map(|rate| match rate {
                Some((rate, Some(ratio))) => format!("{rate:.0} ({ratio:.2}×)"),
                Some((rate, None)) => format!("{rate:.0}"),
                None => "—".to_owned(),
            }));
            let measured: Vec<f64> = rates.iter().flatten().map(|(rate, _)| *rate).collect();
            cells.push(match (measured.first(), measured.last()) {
                (Some(first), Some(last)) if measured.len() > 1 && *first > 0.0 => {
                    format!("{:.2}×", last / first)
                }
                _ => "—".to_owned(),
            });
            cells
        })
        .collect();
    let mut notes = vec![
        "calls/s (× the floor at the same cores); gain: the most cores' calls/s over the fewest's"
            .to_owned(),
    ];
    notes.extend(scaling.skipped.iter().map(|s| format!("skipped: {s}")));
    Table {
        title: format!(
            "scaling summary: calls/s by the gateway's cores, concurrency {}",
            scaling.concurrency
        ),
        head,
        rows,
        notes,
    }
}

/// The instances table.
pub fn instances(run: &Instances) -> Table {
    let mut notes = vec![
        "server CPU per call: the gateway and every process below it (all its stdio servers); \
         echo servers: running below the gateway after the run (a pool of N shows N)"
            .to_owned(),
    ];
    notes.extend(run.missing.iter().map(|m| format!("not measured: {m}")));
    Table {
        title: format!(
            "HTTP → stdio with N instances of the stdio server, concurrency {}",
            run.concurrency
        ),
        head: ["", "calls/s", "server CPU/call", "echo servers"]
            .map(str::to_owned)
            .to_vec(),
        rows: run
            .rows
            .iter()
            .map(|row| {
                vec![
                    row.target.clone(),
                    format!("{:.0}", row.calls_per_second),
                    format!("{:.1} µs", row.server_cpu_us),
                    row.echo_servers.to_string(),
                ]
            })
            .collect(),
        notes,
    }
}

fn cores(count: usize) -> String {
    if count == 1 {
        "1 core".to_owned()
    } else {
        format!("{count} cores")
    }
}
