//! The mirror types of `[gateway]` (gateway-wide settings, `[gateway.tasks]`, approvals),
//! with the defaults the schema shows, for the JSON Schema the parent module generates.

use schemars::JsonSchema;

use super::Duration;
use super::agents::ExposureMode;
use super::calls::Limits;
use super::security::Sandbox;
use crate::config::GatewayConfig;

#[derive(JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Gateway {
    /// Between server prefix and tool name (default "__"); one or more of A-Z a-z 0-9 _ - .
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]+$"))]
    separator: String,
    /// false exposes upstream names unchanged (pass-through); default true.
    prefix_tools: bool,
    /// Default deadline of a tool call (default 60s).
    call_timeout: Duration,
    /// Bound on starting a server and its initialize handshake (default 30s).
    connect_timeout: Duration,
    /// How long the server/discover probe waits before falling back to initialize (default 2s).
    discover_timeout: Duration,
    /// Largest accepted JSON-RPC message in bytes (default 16777216 = 16 MiB).
    #[schemars(range(min = 1024))]
    max_message_bytes: u64,
    /// How long an HTTP client may take to send a request's headers, from the connection's
    /// start or its previous answer, and then each part of a POST's body, from the part
    /// before (the whole body within ten times it; else 408); an idle keep-alive connection
    /// is closed after it too. "0" turns it off (default 30s).
    header_timeout: Duration,
    /// HTTP connections served at once, by the front and by the admin endpoint each; past it,
    /// new connections wait in the listen queue until one closes (default 10000). Mind the
    /// process's open-files limit (`ulimit -n`).
    #[schemars(range(min = 1))]
    max_connections: u64,
    /// How long the gateway keeps polling for the next event after a request starts or is
    /// answered, instead of sleeping: saves a core's wake-up per hop for quick calls, costs
    /// at most about two windows of CPU per call. At most 10ms; "0" turns it off (default
    /// 100us).
    busy_poll: Duration,
    /// `serve` watches the config file and applies hand edits while it runs (default true;
    /// `serve --no-watch` turns it off).
    watch: bool,
    /// Changes through the CLI, the admin endpoint or the library are refused; hand edits of
    /// the file still reload (GitOps). Default false.
    read_only: bool,
    /// How long the calls in flight of a removed or replaced server may take to finish
    /// before they are cancelled (default 30s).
    drain_timeout: Duration,
    /// How tools are listed to callers whose agent does not choose: full (default),
    /// categories or search.
    exposure: Option<ExposureMode>,
    /// Limits on every call together.
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
    /// When calls of callers without an agent need approval (default never).
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<Approval>,
    /// How long a call waits for approval before it is denied (default 60s).
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_timeout: Option<Duration>,
    /// Secret that seals approval state in input_required results; share it between
    /// replicas (default: random per process). Use ${VAR} to keep it out of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_key: Option<String>,
    /// Where `switchboard token create` keeps token hashes (default
    /// $XDG_CONFIG_HOME/switchboard/tokens.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    token_file: Option<String>,
    /// The audit ledger's SQLite file (default $XDG_DATA_HOME/switchboard/ledger.db).
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger: Option<String>,
    /// Remove ledger rows older than this many days (at start).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger_retention_days: Option<u64>,
    /// Keep at most this many ledger rows.
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger_max_rows: Option<u64>,
    /// Where pinned tool definitions are kept (default: pins.json beside the ledger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pins: Option<String>,
    /// The sandbox of every stdio server that does not set its own `sandbox`.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<Sandbox>,
    /// Bounds of the tasks clients start and come back for (MCP tasks).
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<Tasks>,
}

/// `[gateway.tasks]`.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Tasks {
    /// Tasks one caller (agent + session) may hold at once, running and finished; the
    /// oldest finished task whose result was fetched makes room first (default 100).
    #[schemars(range(min = 1))]
    max_per_caller: Option<u64>,
    /// Tasks one agent may hold, all its sessions together, so one agent cannot fill the
    /// gateway's tasks and deny every other; the oldest finished task of the agent whose result
    /// was fetched makes room first (default: a quarter of max_tasks).
    #[schemars(range(min = 1))]
    max_per_agent: Option<u64>,
    /// Tasks all callers together may hold (default 10000).
    #[schemars(range(min = 1))]
    max_tasks: Option<u64>,
    /// How long a task is kept when its client asks for no TTL (default 1h).
    default_ttl: Option<Duration>,
    /// The longest TTL a client may ask for (default 24h).
    max_ttl: Option<Duration>,
    /// How often clients are told to poll (default 500ms).
    poll_interval: Option<Duration>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum Approval {
    /// No approval.
    Never,
    /// Every call waits for approval.
    Always,
    /// Calls of tools that may be destructive (destructiveHint true or absent) wait.
    Destructive,
}

// Defaults: `Serialize` types show theirs in the schema; they are the validated config's own
// (`GatewayConfig::default()`), so the two cannot drift. The enums are not `Serialize`, so
// theirs (placeholders that satisfy `serde(default)`) never show.
impl Default for Gateway {
    fn default() -> Self {
        let defaults = GatewayConfig::default();
        Self {
            separator: defaults.separator,
            prefix_tools: defaults.prefix_tools,
            call_timeout: defaults.call_timeout.into(),
            connect_timeout: defaults.connect_timeout.into(),
            discover_timeout: defaults.discover_timeout.into(),
            max_message_bytes: count(defaults.max_message_bytes),
            // None (no bound) is written "0".
            header_timeout: defaults
                .header_timeout
                .map_or(Duration::Millis(0), Duration::from),
            max_connections: count(defaults.max_connections),
            busy_poll: defaults.busy_poll.into(),
            watch: defaults.watch,
            read_only: defaults.read_only,
            drain_timeout: defaults.drain_timeout.into(),
            exposure: None,
            limits: None,
            approval: None,
            approval_timeout: None,
            approval_key: None,
            token_file: None,
            ledger: None,
            ledger_retention_days: None,
            ledger_max_rows: None,
            pins: None,
            sandbox: None,
            tasks: None,
        }
    }
}

/// A count as the schema writes it (every count the gateway keeps fits in a `u64`).
fn count(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}
