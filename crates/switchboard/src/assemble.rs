//! From a validated [`Config`] to running parts: each server config becomes an
//! [`UpstreamSpec`] plus its naming, built-in servers are resolved to their providers, and
//! gateway settings become [`HostOptions`].

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use switchboard_core::ServerId;
use switchboard_core::agent::ToolPattern;
use switchboard_core::approval::{AgentApproval, ApprovalRules, ToolApproval};
use switchboard_core::catalog::{NamingRules, ToolOverride};
use switchboard_core::config::{
    ApprovalMode, Config, CostConfig, EraPreference, LimitsConfig, SandboxConfig, ServerConfig,
    Transport, UpstreamTlsConfig,
};
use switchboard_core::limits::{
    CostModel, LimitSpec, Limits, Quota, Scope, SharedLimiter, SharedSpending,
};
use switchboard_core::pipeline::Governance;
use switchboard_mcp::upstream::http::TlsFiles;
use switchboard_mcp::upstream::{Endpoint, EraChoice, StdioCommand, UpstreamSpec};

use switchboard_mcp::seal::{FixedKeys, KeyRing, Keys};

use crate::approvals::{Approvals, Sealer};
use crate::exposure::AgentProfile;
use crate::host::{Host, HostOptions, ServerPlan};
use crate::keyring::LiveKeys;
use crate::latency::{ToolSettings, tool_key};
use crate::manager::ManagerSlot;
use switchboard_budget::SafetyOverride;

mod error;
mod pin_store;

pub use error::AssembleError;

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

/// The server plans of a config, in config order; disabled servers are left out.
pub fn plans(config: &Config) -> Result<Vec<ServerPlan>, AssembleError> {
    plans_linked(config, &ManagerSlot::default(), None)
}

/// [`plans`], with `manager` built-ins finding their manager in `slot`.
fn plans_linked(
    config: &Config,
    slot: &ManagerSlot,
    launcher: Option<&Path>,
) -> Result<Vec<ServerPlan>, AssembleError> {
    config
        .servers
        .iter()
        .filter(|server| server.enabled)
        .map(|server| plan_reusing(config, server, |_| None, slot, launcher))
        .collect()
}

/// The plan of one server, not linked to any running Host (a `manager` built-in of it
/// answers that the manager is not running).
pub(crate) fn plan(
    config: &Config,
    server: &ServerConfig,
    launcher: Option<&Path>,
) -> Result<ServerPlan, AssembleError> {
    plan_reusing(config, server, |_| None, &ManagerSlot::default(), launcher)
}

/// The plan of `server`, taking the endpoint `reuse` gives for the plan's connection
/// fingerprint as it is (a reload keeps the running connection's endpoint — a built-in's
/// provider — when the fingerprint is the running one's, rather than building one to throw
/// away). The fingerprint is computed once: it reads the server's TLS files.
pub(crate) fn plan_reusing(
    config: &Config,
    server: &ServerConfig,
    reuse: impl FnOnce(&str) -> Option<Endpoint>,
    slot: &ManagerSlot,
    launcher: Option<&Path>,
) -> Result<ServerPlan, AssembleError> {
    let gateway = &config.gateway;
    let fingerprint = connection_fingerprint(config, server);
    let endpoint = match (reuse(&fingerprint), &server.transport) {
        (Some(endpoint), _) => endpoint,
        (None, transport) => {
            let mut endpoint = endpoint_of(server, transport, gateway.max_message_bytes, slot)?;
            if let (Endpoint::Stdio(command), Some(sandbox)) =
                (&mut endpoint, config.sandbox_of(server))
            {
                sandbox_command(&server.id, command, &sandbox, launcher)?;
            }
            endpoint
        }
    };
    let prefix = if gateway.prefix_tools {
        server.prefix.clone().unwrap_or_else(|| server.id.clone())
    } else {
        String::new()
    };
    Ok(ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new(&server.id),
            endpoint,
            era: match server.era {
                EraPreference::Auto => EraChoice::Auto,
                EraPreference::Legacy => EraChoice::Legacy,
                EraPreference::Modern => EraChoice::Modern,
            },
            connect_timeout: gateway.connect_timeout,
            discover_timeout: gateway.discover_timeout,
            max_message_bytes: gateway.max_message_bytes,
            instances: server.instances,
        },
        prefix,
        overrides: server
            .tools
            .iter()
            .map(|(tool, o)| {
                (
                    tool.clone(),
                    ToolOverride {
                        name: o.name.clone(),
                        description: o.description.clone(),
                        hidden: o.hidden,
                        category: o.category.clone(),
                        latency: o.latency,
                    },
                )
            })
            .collect(),
        call_timeout: server.call_timeout.unwrap_or(gateway.call_timeout),
        category: server.category.clone().unwrap_or_default(),
        fingerprint,
        pinned: server.trust == switchboard_core::config::Trust::Pinned,
    })
}

