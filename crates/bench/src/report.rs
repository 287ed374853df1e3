//! Latency samples → percentiles, and the printed table.

use std::time::Duration;

use serde::Serialize;

/// Percentiles of a set of samples, in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    pub samples: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Percentiles {
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                return 0.0;
            }
            let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
            samples[index].as_secs_f64() * 1e6
        };
        Self {
            samples: samples.len(),
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            max_us: at(1.0),
        }
    }
}

/// One scenario's outcome: named rows of percentiles and free-form notes.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub scenario: String,
    pub rows: Vec<(String, Percentiles)>,
    pub notes: Vec<String>,
}

pub fn print(result: &ScenarioResult) {
    println!("\n## {}", result.scenario);
    println!(
        "{:<34} {:>8} {:>11} {:>11} {:>11} {:>11}",
        "", "samples", "p50", "p90", "p99", "max"
    );
    for (name, p) in &result.rows {
        println!(
            "{:<34} {:>8} {:>11} {:>11} {:>11} {:>11}",
            name,
            p.samples,
            human(p.p50_us),
            human(p.p90_us),
            human(p.p99_us),
            human(p.max_us)
        );
    }
    for note in &result.notes {
        println!("  {note}");
    }
}

fn human(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}
