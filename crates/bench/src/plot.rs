//! PNG plots of a comparison run: latency CDFs per scenario (every target on one chart), of
//! the spaced pass and of the sparse one, and throughput against concurrency. Text is drawn
//! with the DejaVu Sans font of the machine (Debian's fonts-dejavu-core).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::compare::Comparison;
use crate::report::Percentiles;
use crate::throughput::Throughput;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
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

fn load_font() -> anyhow::Result<()> {
    let bytes = std::fs::read(FONT)
        .with_context(|| format!("{FONT}: install Debian's fonts-dejavu-core for the plots"))?;
    let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, leaked)
        .map_err(|_| anyhow::anyhow!("{FONT} is not a usable font"))
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

/// Writes `latency-cdf-<scenario>.png` for each comparison and `throughput.png` into `dir`.
pub fn write(
    dir: &Path,
    comparisons: &[Comparison],
    throughput: &[Throughput],
) -> anyhow::Result<Vec<String>> {
    load_font()?;
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for comparison in comparisons {
        let name = file_name(&comparison.scenario);
        let path = dir.join(format!("latency-cdf-{name}.png"));
        let spaced: Vec<Series<'_>> = comparison
            .targets
            .iter()
            .map(|t| (t.target.as_str(), &t.latency, t.samples_us.as_slice()))
            .collect();
        let title = format!(
            "tools/call latency CDF, {} ({} calls each)",
            comparison.scenario, comparison.calls
        );
        cdf(&path, &title, comparison.calls, &spaced)?;
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
            let path = dir.join(format!("latency-cdf-sparse-{name}.png"));
            let title = format!(
                "sparse calls (after {gap} ms idle), {} ({} calls each)",
                comparison.scenario, first.samples
            );
            cdf(&path, &title, first.samples, &sparse)?;
            written.push(path.display().to_string());
        }
    }
    if !throughput.is_empty() {
        let path = dir.join("throughput.png");
        throughput_chart(&path, throughput)?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// One target's line on a CDF: its name, percentiles and sorted samples (µs).
type Series<'a> = (&'a str, &'a Percentiles, &'a [f64]);

/// A latency CDF of `series`; a target with other than `calls` samples says how many.
fn cdf(path: &Path, title: &str, calls: usize, series: &[Series<'_>]) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    // A log axis from the fastest call to the largest p99: bodies and tails both readable.
    let x_max = series
        .iter()
        .map(|(_, latency, _)| latency.p99_us)
        .fold(1.0, f64::max)
        * 1.2;
    let x_min = series
        .iter()
        .filter_map(|(_, _, samples)| samples.first().copied())
        .fold(f64::MAX, f64::min)
        .clamp(1.0, x_max / 2.0)
        * 0.8;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((x_min..x_max).log_scale(), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc("latency (µs, log scale)")
        .x_labels(6)
        .x_label_formatter(&|us| format!("{us:.0}"))
        .y_desc("fraction of calls")
        .label_style(("sans-serif", 14))
        .draw()?;
    for (index, (name, latency, samples)) in series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let n = samples.len().max(1) as f64;
        let points = samples
            .iter()
            .enumerate()
            .map(|(i, us)| (us.clamp(x_min, x_max), (i + 1) as f64 / n));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(if latency.samples == calls {
                format!("{name} (p50 {:.0} µs)", latency.p50_us)
            } else {
                format!(
                    "{name} (p50 {:.0} µs, {} calls)",
                    latency.p50_us, latency.samples
                )
            })
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}

fn throughput_chart(path: &Path, runs: &[Throughput]) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let y_max = runs
        .iter()
        .flat_map(|run| run.targets.iter().map(|t| t.1))
        .fold(1.0, f64::max)
        * 1.15;
    let x_max = runs.iter().map(|run| run.concurrency).max().unwrap_or(1) as f64 * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "tools/call echo over HTTP: throughput vs concurrency",
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("concurrent clients")
        .y_desc("calls per second")
        .label_style(("sans-serif", 14))
        .draw()?;
    let names: Vec<String> = runs
        .first()
        .map(|run| run.targets.iter().map(|t| t.0.clone()).collect())
        .unwrap_or_default();
    for (index, name) in names.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let points: Vec<(f64, f64)> = runs
            .iter()
            .filter_map(|run| {
                let rate = run.targets.iter().find(|t| &t.0 == name)?.1;
                Some((run.concurrency as f64, rate))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
