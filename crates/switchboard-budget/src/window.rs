//! The rolling window of one tool's last N calls (latency and outcome) and the figures derived
//! from it: p50/p90/p95/p99, error rate, timeout rate.
//!
//! Recording keeps a ring buffer, two counters and a sorted copy of the latencies up to date:
//! one binary search and two small memmoves (at most `capacity` `u32`s), no allocation once
//! full. Every quantile is then O(1) — the call path reads several per call (placement, the
//! deadline's p99, the hedge's p95), so sorting or selecting on read would cost more.
//!
//! **Quantile definition.** Exact over the window, interpolated with the Hazen rule (Hyndman &
//! Fan type 5): the k-th smallest of n samples stands for probability `(k - 0.5) / n`, and a
//! quantile between two such points is interpolated linearly; below the first or above the last
//! it is that sample. With 100 samples p99 sits halfway between the 99th and the 100th value,
//! which is the least biased choice for small windows.
//!
//! **Which samples count.** Quantiles are over every outcome (the caller waits for an error as
//! long as for a success; a timeout counts with the time it took to give up). Error and timeout
//! rates are over the same window. The one exception is the deadline's p99
//! ([`LatencyWindow::finished_quantile`]): a timeout is recorded at the deadline it was cut at,
//! so counting it would raise the next deadline (p99 × the safety factor) each time a call hangs
//! — 1 s, 2 s, 4 s, … up to the call timeout. A timeout says only "at least this long"; while
//! timeouts are rare the deadline is derived from the calls that finished (the book decides
//! when they are not: `LatencyBook::measured_p99`). The window never reads a clock: callers
//! hand in measured durations.

use std::time::Duration;

/// Default number of calls a window keeps.
pub const DEFAULT_WINDOW: usize = 100;

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A result (including a tool's own `isError` result: the tool answered).
    Ok,
    /// A transport or protocol failure: no answer from the tool.
    Error,
    /// The call's deadline passed first.
    Timeout,
}

impl Outcome {
    /// A stable code for storage.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Ok => 0,
            Outcome::Error => 1,
            Outcome::Timeout => 2,
        }
    }

    /// The outcome of a storage code, `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Outcome::Ok),
            1 => Some(Outcome::Error),
            2 => Some(Outcome::Timeout),
            _ => None,
        }
    }
}

/// One measured call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub latency: Duration,
    pub outcome: Outcome,
}

impl Sample {
    pub fn ok(latency: Duration) -> Self {
        Self {
            latency,
            outcome: Outcome::Ok,
        }
    }

    pub fn error(latency: Duration) -> Self {
        Self {
            latency,
            outcome: Outcome::Error,
        }
    }

    pub fn timeout(latency: Duration) -> Self {
        Self {
            latency,
            outcome: Outcome::Timeout,
        }
    }
}

/// A quantile the budget layer uses by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quantile {
    P50,
    P90,
    P95,
    P99,
}

impl Quantile {
    /// The probability, e.g. 0.9 for p90.
    pub fn fraction(self) -> f64 {
        match self {
            Quantile::P50 => 0.50,
            Quantile::P90 => 0.90,
            Quantile::P95 => 0.95,
            Quantile::P99 => 0.99,
        }
    }
}

/// Figures derived from a non-empty window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowSummary {
    pub samples: usize,
    pub p50: Duration,
    pub p90: Duration,
    pub p95: Duration,
    pub p99: Duration,
    /// Fraction of calls that ended in [`Outcome::Error`].
    pub error_rate: f64,
    /// Fraction of calls that ended in [`Outcome::Timeout`].
    pub timeout_rate: f64,
}

impl WindowSummary {
    /// The named quantile.
    pub fn quantile(&self, quantile: Quantile) -> Duration {
        match quantile {
            Quantile::P50 => self.p50,
            Quantile::P90 => self.p90,
            Quantile::P95 => self.p95,
            Quantile::P99 => self.p99,
        }
    }
}

/// Outcome counts over the most recent calls (see [`LatencyWindow::recent_counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecentCounts {
    pub samples: usize,
    pub errors: usize,
    pub timeouts: usize,
    pub slow: usize,
}

