//! The Host: supervisors in, one catalog snapshot and one pipeline out; [`backend`] is the
//! Host as the stdio and HTTP fronts serve it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_core::agent::{AgentPolicy, FullView, ToolPattern, View};
use switchboard_core::catalog::{NamingRules, ServerSlice, ToolOverride};
use switchboard_core::clock::SystemClock;
use switchboard_core::config::Exposure;
use switchboard_core::pipeline::{CallError, Governance, LogRecorder, Pipeline, Recorder};
use switchboard_core::upstream::{Upstream, UpstreamDirectory};
use switchboard_core::{
    CallContext, Caller, Catalog, CatalogEntry, CatalogProblem, ServerId, ToolCall, ToolDefinition,
    ToolOutcome,
};
use switchboard_mcp::front::ServerIdentity;
use switchboard_mcp::upstream::{Supervisor, SupervisorObserver, UpstreamSpec};
use tokio::sync::watch;

use crate::approvals::PendingApprovals;
use crate::exposure::AgentProfile;
use crate::latency::execute::BudgetedUpstream;
use crate::latency::{LatencyBudget, Persistence};
use crate::listing_fit::FitCache;
use crate::result_shaping::{Remainders, TokenCounter};
use crate::sessions::Sessions;
use crate::tool_search::SearchCache;

mod backend;

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
            token_counter: switchboard_render::tokens::count,
            tiers: Vec::new(),
            quantile: 0.9,
            latency: switchboard_core::config::LatencyConfig::default(),
            tool_settings: std::collections::HashMap::new(),
            latency_database: None,
        }
    }
}

/// One server's line in `switchboard status`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub server: String,
    pub state: &'static str,
    pub era: Option<String>,
    pub protocol_version: Option<String>,
    pub transport: &'static str,
    pub tools: usize,
    pub error: Option<String>,
    /// Tools of this server that are not exposed, and why.
    pub notes: Vec<String>,
}

pub(crate) struct Inner {
    pub(crate) plans: Vec<ServerPlan>,
    pub(crate) supervisors: Vec<Arc<Supervisor>>,
    /// Resource URIs seen in tool results → the server whose tool returned them, so a
    /// `resource_link` can be read back through the gateway.
    pub(crate) resource_routes: Mutex<std::collections::HashMap<String, ServerId>>,
    catalog: ArcSwap<Catalog>,
    version: watch::Sender<u64>,
    rebuild_lock: Mutex<()>,
    /// URIs of resources an upstream said changed (`notifications/resources/updated`).
    pub(crate) resource_updates: tokio::sync::broadcast::Sender<String>,
    /// The view of callers without an agent (shared, so a call allocates none).
    full_view: Arc<dyn View>,
    /// The rest of truncated results, for `read_more`.
    pub(crate) remainders: Remainders,
    /// Tiers an operator set per agent (`switchboard tier set --agent`).
    pub(crate) agent_tiers: Mutex<std::collections::HashMap<String, String>>,
    /// Listing modes chosen to fit agents' token budgets.
    pub(crate) fit: FitCache,
    /// The search index of the current catalog version.
    pub(crate) search: SearchCache,
    /// Per-session state (loaded categories, truncated results).
    pub(crate) sessions: Sessions,
    /// Per-agent listings, serialized once per catalog version.
    listings: Mutex<std::collections::HashMap<String, (u64, Arc<str>)>>,
    /// Set once the start-up wait is over.
    started: std::sync::atomic::AtomicBool,
    /// Measured latency, tier placements, deadlines, retries, hedging and the result cache.
    pub(crate) latency: Arc<LatencyBudget>,
    pipeline: Pipeline,
    pub(crate) options: HostOptions,
}

/// A running Host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
}

