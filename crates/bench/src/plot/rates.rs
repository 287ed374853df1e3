//! Charts of calls per second: throughput against concurrency, and against the gateway's
//! cores (one chart per scenario). Rates are labelled in thousands ("500k"), and the y label
//! area is wide enough that the axis title clears the tick labels.

use std::path::Path;

use plotters::prelude::*;

use super::COLORS;
use crate::scaling::Scaling;
use crate::throughput::Throughput;

/// Room for the y axis: its tick labels ("1.25M" at most) and, left of them, its title.
const Y_LABEL_AREA: u32 = 90;

/// A rate of calls per second as an axis label: "500k", "2.5k", "800", "1.2M".
pub fn rate_label(per_second: f64) -> String {
    let (value, unit) = if per_second.abs() >= 1e6 {
        (per_second / 1e6, "M")
    } else if per_second.abs() >= 1e3 {
        (per_second / 1e3, "k")
    } else {
        (per_second, "")
    };
    // One decimal below 10 of a unit (2.5k), none above (500k); a trailing ".0" dropped.
    let text = if value.abs() < 10.0 && !unit.is_empty() {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    };
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text}{unit}")
}

/// One line of a chart: its name and its (x, calls per second) points.
type Line = (String, Vec<(f64, f64)>);

/// A chart of `lines` against an x axis of whole numbers (clients or cores), on a log scale.
fn chart(path: &Path, title: &str, x_desc: &str, lines: &[Line]) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    // Headroom above the highest point for the legend, which sits in the upper left: a line
    // of it per target.
    let y_max = lines
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.1))
        .fold(1.0, f64::max)
        * (1.15 + 0.06 * lines.len() as f64);
    // A log2 axis with a tick at every x measured: 1, 8, 32, 64 clients or 2, 4, 8, 16 cores
    // spread out evenly rather than crowded at one end.
    let mut xs: Vec<f64> = lines
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let x_min = xs.first().copied().unwrap_or(1.0).max(1.0) / 1.4;
    let x_max = xs.last().copied().unwrap_or(1.0).max(1.0) * 1.4;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(50)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(
            (x_min..x_max).log_scale().base(2.0).with_key_points(xs),
            0f64..y_max,
        )?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("calls per second")
        .y_label_formatter(&|rate| rate_label(*rate))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    for (index, (name, points)) in lines.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
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

/// Throughput against concurrency, a line per target.
pub fn throughput(path: &Path, runs: &[Throughput]) -> anyhow::Result<()> {
    let mut lines: Vec<Line> = Vec::new();
    for run in runs {
        for (name, rate, _) in &run.targets {
            let point = (run.concurrency as f64, *rate);
            match lines.iter_mut().find(|(line, _)| line == name) {
                Some((_, points)) => points.push(point),
                None => lines.push((name.clone(), vec![point])),
            }
        }
    }
    chart(
        path,
        "tools/call echo over HTTP: throughput vs concurrency",
        "concurrent clients",
        &lines,
    )
}

/// Throughput against the gateway's cores for `scenario`, a line per target.
pub fn scaling(path: &Path, scaling: &Scaling, scenario: &str) -> anyhow::Result<()> {
    let mut lines: Vec<Line> = Vec::new();
    for step in &scaling.steps {
        for row in step.rows.iter().filter(|row| row.scenario == scenario) {
            let point = (step.cores as f64, row.calls_per_second);
            match lines.iter_mut().find(|(line, _)| *line == row.target) {
                Some((_, points)) => points.push(point),
                None => lines.push((row.target.clone(), vec![point])),
            }
        }
    }
    chart(
        path,
        &format!(
            "tools/call echo, {scenario}: throughput vs the gateway's cores (concurrency {})",
            scaling.concurrency
        ),
        "the gateway's cores",
        &lines,
    )
}

#[cfg(test)]
mod tests {
    use super::rate_label;

    #[test]
    fn rates_are_labelled_in_thousands() {
        assert_eq!(rate_label(500_000.0), "500k");
        assert_eq!(rate_label(69_000.0), "69k");
        assert_eq!(rate_label(2_500.0), "2.5k");
        assert_eq!(rate_label(2_000.0), "2k");
        assert_eq!(rate_label(800.0), "800");
        assert_eq!(rate_label(0.0), "0");
        assert_eq!(rate_label(1_250_000.0), "1.2M");
        assert_eq!(rate_label(12_000_000.0), "12M");
    }
}