/// The endpoint a server's transport describes (a built-in's provider is built here).
fn endpoint_of(
    server: &ServerConfig,
    transport: &Transport,
    max_message_bytes: usize,
    slot: &ManagerSlot,
) -> Result<Endpoint, AssembleError> {
    Ok(match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Endpoint::Stdio(StdioCommand {
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
            cwd: cwd.clone(),
            max_message_bytes,
            wrapper: None,
            keep_env: None,
        }),
        Transport::Http { url, headers } => Endpoint::StreamableHttp {
            url: url.clone(),
            headers: headers.clone(),
            credentials: match &server.auth {
                Some(auth) => Some(Arc::new(
                    switchboard_mcp::upstream::http::UpstreamCredentials::new(auth)
                        .map_err(|error| AssembleError::server(&server.id, error))?,
                )),
                None => None,
            },
            tls: server.tls.as_ref().map(tls_files),
            public_only: server.public_only,
        },
        Transport::Sse { url, headers } => Endpoint::Sse {
            url: url.clone(),
            headers: headers.clone(),
            tls: server.tls.as_ref().map(tls_files),
            public_only: server.public_only,
        },
        Transport::Builtin { name, .. } if name == "manager" => Endpoint::InProcess(Arc::new(
            crate::manager::tools::ManagerTools::new(slot.clone()),
        )),
        Transport::Builtin { name, settings } => {
            let provider = switchboard_tools::builtin(name, settings)
                .map_err(|error| AssembleError::server(&server.id, error))?;
            Endpoint::InProcess(provider)
        }
    })
}

/// The files of `[servers.ID.tls]`, as the HTTP transports take them.
fn tls_files(tls: &UpstreamTlsConfig) -> TlsFiles {
    TlsFiles {
        ca: tls.ca.clone(),
        client: tls.cert.clone().zip(tls.key.clone()),
    }
}

/// Runs `command` under the sandbox launcher; refused without a launcher, so a configured
/// sandbox is never silently dropped.
fn sandbox_command(
    id: &str,
    command: &mut StdioCommand,
    sandbox: &SandboxConfig,
    launcher: Option<&Path>,
) -> Result<(), AssembleError> {
    let Some(launcher) = launcher else {
        return Err(AssembleError::SandboxWithoutLauncher {
            server: id.to_owned(),
        });
    };
    let launch = crate::sandbox::launch(
        sandbox,
        launcher,
        &command.command,
        &command.args,
        command.cwd.as_deref(),
    );
    command.wrapper = Some(launch.wrapper);
    command.keep_env = launch.keep_env;
    Ok(())
}

/// The hash of what a server's connection depends on: its transport (command, args, env, cwd,
/// url, headers, built-in and its settings), its TLS files (named and their contents),
/// `public_only`, auth, sandbox, era and number of instances (a new number starts
/// a new pool beside the old, as any other change of the connection does). Gateway-wide
/// bounds (connect timeout, message size) apply to the next connection and are left out, so
/// changing them restarts nothing.
pub fn connection_fingerprint(config: &Config, server: &ServerConfig) -> String {
    use sha2::{Digest, Sha256};
    let mut text = format!("{:?}\u{0}{:?}", server.transport, server.era);
    // No sandbox hashes as before sandboxes existed.
    if let Some(sandbox) = config.sandbox_of(server) {
        text.push_str(&format!("\u{0}sandbox={sandbox:?}"));
    }
    // One instance hashes as before pools existed.
    if server.instances.get() > 1 {
        text.push_str(&format!("\u{0}instances={}", server.instances));
    }
    // Nor does no tls. Its files count by name and by contents, so a reload after a
    // certificate was renewed over the same paths restarts the server, which reads them anew.
    let mut files = Vec::new();
    if let Some(tls) = &server.tls {
        text.push_str(&format!("\u{0}tls={tls:?}"));
        for path in [&tls.ca, &tls.cert, &tls.key].into_iter().flatten() {
            files.push(std::fs::read(path).unwrap_or_else(|error| error.to_string().into_bytes()));
        }
    }
    // Nor does public_only left false.
    if server.public_only {
        text.push_str("\u{0}public_only");
    }
    // No auth hashes as before it existed; its secret prints redacted, so it is added
    // itself (only a hash of the whole leaves this function).
    if let Some(auth) = &server.auth {
        text.push_str(&format!("\u{0}auth={auth:?}\u{0}"));
        text.push_str(auth.client_secret.expose());
    }
    // A built-in's API key prints redacted: a new key must still restart the server. Only
    // a hash of the whole leaves this function.
    if let Transport::Builtin { settings, .. } = &server.transport
        && let Some(key) = &settings.api_key
    {
        text.push('\u{0}');
        text.push_str(key.expose());
    }
    let mut digest = Sha256::new();
    digest.update(text.as_bytes());
    for contents in &files {
        digest.update((contents.len() as u64).to_le_bytes());
        digest.update(contents);
    }
    switchboard_core::hex::encode(&digest.finalize()[..8])
}

