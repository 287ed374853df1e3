//! The JSON Schema of the native config format, generated with schemars from these mirror
//! types. They exist only to describe the file (for editors and `schema/`); validation walks
//! the located tree instead, so it can report every problem with its line and column. A test
//! keeps the two in step (same keys), another fails when the checked-in file drifts.

use std::collections::BTreeMap;

use schemars::JsonSchema;

mod security;

use security::{Auth, Sandbox, ServerSandbox, UpstreamAuth, UpstreamTls};

/// A Switchboard config file (TOML). See docs/config.md.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct SwitchboardConfig {
    /// Gateway-wide settings.
    gateway: Gateway,
    /// The MCP servers, by id (1-64 characters of A-Z a-z 0-9 _ -), in the order that
    /// settles name collisions. The id is the default prefix of their tools' names.
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z0-9_-]{1,64}$"}))]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    servers: BTreeMap<String, Server>,
    /// Old exposed tool name → current exposed name; calls to the old name still work.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    aliases: BTreeMap<String, String>,
    /// Agents by name: what each may see and how its listing is presented. With no agents,
    /// every caller sees every tool.
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z0-9_-]{1,64}$"}))]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    agents: BTreeMap<String, Agent>,
    /// Named sets of tool globs (exposed-name globs or server:tool globs) agents can be given.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    capabilities: BTreeMap<String, Vec<String>>,
    /// External commands run before or after calls ([[hooks]]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hooks: Vec<HookEntry>,
    /// Latency tiers: name = ceiling (default fast 500ms, standard 1500ms, deep 4s).
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z0-9_-]{1,64}$"}))]
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    tiers: BTreeMap<String, Duration>,
    /// How latency is measured and judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    latency: Option<Latency>,
    /// The server manager: where it finds servers, how it installs and activates them, and
    /// what its operations cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    manager: Option<Manager>,
    /// How HTTP callers authenticate: static bearer tokens, OAuth 2.1 access tokens, or both.
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<Auth>,
    /// OpenTelemetry traces over OTLP/HTTP (off unless an endpoint is set here or in
    /// OTEL_EXPORTER_OTLP_ENDPOINT).
    #[serde(skip_serializing_if = "Option::is_none")]
    telemetry: Option<Telemetry>,
    /// What the replicas of one deployment share: the key ring that seals their session
    /// ids and requestState, and the Redis that keeps their rate limits and concurrency caps
    /// (docs/scale-out.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    shared: Option<Shared>,
    /// The shared store of a scaled-out deployment: the audit ledger on PostgreSQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    storage: Option<Storage>,
}

/// What the replicas of one deployment share.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Shared {
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
enum RedisUnavailable {
    FailOpen,
    FailClosed,
}

/// Where what every replica shares is kept.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Storage {
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
enum LedgerUnavailable {
    Refuse,
    Journal,
}

/// Where traces go.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Telemetry {
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

/// The server manager: where it finds servers, how it installs and activates them, and what
/// its operations cost.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Manager {
    /// Base URLs of MCP registries (v0.1 API), searched in order (default
    /// ["https://registry.modelcontextprotocol.io"]; [] searches none).
    #[schemars(inner(regex(pattern = r"^(https?://|\$\{)")))]
    registries: Option<Vec<String>>,
    /// Local catalog files of server.json entries (relative paths are taken from the config
    /// file's directory).
    catalogs: Option<Vec<String>>,
    /// What happens to a server a model asked for once it passes probation: approval
    /// (default; it waits for an operator) or auto (activated at once).
    activation: Option<ActivationMode>,
    /// Operations run at once (default 2).
    #[schemars(range(min = 1))]
    max_concurrent: Option<u64>,
    /// Where installed servers live (default: under $XDG_DATA_HOME/switchboard).
    install_dir: Option<String>,
    /// The manager's operations database (default: under $XDG_DATA_HOME/switchboard).
    database: Option<String>,
    /// How long registry answers are cached (default "10m").
    registry_ttl: Option<Duration>,
    /// How long an activation waits for an approval (default "1h").
    approval_timeout: Option<Duration>,
    /// How long one install step (npm install, pip install, docker pull) may run before it is
    /// killed and its operation fails (default "15m").
    step_timeout: Option<Duration>,
    /// The trust given to the servers it installs (default "pinned").
    trust: Option<TrustMode>,
    /// The sandbox of the npm and PyPI servers it installs, written into their entries with
    /// the install directory readable and writable: true (default; [gateway.sandbox], or the
    /// defaults), a table of its own, or false (none: they run unconfined).
    sandbox: Option<ServerSandbox>,
    /// Whether a remote a model asks for may be on a loopback, private or other non-public
    /// address (default false: refused; an operator's install may name one).
    allow_private_remotes: Option<bool>,
    /// Energy costs of its operations.
    energy: Option<Energy>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum ActivationMode {
    /// An operator approves each activation.
    Approval,
    /// Activated once it passes probation.
    Auto,
}

