//! One tool's latency over time as an SVG drawn here, with no chart library and no script:
//! each call a dot (failed calls marked), on a logarithmic millisecond axis so a 2 ms tool
//! and a 4 s tier ceiling fit one picture, with each tier's ceiling drawn as a dashed line.

use maud::{Markup, html};
use switchboard_ledger::tally::Timing;

/// A tier's ceiling, drawn across the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Ceiling {
    pub tier: String,
    pub ms: f64,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 96.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 28.0;

/// The chart of `timings` (oldest first) against `ceilings`.
pub fn latency_chart(timings: &[Timing], ceilings: &[Ceiling]) -> Markup {
    let durations: Vec<f64> = timings
        .iter()
        .map(|t| (t.duration_us as f64 / 1_000.0).max(0.01))
        .collect();
    let highest = durations
        .iter()
        .chain(ceilings.iter().map(|c| &c.ms))
        .fold(1.0_f64, |max, ms| max.max(*ms));
    let lowest = durations.iter().fold(highest, |min, ms| min.min(*ms));
    // Whole decades around everything drawn.
    let (floor, roof) = (lowest.log10().floor().min(0.0), highest.log10().ceil());
    let roof = if roof <= floor { floor + 1.0 } else { roof };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let y = |ms: f64| TOP + plot_h * (1.0 - (ms.log10() - floor) / (roof - floor));
    let x = |index: usize| {
        if timings.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * index as f64 / (timings.len() - 1) as f64
        }
    };
    let decades: Vec<f64> = (floor as i32..=roof as i32)
        .map(|power| 10f64.powi(power))
        .collect();
    html! {
        svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img"
            viewBox=(format!("0 0 {WIDTH} {HEIGHT}"))
            aria-label=(format!("latency of the last {} calls, with tier ceilings", timings.len())) {
            rect class="plot" x=(LEFT) y=(TOP) width=(plot_w) height=(plot_h) {}
            @for decade in &decades {
                line class="grid" x1=(LEFT) x2=(LEFT + plot_w) y1=(fmt(y(*decade))) y2=(fmt(y(*decade))) {}
                text class="axis" x=(LEFT - 6.0) y=(fmt(y(*decade) + 4.0)) text-anchor="end" { (label(*decade)) }
            }
            @for ceiling in ceilings {
                line class="ceiling" x1=(LEFT) x2=(LEFT + plot_w) y1=(fmt(y(ceiling.ms))) y2=(fmt(y(ceiling.ms))) {}
                text class="ceiling-label" x=(LEFT + plot_w + 6.0) y=(fmt(y(ceiling.ms) + 4.0)) {
                    (ceiling.tier) " " (label(ceiling.ms))
                }
            }
            @for (index, (timing, ms)) in timings.iter().zip(&durations).enumerate() {
                circle class=(if timing.ok { "call" } else { "call failed" })
                    cx=(fmt(x(index))) cy=(fmt(y(*ms))) r="3" {
                    title { (crate::time::utc(timing.started_ms)) ": " (label(*ms)) @if !timing.ok { " (failed)" } }
                }
            }
            text class="axis" x=(LEFT) y=(HEIGHT - 8.0) { "older" }
            text class="axis" x=(LEFT + plot_w) y=(HEIGHT - 8.0) text-anchor="end" { "newer" }
            @if timings.is_empty() {
                text class="empty" x=(LEFT + plot_w / 2.0) y=(TOP + plot_h / 2.0) text-anchor="middle" {
                    "no calls on record yet"
                }
            }
        }
    }
}

fn fmt(value: f64) -> String {
    format!("{value:.1}")
}

fn label(ms: f64) -> String {
    if ms >= 1_000.0 {
        format!("{} s", trim(ms / 1_000.0))
    } else {
        format!("{} ms", trim(ms))
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_draws_every_call_and_every_ceiling_on_a_log_axis() {
        let timings: Vec<Timing> = [1_500, 2_000, 250_000]
            .iter()
            .enumerate()
            .map(|(i, us)| Timing {
                started_ms: 1_000 * i as i64,
                duration_us: *us,
                ok: i != 2,
            })
            .collect();
        let ceilings = [
            Ceiling {
                tier: "fast".into(),
                ms: 500.0,
            },
            Ceiling {
                tier: "deep".into(),
                ms: 4_000.0,
            },
        ];
        let svg = latency_chart(&timings, &ceilings).into_string();
        assert_eq!(svg.matches("<circle").count(), 3);
        assert_eq!(svg.matches("class=\"call failed\"").count(), 1);
        assert_eq!(svg.matches("class=\"ceiling\"").count(), 2);
        assert!(
            svg.contains("fast 500 ms") && svg.contains("deep 4 s"),
            "{svg}"
        );
        for decade in ["1 ms", "10 ms", "100 ms", "1 s", "10 s"] {
            assert!(
                svg.contains(&format!(">{decade}</text>")),
                "{decade}: {svg}"
            );
        }
        assert!(!svg.contains("style="), "no inline style");
        assert!(
            latency_chart(&[], &ceilings)
                .into_string()
                .contains("no calls on record")
        );
    }
}
