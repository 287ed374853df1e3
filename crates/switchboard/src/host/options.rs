//! What a Host is made from: each server's plan ([`ServerPlan`]), the options of the whole
//! ([`HostOptions`]), and the part of them a reload may swap while calls run ([`Settings`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use switchboard_core::catalog::{NamingRules, ToolOverride};
use switchboard_core::config::Exposure;
use switchboard_core::pipeline::{Governance, LogRecorder, Recorder};
use switchboard_mcp::front::ServerIdentity;
use switchboard_mcp::upstream::UpstreamSpec;

use crate::approvals::PendingApprovals;
use crate::exposure::AgentProfile;
use crate::result_shaping::TokenCounter;

/// One server as the Host runs it.
#[derive(Clone)]
pub struct ServerPlan {
    pub spec: UpstreamSpec,
    /// Prefix of exposed names; empty for pass-through.
    pub prefix: String,
    pub overrides: BTreeMap<String, ToolOverride>,
    pub call_timeout: Duration,
    /// Category of the server's tools; empty = the server id.
    pub category: String,
    /// What the server's connection depends on (transport, era, instances), hashed: a reload
    /// that changes it starts a new connection; any other change applies to the running one.
    /// Empty = unknown (a plan not made from a config): any change restarts the server.
    pub fingerprint: String,
    /// Its tools' definitions are pinned (`trust = "pinned"`): a changed one is held back.
    pub pinned: bool,
}

impl std::fmt::Debug for ServerPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPlan")
            .field("server", &self.spec.id)
            .field("prefix", &self.prefix)
            .field("call_timeout", &self.call_timeout)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}

/// Host-wide options.
#[derive(Clone)]
pub struct HostOptions {
    pub naming: NamingRules,
    /// How long the first listing waits for servers' first connection attempts.
    pub startup_wait: Duration,
    pub identity: ServerIdentity,
    pub recorder: Arc<dyn Recorder>,
    /// Agents by name. Empty = no agents: every caller sees every tool. A caller naming an
    /// agent that is not here sees nothing.
    pub agents: BTreeMap<String, Arc<AgentProfile>>,
    /// The exposure mode of callers without an agent profile.
    pub exposure: Exposure,
    /// Rate limits, quotas, costs, hooks and approvals.
    pub governance: Arc<Governance>,
    /// Calls waiting for an operator (served by the admin endpoint).
    pub pending_approvals: Option<Arc<PendingApprovals>>,
    /// The key ring that seals session ids and `requestState` (`None`: from the config's
    /// `[shared] keys`, else one random key of this process).
    pub keys: Option<Arc<dyn switchboard_mcp::seal::Keys>>,
    /// Counts tokens for result budgets.
    pub token_counter: TokenCounter,
    /// Latency tiers, ordered by ceiling.
    pub tiers: Vec<switchboard_core::tier::Tier>,
    /// The quantile compared with tier ceilings (0.9 = p90).
    pub quantile: f64,
    /// How latency is measured and judged (`[latency]`).
    pub latency: switchboard_core::config::LatencyConfig,
    /// The operator's per-tool word on safety and probing, by `server:tool`.
    pub tool_settings: std::collections::HashMap<String, crate::latency::ToolSettings>,
    /// The file latency windows are kept in between runs (`None`: memory only).
    pub latency_database: Option<std::path::PathBuf>,
    /// Pinned tool definitions, for servers with `trust = "pinned"` and those the server
    /// manager adds. `None`: [`crate::Host::from_config`] opens the store the config names
    /// (`gateway.pins`, else `pins.json` beside the ledger); [`crate::Host::start`] with a
    /// pinned plan pins in this process's memory, and says so in a warning.
    pub pins: Option<Arc<crate::pins::PinStore>>,
    /// The server manager's operations database (`None`: `[manager] database`, else
    /// [`crate::manager::default_database_path`]).
    pub manager_database: Option<std::path::PathBuf>,
    /// The program that runs `sandbox-exec` (see [`crate::sandbox`]); servers with a sandbox
    /// are refused without one. The `switchboard` binary sets it to itself.
    pub sandbox_launcher: Option<std::path::PathBuf>,
    /// Bounds of the tasks the gateway holds (see [`crate::tasks`]).
    pub tasks: crate::tasks::TaskSettings,
    /// Where traced requests' spans go (`None`: not traced; see [`crate::telemetry`]).
    pub telemetry: Option<Arc<crate::telemetry::OtlpExporter>>,
    /// Calls are counted for `/metrics` (`[telemetry] metrics`; default on).
    pub metrics: bool,
    /// The events replicas tell each other (`[shared] redis`; `None`: a replica alone).
    pub events: Option<crate::shared::EventBus>,
    /// Where sessions ended by DELETE are remembered for the HTTP front (`[shared] redis`:
    /// every replica; `None`: the front's own memory).
    pub ended_sessions: Option<Arc<dyn switchboard_mcp::front::http::EndedSessions>>,
    /// The result cache's level the replicas share (`[shared] redis`; `None`: each replica
    /// caches alone).
    pub shared_results: Option<Arc<dyn crate::latency::cache::SharedResults>>,
    /// The fleet's latency statistics on PostgreSQL (`[storage] url`; `None`: this process's
    /// own, in `latency_database`).
    pub shared_stats: Option<Arc<crate::latency::shared::SharedStats>>,
    /// Where the tasks every replica can reach are kept (`[shared] redis`; `None`: a task is
    /// known to the replica that runs it only).
    pub shared_tasks: Option<Arc<crate::shared::SharedTasks>>,
    /// Where sessions' loaded categories, `read_more` and tiers, and the rests of cut
    /// results, are kept for every replica (`[shared] redis`; `None`: the replica's own).
    pub shared_sessions: Option<Arc<crate::shared::SharedSessions>>,
}

