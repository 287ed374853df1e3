//! From a validated [`Config`] to running parts: each server config becomes a plan (its
//! [`UpstreamSpec`](switchboard_mcp::upstream::UpstreamSpec) plus its naming, built-in servers
//! resolved to their providers: `server_plan`), limits, quotas, costs and approvals become the
//! pipeline's governance (`governance`), and gateway settings become [`HostOptions`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use switchboard_budget::SafetyOverride;
use switchboard_core::agent::ToolPattern;
use switchboard_core::catalog::NamingRules;
use switchboard_core::config::Config;
use switchboard_mcp::seal::{FixedKeys, KeyRing, Keys};

use crate::approvals::{Approvals, Sealer};
use crate::exposure::AgentProfile;
use crate::host::{Host, HostOptions};
use crate::keyring::LiveKeys;
use crate::latency::{ToolSettings, tool_key};

mod error;
mod governance;
mod pin_store;
mod server_plan;

pub use error::AssembleError;
pub(crate) use governance::share_limits;
use governance::share_quotas;
pub use governance::{approval_rules, governance};
use server_plan::plans_linked;
pub use server_plan::{connection_fingerprint, plans};
pub(crate) use server_plan::{plan, plan_reusing};

impl Host {
    /// Builds and starts a Host from a config. Returns at once; servers connect in parallel.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, as [`Host::start`].
    pub fn from_config(config: &Config) -> Result<Self, AssembleError> {
        Self::from_config_with(config, HostOptions::default())
    }

    /// Like [`Host::from_config`], with options chosen by the caller. The config decides
    /// naming, exposure, tiers and latency settings, tool settings, tasks, agents, limits,
    /// costs and approval rules, replacing those fields of `options`; the caller's recorder,
    /// identity, keys, telemetry exporter and stores given in `options` are kept, its own
    /// hooks (`options.governance.hooks`) run after the config's `[[hooks]]` (and stay
    /// through reloads), and its approver, when it gives one, decides approvals in place of
    /// the gateway's queue. Without `options.pins`, pins are kept where the config says
    /// (`gateway.pins`, else `pins.json` beside the ledger), as the gateway keeps them.
    pub fn from_config_with(
        config: &Config,
        mut options: HostOptions,
    ) -> Result<Self, AssembleError> {
        let slot = crate::manager::ManagerSlot::default();
        let plans = plans_linked(config, &slot, options.sandbox_launcher.as_deref())?;
        options.pins = Some(pin_store::pin_store(config, options.pins.take())?);
        options.naming = NamingRules {
            separator: config.gateway.separator.clone(),
            aliases: config.aliases.clone(),
        };
        options.exposure = config.gateway.exposure;
        options.quantile = config.latency.quantile;
        options.latency = config.latency.clone();
        if config.latency.database.is_some() {
            options.latency_database = config.latency.database.clone();
        }
        if let Some(url) = &config.storage.url
            && options.shared_stats.is_none()
        {
            // The fleet's statistics replace the stats file.
            let stats = crate::latency::shared::SharedStats::new(
                &url.0,
                switchboard_ledger::postgres::replica(),
                config.shared.deployment(),
            )
            .map_err(AssembleError::storage)?;
            options.shared_stats = Some(Arc::new(stats));
            if let Some(file) = options.latency_database.take() {
                tracing::info!(
                    target: "switchboard::latency",
                    "latency statistics are kept on PostgreSQL ([storage] url); the stats file {} is not used",
                    file.display()
                );
            }
        }
        options.tool_settings = tool_settings(config);
        options.tasks = crate::tasks::TaskSettings::of(&config.gateway.tasks);
        if config.telemetry.metrics_off {
            options.metrics = false;
        }
        if options.telemetry.is_none() {
            options.telemetry = telemetry(config);
        }
        options.tiers = config
            .tiers
            .iter()
            .map(|tier| switchboard_core::tier::Tier {
                name: tier.name.clone(),
                ceiling: tier.ceiling,
            })
            .collect();
        let keys = match options.keys.clone() {
            Some(keys) => keys,
            None => keys_of(config)?,
        };
        options.keys = Some(keys.clone());
        let timeout = config.gateway.approval_timeout;
        if let Some(url) = &config.shared.redis
            && options.events.is_none()
        {
            let bus = crate::shared::EventBus::connect(url, config.shared.deployment())?;
            options.events = Some(bus);
        }
        let mut approvals = match shared_state(&mut options, config)? {
            Some(marks) => Approvals::with_sealer(Sealer::with_nonces(keys, marks), timeout),
            None => Approvals::new(keys, timeout),
        };
        if let Some(url) = &config.storage.url {
            approvals.pending = crate::approvals::PendingApprovals::on_postgres(&url.0)
                .map_err(|error| AssembleError::storage(format!("approvals: {error}")))?;
        }
        let approvals = Arc::new(approvals);
        options.pending_approvals = Some(approvals.pending.clone());
        let embedder = Arc::clone(&options.governance);
        let mut governance = governance(config);
        governance.hooks.extend(embedder.hooks.iter().cloned());
        governance.limits = share_limits(std::mem::take(&mut governance.limits), config, None)?;
        if let Some(url) = &config.storage.url {
            governance.limits =
                std::mem::take(&mut governance.limits).with_shared_spending(share_quotas(&url.0)?);
        }
        governance.approver = embedder.approver.clone().or(Some(approvals));
        options.governance = Arc::new(governance);
        options.agents = agent_profiles(config);
        let database = options
            .manager_database
            .clone()
            .or_else(|| config.manager.database.clone())
            .unwrap_or_else(crate::manager::default_database_path);
        let shared_operations = match &config.storage.url {
            Some(url) => Some(
                crate::manager::postgres::SharedOperations::start(&url.0)
                    .map_err(|error| AssembleError::storage(format!("server manager: {error}")))?,
            ),
            None => None,
        };
        let host = Self::start_linked(plans, options, slot.clone());
        host.inner.live.init(config);
        let manager = crate::manager::Manager::start(
            Arc::downgrade(&host.inner),
            &config.manager,
            database,
            shared_operations,
        );
        let _ = slot.set(manager);
        Ok(host)
    }
}

