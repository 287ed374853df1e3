//! Every part of a comparison as printed tables: the latency passes, throughput, memory.

use super::latency::{self, Comparison, TargetResult};
use crate::memory::Memory;
use crate::report::{ScenarioResult, Table};
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
