//! Prometheus metrics, the primitives: a duration [`Histogram`] that a call records into with
//! two relaxed atomic additions (no lock, no allocation), and [`Exposition`], which writes
//! metric families in the Prometheus text exposition format, version 0.0.4 ([`CONTENT_TYPE`]),
//! escaping label values and help text as that format requires.
//!
//! Which metrics the gateway keeps, and their labels, is `switchboard::metrics`; this module
//! never decides a name or a label.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The content type of [`Exposition`]'s text (what Prometheus asks for and promtool checks).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Upper bounds of the duration buckets, in seconds: sub-millisecond edges for the gateway's
/// own cost, up to a minute for slow tools and approvals.
pub const DURATION_BUCKETS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// [`DURATION_BUCKETS`] in nanoseconds, what an observation is compared with.
const BUCKET_NANOS: [u64; 18] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
];

/// Buckets kept: one per bound, and the last for everything above (`+Inf`).
const SLOTS: usize = DURATION_BUCKETS.len() + 1;

/// A histogram of durations over [`DURATION_BUCKETS`]. Each bucket counts only its own
/// observations; the cumulative counts the format wants are summed when it is read. The sum
/// comes first, so an observation under a millisecond writes one cache line.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Histogram {
    sum_nanos: AtomicU64,
    buckets: [AtomicU64; SLOTS],
}

/// What a [`Histogram`] held when it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Observations per bucket, not cumulative; the last is above every bound.
    pub buckets: [u64; SLOTS],
    /// The sum of every observation, in seconds.
    pub sum: f64,
}

impl HistogramSnapshot {
    /// How many observations there were.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

impl Histogram {
    /// Counts one duration (a bound is inclusive: exactly 1 ms falls in the `le="0.001"` bucket).
    pub fn observe(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let slot = BUCKET_NANOS.partition_point(|&bound| bound < nanos);
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Reads the counts now (each bucket read once, so the cumulative counts never decrease).
    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: std::array::from_fn(|slot| self.buckets[slot].load(Ordering::Relaxed)),
            sum: Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)).as_secs_f64(),
        }
    }
}

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// Label names and values of one sample, in order.
pub type Labels<'a> = &'a [(&'a str, &'a str)];

/// Metric families in the text exposition format. A family is opened with [`Self::family`]
/// (its `# HELP` and `# TYPE` lines), then its samples follow. Names and label names are the
/// caller's constants (never outside data); label values and help text are escaped here.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a family: every sample written until the next one belongs to it.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        self.text.push_str("# HELP ");
        self.text.push_str(name);
        self.text.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.text.push_str("\\\\"),
                '\n' => self.text.push_str("\\n"),
                c => self.text.push(c),
            }
        }
        let _ = writeln!(self.text, "\n# TYPE {name} {}", kind.as_str());
    }

    /// One sample of a counter or a gauge.
    pub fn sample(&mut self, name: &str, labels: Labels<'_>, value: f64) {
        self.line(name, labels, None, value);
    }

    /// A histogram's samples: `_bucket` per bound (cumulative) and `+Inf`, `_sum`, `_count`.
    pub fn histogram(&mut self, name: &str, labels: Labels<'_>, histogram: &HistogramSnapshot) {
        let bucket = format!("{name}_bucket");
        let mut cumulative = 0;
        for (slot, count) in histogram.buckets.iter().enumerate() {
            cumulative += count;
            let bound = DURATION_BUCKETS.get(slot).copied().unwrap_or(f64::INFINITY);
            self.line(&bucket, labels, Some(bound), cumulative as f64);
        }
        self.line(&format!("{name}_sum"), labels, None, histogram.sum);
        self.line(&format!("{name}_count"), labels, None, cumulative as f64);
    }

    /// The text, ready to serve.
    pub fn finish(self) -> String {
        self.text
    }

    fn line(&mut self, name: &str, labels: Labels<'_>, le: Option<f64>, value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() || le.is_some() {
            self.text.push('{');
            for (index, (label, value)) in labels.iter().enumerate() {
                if index > 0 {
                    self.text.push(',');
                }
                self.text.push_str(label);
                self.text.push_str("=\"");
                escape_label_value(&mut self.text, value);
                self.text.push('"');
            }
            if let Some(bound) = le {
                if !labels.is_empty() {
                    self.text.push(',');
                }
                self.text.push_str("le=\"");
                write_value(&mut self.text, bound);
                self.text.push('"');
            }
            self.text.push('}');
        }
        self.text.push(' ');
        write_value(&mut self.text, value);
        self.text.push('\n');
    }
}

