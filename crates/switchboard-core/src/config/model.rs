//! The validated configuration: what the rest of Switchboard reads.

use std::collections::BTreeMap;
use std::num::NonZeroU8;
use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::{SandboxConfig, SandboxSetting};

pub use crate::approval::ApprovalMode;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
    /// For a config read from a file: the SHA-256 (hex) of the text it was read from, so a
    /// running gateway tells an edit made after that read (even before it watched the file).
    pub source_digest: Option<String>,
    pub gateway: GatewayConfig,
    /// Servers in file order (the order that settles name collisions).
    pub servers: Vec<ServerConfig>,
    /// Old exposed name → current exposed name.
    pub aliases: BTreeMap<String, String>,
    /// Named sets of tool globs that agents can be given.
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// Agents by name; empty = no agents (every caller sees every tool).
    pub agents: BTreeMap<String, AgentConfig>,
    /// External command hooks, in file order.
    pub hooks: Vec<HookConfig>,
    /// Latency tiers, ordered by ceiling (default fast 500 ms, standard 1.5 s, deep 4 s).
    pub tiers: Vec<TierConfig>,
    /// How latency is measured and judged.
    pub latency: LatencyConfig,
    /// The server manager: where servers are found, how they are installed and activated.
    pub manager: ManagerConfig,
    /// How HTTP callers authenticate (`[auth]`).
    pub auth: super::auth::AuthConfig,
    /// `[telemetry]`: OpenTelemetry traces.
    pub telemetry: TelemetryConfig,
    /// `[shared]`: what the replicas of one deployment share (the key ring, Redis).
    pub shared: super::shared::SharedConfig,
    /// `[storage]`: the shared PostgreSQL of a scaled-out deployment (none: SQLite files).
    pub storage: StorageConfig,
}

impl Config {
    /// The server with this id, enabled or not.
    pub fn server(&self, id: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|server| server.id == id)
    }

    /// The sandbox a server runs in: its own, the gateway's default, or none (always none
    /// for a server that is not stdio).
    pub fn sandbox_of(&self, server: &ServerConfig) -> Option<SandboxConfig> {
        server
            .sandbox
            .resolve(&server.transport, self.gateway.sandbox.as_ref())
    }

    /// The permissions of agent `name`: its allow globs plus those of its capabilities, and
    /// its deny globs. `None` for an agent the config does not name.
    pub fn agent_policy(&self, name: &str) -> Option<crate::agent::AgentPolicy> {
        use crate::agent::{AgentPolicy, ToolPattern};
        let agent = self.agents.get(name)?;
        let allow = agent
            .allow
            .iter()
            .chain(
                agent
                    .capabilities
                    .iter()
                    .filter_map(|capability| self.capabilities.get(capability))
                    .flatten(),
            )
            .map(|glob| ToolPattern::parse(glob))
            .collect();
        let deny = agent
            .deny
            .iter()
            .map(|glob| ToolPattern::parse(glob))
            .collect();
        Some(AgentPolicy {
            name: name.to_owned(),
            allow,
            deny,
        })
    }

    /// The scope gates of a configured agent (`[agents.X.scopes]`), in scope order.
    pub fn scope_gates(&self, name: &str) -> Vec<crate::agent::ScopeGate> {
        use crate::agent::{ScopeGate, ToolPattern};
        let Some(agent) = self.agents.get(name) else {
            return Vec::new();
        };
        agent
            .scopes
            .iter()
            .map(|(scope, grant)| ScopeGate {
                scope: scope.clone(),
                tools: grant.tools.iter().map(|g| ToolPattern::parse(g)).collect(),
                tier: grant.tier.clone(),
            })
            .collect()
    }
}

/// `[agents.NAME]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    /// Globs over exposed names or `server:tool`; empty (and no capabilities) = every tool.
    pub allow: Vec<String>,
    /// Wins over allow.
    pub deny: Vec<String>,
    /// Names from `[capabilities]`, whose globs are added to `allow`.
    pub capabilities: Vec<String>,
    /// How the listing is presented to this agent (None = the gateway's default).
    pub exposure: Option<Exposure>,
    /// Globs of tools always listed in full, whatever the exposure mode.
    pub pinned: Vec<String>,
    /// The listing must fit in this many tokens (the gateway picks the exposure that fits).
    pub max_listing_tokens: Option<u64>,
    /// Larger tool results are truncated (default 25,000 tokens).
    pub max_result_tokens: Option<u64>,
    /// Limits on this agent's calls together.
    pub limits: LimitsConfig,
    /// Cost budget over a window.
    pub quota: Option<QuotaConfig>,
    /// When this agent's calls need approval.
    pub approval: ApprovalMode,
    /// Globs of tools that never need approval for this agent.
    pub auto_approve: Vec<String>,
    /// Salted hashes of the agent's HTTP bearer tokens (`sha256$salt$hash`).
    pub tokens: Vec<String>,
    /// The agent's default latency tier (None = no tier: every tool fits).
    pub tier: Option<String>,
    /// OAuth scope → what it opens: tools an OAuth caller sees only with that scope, and
    /// the tier the scope chooses (`[agents.X.scopes]`).
    pub scopes: BTreeMap<String, ScopeGrant>,
}

