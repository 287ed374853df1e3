//! The mirror types of what a scaled-out deployment shares and reports — `[shared]` (the
//! key ring, Redis), `[storage]` (PostgreSQL) and `[telemetry]` (traces, metrics) — for the
//! JSON Schema the parent module generates.

use std::collections::BTreeMap;

use schemars::JsonSchema;

/// What the replicas of one deployment share.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Shared {
    /// The key ring file (`switchboard keys create FILE`, mode 0600) that seals session ids
    /// and requestState, so any replica opens what another sealed; without it each process
    /// seals with a random key of its own. Relative paths are taken from the config file's
    /// directory.
    keys: Option<String>,
    /// The Redis that keeps, for every replica, rate limits and concurrency caps, sessions
    /// ended by DELETE, used approval states and cached results:
    /// redis://host:port, rediss://… or unix:///path/redis.sock.
    #[schemars(regex(pattern = r"^(redis://|rediss://|unix://|redis\+unix://|\$\{)"))]
    redis: Option<String>,
    /// What limited calls, sessions and approval states meet while Redis is unreachable:
    /// fail_open (default; each replica applies limit/replicas and its own memory alone) or
    /// fail_closed (refused, saying why). Cached results are never a reason to refuse.
    redis_unavailable: Option<RedisUnavailable>,
    /// How many replicas share the limits (needed by fail_open).
    #[schemars(range(min = 1))]
    replicas: Option<u64>,
    /// The deployment's name inside Redis keys (default "default").
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,64}$"))]
    deployment: Option<String>,
}

/// What limited calls meet while Redis is unreachable.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(super) enum RedisUnavailable {
    FailOpen,
    FailClosed,
}

/// Where what every replica shares is kept.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Storage {
    /// A PostgreSQL URL: postgres://user:${PGPASSWORD}@host/db, or postgres:///db?host=/socket/dir.
    #[schemars(regex(pattern = r"^(postgres(ql)?://|\$\{)"))]
    url: Option<String>,
    /// While the audit ledger cannot reach PostgreSQL: refuse calls (default), or run them with
    /// their rows waiting in the replica's journal.
    ledger_unavailable: Option<LedgerUnavailable>,
    /// A PEM file (relative to this file) of the CA that signed PostgreSQL's certificate,
    /// trusted besides the public roots; TLS itself is the url's sslmode.
    tls_ca: Option<String>,
    /// A PEM file (relative to this file) of the client certificate PostgreSQL asks for
    /// (pg_hba.conf's cert, clientcert=verify-full; CN = the user); needs tls_key.
    tls_cert: Option<String>,
    /// A PEM file (relative to this file) of tls_cert's private key, readable by its owner
    /// only (chmod 600; 640 when root owns it), as libpq demands.
    tls_key: Option<String>,
}

/// What calls meet while the ledger's PostgreSQL is away.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(super) enum LedgerUnavailable {
    Refuse,
    Journal,
}

/// Where traces go.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Telemetry {
    /// The OTLP/HTTP traces URL, used as written (e.g. http://127.0.0.1:4318/v1/traces).
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    endpoint: Option<String>,
    /// Headers of every export request.
    headers: BTreeMap<String, String>,
    /// The resource's service.name (default "switchboard").
    service_name: Option<String>,
    /// The share of new traces recorded; a caller's sampling decision is kept.
    #[schemars(range(min = 0.0, max = 1.0))]
    sample_ratio: Option<f64>,
    /// Tool arguments and results go into spans (default false).
    capture_content: Option<bool>,
    /// Where a trace is viewed, with {trace_id} in it: the console links ledger rows there.
    trace_url: Option<String>,
    /// Calls are counted for /metrics (default true; false leaves only the gauges).
    metrics: Option<bool>,
}
