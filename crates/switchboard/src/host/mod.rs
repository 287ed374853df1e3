//! The Host: the fleet of supervised servers in (`crate::fleet`, changed while it runs by
//! `crate::live`), one catalog snapshot and one pipeline out; [`backend`] is the Host as the
//! stdio and HTTP fronts serve it, [`options`] what it is made from, [`readiness`] when it is
//! ready for work, [`status`] what `switchboard status` shows of each server.

use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use switchboard_core::agent::{AgentPolicy, FullView, ToolPattern, View};
use switchboard_core::catalog::ServerSlice;
use switchboard_core::clock::SystemClock;
use switchboard_core::latency_meta::RequestedDeadline;
use switchboard_core::pipeline::{CallError, Pipeline};
use switchboard_core::upstream::{Upstream, UpstreamDirectory};
use switchboard_core::{
    CallContext, Caller, Catalog, CatalogEntry, CatalogProblem, ServerId, ToolCall, ToolDefinition,
    ToolOutcome,
};
use switchboard_mcp::front::ListsVersion;
use switchboard_mcp::upstream::{Supervisor, SupervisorObserver};

use crate::fleet::{Connection, DrainList, Fleet, Lease, Member, Stamp, Surface};
use tokio::sync::watch;

use crate::approvals::PendingApprovals;
use crate::exposure::AgentProfile;
use crate::latency::execute::BudgetedUpstream;
use crate::latency::{LatencyBudget, Persistence};
use crate::listing_fit::FitCache;
use crate::result_shaping::Remainders;
use crate::sessions::Sessions;
use crate::tool_search::SearchCache;

mod backend;
mod options;
mod readiness;
mod replicas;
mod shutdown;
mod status;

pub(crate) use options::Settings;
pub use options::{HostOptions, ServerPlan};
pub use status::{DrainReport, ServerReport, SharedLimitsReport};

pub(crate) struct Inner {
    /// The servers in service, swapped whole by a reload.
    pub(crate) fleet: ArcSwap<Fleet>,
    /// Connections of removed or replaced servers, finishing their calls.
    pub(crate) draining: Arc<DrainList>,
    /// Naming, agents and exposure as last applied.
    pub(crate) settings: ArcSwap<Settings>,
    /// The config as last applied, and the one change operation's lock.
    pub(crate) live: crate::live::LiveState,
    /// Resource URIs seen in tool results → the server whose tool returned them, so a
    /// `resource_link` can be read back through the gateway.
    pub(crate) resource_routes: Mutex<crate::resources::LinkRoutes>,
    /// Which sessions are subscribed to which resource of which server.
    pub(crate) resource_subscribers: Mutex<crate::resource_subscriptions::Subscribers>,
    catalog: ArcSwap<Catalog>,
    version: watch::Sender<u64>,
    /// Bumped when the exposed prompts or resources change.
    pub(crate) lists: watch::Sender<ListsVersion>,
    /// Hashes of the prompts and resources last announced.
    extras_seen: Mutex<(u64, u64)>,
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
    /// The tasks clients started and come back for.
    pub(crate) tasks: crate::tasks::TaskStore,
    /// Per-agent listings, serialized once per catalog version.
    listings: Mutex<std::collections::HashMap<String, (u64, Arc<str>)>>,
    /// Set once the start-up wait is over.
    started: std::sync::atomic::AtomicBool,
    /// How far [`Host::shutdown`] has come: what is refused from then on.
    pub(crate) shut_down: shutdown::ShutDown,
    /// Measured latency, tier placements, deadlines, retries, hedging and the result cache.
    pub(crate) latency: Arc<LatencyBudget>,
    pub(crate) pipeline: Pipeline,
    /// What `/metrics` reports (the pipeline's recorder and the latency layer count into it).
    pub(crate) metrics: Arc<crate::metrics::GatewayMetrics>,
    pub(crate) options: HostOptions,
    /// The server manager, set once the Host runs (its built-in provider holds the slot).
    pub(crate) manager: crate::manager::ManagerSlot,
}

