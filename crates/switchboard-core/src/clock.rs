//! Time as an injected dependency, so latency measurement is testable on paused time.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Monotonic time, for measuring durations.
    fn now(&self) -> Instant;
    /// Wall-clock time, for records.
    fn wall(&self) -> SystemTime;
}

/// The real clock (tokio's `Instant`, so `tokio::time::pause` governs it in tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Milliseconds of a duration as a float, for reports.
pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}