/// Energy costs of the manager's operations: a cost per second, and [min, max] per operation.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Energy {
    /// Cost per second an operation runs (default 2).
    #[schemars(range(min = 0))]
    per_second: Option<f64>,
    /// Searching registries and catalogs (default [20, 50]).
    search: Option<EnergyRange>,
    /// Installing a server (default [10, 40]).
    install: Option<EnergyRange>,
    /// Adding a server to the config (default [5, 10]).
    add: Option<EnergyRange>,
    /// Testing a server (default [10, 20]).
    test: Option<EnergyRange>,
    /// Changing a server's settings (default [2, 5]).
    modify: Option<EnergyRange>,
    /// Removing a server (default [2, 5]).
    remove: Option<EnergyRange>,
}

/// [min, max]: two numbers, 0 <= min <= max.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct EnergyRange(#[schemars(inner(range(min = 0)))] [f64; 2]);

/// How latency is measured and judged.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Latency {
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
enum QuantileName {
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
struct HookEntry {
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
enum HookEventName {
    /// Before the call: may allow, deny or rewrite the arguments.
    PreCall,
    /// After the call: may replace the result.
    PostCall,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum OnFailure {
    /// Fail closed: deny the call / withhold the result.
    Deny,
    /// Fail open: go on.
    Allow,
}

/// Limits on calls: request rate (GCRA), concurrency, and how long an over-limit call waits.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Limits {
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
enum Cost {
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
struct Quota {
    /// The budget.
    #[schemars(range(min = 0))]
    cost: f64,
    /// The window (default 1h): at least 1s, at most 8760h (365 days).
    #[serde(default)]
    window: Option<Duration>,
}

/// One agent.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Agent {
    /// Globs over exposed names ("dice__*") or server:tool globs ("files:read_*"); empty (and
    /// no capabilities) = every tool.
    allow: Vec<String>,
    /// Globs that are refused even when allowed.
    deny: Vec<String>,
    /// Names from [capabilities] whose globs are added to allow.
    capabilities: Vec<String>,
    /// How tools are listed: full (default), categories or search.
    exposure: Option<ExposureMode>,
    /// Globs of tools always listed in full, in every exposure mode.
    pinned: Vec<String>,
    /// The listing must fit in this many tokens; the gateway picks the exposure that fits.
    #[schemars(range(min = 1))]
    max_listing_tokens: Option<u64>,
    /// Larger tool results are truncated (default 25000 tokens).
    #[schemars(range(min = 1))]
    max_result_tokens: Option<u64>,
    /// Limits on this agent's calls together.
    limits: Option<Limits>,
    /// Cost budget over a window.
    quota: Option<Quota>,
    /// When this agent's calls need approval (default never).
    approval: Option<Approval>,
    /// Globs of tools that never need approval for this agent.
    auto_approve: Vec<String>,
    /// Salted hashes of the agent's HTTP bearer tokens (from `switchboard token create`).
    tokens: Vec<String>,
    /// The agent's default latency tier (one of [tiers]).
    tier: Option<String>,
    /// OAuth scope → what a token with it opens: tools seen only with that scope, and the
    /// tier it runs in (needs [auth] mode "oauth").
    scopes: BTreeMap<String, ScopeGrant>,
}

/// What one OAuth scope opens for an agent.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum ScopeGrant {
    /// Globs of tools seen only by tokens with this scope.
    Tools(Vec<String>),
    /// Tools and a tier.
    Grant(ScopeGrantTable),
}

#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct ScopeGrantTable {
    /// Globs of tools seen only by tokens with this scope.
    tools: Vec<String>,
    /// The latency tier a token with this scope runs in, unless the request names one.
    tier: Option<String>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum ExposureMode {
    /// Every visible tool.
    Full,
    /// Meta-tools list_categories / load_category / unload_category.
    Categories,
    /// Meta-tools search_tools / describe_tool / call_tool.
    Search,
}

/// A duration: "100us", "500ms", "30s", "2m", "1h", "1.5s", or an integer number of milliseconds.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Duration {
    Text(
        #[schemars(regex(
            pattern = r"^\s*([0-9]+(\.[0-9]+)?\s*(us|µs|ms|s|sec|m|min|h)|.*\$\{.*)\s*$"
        ))]
        String,
    ),
    Millis(u64),
}