impl Default for HostOptions {
    fn default() -> Self {
        Self {
            naming: NamingRules::default(),
            startup_wait: Duration::from_secs(10),
            identity: ServerIdentity {
                name: "switchboard".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                instructions: None,
            },
            recorder: Arc::new(LogRecorder),
            agents: BTreeMap::new(),
            exposure: Exposure::Full,
            governance: Arc::new(Governance::default()),
            pending_approvals: None,
            keys: None,
            token_counter: switchboard_render::tokens::count,
            tiers: Vec::new(),
            quantile: 0.9,
            latency: switchboard_core::config::LatencyConfig::default(),
            tool_settings: std::collections::HashMap::new(),
            latency_database: None,
            pins: None,
            manager_database: None,
            sandbox_launcher: None,
            tasks: crate::tasks::TaskSettings::default(),
            telemetry: None,
            metrics: true,
            events: None,
            ended_sessions: None,
            shared_results: None,
            shared_stats: None,
            shared_tasks: None,
            shared_sessions: None,
        }
    }
}

impl HostOptions {
    /// These options, with a pin store in memory when a plan is pinned and none was given:
    /// a pinned server's definitions are never served unpinned.
    pub(crate) fn pinning(mut self, plans: &[ServerPlan]) -> Self {
        let pinned: Vec<&str> = plans
            .iter()
            .filter(|plan| plan.pinned)
            .map(|plan| plan.spec.id.as_str())
            .collect();
        if self.pins.is_none() && !pinned.is_empty() {
            tracing::warn!(
                target: "switchboard::pins",
                "servers {pinned:?} are pinned but HostOptions::pins is not set: their \
                 definitions are pinned in memory only, for this process"
            );
            self.pins = Some(Arc::new(crate::pins::PinStore::open(None)));
        }
        self
    }
}

/// The parts of [`HostOptions`] a reload may change while calls run.
pub(crate) struct Settings {
    pub(crate) naming: NamingRules,
    pub(crate) agents: BTreeMap<String, Arc<AgentProfile>>,
    pub(crate) exposure: Exposure,
}

impl Settings {
    pub(crate) fn of(options: &HostOptions) -> Self {
        Self {
            naming: options.naming.clone(),
            agents: options.agents.clone(),
            exposure: options.exposure,
        }
    }
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("startup_wait", &self.startup_wait)
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("tiers", &self.tiers)
            .field("latency", &self.latency)
            .field("tasks", &self.tasks)
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}