impl Host {
    /// Starts every server in parallel and returns at once; see [`Host::ready`].
    pub fn start(plans: Vec<ServerPlan>, options: HostOptions) -> Self {
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let supervisors = plans
                .iter()
                .map(|plan| {
                    let observer = Arc::new(HostObserver {
                        inner: weak.clone(),
                    });
                    Supervisor::start(plan.spec.clone(), observer)
                })
                .collect();
            let (version, _) = watch::channel(0);
            let latency = budget_of(&options);
            let sessions_of = weak.clone();
            latency.on_change(move |tiers: &[String]| {
                if let Some(inner) = sessions_of.upgrade() {
                    inner.sessions.bump_tiers(tiers);
                }
            });
            let (resource_updates, _) = tokio::sync::broadcast::channel(256);
            Inner {
                resource_updates,
                plans,
                supervisors,
                catalog: ArcSwap::from_pointee(Catalog::default()),
                version,
                rebuild_lock: Mutex::new(()),
                resource_routes: Mutex::default(),
                listings: Mutex::default(),
                sessions: Sessions::default(),
                search: SearchCache::default(),
                fit: FitCache::default(),
                agent_tiers: Mutex::default(),
                remainders: Remainders::default(),
                full_view: Arc::new(FullView),
                started: std::sync::atomic::AtomicBool::new(false),
                latency,
                pipeline: Pipeline::governed(
                    options.recorder.clone(),
                    Arc::new(SystemClock),
                    options.governance.clone(),
                ),
                options,
            }
        });
        inner.rebuild();
        let host = Self { inner };
        host.start_maintenance();
        host
    }

    /// Waits until every server's first connection attempt has finished (each is bounded by
    /// its connect timeout, and they run in parallel).
    pub async fn ready(&self) {
        futures::future::join_all(self.inner.supervisors.iter().map(|s| s.settled())).await;
        // A supervisor marks itself settled just before it asks for the rebuild: make sure
        // the catalog already reflects what `settled` promised.
        self.inner.rebuild();
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.load_full()
    }

    /// What a caller acting for `agent` may see and call: everything when no agents are
    /// configured or no agent is named, that agent's permissions otherwise, nothing for an
    /// agent the config does not know.
    pub fn view(&self, agent: Option<&str>) -> Arc<dyn View> {
        match agent {
            Some(name) if !self.inner.options.agents.is_empty() => {
                match self.inner.options.agents.get(name) {
                    Some(profile) => profile.policy.clone(),
                    None => Arc::new(AgentPolicy {
                        name: name.to_owned(),
                        allow: vec![],
                        deny: vec![ToolPattern::parse("*"), ToolPattern::parse("*:*")],
                    }),
                }
            }
            _ => self.inner.full_view.clone(),
        }
    }

    /// Calls waiting for an operator's approval, if approvals are set up.
    pub fn pending_approvals(&self) -> Option<Arc<PendingApprovals>> {
        self.inner.options.pending_approvals.clone()
    }

    /// The profile of a configured agent.
    pub fn profile(&self, agent: Option<&str>) -> Option<Arc<AgentProfile>> {
        self.inner.options.agents.get(agent?).cloned()
    }

    /// Whether the config names this agent (always true when no agents are configured).
    pub fn knows_agent(&self, agent: &str) -> bool {
        self.inner.options.agents.is_empty() || self.inner.options.agents.contains_key(agent)
    }

    /// The catalog entries `agent` may see, in listing order.
    pub fn visible_tools(&self, agent: Option<&str>) -> Vec<Arc<CatalogEntry>> {
        self.entries_in(self.view(agent).as_ref())
    }

    /// The catalog entries in a view, in listing order.
    pub(crate) fn entries_in(&self, view: &dyn View) -> Vec<Arc<CatalogEntry>> {
        self.catalog()
            .entries()
            .iter()
            .filter(|entry| view.contains(entry))
            .cloned()
            .collect()
    }

    /// The JSON array of the tools `agent` may see, serialized once per catalog version.
    pub fn listing_json(&self, agent: Option<&str>) -> Arc<str> {
        let restricted = agent.filter(|_| !self.inner.options.agents.is_empty());
        let Some(name) = restricted else {
            return self.catalog().listing_json();
        };
        let version = *self.inner.version.borrow();
        if let Ok(cache) = self.inner.listings.lock()
            && let Some((cached, json)) = cache.get(name)
            && *cached == version
        {
            return json.clone();
        }
        let tools = self.visible_tools(Some(name));
        let definitions: Vec<&ToolDefinition> =
            tools.iter().map(|entry| &entry.spec.definition).collect();
        let json: Arc<str> =
            Arc::from(serde_json::to_string(&definitions).unwrap_or_else(|_| "[]".to_owned()));
        if let Ok(mut cache) = self.inner.listings.lock() {
            cache.insert(name.to_owned(), (version, json.clone()));
        }
        json
    }

    /// Runs one call through the pipeline, within the view of `ctx.agent`.
    pub async fn call(
        &self,
        ctx: &CallContext,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, CallError> {
        let catalog = self.catalog();
        let caller = Caller::of(ctx);
        let tier = self.active_tier(&caller);
        let view = self.view_at(&caller, tier.as_ref());
        let route = CallRoute {
            inner: &self.inner,
            tier: tier
                .as_ref()
                .and_then(|tier| self.inner.latency.tier_id(&tier.name)),
        };
        let outcome = self
            .inner
            .pipeline
            .call(
                &catalog,
                view.as_ref(),
                &route,
                ctx,
                ToolCall::new(name, arguments),
            )
            .await;
        if let (Ok(outcome), Some(entry)) = (&outcome, catalog.resolve(name)) {
            self.remember_resource_links(&entry.spec.server, outcome);
        }
        outcome
    }

    /// Bumped on every change of the exposed catalog.
    pub fn catalog_version(&self) -> watch::Receiver<u64> {
        self.inner.version.subscribe()
    }

    /// Per-server state, in config order.
    pub fn status(&self) -> Vec<ServerReport> {
        let catalog = self.catalog();
        self.inner
            .plans
            .iter()
            .zip(&self.inner.supervisors)
            .map(|(plan, supervisor)| {
                let status = supervisor.status();
                let notes = catalog
                    .problems()
                    .iter()
                    .filter(|problem| problem.server() == Some(supervisor.id()))
                    .map(CatalogProblem::to_string)
                    .collect();
                ServerReport {
                    server: supervisor.id().to_string(),
                    state: status.state.as_str(),
                    era: status.era.as_ref().map(|era| era.label().to_owned()),
                    protocol_version: status.era.as_ref().map(|era| era.version().to_owned()),
                    transport: plan.spec.endpoint.transport_label(),
                    tools: catalog.count_for(supervisor.id()),
                    error: status.error,
                    notes,
                }
            })
            .collect()
    }

    /// Problems of the catalog that belong to no single server (dangling aliases).
    pub fn catalog_problems(&self) -> Vec<CatalogProblem> {
        self.catalog().problems().to_vec()
    }

    /// Stops every server (killing child process groups), after saving latency stats.
    pub async fn shutdown(&self) {
        if let Err(error) = self.inner.latency.save() {
            tracing::warn!(%error, "latency stats were not saved");
        }
        futures::future::join_all(self.inner.supervisors.iter().map(|s| s.stop())).await;
    }

    /// At start-up only: waits (bounded) for the first connection attempts, so a client's
    /// first listing is complete. Afterwards returns at once — listings never wait on the network.
    pub(crate) async fn wait_for_startup(&self) {
        if !self
            .inner
            .started
            .load(std::sync::atomic::Ordering::Acquire)
        {
            let _ = tokio::time::timeout(self.inner.options.startup_wait, self.ready()).await;
            self.inner
                .started
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }
}

/// Hears the supervisors: rebuilds the catalog on every status change, passes resource
/// updates on to the fronts.
struct HostObserver {
    inner: Weak<Inner>,
}

impl SupervisorObserver for HostObserver {
    fn status_changed(&self, _server: &ServerId) {
        if let Some(inner) = self.inner.upgrade() {
            inner.rebuild();
        }
    }

    fn resource_updated(&self, _server: &ServerId, uri: &str) {
        if let Some(inner) = self.inner.upgrade() {
            let _ = inner.resource_updates.send(uri.to_owned());
        }
    }
}

impl Inner {
    /// The catalog version now.
    pub(crate) fn version_now(&self) -> watch::Ref<'_, u64> {
        self.version.borrow()
    }

    /// Builds a new catalog from every server's current tools and swaps it in.
    fn rebuild(&self) {
        let Ok(_guard) = self.rebuild_lock.lock() else {
            return;
        };
        let slices: Vec<ServerSlice> = self
            .plans
            .iter()
            .zip(&self.supervisors)
            .map(|(plan, supervisor)| ServerSlice {
                server: plan.spec.id.clone(),
                prefix: plan.prefix.clone(),
                tools: supervisor.status().tools,
                overrides: plan.overrides.clone(),
                call_timeout: plan.call_timeout,
                category: plan.category.clone(),
            })
            .collect();
        let catalog = Catalog::build(&slices, &self.options.naming);
        let transports = self
            .plans
            .iter()
            .map(|plan| (plan.spec.id.clone(), plan.spec.endpoint.transport_label()))
            .collect();
        self.latency.refresh(&catalog, &transports);
        let previous = self.catalog.load();
        let changed = previous.entries().len() != catalog.entries().len()
            || previous
                .entries()
                .iter()
                .zip(catalog.entries())
                .any(|(a, b)| a.spec != b.spec);
        self.catalog.store(Arc::new(catalog));
        if changed {
            self.version.send_modify(|version| *version += 1);
            self.sessions.bump_all();
        }
    }
}