/// With `[shared] redis`, what the replicas share besides limits and events: sessions ended
/// by DELETE (announced and heard on the event bus, when there is one) and used approval
/// states (the store is returned for the approvals' sealer), the result cache's second
/// level, sessions' state (categories, `read_more`, tiers) and the rests of cut results,
/// and the tasks every replica can reach.
fn shared_state(
    options: &mut HostOptions,
    config: &Config,
) -> Result<Option<Arc<crate::shared::SharedMarks>>, AssembleError> {
    let Some(url) = &config.shared.redis else {
        return Ok(None);
    };
    let deployment = config.shared.deployment();
    let marks = Arc::new(crate::shared::SharedMarks::connect(
        url,
        deployment,
        config.shared.redis_unavailable,
        options.events.clone(),
    )?);
    if options.ended_sessions.is_none() {
        options.ended_sessions = Some(marks.clone());
    }
    if options.shared_results.is_none() {
        let results = crate::shared::RedisResults::connect(url, deployment)?;
        options.shared_results = Some(Arc::new(results));
    }
    if options.shared_sessions.is_none() {
        let sessions = crate::shared::SharedSessions::connect(
            url,
            deployment,
            config.shared.redis_unavailable,
            options.events.clone(),
        )?;
        options.shared_sessions = Some(Arc::new(sessions));
    }
    if options.shared_tasks.is_none()
        && let Some(bus) = options.events.clone()
    {
        let tasks = crate::shared::SharedTasks::connect(
            url,
            deployment,
            config.shared.redis_unavailable,
            bus,
        )?;
        options.shared_tasks = Some(Arc::new(tasks));
    }
    Ok(Some(marks))
}

/// The key ring of `[shared] keys` (followed as it changes); else one derived from
/// `gateway.approval_key`, which replicas shared before key rings; else a random key of
/// this process.
fn keys_of(config: &Config) -> Result<Arc<dyn Keys>, AssembleError> {
    let clock = Arc::new(switchboard_core::clock::SystemClock);
    if let Some(path) = &config.shared.keys {
        let live = LiveKeys::follow(path, clock)?;
        return Ok(Arc::new(live));
    }
    Ok(match &config.gateway.approval_key {
        Some(secret) => Arc::new(LiveKeys::fixed(
            KeyRing::from_secret(secret.as_bytes()),
            clock,
        )),
        None => Arc::new(FixedKeys::ephemeral()),
    })
}

/// The exporter of traces `[telemetry]` and the `OTEL_*` variables ask for, if any; what
/// keeps them off is logged.
fn telemetry(config: &Config) -> Option<Arc<crate::telemetry::OtlpExporter>> {
    let env = |name: &str| std::env::var(name).ok();
    let (settings, warning) = crate::telemetry::TelemetrySettings::resolve(&config.telemetry, &env);
    if let Some(warning) = warning {
        tracing::warn!(target: "switchboard::telemetry", "{warning}");
    }
    match crate::telemetry::OtlpExporter::start(settings?) {
        Ok(exporter) => Some(exporter),
        Err(error) => {
            tracing::warn!(target: "switchboard::telemetry", "traces are off: {error}");
            None
        }
    }
}

/// The agents of a config, as the Host serves them.
pub(crate) fn agent_profiles(config: &Config) -> BTreeMap<String, Arc<AgentProfile>> {
    config
        .agents
        .iter()
        .filter_map(|(name, agent)| {
            let profile = AgentProfile {
                policy: Arc::new(config.agent_policy(name)?),
                tier: agent.tier.clone(),
                exposure: agent.exposure,
                pinned: agent.pinned.iter().map(|g| ToolPattern::parse(g)).collect(),
                max_listing_tokens: agent.max_listing_tokens,
                max_result_tokens: agent.max_result_tokens,
                scopes: Arc::from(config.scope_gates(name)),
            };
            Some((name.clone(), Arc::new(profile)))
        })
        .collect()
}

/// The operator's per-tool safety and probe settings, by `server:tool`.
pub fn tool_settings(config: &Config) -> HashMap<String, ToolSettings> {
    let mut settings = HashMap::new();
    for server in &config.servers {
        for (tool, spec) in &server.tools {
            let safety = SafetyOverride {
                read_only: spec.read_only,
                destructive: spec.destructive,
                idempotent: spec.latency.idempotent,
                probe: spec.probe,
            };
            settings.insert(
                tool_key(&server.id, tool),
                ToolSettings {
                    safety,
                    probe_arguments: spec.probe_arguments.clone(),
                },
            );
        }
    }
    settings
}