/// A label value as the format wants it: backslash, double quote and line feed escaped.
fn escape_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value or bound: `+Inf`, `-Inf`, `NaN`, else the shortest decimal that reads back
/// the same (`1`, `0.00025`).
fn write_value(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value == f64::INFINITY {
        out.push_str("+Inf");
    } else if value == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        let _ = write!(out, "{value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_and_the_last_bucket_takes_the_rest() {
        let histogram = Histogram::default();
        histogram.observe(Duration::from_micros(100)); // exactly 0.0001: first bucket
        histogram.observe(Duration::from_micros(101)); // just above: second
        histogram.observe(Duration::from_millis(1)); // exactly 0.001
        histogram.observe(Duration::from_secs(61)); // above 60: +Inf only
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.buckets[0], 1);
        assert_eq!(snapshot.buckets[1], 1);
        assert_eq!(snapshot.buckets[3], 1);
        assert_eq!(snapshot.buckets[SLOTS - 1], 1);
        assert_eq!(snapshot.count(), 4);
        assert!((snapshot.sum - 61.001_201).abs() < 1e-9, "{}", snapshot.sum);
        assert_eq!(BUCKET_NANOS.len(), DURATION_BUCKETS.len());
        for (nanos, seconds) in BUCKET_NANOS.iter().zip(DURATION_BUCKETS) {
            assert_eq!(*nanos, Duration::from_secs_f64(seconds).as_nanos() as u64);
        }
    }

    #[test]
    fn a_histogram_is_written_cumulative_with_sum_and_count() {
        let histogram = Histogram::default();
        histogram.observe(Duration::from_micros(200));
        histogram.observe(Duration::from_millis(3));
        let mut out = Exposition::new();
        out.family("op_seconds", Kind::Histogram, "How long.");
        out.histogram("op_seconds", &[("tool", "a")], &histogram.snapshot());
        let text = out.finish();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# HELP op_seconds How long.");
        assert_eq!(lines[1], "# TYPE op_seconds histogram");
        assert_eq!(lines[2], r#"op_seconds_bucket{tool="a",le="0.0001"} 0"#);
        assert_eq!(lines[3], r#"op_seconds_bucket{tool="a",le="0.00025"} 1"#);
        assert_eq!(lines[6], r#"op_seconds_bucket{tool="a",le="0.0025"} 1"#);
        assert_eq!(lines[7], r#"op_seconds_bucket{tool="a",le="0.005"} 2"#);
        assert_eq!(lines[14], r#"op_seconds_bucket{tool="a",le="1"} 2"#);
        assert_eq!(lines[20], r#"op_seconds_bucket{tool="a",le="+Inf"} 2"#);
        assert_eq!(lines[21], r#"op_seconds_sum{tool="a"} 0.0032"#);
        assert_eq!(lines[22], r#"op_seconds_count{tool="a"} 2"#);
        assert_eq!(lines.len(), 23);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut out = Exposition::new();
        out.family("calls_total", Kind::Counter, "Calls \\ per line\nsecond");
        out.sample("calls_total", &[("tool", "a\"b\\c\nd"), ("agent", "")], 3.0);
        out.family("up", Kind::Gauge, "Up.");
        out.sample("up", &[], 1.0);
        out.sample("up", &[], f64::NAN);
        assert_eq!(
            out.finish(),
            "# HELP calls_total Calls \\\\ per line\\nsecond\n\
             # TYPE calls_total counter\n\
             calls_total{tool=\"a\\\"b\\\\c\\nd\",agent=\"\"} 3\n\
             # HELP up Up.\n\
             # TYPE up gauge\n\
             up 1\n\
             up NaN\n"
        );
    }

    #[test]
    fn values_are_written_as_prometheus_reads_them() {
        let mut out = String::new();
        for value in [
            0.0,
            1.0,
            0.00025,
            2.5,
            1e21,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            write_value(&mut out, value);
            out.push(' ');
        }
        assert_eq!(out, "0 1 0.00025 2.5 1000000000000000000000 +Inf -Inf ");
    }
}
