//! `[gateway]` and `[gateway.tasks]`: how the gateway names tools, bounds calls, connections
//! and messages, and where it keeps what it records; with the defaults and bounds the config
//! file and `serve`'s flags share.

use std::path::PathBuf;
use std::time::Duration;

use super::{ApprovalMode, Exposure, LimitsConfig};
use crate::config::sandbox::SandboxConfig;

/// The default `gateway.busy_poll`: long enough to catch a quick upstream's answer and a
/// client's next request on a 2-core VM (BENCHMARKS.md), short enough to cost little CPU.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(100);

/// The largest `gateway.busy_poll` accepted: past this it is a spinning core, not a window.
const MAX_BUSY_POLL: Duration = Duration::from_millis(10);

/// `window` when it is a usable `gateway.busy_poll` (the config file's and `serve
/// --busy-poll`'s one rule), else what is wrong with it.
pub fn busy_poll_window(window: Duration) -> Result<Duration, String> {
    if window <= MAX_BUSY_POLL {
        Ok(window)
    } else {
        Err(format!("must be at most {}ms", MAX_BUSY_POLL.as_millis()))
    }
}

/// The default `gateway.header_timeout`.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The default `gateway.max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// `[gateway]`.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Between prefix and tool name in exposed names.
    pub separator: String,
    /// false = pass-through names (no prefix).
    pub prefix_tools: bool,
    /// Default deadline of one tool call.
    pub call_timeout: Duration,
    /// Bound on starting a server and completing its handshake.
    pub connect_timeout: Duration,
    /// How long the `server/discover` probe waits before falling back to `initialize`.
    pub discover_timeout: Duration,
    /// Largest JSON-RPC message accepted from a client or a server.
    pub max_message_bytes: usize,
    /// How long an HTTP client may take to send a request's headers, counted from the
    /// connection's start or its previous answer (so an idle keep-alive connection is closed
    /// after it too); none: no bound.
    pub header_timeout: Option<Duration>,
    /// HTTP connections served at once (the front's and the admin endpoint's, each); past
    /// it, new connections wait in the listen queue until one closes.
    pub max_connections: usize,
    /// How long the gateway keeps polling for the next event after a request starts or is
    /// answered, instead of sleeping (zero: never).
    pub busy_poll: Duration,
    /// How tools are listed to callers whose agent does not choose.
    pub exposure: Exposure,
    /// Limits on every call together.
    pub limits: LimitsConfig,
    /// When calls of callers without an agent need approval.
    pub approval: ApprovalMode,
    /// How long a call waits for an approval before it is denied.
    pub approval_timeout: Duration,
    /// Secret that seals approval state (share it between replicas); random when unset.
    pub approval_key: Option<String>,
    /// Where `switchboard token create` keeps agents' token hashes.
    pub token_file: Option<PathBuf>,
    /// The audit ledger's SQLite file (default under the user data directory).
    pub ledger: Option<PathBuf>,
    /// Ledger rows older than this many days are removed at start.
    pub ledger_retention_days: Option<u64>,
    /// At most this many ledger rows are kept (the oldest go first).
    pub ledger_max_rows: Option<u64>,
    /// Where pinned tool definitions are kept (default beside the ledger, `pins.json`).
    pub pins: Option<PathBuf>,
    /// `serve` follows hand edits of the config file (default true).
    pub watch: bool,
    /// Every change surface (CLI, admin endpoint, library) refuses; hand edits still reload.
    pub read_only: bool,
    /// How long calls of a removed or replaced server may take to finish before they are
    /// cancelled (default 30 s).
    pub drain_timeout: Duration,
    /// `[gateway.sandbox]`: the sandbox of every stdio server that does not choose.
    pub sandbox: Option<SandboxConfig>,
    /// `[gateway.tasks]`: bounds of the tasks clients start and come back for.
    pub tasks: TasksConfig,
}

/// `[gateway.tasks]`: bounds of the tasks clients start and come back for.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksConfig {
    /// Tasks one caller (agent + session) may hold at once, running and finished.
    pub max_per_caller: usize,
    /// How long a task is kept when its client asks for no TTL.
    pub default_ttl: Duration,
    /// The longest TTL a client may ask for.
    pub max_ttl: Duration,
    /// How often clients are told to poll.
    pub poll_interval: Duration,
    /// Tasks all callers together may hold.
    pub max_tasks: usize,
    /// Tasks one agent may hold, all its sessions together; `None`: a quarter of `max_tasks`
    /// ([`TasksConfig::agent_limit`]).
    pub max_per_agent: Option<usize>,
}

impl TasksConfig {
    /// Tasks one agent may hold, all its sessions together: `max_per_agent`, or a quarter of
    /// `max_tasks` (at least one), so one agent opening many sessions cannot fill the store
    /// and deny every other.
    pub fn agent_limit(&self) -> usize {
        self.max_per_agent.unwrap_or((self.max_tasks / 4).max(1))
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            separator: "__".to_owned(),
            prefix_tools: true,
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            discover_timeout: Duration::from_secs(2),
            max_message_bytes: 16 * 1024 * 1024,
            header_timeout: Some(DEFAULT_HEADER_TIMEOUT),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            busy_poll: DEFAULT_BUSY_POLL,
            exposure: Exposure::Full,
            limits: LimitsConfig::default(),
            approval: ApprovalMode::Never,
            approval_timeout: Duration::from_secs(60),
            approval_key: None,
            token_file: None,
            ledger: None,
            ledger_retention_days: None,
            ledger_max_rows: None,
            pins: None,
            watch: true,
            read_only: false,
            drain_timeout: Duration::from_secs(30),
            sandbox: None,
            tasks: TasksConfig::default(),
        }
    }
}
