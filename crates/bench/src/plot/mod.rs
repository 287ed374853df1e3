//! PNG plots of a comparison run: latency CDFs per scenario (every target on one chart), of
//! the spaced pass and of the sparse one ([`latency`]); throughput against concurrency and
//! against the gateway's cores ([`rates`]). [`Plots::prepare`] checks, before anything is
//! measured, that they can be drawn — a font loads ([`font`]) and renders, the directory
//! takes files — so a long run never ends without its figures.

mod font;
mod latency;
mod rates;

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::compare::Comparison;
use crate::scaling::Scaling;
use crate::throughput::Throughput;
use latency::Series;

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Where the plots go, once a font is registered and the directory was found writable.
pub struct Plots {
    dir: PathBuf,
    /// The font they are drawn with.
    pub font: PathBuf,
}

impl Plots {
    /// Loads the font (`font`, or DejaVu Sans where it usually is), draws a line of text with
    /// it, and makes sure `dir` exists and takes a file.
    pub fn prepare(dir: &Path, font: Option<&Path>) -> anyhow::Result<Self> {
        let (path, bytes) = font::load(font)?;
        // plotters keeps registered fonts for the life of the process.
        let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, leaked).map_err(|_| {
            anyhow::anyhow!(
                "{} is not a TrueType font plotters can use: --font another, or --no-plots",
                path.display()
            )
        })?;
        let mut pixels = vec![0u8; 200 * 40 * 3];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, (200, 40)).into_drawing_area();
            root.fill(&WHITE)
                .and_then(|()| root.titled("500k calls/s, 150 µs", ("sans-serif", 14)))
                .map(drop)
                .map_err(|error| {
                    anyhow::anyhow!("drawing text with {}: {error}", path.display())
                })?;
        }
        writable(dir)?;
        Ok(Self {
            dir: dir.to_owned(),
            font: path,
        })
    }

    /// Writes `latency-cdf-<scenario>.png` (and `latency-cdf-sparse-<scenario>.png` when the
    /// sparse pass ran); returns their paths.
    pub fn latency(&self, comparison: &Comparison) -> anyhow::Result<Vec<String>> {
        let mut written = Vec::new();
        let name = file_name(&comparison.scenario);
        let path = self.dir.join(format!("latency-cdf-{name}.png"));
        let spaced: Vec<Series<'_>> = comparison
            .targets
            .iter()
            .map(|t| (t.target.as_str(), &t.latency, t.samples_us.as_slice()))
            .collect();
        let title = format!(
            "tools/call latency CDF, {} ({} calls each)",
            comparison.scenario, comparison.calls
        );
        latency::cdf(&path, &title, comparison.calls, &spaced)?;
        written.push(path.display().to_string());
        let sparse: Vec<Series<'_>> = comparison
            .targets
            .iter()
            .filter_map(|t| {
                Some((
                    t.target.as_str(),
                    t.sparse.as_ref()?,
                    t.sparse_samples_us.as_slice(),
                ))
            })
            .collect();
        if let (Some((_, first, _)), Some(gap)) = (sparse.first(), comparison.sparse_gap_ms) {
            let path = self.dir.join(format!("latency-cdf-sparse-{name}.png"));
            let title = format!(
                "sparse calls (after {gap} ms idle), {} ({} calls each)",
                comparison.scenario, first.samples
            );
            latency::cdf(&path, &title, first.samples, &sparse)?;
            written.push(path.display().to_string());
        }
        Ok(written)
    }

    /// Writes `throughput.png`; returns its path (none without runs).
    pub fn throughput(&self, runs: &[Throughput]) -> anyhow::Result<Vec<String>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let path = self.dir.join("throughput.png");
        rates::throughput(&path, runs)?;
        Ok(vec![path.display().to_string()])
    }

    /// Writes `scaling-<scenario>.png` for each scenario measured; returns their paths.
    pub fn scaling(&self, scaling: &Scaling) -> anyhow::Result<Vec<String>> {
        let mut scenarios: Vec<&str> = Vec::new();
        for row in scaling.steps.iter().flat_map(|step| &step.rows) {
            if !scenarios.contains(&row.scenario.as_str()) {
                scenarios.push(&row.scenario);
            }
        }
        let mut written = Vec::new();
        for scenario in scenarios {
            let path = self
                .dir
                .join(format!("scaling-{}.png", file_name(scenario)));
            rates::scaling(&path, scaling, scenario)?;
            written.push(path.display().to_string());
        }
        Ok(written)
    }
}

/// Makes `dir` if need be, and writes (and removes) a file there.
fn writable(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--plots {}: cannot make the directory (or --no-plots)",
            dir.display()
        )
    })?;
    tempfile::Builder::new()
        .prefix(".bench-plots-check")
        .tempfile_in(dir)
        .with_context(|| {
            format!(
                "--plots {}: cannot write there (or --no-plots)",
                dir.display()
            )
        })?;
    Ok(())
}

fn file_name(scenario: &str) -> String {
    scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_become_file_names() {
        assert_eq!(file_name("HTTP → stdio"), "http-stdio");
        assert_eq!(file_name("stdio → stdio"), "stdio-stdio");
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_refused_and_one_that_can_is_left_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A file where the directory should be: it cannot be made.
        let blocked = dir.path().join("plots");
        std::fs::write(&blocked, "").expect("file");
        let error = writable(&blocked.join("inner")).expect_err("refused");
        assert!(format!("{error:#}").contains("--no-plots"), "{error:#}");
        let fresh = dir.path().join("fresh/plots");
        writable(&fresh).expect("made and writable");
        assert_eq!(std::fs::read_dir(&fresh).expect("dir").count(), 0);
    }
}
