//! The validated configuration: what the rest of Switchboard reads. [`Config`] is the root;
//! each section's types are in a file of their own — `gateway`, `servers` (with
//! `upstream_credentials` and `builtin_settings`), `agents`, `governance` (limits, cost,
//! quotas, hooks), `latency`, `manager`, `deployment` (telemetry, storage) and `secret` —
//! and are re-exported here, so `config::model::X` names every one of them.

use std::collections::BTreeMap;
use std::path::PathBuf;

mod agents;
mod builtin_settings;
mod deployment;
mod gateway;
mod governance;
mod latency;
mod manager;
mod secret;
mod servers;
mod upstream_credentials;

pub use crate::approval::ApprovalMode;
pub use agents::{AgentConfig, Exposure, ScopeGrant};
pub use builtin_settings::{
    BuiltinSettings, JsonSearchMapping, PlayerSetting, RootConfig, StyleSetting,
};
pub use deployment::{LedgerUnavailable, StorageConfig, TelemetryConfig};
pub use gateway::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, GatewayConfig, TasksConfig, busy_poll_window,
};
pub use governance::{CostConfig, HookConfig, HookEvent, LimitsConfig, QuotaConfig};
pub use latency::{LatencyConfig, TierConfig};
pub use manager::{Activation, DEFAULT_REGISTRY, EnergyConfig, EnergyRange, ManagerConfig};
pub use secret::SecretString;
pub use servers::{
    EraPreference, MAX_INSTANCES, ServerConfig, ToolOverrideConfig, Transport, Trust,
};
pub use upstream_credentials::{UpstreamAuthConfig, UpstreamGrant, UpstreamTlsConfig};

use super::sandbox::SandboxConfig;

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