impl RecentCounts {
    fn rate(&self, count: usize) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            count as f64 / self.samples as f64
        }
    }

    pub fn error_rate(&self) -> f64 {
        self.rate(self.errors)
    }

    pub fn timeout_rate(&self) -> f64 {
        self.rate(self.timeouts)
    }

    pub fn slow_rate(&self) -> f64 {
        self.rate(self.slow)
    }
}

/// The last `capacity` calls of one tool.
#[derive(Debug, Clone)]
pub struct LatencyWindow {
    capacity: usize,
    /// Latencies in microseconds (saturating at ~71 minutes), in ring order.
    latencies_us: Vec<u32>,
    outcomes: Vec<Outcome>,
    /// Where the next sample goes once the ring is full.
    next: usize,
    errors: u32,
    /// The same latencies, ascending.
    sorted: Vec<u32>,
    /// The latencies of the timeouts among them, ascending (few: a healthy tool has none).
    timed_out: Vec<u32>,
}

impl Default for LatencyWindow {
    fn default() -> Self {
        Self::new(DEFAULT_WINDOW)
    }
}

impl LatencyWindow {
    /// An empty window keeping the last `capacity` calls (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            latencies_us: Vec::with_capacity(capacity),
            outcomes: Vec::with_capacity(capacity),
            next: 0,
            errors: 0,
            sorted: Vec::with_capacity(capacity),
            timed_out: Vec::new(),
        }
    }

    /// A window of `capacity` holding `samples` (oldest first; only the last `capacity` stay).
    pub fn from_samples(capacity: usize, samples: impl IntoIterator<Item = Sample>) -> Self {
        let mut window = Self::new(capacity);
        for sample in samples {
            window.record(sample);
        }
        window
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.latencies_us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.latencies_us.is_empty()
    }

    /// Adds one call, evicting the oldest when full. No allocation once full.
    pub fn record(&mut self, sample: Sample) {
        let micros = u32::try_from(sample.latency.as_micros()).unwrap_or(u32::MAX);
        if self.latencies_us.len() < self.capacity {
            self.latencies_us.push(micros);
            self.outcomes.push(sample.outcome);
        } else {
            let evicted = std::mem::replace(&mut self.outcomes[self.next], sample.outcome);
            self.count(evicted, false);
            let evicted_us = std::mem::replace(&mut self.latencies_us[self.next], micros);
            if let Ok(index) = self.sorted.binary_search(&evicted_us) {
                self.sorted.remove(index);
            }
            if evicted == Outcome::Timeout
                && let Ok(index) = self.timed_out.binary_search(&evicted_us)
            {
                self.timed_out.remove(index);
            }
            self.next = (self.next + 1) % self.capacity;
        }
        let at = self.sorted.partition_point(|&held| held < micros);
        self.sorted.insert(at, micros);
        if sample.outcome == Outcome::Timeout {
            let at = self.timed_out.partition_point(|&held| held < micros);
            self.timed_out.insert(at, micros);
        }
        self.count(sample.outcome, true);
    }

    /// Counts errors (timeouts are counted by `timed_out`'s length).
    fn count(&mut self, outcome: Outcome, add: bool) {
        if outcome != Outcome::Error {
            return;
        }
        if add {
            self.errors += 1;
        } else {
            self.errors = self.errors.saturating_sub(1);
        }
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        let len = self.len();
        let start = if len < self.capacity { 0 } else { self.next };
        (0..len).map(move |offset| {
            let index = (start + offset) % len;
            Sample {
                latency: Duration::from_micros(u64::from(self.latencies_us[index])),
                outcome: self.outcomes[index],
            }
        })
    }

    /// Counts over the most recent `last` samples (fewer when the window holds fewer); a call
    /// is slow when its latency exceeds `slow_above`. O(last), no allocation.
    pub fn recent_counts(&self, last: usize, slow_above: Option<Duration>) -> RecentCounts {
        let len = self.len();
        let last = last.min(len);
        let newest_end = if len < self.capacity {
            len
        } else {
            self.next + len
        };
        let slow_micros = slow_above.map(|d| u32::try_from(d.as_micros()).unwrap_or(u32::MAX));
        let mut counts = RecentCounts {
            samples: last,
            ..RecentCounts::default()
        };
        for position in newest_end - last..newest_end {
            let index = position % len;
            match self.outcomes[index] {
                Outcome::Ok => {}
                Outcome::Error => counts.errors += 1,
                Outcome::Timeout => counts.timeouts += 1,
            }
            if slow_micros.is_some_and(|limit| self.latencies_us[index] > limit) {
                counts.slow += 1;
            }
        }
        counts
    }

    /// The most recent sample.
    pub fn last(&self) -> Option<Sample> {
        self.samples().last()
    }

    pub fn error_rate(&self) -> f64 {
        self.rate(self.errors as usize)
    }

    pub fn timeout_rate(&self) -> f64 {
        self.rate(self.timed_out.len())
    }

    fn rate(&self, count: usize) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            count as f64 / self.len() as f64
        }
    }

    /// The quantile `fraction` (0..=1) of latency, `None` when empty.
    pub fn quantile(&self, fraction: f64) -> Option<Duration> {
        hazen_quantile(&self.sorted, fraction).map(|micros| Duration::from_secs_f64(micros / 1e6))
    }

    /// How many of the calls held finished (answered or failed) rather than timed out.
    pub fn finished_len(&self) -> usize {
        self.len() - self.timed_out.len()
    }

    /// The quantile `fraction` (0..=1) of the calls that finished, leaving out timeouts (see
    /// the module doc); `None` when none finished. Walks down from the largest latency, so the
    /// upper quantiles a deadline reads cost a few steps plus one per timeout held.
    pub fn finished_quantile(&self, fraction: f64) -> Option<Duration> {
        hazen_at(self.finished_len(), fraction, |rank| self.finished_at(rank))
            .map(|micros| Duration::from_secs_f64(micros / 1e6))
    }

    /// The `rank`-th smallest latency (0-based) among the finished calls.
    fn finished_at(&self, rank: usize) -> Option<u32> {
        let mut larger = self.finished_len().checked_sub(rank + 1)?;
        let mut cut = self.timed_out.iter().rev().peekable();
        for &micros in self.sorted.iter().rev() {
            // Every timeout's latency is also in `sorted`: skip one copy of each.
            if cut.next_if_eq(&&micros).is_some() {
                continue;
            }
            if larger == 0 {
                return Some(micros);
            }
            larger -= 1;
        }
        None
    }

    /// All derived figures, `None` when empty.
    pub fn summary(&self) -> Option<WindowSummary> {
        let at = |fraction| self.quantile(fraction);
        Some(WindowSummary {
            samples: self.len(),
            p50: at(0.50)?,
            p90: at(0.90)?,
            p95: at(0.95)?,
            p99: at(0.99)?,
            error_rate: self.error_rate(),
            timeout_rate: self.timeout_rate(),
        })
    }
}

/// Where the Hazen rule puts `fraction` among `n` sorted values: the 0-based index of the
/// lower neighbour and the weight of the upper one.
fn hazen_position(n: usize, fraction: f64) -> (usize, f64) {
    let position = (fraction.clamp(0.0, 1.0) * n as f64 + 0.5).clamp(1.0, n as f64);
    let lower = position.floor() as usize; // 1-based, 1..=n
    (lower - 1, position - lower as f64)
}

/// Hazen-rule quantile of `n` sorted values, the value of each rank given by `at`; `None`
/// when empty.
fn hazen_at(n: usize, fraction: f64, at: impl Fn(usize) -> Option<u32>) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let (index, weight) = hazen_position(n, fraction);
    let low = f64::from(at(index)?);
    let high = f64::from(at((index + 1).min(n - 1))?);
    Some(low + weight * (high - low))
}

/// Hazen-rule quantile of sorted values, `None` when empty.
fn hazen_quantile(sorted: &[u32], fraction: f64) -> Option<f64> {
    hazen_at(sorted.len(), fraction, |rank| sorted.get(rank).copied())
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