/// A running Host. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("servers", &self.inner.fleet.load().members.len())
            .field("tools", &self.catalog().entries().len())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// Starts every server in parallel and returns at once; see [`Host::ready`].
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: each server's supervisor is a task of the current runtime.
    pub fn start(plans: Vec<ServerPlan>, options: HostOptions) -> Self {
        Self::start_linked(plans, options, crate::manager::ManagerSlot::default())
    }

    /// [`Host::start`], with the slot its `manager` built-ins find the manager in.
    pub(crate) fn start_linked(
        plans: Vec<ServerPlan>,
        options: HostOptions,
        manager: crate::manager::ManagerSlot,
    ) -> Self {
        let options = options.pinning(&plans);
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let started = Stamp::now(Surface::Startup);
            let members = plans
                .into_iter()
                .map(|plan| {
                    let supervisor = start_supervisor(weak, &plan);
                    Arc::new(Member {
                        plan,
                        connection: Connection::new(supervisor),
                        generation: 1,
                        changed: started.clone(),
                    })
                })
                .collect();
            let (version, _) = watch::channel(0);
            let (lists, _) = watch::channel(ListsVersion::default());
            let latency = budget_of(&options);
            let sessions_of = weak.clone();
            latency.on_change(move |tiers: &[String]| {
                if let Some(inner) = sessions_of.upgrade() {
                    inner.sessions.bump_tiers(tiers);
                }
            });
            let (resource_updates, _) = tokio::sync::broadcast::channel(256);
            let metrics = crate::metrics::GatewayMetrics::new(options.metrics);
            metrics.set_agents(options.agents.keys());
            let recorder = Arc::new(crate::metrics::MetricsRecorder {
                inner: options.recorder.clone(),
                metrics: metrics.clone(),
            });
            Inner {
                resource_updates,
                fleet: ArcSwap::from_pointee(Fleet { members }),
                draining: Arc::default(),
                settings: ArcSwap::from_pointee(Settings::of(&options)),
                live: crate::live::LiveState::default(),
                catalog: ArcSwap::from_pointee(Catalog::default()),
                version,
                lists,
                extras_seen: Mutex::new((0, 0)),
                rebuild_lock: Mutex::new(()),
                resource_routes: Mutex::default(),
                resource_subscribers: Mutex::default(),
                listings: Mutex::default(),
                sessions: Sessions::default(),
                tasks: crate::tasks::TaskStore::new(options.tasks.clone(), Arc::new(SystemClock)),
                search: SearchCache::default(),
                fit: FitCache::default(),
                agent_tiers: Mutex::default(),
                remainders: Remainders::default(),
                full_view: Arc::new(FullView),
                started: std::sync::atomic::AtomicBool::new(false),
                shut_down: shutdown::ShutDown::default(),
                latency,
                pipeline: Pipeline::governed(
                    recorder,
                    Arc::new(SystemClock),
                    options.governance.clone(),
                ),
                metrics,
                options,
                manager,
            }
        });
        inner.rebuild();
        let host = Self { inner };
        host.start_maintenance();
        host.follow_replicas();
        host.share_tasks();
        host.follow_sessions();
        host
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.load_full()
    }

    /// What a caller acting for `agent` may see and call: everything when no agents are
    /// configured or no agent is named, that agent's permissions otherwise, nothing for an
    /// agent the config does not know.
    pub fn view(&self, agent: Option<&str>) -> Arc<dyn View> {
        let settings = self.inner.settings.load();
        match agent {
            Some(name) if !settings.agents.is_empty() => match settings.agents.get(name) {
                Some(profile) => profile.policy.clone(),
                None => Arc::new(AgentPolicy {
                    name: name.to_owned(),
                    allow: vec![],
                    deny: vec![ToolPattern::parse("*"), ToolPattern::parse("*:*")],
                }),
            },
            _ => self.inner.full_view.clone(),
        }
    }

    /// Calls waiting for an operator's approval, if approvals are set up.
    pub fn pending_approvals(&self) -> Option<Arc<PendingApprovals>> {
        self.inner.options.pending_approvals.clone()
    }

    /// The key ring that seals session ids and `requestState`, when the Host was built from a
    /// config (or given one).
    pub fn keys(&self) -> Option<Arc<dyn switchboard_mcp::seal::Keys>> {
        self.inner.options.keys.clone()
    }

    /// Where the HTTP front remembers sessions ended by DELETE (`[shared] redis`: shared by
    /// every replica), when the host has a store for them.
    pub fn ended_sessions(&self) -> Option<Arc<dyn switchboard_mcp::front::http::EndedSessions>> {
        self.inner.options.ended_sessions.clone()
    }

    /// How the HTTP front routes answers to relayed requests to the replica that asked
    /// (`[shared] redis`: the event bus), when replicas share one.
    pub fn answer_routes(&self) -> Option<Arc<dyn switchboard_mcp::front::http::AnswerRoutes>> {
        let bus = self.inner.options.events.clone()?;
        Some(Arc::new(bus))
    }

    /// The profile of a configured agent.
    pub fn profile(&self, agent: Option<&str>) -> Option<Arc<AgentProfile>> {
        self.inner.settings.load().agents.get(agent?).cloned()
    }

    /// Whether the config names this agent (always true when no agents are configured).
    pub fn knows_agent(&self, agent: &str) -> bool {
        let settings = self.inner.settings.load();
        settings.agents.is_empty() || settings.agents.contains_key(agent)
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
        let restricted = agent.filter(|_| !self.inner.settings.load().agents.is_empty());
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

    /// Runs one call through the pipeline, within the view of `ctx.agent`. Right after the
    /// Host is built it first waits (at most `startup_wait`) for the first connection
    /// attempts of the servers that could own `name` ([`Host::ready_for_tool`]). A deadline of
    /// `RequestedDeadline::Within` counts from here: waiting for start-up, an approval or an
    /// admission slot is part of it.
    pub async fn call(
        &self,
        ctx: &CallContext,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, CallError> {
        let anchored;
        let ctx = match ctx.deadline {
            Some(deadline @ RequestedDeadline::Within(_)) => {
                anchored = CallContext {
                    deadline: Some(deadline.received_at(tokio::time::Instant::now())),
                    ..ctx.clone()
                };
                &anchored
            }
            _ => ctx,
        };
        self.wait_for_startup_of(name).await;
        self.call_as(ctx, &Caller::of(ctx), name, arguments).await
    }

    /// [`Host::call`] with the caller `ctx` makes already built.
    pub(crate) async fn call_as(
        &self,
        ctx: &CallContext,
        caller: &Caller,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutcome, CallError> {
        if self.inner.shut_down.refuses_calls() {
            return Err(CallError::ShutDown);
        }
        let catalog = self.catalog();
        let tier = self.active_tier(caller);
        let view = self.view_at(caller, tier.as_ref());
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

    /// Problems of the catalog that belong to no single server (dangling aliases).
    pub fn catalog_problems(&self) -> Vec<CatalogProblem> {
        self.catalog().problems().to_vec()
    }
}

/// Starts the supervisor of `plan`, reporting to the Host behind `inner`.
pub(crate) fn start_supervisor(inner: &Weak<Inner>, plan: &ServerPlan) -> Arc<Supervisor> {
    let observer = Arc::new(HostObserver {
        inner: inner.clone(),
    });
    Supervisor::start(plan.spec.clone(), observer)
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
            inner.tell_replicas(crate::shared::SharedEvent::ResourceUpdated {
                uri: uri.to_owned(),
            });
        }
    }
}

impl Inner {
    /// The catalog version now.
    pub(crate) fn version_now(&self) -> watch::Ref<'_, u64> {
        self.version.borrow()
    }

    /// Builds a new catalog from every server's current tools and swaps it in.
    pub(crate) fn rebuild(&self) {
        let Ok(_guard) = self.rebuild_lock.lock() else {
            return;
        };
        let fleet = self.fleet.load_full();
        let slices: Vec<ServerSlice> = fleet
            .members
            .iter()
            .map(|member| {
                let tools = member.supervisor().status().tools;
                let held = match &self.options.pins {
                    Some(pins) if member.plan.pinned => pins.judge(member.id(), &tools),
                    _ => Default::default(),
                };
                ServerSlice {
                    server: member.plan.spec.id.clone(),
                    prefix: member.plan.prefix.clone(),
                    tools,
                    overrides: member.plan.overrides.clone(),
                    call_timeout: member.plan.call_timeout,
                    category: member.plan.category.clone(),
                    held,
                }
            })
            .collect();
        let catalog = Catalog::build(&slices, &self.settings.load().naming);
        let transports = fleet
            .members
            .iter()
            .map(|m| {
                (
                    m.plan.spec.id.clone(),
                    m.plan.spec.endpoint.transport_label(),
                )
            })
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
            self.bump_listings();
            self.tell_replicas(crate::shared::SharedEvent::ToolsListChanged);
        }
        self.announce_extras(&fleet);
    }

    /// Tells every session its listing may have changed (and drops the caches keyed by the
    /// catalog version: per-agent listings, fitted modes, the search index).
    pub(crate) fn announce_listings(&self) {
        self.bump_listings();
        self.tell_replicas(crate::shared::SharedEvent::ToolsListChanged);
    }

    /// Bumps the prompts' or resources' version when what the servers list of them changed.
    fn announce_extras(&self, fleet: &Fleet) {
        use std::hash::{Hash, Hasher};
        let mut prompts = std::collections::hash_map::DefaultHasher::new();
        let mut resources = std::collections::hash_map::DefaultHasher::new();
        self.settings.load().naming.separator.hash(&mut prompts);
        for member in &fleet.members {
            let extras = member.supervisor().status().extras;
            member.id().as_str().hash(&mut prompts);
            member.plan.prefix.hash(&mut prompts);
            for prompt in extras.prompts.iter() {
                prompt.to_string().hash(&mut prompts);
            }
            for resource in extras
                .resources
                .iter()
                .chain(extras.resource_templates.iter())
            {
                resource.to_string().hash(&mut resources);
            }
        }
        let now = (prompts.finish(), resources.finish());
        let Ok(mut seen) = self.extras_seen.lock() else {
            return;
        };
        if *seen == now {
            return;
        }
        let before = *seen;
        *seen = now;
        self.lists.send_modify(|lists| {
            if before.0 != now.0 {
                lists.prompts += 1;
            }
            if before.1 != now.1 {
                lists.resources += 1;
            }
        });
    }
}

