//! What a deployment reports and keeps outside the process: `[telemetry]` (traces, metrics)
//! and `[storage]` (the shared PostgreSQL of a scaled-out deployment).

use std::collections::BTreeMap;

use super::SecretString;

/// `[telemetry]`: where traces go (docs/telemetry.md); the `OTEL_*` variables fill in what
/// is not set here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP traces URL, used as written.
    pub endpoint: Option<String>,
    /// Headers of every export request (e.g. an Authorization header).
    pub headers: BTreeMap<String, String>,
    /// The resource's `service.name` (default "switchboard").
    pub service_name: Option<String>,
    /// The share of new traces recorded (a caller's sampling decision is kept).
    pub sample_ratio: Option<f64>,
    /// Tool arguments and results go into spans (off: they may hold personal data).
    pub capture_content: bool,
    /// Where a trace is viewed, with `{trace_id}` in it (a Jaeger or Tempo URL): the
    /// console links ledger rows to their traces.
    pub trace_url: Option<String>,
    /// `metrics = false`: calls are not counted for `/metrics` (its gauges are still read).
    pub metrics_off: bool,
}

/// `[storage]`: where what every replica shares is kept (docs/scale-out.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageConfig {
    /// A `postgres://` URL (it may hold a password): the audit ledger goes there instead of
    /// the SQLite file. None: the embedded default.
    pub url: Option<SecretString>,
    /// What calls meet while the ledger cannot reach PostgreSQL.
    pub ledger_unavailable: LedgerUnavailable,
}

/// `storage.ledger_unavailable`: what calls meet while the audit ledger's PostgreSQL is away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LedgerUnavailable {
    /// Refused, saying why, until an append goes through again (the ledger is the system of
    /// record). The default.
    #[default]
    Refuse,
    /// Run and answered; their rows wait in the replica's journal until PostgreSQL is back.
    Journal,
}