/// What one OAuth scope means for an agent: `"files:write" = ["fs__write*"]`, or
/// `voice = { tier = "fast" }`, or both as `{ tools = [...], tier = "..." }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeGrant {
    /// Globs of tools (exposed names or `server:tool`) seen only with this scope.
    pub tools: Vec<String>,
    /// The latency tier a token with this scope runs in, unless the request names one.
    pub tier: Option<String>,
}

/// How an agent's tools are listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Exposure {
    /// Every visible tool.
    #[default]
    Full,
    /// Meta-tools to list and load categories; loaded categories' tools are listed.
    Categories,
    /// Meta-tools to search, describe and call tools.
    Search,
}

impl Config {
    /// What runs when no config file exists: the built-in tool servers `clock`, `dice`,
    /// `files` and `memory` with their defaults (not `manager`, which a config names on
    /// purpose), no external servers.
    pub fn builtin_default() -> Self {
        Self {
            source: None,
            source_digest: None,
            gateway: GatewayConfig::default(),
            servers: super::builtin::DEFAULT_BUILTINS
                .iter()
                .map(|name| ServerConfig::new(name, Transport::builtin(name)))
                .collect(),
            aliases: BTreeMap::new(),
            capabilities: BTreeMap::new(),
            agents: BTreeMap::new(),
            hooks: Vec::new(),
            tiers: super::tiers::default_tiers(),
            latency: LatencyConfig::default(),
            manager: ManagerConfig::default(),
            auth: super::auth::AuthConfig::default(),
            telemetry: TelemetryConfig::default(),
            shared: super::shared::SharedConfig::default(),
            storage: StorageConfig::default(),
        }
    }
}

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

/// One `[servers.ID]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub id: String,
    pub display_name: Option<String>,
    pub enabled: bool,
    pub transport: Transport,
    /// None = the id; Some("") = no prefix.
    pub prefix: Option<String>,
    pub call_timeout: Option<Duration>,
    pub era: EraPreference,
    /// Whether its tools' definitions are pinned (a changed one is quarantined until an
    /// operator approves it).
    pub trust: Trust,
    /// Per-tool overrides, by the upstream's tool name.
    pub tools: BTreeMap<String, ToolOverrideConfig>,
    /// Category of the server's tools for lazy loading (`games/dice`); default the server id.
    pub category: Option<String>,
    /// Limits on this server's calls together.
    pub limits: LimitsConfig,
    /// Cost of each of its tools' calls (tools may override).
    pub cost: Option<CostConfig>,
    /// How many processes of a stdio server run side by side, each with its own session
    /// (1..=[`MAX_INSTANCES`]; always 1 for other transports).
    pub instances: NonZeroU8,
    /// Its `sandbox` key (stdio only); see [`Config::sandbox_of`].
    pub sandbox: SandboxSetting,
    /// How the gateway authenticates itself to this HTTP server (`[servers.ID.auth]`).
    pub auth: Option<UpstreamAuthConfig>,
    /// Its own CA and client certificate for TLS (`[servers.ID.tls]`, https only).
    pub tls: Option<UpstreamTlsConfig>,
    /// `public_only`: every connection to this HTTP server (its endpoint, a legacy SSE
    /// server's POST endpoint, redirects) resolves the host once, is refused when any
    /// address is not on the public internet, and goes only to the addresses checked. The
    /// manager writes it into a model's remote.
    pub public_only: bool,
    /// The `env` and `headers` values that hold a `${VAR}` reference, as written (a default
    /// redacted; [`super::shown_reference`]), keyed `env.NAME` / `headers.NAME`: what
    /// `servers show` and the ledger show where they redact a literal value.
    pub references: BTreeMap<String, String>,
}

/// `[servers.ID.tls]`: files for TLS with one `https://` server, resolved against the
/// config file's directory; `cert` and `key` are both set or both unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTlsConfig {
    /// A CA (PEM) trusted for this server besides the public ones.
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM, its chain) offered when the server asks for one.
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM, readable by its owner only).
    pub key: Option<PathBuf>,
}

