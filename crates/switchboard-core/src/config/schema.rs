//! The JSON Schema of the native config format, generated with schemars from these mirror
//! types. They exist only to describe the file (for editors and `schema/`); validation walks
//! the located tree instead, so it can report every problem with its line and column. A test
//! keeps the two in step (same keys), another fails when the checked-in file drifts. The
//! types are in files by what they describe: the root and durations here, `[gateway]`,
//! `[servers.X]` and the built-ins' settings, agents, what meets every call (latency, hooks,
//! limits), the manager, what a deployment shares, and security (auth, sandboxes, upstream
//! credentials).

use std::collections::BTreeMap;

use schemars::JsonSchema;

mod agents;
mod builtin;
mod calls;
mod deployment;
mod gateway;
mod manager;
mod security;
mod server;

use agents::Agent;
use calls::{HookEntry, Latency};
use deployment::{Shared, Storage, Telemetry};
use gateway::Gateway;
use manager::Manager;
use security::Auth;
use server::Server;

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

impl From<std::time::Duration> for Duration {
    /// Whole milliseconds as a number of them; anything finer in microseconds (`"100us"`).
    fn from(duration: std::time::Duration) -> Self {
        if duration.subsec_nanos().is_multiple_of(1_000_000) {
            Self::Millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
        } else {
            Self::Text(format!("{}us", duration.as_micros()))
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