impl Inner {
    /// A server's upstream as its supervisor has it, outside the latency budget (probes).
    pub(crate) fn raw_upstream(&self, server: &ServerId) -> Option<Arc<dyn Upstream>> {
        self.supervisors
            .iter()
            .find(|s| s.id() == server)?
            .upstream()
    }
}

/// The upstreams of one call: each seen through the latency budget, judged in the caller's
/// tier.
pub(crate) struct CallRoute<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) tier: Option<switchboard_budget::TierId>,
}

impl UpstreamDirectory for CallRoute<'_> {
    fn upstream(&self, server: &ServerId) -> Option<Arc<dyn Upstream>> {
        let inner = self.inner.raw_upstream(server)?;
        Some(Arc::new(BudgetedUpstream {
            inner,
            server: server.clone(),
            budget: self.inner.latency.clone(),
            tier: self.tier,
        }))
    }
}

/// The latency budget of a Host's options (stats file opened if one is set; a file that
/// cannot be opened is logged and the budget keeps its figures in memory).
fn budget_of(options: &HostOptions) -> Arc<LatencyBudget> {
    let tiers = options
        .tiers
        .iter()
        .map(|tier| {
            switchboard_budget::Tier::new(
                &tier.name,
                tier.ceiling,
                tier.ceiling >= switchboard_core::tier::UNKNOWN_FITS_FROM,
            )
        })
        .collect::<Vec<_>>();
    let tiers = if tiers.is_empty() {
        switchboard_budget::TierSet::default()
    } else {
        switchboard_budget::TierSet::new(tiers).unwrap_or_default()
    };
    let persistence = options.latency_database.as_deref().and_then(|path| {
        Persistence::open(path)
            .map_err(|error| tracing::warn!(%error, "latency stats are kept in memory only"))
            .ok()
    });
    LatencyBudget::new(
        options.latency.clone(),
        tiers,
        options.tool_settings.clone(),
        Arc::new(SystemClock),
        persistence,
    )
}