/// `[servers.ID.auth]`: an OAuth 2.1 client-credentials grant the gateway runs itself for
/// an HTTP server, so the server gets a token of the gateway's (never a client's).
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamAuthConfig {
    /// Which grant the gateway runs.
    pub grant: UpstreamGrant,
    /// The authorization server's token endpoint (`https://`, or `http://` on loopback).
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: SecretString,
    /// The scope asked for, if any.
    pub scope: Option<String>,
    /// The RFC 8707 resource indicator: the server's canonical URL, which the token is for.
    pub resource: Option<String>,
    /// Token exchange: the logical name of the server the token is for (RFC 8693
    /// `audience`), where the authorization server wants one instead of (or with) `resource`.
    pub audience: Option<String>,
    /// Token exchange: whether the gateway's own requests (initialize, listings, pings)
    /// carry a client-credentials token of the same client (default), or nothing.
    pub gateway_token: bool,
    /// Whether the token endpoint is reached with the server's `[servers.ID.tls]` (its CA
    /// trusted, its client certificate offered) rather than the public CAs alone.
    pub server_tls: bool,
}

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

/// How the gateway gets the token it sends an HTTP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamGrant {
    /// Its own token (RFC 6749 §4.4), for every request.
    ClientCredentials,
    /// Each caller's OAuth token exchanged for one for this server (RFC 8693), for that
    /// caller's calls; the gateway's own requests as `gateway_token` says.
    TokenExchange,
}

/// The most instances of one stdio server a config may ask for.
pub const MAX_INSTANCES: u8 = 64;

impl ServerConfig {
    pub fn new(id: &str, transport: Transport) -> Self {
        Self {
            id: id.to_owned(),
            display_name: None,
            enabled: true,
            transport,
            prefix: None,
            call_timeout: None,
            era: EraPreference::Auto,
            trust: Trust::Auto,
            tools: BTreeMap::new(),
            category: None,
            limits: LimitsConfig::default(),
            cost: None,
            instances: NonZeroU8::MIN,
            sandbox: SandboxSetting::Default,
            auth: None,
            tls: None,
            public_only: false,
            references: BTreeMap::new(),
        }
    }
}

/// How to reach a server.
// A built-in's settings make that variant the largest by far; a config holds a handful of
// servers, and boxing them would change every match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Builtin {
        name: String,
        settings: BuiltinSettings,
    },
}

impl Transport {
    /// A built-in with default settings.
    pub fn builtin(name: &str) -> Self {
        Self::Builtin {
            name: name.to_owned(),
            settings: BuiltinSettings::default(),
        }
    }
}

/// Settings of a built-in tool server; each built-in reads only its own keys (the validator
/// refuses the others). Unset values take the built-in's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuiltinSettings {
    /// `files`: the directories it may touch (default: the working directory).
    pub roots: Vec<RootConfig>,
    /// `files`: the largest file read, in bytes.
    pub max_read_bytes: Option<u64>,
    /// `files`: the largest file written, in bytes.
    pub max_write_bytes: Option<u64>,
    /// `dice`: where random tables are read from.
    pub tables_dir: Option<PathBuf>,
    /// `dice`: a fixed seed for reproducible rolls (default: OS randomness).
    pub seed: Option<u64>,
    /// `memory`, `rules`, `sessions`: the SQLite file (default: under the user data
    /// directory).
    pub database: Option<PathBuf>,
    /// `rules`: directories of rule files.
    pub dirs: Vec<PathBuf>,
    /// `music`: how tracks are played (default: the built-in's own choice, `auto`).
    pub player: Option<PlayerSetting>,
    /// `music`: mood → its tracks (files or directories).
    pub moods: BTreeMap<String, Vec<PathBuf>>,
    /// `music`: extra arguments for mpv (e.g. `--ao=null`).
    pub mpv_args: Vec<String>,
    /// `web` (`searxng` | `brave` | `json`), `images` (`openai` | `automatic1111`): the
    /// service used, one of the built-in's own values.
    pub backend: Option<String>,
    /// `web`, `images`: the backend's URL (http or https; for the `json` search backend a
    /// template containing `{query}`).
    pub url: Option<String>,
    /// `web`, `images`: the backend's API key (redacted in `Debug`).
    pub api_key: Option<SecretString>,
    /// `web`: pages on private, loopback and link-local addresses may be fetched too (default
    /// false).
    pub allow_private: Option<bool>,
    /// `web`, `images`: the largest answer read, in bytes.
    pub max_bytes: Option<u64>,
    /// `web`, `images`: the deadline of one request to the backend.
    pub timeout: Option<Duration>,
    /// `web`: redirects followed per fetch.
    pub max_redirects: Option<u32>,
    /// `web` with `backend = "json"`: where the results are in the answer.
    pub json: Option<JsonSearchMapping>,
    /// `images`: the model asked for.
    pub model: Option<String>,
    /// `images`: where generated images are written.
    pub out_dir: Option<PathBuf>,
    /// `images`: named styles a prompt may ask for.
    pub styles: BTreeMap<String, StyleSetting>,
}