impl Inner {
    /// A server's upstream as its supervisor has it, outside the latency budget (probes).
    pub(crate) fn raw_upstream(&self, server: &ServerId) -> Option<Arc<dyn Upstream>> {
        self.fleet.load().find(server)?.supervisor().upstream()
    }

    /// A server's upstream with a lease on its connection, so a drain waits for the call
    /// (for a pool: the instance the call goes to, counted on it while the lease lives).
    /// A connection whose drain began between the fleet's load and the lease is let go, and
    /// the (new) fleet consulted again.
    pub(crate) fn leased_upstream(&self, server: &ServerId) -> Option<(Arc<dyn Upstream>, Lease)> {
        for _ in 0..3 {
            let lease = self.fleet.load().find(server)?.connection.lease();
            if lease.connection().retiring() {
                continue;
            }
            let (upstream, instance) = lease.connection().supervisor.upstream_for_call()?;
            return Some((upstream, lease.on_instance(instance)));
        }
        None
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
        let (inner, lease) = self.inner.leased_upstream(server)?;
        Some(Arc::new(BudgetedUpstream {
            inner,
            server: server.clone(),
            budget: self.inner.latency.clone(),
            tier: self.tier,
            lease: Some(lease),
            metrics: Some(self.inner.metrics.clone()),
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
        switchboard_budget::TierSet::new(tiers).unwrap_or_else(|error| {
            // A config's tiers are checked when it loads; an embedder's options are not.
            tracing::warn!(target: "switchboard::latency", "HostOptions::tiers: {error}; the default tiers are used");
            switchboard_budget::TierSet::default()
        })
    };
    let persistence = options.latency_database.as_deref().and_then(|path| {
        Persistence::open(path)
            .map_err(|error| tracing::warn!(%error, "latency stats are kept in memory only"))
            .ok()
    });
    let budget = LatencyBudget::new(
        options.latency.clone(),
        tiers,
        options.tool_settings.clone(),
        Arc::new(SystemClock),
        persistence,
    );
    if let Some(shared) = &options.shared_results {
        budget.cache.share(shared.clone());
    }
    if let Some(stats) = &options.shared_stats {
        budget.share_stats(stats.clone());
    }
    budget
}
