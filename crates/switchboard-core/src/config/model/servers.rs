//! One `[servers.ID]`: how the server is reached (its transport), how its tools are named,
//! trusted and overridden one by one, and the protocol era spoken with it.

use std::collections::BTreeMap;
use std::num::NonZeroU8;
use std::path::PathBuf;
use std::time::Duration;

use super::{
    ApprovalMode, BuiltinSettings, CostConfig, LimitsConfig, UpstreamAuthConfig, UpstreamTlsConfig,
};
use crate::config::sandbox::SandboxSetting;

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
    /// Its `sandbox` key (stdio only); see [`super::Config::sandbox_of`].
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
    /// redacted; [`crate::config::shown_reference`]), keyed `env.NAME` / `headers.NAME`: what
    /// `servers show` and the ledger show where they redact a literal value.
    pub references: BTreeMap<String, String>,
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