#[derive(JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Gateway {
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
    /// start or its previous answer; an idle keep-alive connection is closed after it too.
    /// "0" turns it off (default 30s).
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
struct Tasks {
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
enum Approval {
    /// No approval.
    Never,
    /// Every call waits for approval.
    Always,
    /// Calls of tools that may be destructive (destructiveHint true or absent) wait.
    Destructive,
}

/// One server: exactly one of `command` (stdio), `url` (HTTP) or `builtin`.
#[derive(JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("dependentRequired" = {"instances": ["command"]}))]
#[allow(dead_code)]
struct Server {
    /// stdio: the program to run.
    #[schemars(length(min = 1))]
    #[serde(skip_serializing_if = "String::is_empty")]
    command: String,
    /// stdio: its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    /// stdio: extra environment variables.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    /// stdio: working directory.
    #[serde(skip_serializing_if = "String::is_empty")]
    cwd: String,
    /// HTTP: the server's URL (http:// or https://). builtin = "web" / "images": the
    /// backend's URL (for the web "json" backend a template with {query}, {limit}, {key}).
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
    /// HTTP: headers sent with every request.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    /// HTTP: the transport to use with `url`.
    transport: HttpTransport,
    /// A built-in tool provider served in-process.
    builtin: Builtin,
    /// Prefix of exposed names (default: the server id; "" for none).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]*$"))]
    #[serde(skip_serializing_if = "String::is_empty")]
    prefix: String,
    /// Which MCP protocol era to speak (default "auto").
    era: Era,
    /// "pinned": each tool's definition is pinned when first seen, and a tool whose
    /// description, schemas or annotations later change is quarantined until an operator
    /// approves it (`switchboard tools pins`). Default "auto".
    trust: TrustMode,
    /// Deadline of this server's tool calls (default: gateway.call_timeout).
    call_timeout: Duration,
    /// stdio: how many processes of this server run side by side (1-64, default 1), each
    /// with its own session; a call goes to the one with the fewest calls in flight. Only for
    /// servers whose tools keep no state between calls: the processes share nothing.
    #[schemars(range(min = 1, max = 64))]
    #[serde(skip_serializing_if = "Option::is_none")]
    instances: Option<u8>,
    /// stdio: the sandbox its process runs in; false turns the gateway's default off, true
    /// asks for it, a table replaces it (Linux).
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<ServerSandbox>,
    /// HTTP: how the gateway authenticates itself to the server (a client-credentials
    /// grant it runs and refreshes); instead of an Authorization header.
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<UpstreamAuth>,
    /// https: the server's own CA and a client certificate for mutual TLS (paths relative
    /// to this file).
    #[serde(skip_serializing_if = "Option::is_none")]
    tls: Option<UpstreamTls>,
    /// false keeps the server configured but not started (default true).
    enabled: bool,
    /// Display name.
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    /// Per-tool overrides, by the upstream's tool name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    tools: BTreeMap<String, ToolOverride>,
    /// Category of this server's tools for lazy loading, levels separated by / (default: the
    /// server id).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$"))]
    #[serde(skip_serializing_if = "String::is_empty")]
    category: String,
    /// Limits on this server's calls together.
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
    /// Cost of each call of its tools (tools may override).
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<Cost>,
    /// builtin = "files": directories it may touch (default: the working directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    roots: Vec<Root>,
    /// builtin = "files": largest file read, in bytes (default 10 MiB).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_read_bytes: Option<u64>,
    /// builtin = "files": largest file written, in bytes (default 10 MiB).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_write_bytes: Option<u64>,
    /// builtin = "dice": directory of random tables (*.toml, *.csv).
    #[serde(skip_serializing_if = "String::is_empty")]
    tables_dir: String,
    /// builtin = "dice": fixed seed for reproducible rolls (default: OS randomness).
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// builtin = "memory", "rules", "sessions": the SQLite file (default: under the user
    /// data directory).
    #[serde(skip_serializing_if = "String::is_empty")]
    database: String,
    /// builtin = "rules": directories of rules files (Markdown, text, JSON records).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dirs: Vec<String>,
    /// builtin = "music": "auto" (default: mpv if installed, else silent), "mpv", "null", or
    /// a command line in which {path} is replaced by the track.
    #[serde(skip_serializing_if = "Option::is_none")]
    player: Option<Player>,
    /// builtin = "music": mood → its tracks (files or directories; a path or an array).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    moods: BTreeMap<String, Tracks>,
    /// builtin = "music": extra arguments for mpv, e.g. ["--ao=null"].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mpv_args: Vec<String>,
    /// builtin = "web": "searxng", "brave" or "json"; builtin = "images": "openai" or
    /// "automatic1111".
    #[serde(skip_serializing_if = "Option::is_none")]
    backend: Option<Backend>,
    /// builtin = "web" / "images": the backend's API key (use ${VAR} to keep it out of the
    /// file).
    #[serde(skip_serializing_if = "String::is_empty")]
    api_key: String,
    /// builtin = "web": pages on private, loopback and link-local addresses may be fetched too
    /// (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    allow_private: Option<bool>,
    /// builtin = "web" / "images": largest answer read, in bytes.
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    max_bytes: Option<u64>,
    /// builtin = "web" / "images": deadline of one request to the backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<Duration>,
    /// builtin = "web": redirects followed per fetch.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_redirects: Option<u32>,
    /// builtin = "web" with backend = "json": where the results are in the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    json: Option<JsonMapping>,
    /// builtin = "images": the model asked for.
    #[serde(skip_serializing_if = "String::is_empty")]
    model: String,
    /// builtin = "images": where generated images are written.
    #[serde(skip_serializing_if = "String::is_empty")]
    out_dir: String,
    /// builtin = "images": named styles a prompt may ask for.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    styles: BTreeMap<String, Style>,
}

/// How the music built-in plays tracks.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Player {
    Named(PlayerName),
    /// A command line: the program and its arguments; {path} is replaced by the track.
    Command(#[schemars(length(min = 1))] Vec<String>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum PlayerName {
    /// mpv when it is installed, else silent.
    Auto,
    /// mpv.
    Mpv,
    /// No sound.
    Null,
}

/// A mood's tracks: a path, or an array of paths.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Tracks {
    One(String),
    Many(Vec<String>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Backend {
    /// web: a SearXNG instance's JSON API (url: the instance).
    Searxng,
    /// web: Brave's Web Search API (api_key needed).
    Brave,
    /// web: any search URL answering JSON (url with {query}, and a json mapping).
    Json,
    /// images: OpenAI's image API or a compatible one.
    Openai,
    /// images: an AUTOMATIC1111 / Stable Diffusion web UI (url: the UI).
    Automatic1111,
}

/// Where a JSON search answer keeps its results.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct JsonMapping {
    /// Dotted path to the array of results, e.g. "data.items".
    #[schemars(length(min = 1))]
    results: String,
    /// The key of each result's title.
    #[schemars(length(min = 1))]
    title: String,
    /// The key of each result's URL.
    #[schemars(length(min = 1))]
    url: String,
    /// The key of each result's snippet.
    #[serde(default)]
    #[schemars(length(min = 1))]
    snippet: Option<String>,
}

/// A named image style.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Style {
    /// Added to the prompt.
    suffix: Option<String>,
    /// Added to the negative prompt.
    negative: Option<String>,
    /// Backend parameters (any table).
    params: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A root of the files built-in: a path, or a path with flags.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Root {
    Path(String),
    Detailed {
        /// The directory.
        path: String,
        /// Refuse every write under this root (default false).
        #[serde(default)]
        read_only: bool,
    },
}

#[derive(JsonSchema)]
#[allow(dead_code)]
enum HttpTransport {
    /// Streamable HTTP (the default for `url`).
    #[serde(rename = "streamable-http", alias = "http")]
    StreamableHttp,
    /// The legacy HTTP+SSE transport.
    #[serde(rename = "sse")]
    Sse,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Builtin {
    /// The clock: current time and time zones.
    Clock,
    /// Dice rolls with a full dice grammar, and random tables.
    Dice,
    /// Files under configured roots.
    Files,
    /// A knowledge store in SQLite: entities, relations, facts, session summaries.
    Memory,
    /// The server manager's tools: models search for, install and activate MCP servers.
    Manager,
    /// Rules lookup: the rules files of configured directories, full-text indexed.
    Rules,
    /// The session manager: each session's conversation turns, searchable, and its summary.
    Sessions,
    /// Background music and ambiance by mood, through mpv, a command or silently.
    Music,
    /// Web search and page fetching (SearXNG, Brave or a JSON search API).
    Web,
    /// Image generation (OpenAI-compatible or AUTOMATIC1111).
    Images,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum TrustMode {
    /// Serve whatever the server lists.
    Auto,
    /// Pin each tool's definition; quarantine a changed one until approved.
    Pinned,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Era {
    /// Probe server/discover, fall back to initialize.
    Auto,
    /// initialize only (protocol versions before 2026-07-28).
    Legacy,
    /// server/discover only.
    Modern,
}

#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct ToolOverride {
    /// Exposed name (before prefixing).
    #[schemars(length(min = 1))]
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    /// Replacement description.
    #[serde(skip_serializing_if = "String::is_empty")]
    description: String,
    /// Hide the tool (default false).
    hidden: bool,
    /// Category of this tool (replaces the server's).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$"))]
    #[serde(skip_serializing_if = "String::is_empty")]
    category: String,
    /// Limits on this tool's calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<Limits>,
    /// Cost of each call (replaces the server's).
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<Cost>,
    /// Replaces every agent's approval rule for this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<Approval>,
    /// Replaces the tool's own destructiveHint (annotations are untrusted).
    #[serde(skip_serializing_if = "Option::is_none")]
    destructive: Option<bool>,
    /// Replaces the tool's own readOnlyHint.
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
    /// Typical duration (p50) in ms; replaces the tool's declared _meta.
    #[serde(skip_serializing_if = "Option::is_none")]
    estimated_duration_ms: Option<u64>,
    /// Upper bound (p99) in ms; replaces the declared one.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_duration_ms: Option<u64>,
    /// Same arguments, same effect: retries and hedging are safe.
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    /// How long results may be reused (0 = never).
    #[serde(skip_serializing_if = "Option::is_none")]
    cacheable_seconds: Option<u64>,
    /// false: never probe this tool, whatever its annotations say.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<bool>,
    /// The arguments probes call the tool with (default: a minimal valid input).
    #[serde(skip_serializing_if = "Option::is_none")]
    probe_arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

// Defaults: `Serialize` types show theirs in the schema (the real ones, below); the enums
// are not `Serialize`, so theirs (placeholders that satisfy `serde(default)`) never show.
impl Default for Gateway {
    fn default() -> Self {
        Self {
            separator: "__".to_owned(),
            prefix_tools: true,
            call_timeout: Duration::Millis(60_000),
            connect_timeout: Duration::Millis(30_000),
            discover_timeout: Duration::Millis(2_000),
            max_message_bytes: 16 * 1024 * 1024,
            header_timeout: Duration::Millis(30_000),
            max_connections: 10_000,
            busy_poll: Duration::Text("100us".to_owned()),
            watch: true,
            read_only: false,
            drain_timeout: Duration::Millis(30_000),
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

impl Default for Server {
    fn default() -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: String::new(),
            url: String::new(),
            headers: BTreeMap::new(),
            transport: HttpTransport::StreamableHttp,
            builtin: Builtin::Clock,
            prefix: String::new(),
            era: Era::Auto,
            trust: TrustMode::Auto,
            call_timeout: Duration::Millis(0),
            instances: None,
            sandbox: None,
            auth: None,
            tls: None,
            enabled: true,
            name: String::new(),
            tools: BTreeMap::new(),
            category: String::new(),
            limits: None,
            cost: None,
            roots: Vec::new(),
            max_read_bytes: None,
            max_write_bytes: None,
            tables_dir: String::new(),
            seed: None,
            database: String::new(),
            dirs: Vec::new(),
            player: None,
            moods: BTreeMap::new(),
            mpv_args: Vec::new(),
            backend: None,
            api_key: String::new(),
            allow_private: None,
            max_bytes: None,
            timeout: None,
            max_redirects: None,
            json: None,
            model: String::new(),
            out_dir: String::new(),
            styles: BTreeMap::new(),
        }
    }
}

/// The JSON Schema of the native format, pretty-printed.
pub fn native_schema() -> String {
    let schema = schemars::schema_for!(SwitchboardConfig);
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests;