/// `music`'s `player`: a named player, or a command line in which `{path}` is replaced by the
/// track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlayerSetting {
    /// mpv when it is installed, else no sound.
    Auto,
    /// mpv (an error when it is not installed).
    Mpv,
    /// No sound: tracks are "played" silently.
    Null,
    /// The program and its arguments; `{path}` is replaced by the track.
    Command(Vec<String>),
}

/// How the `web` built-in's `json` search backend reads an answer: `results` is a dotted
/// path to the array of results, the others are keys in each result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSearchMapping {
    pub results: String,
    pub title: String,
    pub url: String,
    pub snippet: Option<String>,
}

/// A named style of the `images` built-in: text added to the prompt and to the negative
/// prompt, and backend parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StyleSetting {
    pub suffix: Option<String>,
    pub negative: Option<String>,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// A secret (an API key): compared and cloned like a string, but `Debug` prints `***`, so
/// it never shows in a printed config.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(pub String);

impl SecretString {
    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// One root of the `files` built-in.
#[derive(Debug, Clone, PartialEq)]
pub struct RootConfig {
    pub path: PathBuf,
    pub read_only: bool,
}

/// Which protocol era to speak with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    #[default]
    Auto,
    Legacy,
    Modern,
}

/// How far a server's tool definitions are trusted (`"auto"` | `"pinned"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// Whatever it lists is served.
    #[default]
    Auto,
    /// Each tool's definition is pinned when first seen; a later change to its description,
    /// schemas or annotations quarantines it until an operator approves the new one.
    Pinned,
}

/// `[servers.ID.tools.TOOL]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverrideConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    pub hidden: bool,
    /// Replaces the server's category for this tool.
    pub category: Option<String>,
    /// Limits on this tool's calls.
    pub limits: LimitsConfig,
    /// Cost of each call (replaces the server's).
    pub cost: Option<CostConfig>,
    /// Replaces every agent's approval rule for this tool.
    pub approval: Option<ApprovalMode>,
    /// Replaces the tool's own destructiveHint (annotations are untrusted).
    pub destructive: Option<bool>,
    /// Replaces the tool's own readOnlyHint.
    pub read_only: Option<bool>,
    /// Replaces the tool's declared latency metadata, field by field.
    pub latency: crate::LatencyMeta,
    /// `false`: never probe this tool (calibration), whatever its annotations say.
    pub probe: Option<bool>,
    /// The arguments probes call the tool with (default: a minimal valid instance of its
    /// input schema).
    pub probe_arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `limits = { ... }` of the gateway, an agent, a server or a tool.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimitsConfig {
    /// Requests per minute (GCRA).
    pub per_minute: Option<f64>,
    /// Requests allowed back to back above the steady rate.
    pub burst: Option<u32>,
    /// Calls in flight at once.
    pub max_concurrent: Option<u32>,
    /// How long an over-limit call waits for its turn before it is refused.
    pub queue: Option<Duration>,
}

impl LimitsConfig {
    pub fn is_empty(&self) -> bool {
        self.per_minute.is_none() && self.max_concurrent.is_none()
    }
}

/// `cost` of a server's or tool's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostConfig {
    pub fixed: f64,
    pub per_second: f64,
}

/// `quota` of an agent: a cost budget over a sliding window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuotaConfig {
    pub cost: f64,
    pub window: Duration,
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreCall,
    PostCall,
}

/// One `[[hooks]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    pub event: HookEvent,
    pub command: PathBuf,
    pub args: Vec<String>,
    /// Globs of the tools it sees (empty = all).
    pub tools: Vec<String>,
    /// Agents it sees (empty = all).
    pub agents: Vec<String>,
    pub timeout: Duration,
    /// true: a failing hook lets the call go on; false: it denies the call.
    pub fail_open: bool,
}

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

