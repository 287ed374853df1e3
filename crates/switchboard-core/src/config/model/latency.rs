//! The latency budget: the tiers tools are placed in and `[latency]`, how calls are measured,
//! probed, retried and hedged.

use std::path::PathBuf;
use std::time::Duration;

/// One latency tier.
#[derive(Debug, Clone, PartialEq)]
pub struct TierConfig {
    pub name: String,
    pub ceiling: Duration,
}

/// `[latency]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyConfig {
    /// The quantile compared with tier ceilings (0.9 = p90).
    pub quantile: f64,
    /// Calls kept per tool.
    pub window: usize,
    /// Calls needed before measured figures replace declared ones.
    pub min_samples: usize,
    /// The environment stats are kept under (default: host name + transport).
    pub environment: Option<String>,
    /// The SQLite file latency windows are kept in (default under `$XDG_DATA_HOME`).
    pub database: Option<PathBuf>,
    /// Probe eligible tools (read-only or idempotent, never destructive) when their server
    /// connects.
    pub probe_on_connect: bool,
    /// Calls per tool of a probe at connect time.
    pub probe_calls: u32,
    /// Minimum time between two changes of a tier's visible set caused by measurements.
    pub list_interval: Duration,
    /// Predicted latency above which a call gets an early progress notification.
    pub mask_after: Duration,
    /// Attempts of an idempotent call that failed in transport or timed out (1 = no retry).
    pub max_attempts: u32,
    /// Send a second request to an idempotent tool whose answer is later than its p95.
    pub hedging: bool,
    /// Consecutive healthy calls that promote a degraded tool back.
    pub recover_calls: u32,
    /// Or: how long a healthy streak must last to promote it.
    pub recover_after: Duration,
    /// How long a tool placed slower than the fastest tier may go without a call before it is
    /// re-measured by probes (doubling while nothing changes); zero: never.
    pub recheck_after: Duration,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        Self {
            quantile: 0.9,
            window: 100,
            min_samples: 20,
            environment: None,
            database: None,
            probe_on_connect: false,
            probe_calls: 3,
            list_interval: Duration::from_secs(30),
            mask_after: Duration::from_millis(700),
            max_attempts: 3,
            hedging: true,
            recover_calls: 20,
            recover_after: Duration::from_secs(60),
            recheck_after: Duration::from_secs(60),
        }
    }
}
