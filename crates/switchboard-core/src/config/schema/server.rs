//! The mirror types of `[servers.X]` (one server: stdio, HTTP or a built-in, its transport,
//! trust, era and per-tool overrides), with the defaults the schema shows, for the JSON Schema
//! the parent module generates. The built-ins' own settings are in [`super::builtin`].

use std::collections::BTreeMap;

use schemars::JsonSchema;

use super::Duration;
use super::builtin::{Backend, JsonMapping, Player, Root, Style, Tracks};
use super::calls::{Cost, Limits};
use super::gateway::Approval;
use super::security::{ServerSandbox, UpstreamAuth, UpstreamTls};

/// A category path, for a server's tools or one tool: levels of `A-Z a-z 0-9 _ - .` separated
/// by single `/` (the validator's rule, as a regular expression).
const CATEGORY_PATTERN: &str = r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$";

/// One server: exactly one of `command` (stdio), `url` (HTTP) or `builtin`.
#[derive(JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("dependentRequired" = {"instances": ["command"], "public_only": ["url"]}))]
#[allow(dead_code)]
pub(super) struct Server {
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
    /// HTTP: every connection to the server goes to public internet addresses only: the
    /// host is resolved once per connection, any loopback, private or other non-public
    /// address refuses it, and only the addresses checked are connected to (default false;
    /// the manager sets it on a remote a model installs).
    public_only: bool,
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
    #[schemars(regex(pattern = CATEGORY_PATTERN))]
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

#[derive(JsonSchema)]
#[allow(dead_code)]
pub(super) enum HttpTransport {
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
pub(super) enum Builtin {
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
pub(super) enum TrustMode {
    /// Serve whatever the server lists.
    Auto,
    /// Pin each tool's definition; quarantine a changed one until approved.
    Pinned,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum Era {
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
pub(super) struct ToolOverride {
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
    #[schemars(regex(pattern = CATEGORY_PATTERN))]
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
            public_only: false,
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
