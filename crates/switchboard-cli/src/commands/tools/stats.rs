//! `switchboard tools --stats`: what each tool measurably costs here — p50 / p90 / p99, error
//! and timeout rates, samples, declared figures, the figure tiers judge it by, its badge, its
//! health, the tiers it is visible in, and its rank within its category (the leaderboard).
//! Figures come from the stats file the gateway keeps (`[latency] database`), so they
//! include every earlier run and calibration in this environment — or, with `[storage] url`,
//! from every replica's windows on PostgreSQL, merged (`switchboard::latency::shared`).

use switchboard::latency::report::ToolStats;

use crate::output::{print_json, print_line};

fn figure(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.1}"))
}

fn rate(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |rate| format!("{:.0}%", rate * 100.0))
}

/// Prints the stats as JSON or as a table grouped by category.
pub fn print(rows: &[ToolStats], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&rows);
    }
    let width = rows.iter().map(|r| r.tool.len()).max().unwrap_or(4).max(4);
    let mut category = None;
    for row in rows {
        if category != Some(&row.category) {
            category = Some(&row.category);
            print_line(&format!("\n[{}]", row.category))?;
            print_line(&format!(
                "{:>4}  {:width$}  {:>8}  {:>8}  {:>8}  {:>5}  {:>5}  {:>7}  {:>9}  {:>9}  {:9}  {:8}  TIERS",
                "RANK",
                "TOOL",
                "P50 MS",
                "P90 MS",
                "P99 MS",
                "ERR",
                "T/O",
                "SAMPLES",
                "DECL P50",
                "DECL MAX",
                "BADGE",
                "HEALTH"
            ))?;
        }
        print_line(&format!(
            "{:>4}  {:width$}  {:>8}  {:>8}  {:>8}  {:>5}  {:>5}  {:>7}  {:>9}  {:>9}  {:9}  {:8}  {}",
            row.rank
                .map_or_else(|| "-".to_owned(), |rank| rank.to_string()),
            row.tool,
            figure(row.p50_ms),
            figure(row.p90_ms),
            figure(row.p99_ms),
            rate(row.error_rate),
            rate(row.timeout_rate),
            row.samples,
            figure(row.declared_p50_ms),
            figure(row.declared_max_ms),
            row.badge.unwrap_or("-"),
            row.health,
            if row.tiers.is_empty() {
                "(none)".to_owned()
            } else {
                row.tiers.join(",")
            },
        ))?;
    }
    Ok(())
}
