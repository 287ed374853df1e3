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
    print!("{}", render(result));
}

/// `result` as printed: a blank line, its title, its rows and its notes.
pub fn render(result: &ScenarioResult) -> String {
    let mut text = format!("\n## {}\n", result.scenario);
    text.push_str(&format!(
        "{:<34} {:>8} {:>11} {:>11} {:>11} {:>11}\n",
        "", "samples", "p50", "p90", "p99", "max"
    ));
    for (name, p) in &result.rows {
        text.push_str(&format!(
            "{:<34} {:>8} {:>11} {:>11} {:>11} {:>11}\n",
            name,
            p.samples,
            human(p.p50_us),
            human(p.p90_us),
            human(p.p99_us),
            human(p.max_us)
        ));
    }
    for note in &result.notes {
        text.push_str(&format!("  {note}\n"));
    }
    text
}

/// A table of text: a title, column heads, rows and notes; the first column is left-aligned,
/// the others right-aligned, each as wide as its widest cell.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

impl Table {
    /// The table as printed, like [`render`]'s.
    pub fn render(&self) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.head.len()])
            .max()
            .unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|column| {
                self.rows
                    .iter()
                    .chain([&self.head])
                    .filter_map(|row| row.get(column))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            let cells: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(column, &width)| {
                    let cell = row.get(column).map_or("", String::as_str);
                    let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
                    if column == 0 {
                        format!("{cell}{pad}")
                    } else {
                        format!("{pad}{cell}")
                    }
                })
                .collect();
            format!("{}\n", cells.join("  ").trim_end())
        };
        let mut text = format!("\n## {}\n", self.title);
        text.push_str(&line(&self.head));
        for row in &self.rows {
            text.push_str(&line(row));
        }
        for note in &self.notes {
            text.push_str(&format!("  {note}\n"));
        }
        text
    }
}

fn human(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn a_table_aligns_its_columns() {
        let table = Table {
            title: "t".to_owned(),
            head: vec![String::new(), "calls/s".to_owned()],
            rows: vec![
                vec!["floor".to_owned(), "316000".to_owned()],
                vec!["switchboard (this build)".to_owned(), "69000".to_owned()],
            ],
            notes: vec!["a note".to_owned()],
        };
        assert_eq!(
            table.render(),
            "\n## t\n                          calls/s\nfloor                      316000\n\
             switchboard (this build)    69000\n  a note\n"
        );
    }
}