/// `limits` with their rates and caps kept in `[shared] redis` when the config names one:
/// in `store` when given (the one already running), else in a new connection.
pub(crate) fn share_limits(
    limits: Limits,
    config: &Config,
    store: Option<Arc<dyn SharedLimiter>>,
) -> Result<Limits, AssembleError> {
    let Some(url) = &config.shared.redis else {
        return Ok(limits);
    };
    let store = match store {
        Some(store) => store,
        None => Arc::new(crate::shared::RedisLimiter::connect(
            url,
            config.shared.deployment(),
        )?),
    };
    Ok(limits.with_shared(
        store,
        config.shared.redis_unavailable,
        config.shared.replicas.unwrap_or(1),
    ))
}

/// The other replicas' spending, for quotas shared on the `[storage] url` at `url`, kept
/// fresh by a task of its own (`quotas::follow`) while the returned value lives.
fn share_quotas(url: &str) -> Result<Arc<SharedSpending>, AssembleError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(AssembleError::storage("shared quotas need a Tokio runtime"));
    }
    let store = crate::quotas::QuotaStore::new(url, switchboard_ledger::postgres::replica())
        .map_err(AssembleError::storage)?;
    let spending = Arc::new(SharedSpending::new());
    crate::quotas::follow(store, &spending);
    Ok(spending)
}

/// Limits, quotas and costs of a config, by scope.
pub fn governance(config: &Config) -> Governance {
    let mut specs = HashMap::new();
    let mut add = |scope: Scope, limits: &LimitsConfig| {
        if !limits.is_empty() {
            specs.insert(
                scope,
                LimitSpec {
                    per_minute: limits.per_minute,
                    burst: limits.burst,
                    max_concurrent: limits.max_concurrent,
                    queue: limits.queue,
                },
            );
        }
    };
    add(Scope::Global, &config.gateway.limits);
    let mut costs = HashMap::new();
    let model = |cost: &CostConfig| CostModel {
        fixed: cost.fixed,
        per_second: cost.per_second,
    };
    for (name, agent) in &config.agents {
        add(Scope::Agent(name.clone()), &agent.limits);
    }
    for server in &config.servers {
        add(Scope::Server(server.id.clone()), &server.limits);
        if let Some(cost) = &server.cost {
            costs
                .entry(server.id.clone())
                .or_insert_with(HashMap::new)
                .insert("*".to_owned(), model(cost));
        }
        for (tool, spec) in &server.tools {
            add(Scope::Tool(format!("{}/{tool}", server.id)), &spec.limits);
            if let Some(cost) = &spec.cost {
                costs
                    .entry(server.id.clone())
                    .or_insert_with(HashMap::new)
                    .insert(tool.clone(), model(cost));
            }
        }
    }
    let quotas = config
        .agents
        .iter()
        .filter_map(|(name, agent)| {
            let quota = agent.quota?;
            Some((name.clone(), Quota::new(quota.cost, quota.window)))
        })
        .collect();
    Governance {
        limits: Limits::new(specs, quotas),
        costs,
        hooks: crate::command_hook::command_hooks(&config.hooks),
        approvals: approval_rules(config),
        approver: None,
    }
}

/// Who must approve what, from the config.
pub fn approval_rules(config: &Config) -> ApprovalRules {
    let agent_rules = |mode: ApprovalMode, globs: &[String]| AgentApproval {
        mode,
        auto_approve: globs.iter().map(|g| ToolPattern::parse(g)).collect(),
    };
    let mut tools = HashMap::new();
    for server in &config.servers {
        for (tool, spec) in &server.tools {
            if spec.approval.is_some() || spec.destructive.is_some() {
                tools.insert(
                    (server.id.clone(), tool.clone()),
                    ToolApproval {
                        mode: spec.approval,
                        destructive: spec.destructive,
                    },
                );
            }
        }
    }
    ApprovalRules {
        agents: config
            .agents
            .iter()
            .map(|(name, agent)| {
                (
                    name.clone(),
                    agent_rules(agent.approval, &agent.auto_approve),
                )
            })
            .collect(),
        tools,
        default: agent_rules(config.gateway.approval, &[]),
    }
}
