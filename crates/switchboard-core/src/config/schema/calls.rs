//! The mirror types of what meets every call — `[latency]` (how it is measured and judged),
//! `[[hooks]]` (external commands that see it), limits, costs and quotas — for the JSON
//! Schema the parent module generates.

use schemars::JsonSchema;

use super::Duration;

/// How latency is measured and judged.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Latency {
    /// The quantile compared with tier ceilings (default p90).
    quantile: Option<QuantileName>,
    /// Calls kept per tool (default 100).
    #[schemars(range(min = 1))]
    window: Option<u64>,
    /// Calls needed before measured figures replace declared ones (default 20).
    #[schemars(range(min = 1))]
    min_samples: Option<u64>,
    /// The environment stats are kept under (default: host name + transport).
    environment: Option<String>,
    /// The SQLite file latency windows are kept in (default $XDG_DATA_HOME/switchboard/latency.db).
    database: Option<String>,
    /// Probe read-only or idempotent tools when their server connects (default false).
    probe_on_connect: Option<bool>,
    /// Calls per tool of a probe at connect time (default 3).
    #[schemars(range(min = 1, max = 1000))]
    probe_calls: Option<u64>,
    /// Least time between two measurement-driven changes of a listing (default "30s").
    list_interval: Option<Duration>,
    /// Predicted latency above which a call gets an early progress notification (default "700ms").
    mask_after: Option<Duration>,
    /// Attempts of an idempotent call after transport errors or timeouts (default 3).
    #[schemars(range(min = 1, max = 10))]
    max_attempts: Option<u64>,
    /// Send a second request to an idempotent tool slower than its p95 (default true).
    hedging: Option<bool>,
    /// Healthy calls in a row that promote a degraded tool back (default 20).
    #[schemars(range(min = 1))]
    recover_calls: Option<u64>,
    /// Or a healthy streak this long (default "60s").
    recover_after: Option<Duration>,
    /// Re-measure a tool placed slower than the fastest tier after this long without a call,
    /// by probes, doubling while nothing changes (default "60s"; "0": never).
    recheck_after: Option<Duration>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum QuantileName {
    P50,
    P90,
    P95,
    P99,
}

/// An external command that sees calls: gets the call as JSON on stdin, answers JSON on
/// stdout (see docs/config.md).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct HookEntry {
    /// When it runs.
    event: HookEventName,
    /// The program.
    #[schemars(length(min = 1))]
    command: String,
    /// Its arguments.
    #[serde(default)]
    args: Vec<String>,
    /// Globs of the tools it sees (default: all).
    #[serde(default)]
    tools: Vec<String>,
    /// Agents it sees (default: all).
    #[serde(default)]
    agents: Vec<String>,
    /// How long it may take (default 5s).
    #[serde(default)]
    timeout: Option<Duration>,
    /// What a failing hook means: deny (default) or allow.
    #[serde(default)]
    on_failure: Option<OnFailure>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(super) enum HookEventName {
    /// Before the call: may allow, deny or rewrite the arguments.
    PreCall,
    /// After the call: may replace the result.
    PostCall,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum OnFailure {
    /// Fail closed: deny the call / withhold the result.
    Deny,
    /// Fail open: go on.
    Allow,
}

/// Limits on calls: request rate (GCRA), concurrency, and how long an over-limit call waits.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Limits {
    /// Requests per minute: at least 0.0001 (a call about every week).
    #[schemars(range(min = 0.0001))]
    per_minute: Option<f64>,
    /// Requests allowed back to back above the steady rate (default 1).
    #[schemars(range(min = 1))]
    burst: Option<u32>,
    /// Calls in flight at once.
    #[schemars(range(min = 1))]
    max_concurrent: Option<u32>,
    /// How long an over-limit call waits for its turn before it is refused (default 0).
    queue: Option<Duration>,
}

/// Cost of each call: a number, or a fixed part plus a part per second of wall time.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Cost {
    Fixed(#[schemars(range(min = 0))] f64),
    Detailed {
        #[schemars(range(min = 0))]
        #[serde(default)]
        fixed: f64,
        #[schemars(range(min = 0))]
        #[serde(default)]
        per_second: f64,
    },
}

/// A cost budget over a sliding window.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Quota {
    /// The budget.
    #[schemars(range(min = 0))]
    cost: f64,
    /// The window (default 1h): at least 1s, at most 8760h (365 days).
    #[serde(default)]
    window: Option<Duration>,
}
