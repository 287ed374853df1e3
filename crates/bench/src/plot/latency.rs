//! Latency CDFs: every target of a scenario on one chart, on a log axis of µs, each line
//! labelled with its p50 (and its number of calls when it made fewer than the others).

use std::path::Path;

use plotters::prelude::*;

use super::COLORS;
use crate::report::Percentiles;

/// One target's line on a CDF: its name, percentiles and sorted samples (µs).
pub type Series<'a> = (&'a str, &'a Percentiles, &'a [f64]);

/// A latency CDF of `series`; a target with other than `calls` samples says how many.
pub fn cdf(path: &Path, title: &str, calls: usize, series: &[Series<'_>]) -> anyhow::Result<()> {
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