/// The registry searched when `[manager] registries` is not written.
pub const DEFAULT_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// `[manager]`: how the server manager finds, installs and activates servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// Base URLs of MCP registries (v0.1 API), searched in order. Default:
    /// `["https://registry.modelcontextprotocol.io"]`. Must be http(s) URLs.
    pub registries: Vec<String>,
    /// Local catalog files of server.json entries (relative paths are taken from the config
    /// file's directory).
    pub catalogs: Vec<PathBuf>,
    /// Whether a server the model asked for is activated when it passes probation (Auto) or
    /// waits for an approval (Approval, the default).
    pub activation: Activation,
    /// Operations run at once (default 2, at least 1).
    pub max_concurrent: usize,
    /// Where installed servers live (None: the manager's default under `$XDG_DATA_HOME`).
    pub install_dir: Option<PathBuf>,
    /// The operations database (None: the manager's default).
    pub database: Option<PathBuf>,
    /// How long registry answers are cached (default 10 min).
    pub registry_ttl: Duration,
    /// How long an activation waits for an approval (default 1 h).
    pub approval_timeout: Duration,
    /// How long one install step (`npm install`, `pip install`, `docker pull`) may run before
    /// it is killed and its operation fails (default 15 min, more than zero).
    pub step_timeout: Duration,
    /// The trust given to servers the manager installs (default [`Trust::Pinned`]).
    pub trust: Trust,
    /// The sandbox of the stdio servers it installs from npm and PyPI, written into the entry
    /// it adds with the server's install directory readable and writable:
    /// [`SandboxSetting::On`] (the default: `[gateway.sandbox]`, or the sandbox defaults),
    /// [`SandboxSetting::Own`] (a table of its own) or [`SandboxSetting::Off`] (none).
    /// [`SandboxSetting::Default`] reads as `On`.
    pub sandbox: SandboxSetting,
    /// Whether a remote a model asks for may be on a loopback, private (RFC 1918, ULA, CGNAT)
    /// or otherwise non-public address (default false: refused; an operator's install
    /// may always name one). Link-local and metadata addresses are refused regardless.
    pub allow_private_remotes: bool,
    /// Energy costs of operations (`[manager.energy]`).
    pub energy: EnergyConfig,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            registries: vec![DEFAULT_REGISTRY.to_owned()],
            catalogs: Vec::new(),
            activation: Activation::Approval,
            max_concurrent: 2,
            install_dir: None,
            database: None,
            registry_ttl: Duration::from_secs(10 * 60),
            approval_timeout: Duration::from_secs(60 * 60),
            step_timeout: Duration::from_secs(15 * 60),
            trust: Trust::Pinned,
            sandbox: SandboxSetting::On,
            allow_private_remotes: false,
            energy: EnergyConfig::default(),
        }
    }
}

impl ManagerConfig {
    /// The sandbox of a stdio server the manager installs, before its install directory is
    /// added, given the gateway's default (`[gateway.sandbox]`); None: `sandbox = false`.
    pub fn install_sandbox(&self, gateway: Option<&SandboxConfig>) -> Option<SandboxConfig> {
        match &self.sandbox {
            SandboxSetting::Off => None,
            SandboxSetting::Own(own) => Some(own.clone()),
            SandboxSetting::On | SandboxSetting::Default => {
                Some(gateway.cloned().unwrap_or_default())
            }
        }
    }
}

/// `[manager] activation`: what happens to a server the model asked for once it passes
/// probation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activation {
    /// It waits for an operator's approval (`"approval"`).
    #[default]
    Approval,
    /// It is activated at once (`"auto"`).
    Auto,
}

/// `[manager.energy]`: what each operation of the manager costs, in energy units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyConfig {
    /// Cost per second an operation runs (default 2.0, at least 0).
    pub per_second: f64,
    /// Searching the registries and catalogs (default 20..50).
    pub search: EnergyRange,
    /// Installing a server (default 10..40).
    pub install: EnergyRange,
    /// Adding a server to the config (default 5..10).
    pub add: EnergyRange,
    /// Testing a server (default 10..20).
    pub test: EnergyRange,
    /// Changing a server's settings (default 2..5).
    pub modify: EnergyRange,
    /// Removing a server (default 2..5).
    pub remove: EnergyRange,
}

impl Default for EnergyConfig {
    fn default() -> Self {
        Self {
            per_second: 2.0,
            search: EnergyRange::new(20.0, 50.0),
            install: EnergyRange::new(10.0, 40.0),
            add: EnergyRange::new(5.0, 10.0),
            test: EnergyRange::new(10.0, 20.0),
            modify: EnergyRange::new(2.0, 5.0),
            remove: EnergyRange::new(2.0, 5.0),
        }
    }
}

/// A cost between `min` and `max` (written `[min, max]`; `0 <= min <= max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyRange {
    pub min: f64,
    pub max: f64,
}

impl EnergyRange {
    pub const fn new(min: f64, max: f64) -> Self {
        Self { min, max }
    }
}
