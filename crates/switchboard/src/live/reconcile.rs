//! Reconcile, never restart the world: the running fleet and a new config are compared server
//! by server. An unchanged server keeps its process, connection and sessions; one whose
//! connection settings changed (transport, command, args, env, cwd, url, headers, era,
//! instances) is replaced — the new connection (or pool) starts, negotiates and lists its
//! tools, new calls switch to it, and the old one drains; one whose other settings changed
//! (prefix, tool overrides, call timeout, category) keeps its connection under a new
//! generation; a removed one is refused to new calls at once and drains. Gateway-wide
//! settings that only a restart can change are reported, and left as they were.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use switchboard_core::catalog::NamingRules;
use switchboard_core::config::Config;
use switchboard_mcp::upstream::{ServerState, Supervisor};
use tokio::time::Instant;

use super::ChangeError;
use crate::Host;
use crate::fleet::{Connection, Fleet, Member, Stamp, Surface};
use crate::host::{ServerPlan, Settings, start_supervisor};

/// What happened to one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A new server started.
    Added,
    /// The server left (removed or disabled); its calls in flight drain.
    Removed,
    /// A new connection replaced the old one (which drains).
    Restarted,
    /// Settings that need no new connection were applied to the running one.
    Updated,
    Unchanged,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Restarted => "restarted",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
        }
    }
}

/// One server's part in a change.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ServerOutcome {
    pub server: String,
    pub action: Action,
    /// false: the change to this server failed and its previous settings keep serving.
    pub applied: bool,
    /// Its state after the change (`up`, `down`, `starting`, or `removed`).
    pub state: String,
    /// Tools it serves after the change.
    pub tools: usize,
    pub generation: u64,
    /// Why it failed, or why a server that was applied anyway is down.
    pub error: Option<String>,
    /// How long the new connection took to start, negotiate and list its tools (the
    /// server's own start-up time), when one was started.
    pub connect_ms: Option<f64>,
}

/// One server of the new config, judged against the fleet.
enum Step {
    Start(ServerPlan),
    Replace(Arc<Member>, ServerPlan),
    Update(Arc<Member>, ServerPlan),
    Keep(Arc<Member>),
}

/// A connection started for a change, and how its first attempt went.
struct Started {
    supervisor: Arc<Supervisor>,
    up: bool,
    error: Option<String>,
    connect_ms: f64,
}

impl Host {
    /// Makes the running Host match `config`. `must_start` (the server a change from a
    /// surface adds, enables or restarts): if it fails to come up, the whole change is undone.
    /// Any other server that fails to come up is judged as in a reload of the file, which is
    /// the truth: a failed replacement keeps the old server, a failed new server stays, down,
    /// retrying like at start-up. `restart` replaces that server's connection even if its
    /// settings did not change.
    pub(super) async fn reconcile(
        &self,
        config: &Config,
        by: Surface,
        must_start: Option<&str>,
        restart: Option<&str>,
        drain_timeout: Duration,
    ) -> Result<Vec<ServerOutcome>, ChangeError> {
        let fleet = self.inner.fleet.load_full();
        let plans = config
            .servers
            .iter()
            .filter(|server| server.enabled)
            .map(|server| {
                // A server whose connection stays keeps its endpoint (a built-in's provider).
                let kept = |fingerprint: &str| {
                    fleet
                        .find_id(&server.id)
                        .filter(|old| {
                            restart != Some(server.id.as_str())
                                && old.plan.fingerprint == fingerprint
                        })
                        .map(|old| old.plan.spec.endpoint.clone())
                };
                crate::assemble::plan_reusing(
                    config,
                    server,
                    kept,
                    &self.inner.manager,
                    self.inner.options.sandbox_launcher.as_deref(),
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ChangeError::Invalid(vec![error.to_string()]))?;
        // Settings outside the plan (limits, costs, approvals, per-tool safety) live in the
        // governance and the latency budget; a server whose entry changed in them is updated.
        let running = self.config();
        let entry_changed =
            |id: &str| running.as_deref().and_then(|old| old.server(id)) != config.server(id);
        let steps: Vec<Step> = plans
            .into_iter()
            .map(|plan| match fleet.find(&plan.spec.id) {
                None => Step::Start(plan),
                Some(old)
                    if restart == Some(plan.spec.id.as_str())
                        || plan.fingerprint.is_empty()
                        || old.plan.fingerprint != plan.fingerprint =>
                {
                    Step::Replace(old.clone(), plan)
                }
                Some(old)
                    if differs_live(&old.plan, &plan) || entry_changed(plan.spec.id.as_str()) =>
                {
                    Step::Update(old.clone(), plan)
                }
                Some(old) => Step::Keep(old.clone()),
            })
            .collect();
        if let Some(server) = restart
            && !steps
                .iter()
                .any(|step| matches!(step, Step::Replace(old, _) if old.id().as_str() == server))
        {
            return Err(ChangeError::Conflict(format!(
                "server '{server}' is not running (disabled?): there is nothing to restart"
            )));
        }
        let started = self.start_all(&steps).await;
        if let Some(server) = must_start
            && let Some(start) = steps.iter().zip(&started).find_map(|(step, start)| {
                let start = start.as_ref()?;
                let id = match step {
                    Step::Start(plan) | Step::Replace(_, plan) => plan.spec.id.as_str(),
                    Step::Update(..) | Step::Keep(_) => return None,
                };
                (id == server && !start.up).then_some(start)
            })
        {
            let server = server.to_owned();
            let reason = format!(
                "the server did not come up: {}",
                start.error.as_deref().unwrap_or("no answer in time")
            );
            stop_all(&started).await;
            return Err(ChangeError::Failed { server, reason });
        }
        let stamp = Stamp::now(by);
        let mut members = Vec::with_capacity(steps.len());
        let mut outcomes = Vec::new();
        let mut retire = Vec::new();
        let mut discard = Vec::new();
        for (step, start) in steps.into_iter().zip(started) {
            match (step, start) {
                (Step::Start(plan), Some(start)) => {
                    let member = new_member(plan, &start, 1, &stamp);
                    outcomes.push(outcome(&member, Action::Added, true, &start));
                    members.push(member);
                }
                (Step::Replace(old, plan), Some(start)) => {
                    let old_up = old.supervisor().status().state == ServerState::Up;
                    if start.up || !old_up {
                        let member = new_member(plan, &start, old.generation + 1, &stamp);
                        outcomes.push(outcome(&member, Action::Restarted, true, &start));
                        members.push(member);
                        retire.push((old.connection.clone(), "replaced"));
                    } else {
                        let mut failed = outcome(&old, Action::Restarted, false, &start);
                        failed.error = Some(format!(
                            "the new settings did not come up ({}); the previous ones keep serving",
                            start.error.as_deref().unwrap_or("no answer in time")
                        ));
                        outcomes.push(failed);
                        members.push(old);
                        discard.push(start.supervisor);
                    }
                }
                (Step::Update(old, plan), _) => {
                    let member = Arc::new(Member {
                        plan,
                        connection: old.connection.clone(),
                        generation: old.generation + 1,
                        changed: stamp.clone(),
                    });
                    outcomes.push(outcome_now(&member, Action::Updated));
                    members.push(member);
                }
                (Step::Keep(old), _) => members.push(old),
                (Step::Start(_) | Step::Replace(..), None) => {}
            }
        }
        for old in &fleet.members {
            if !members.iter().any(|m| m.id() == old.id()) {
                let mut removed = outcome_now(old, Action::Removed);
                removed.state = "removed".to_owned();
                removed.tools = 0;
                outcomes.push(removed);
                retire.push((old.connection.clone(), "removed"));
            }
        }
        for supervisor in discard {
            supervisor.stop().await;
        }
        let views_changed = self.adopt_settings(config, running.as_deref());
        self.inner.fleet.store(Arc::new(Fleet { members }));
        self.inner.rebuild();
        // A change of names, categories, descriptions or views that left the tools' specs
        // as they were is still a change of what callers list.
        if views_changed || outcomes.iter().any(|o| o.action == Action::Updated) {
            self.inner.announce_listings();
        }
        for outcome in &outcomes {
            if matches!(outcome.action, Action::Restarted | Action::Removed) && outcome.applied {
                self.inner.latency.cache.forget_server(&outcome.server);
            }
        }
        for (connection, why) in retire {
            self.inner
                .draining
                .start(connection, why, by, drain_timeout);
        }
        Ok(outcomes)
    }

    /// Starts a connection for every new or replaced server, in parallel, and waits for each
    /// first attempt (bounded by its connect timeout).
    async fn start_all(&self, steps: &[Step]) -> Vec<Option<Started>> {
        let weak = Arc::downgrade(&self.inner);
        let starts = steps.iter().map(|step| {
            let plan = match step {
                Step::Start(plan) | Step::Replace(_, plan) => Some(plan),
                Step::Update(..) | Step::Keep(_) => None,
            };
            let weak = weak.clone();
            async move {
                let plan = plan?;
                let began = Instant::now();
                let supervisor = start_supervisor(&weak, plan);
                let bound = plan.spec.connect_timeout + Duration::from_secs(1);
                let _ = tokio::time::timeout(bound, supervisor.settled()).await;
                let status = supervisor.status();
                Some(Started {
                    up: status.state == ServerState::Up,
                    error: status.error,
                    connect_ms: began.elapsed().as_secs_f64() * 1000.0,
                    supervisor,
                })
            }
        });
        futures::future::join_all(starts).await
    }

    /// Naming, agents, exposure, limits, costs, hooks, approval rules and per-tool settings
    /// of `config`, applied to calls that start from now on. Governance is replaced only
    /// when its own settings changed, and then keeps the state of every rate limiter and
    /// concurrency cap whose own limits did not change, and what every agent that keeps a
    /// quota spent. Returns whether what callers see may have changed (naming, agents,
    /// exposure), so listings are announced even if no tool changed.
    fn adopt_settings(&self, config: &Config, previous: Option<&Config>) -> bool {
        let views_changed = previous.is_none_or(|old| views_inputs(old) != views_inputs(config));
        if views_changed {
            let agents = crate::assemble::agent_profiles(config);
            self.inner.metrics.set_agents(agents.keys());
            self.inner.settings.store(Arc::new(Settings {
                naming: NamingRules {
                    separator: config.gateway.separator.clone(),
                    aliases: config.aliases.clone(),
                },
                agents,
                exposure: config.gateway.exposure,
            }));
        }
        if previous.is_none_or(|old| governance_inputs(old) != governance_inputs(config)) {
            let mut governance = crate::assemble::governance(config);
            let current = self.inner.pipeline.governance();
            governance.approver = current.approver.clone();
            // The config's hooks are replaced; an embedder's own stay, after them.
            governance.hooks.extend(
                current
                    .hooks
                    .iter()
                    .filter(|hook| !hook.is_configured())
                    .cloned(),
            );
            // The running connection to Redis is kept unless where it points changed.
            let same_redis = previous.is_some_and(|old| {
                (&old.shared.redis, old.shared.deployment())
                    == (&config.shared.redis, config.shared.deployment())
            });
            let store = current.limits.shared_store().filter(|_| same_redis);
            let limits = std::mem::take(&mut governance.limits);
            governance.limits = match crate::assemble::share_limits(limits, config, store) {
                Ok(limits) => limits,
                Err(error) => {
                    tracing::warn!(target: "switchboard::shared", "{error}; limits stay local");
                    crate::assemble::governance(config).limits
                }
            };
            // Limiters whose limits are unchanged keep their permits and schedules, quotas
            // (changed or not) what was spent so far, and the other replicas' spending.
            governance.limits.keep_state_of(&current.limits);
            if let Some(spending) = current.limits.shared_spending() {
                governance.limits =
                    std::mem::take(&mut governance.limits).with_shared_spending(spending);
            }
            self.inner.pipeline.set_governance(Arc::new(governance));
        }
        self.inner
            .latency
            .set_overrides(crate::assemble::tool_settings(config));
        views_changed
    }
}

/// What the views and listings depend on besides the servers' tools.
fn views_inputs(config: &Config) -> impl PartialEq + '_ {
    let gateway = &config.gateway;
    (
        &gateway.separator,
        gateway.prefix_tools,
        gateway.exposure,
        &config.aliases,
        &config.agents,
        &config.capabilities,
    )
}

/// What governance is built from: limits, quotas, costs, approval rules and hooks — of only
/// the servers and tools that carry such settings, so adding a plain server changes nothing.
fn governance_inputs(config: &Config) -> impl PartialEq + '_ {
    let servers: Vec<_> = config
        .servers
        .iter()
        .filter_map(|server| {
            let tools: Vec<_> = server
                .tools
                .iter()
                .filter(|(_, o)| {
                    !o.limits.is_empty()
                        || o.cost.is_some()
                        || o.approval.is_some()
                        || o.destructive.is_some()
                })
                .map(|(tool, o)| (tool, o.limits, o.cost, o.approval, o.destructive))
                .collect();
            let plain = server.limits.is_empty() && server.cost.is_none() && tools.is_empty();
            (!plain).then_some((&server.id, server.limits, server.cost, tools))
        })
        .collect();
    let agents: Vec<_> = config
        .agents
        .iter()
        .map(|(name, a)| (name, a.limits, a.quota, a.approval, &a.auto_approve))
        .collect();
    let gateway = &config.gateway;
    (
        gateway.limits,
        gateway.approval,
        gateway.approval_timeout,
        servers,
        agents,
        &config.hooks,
        &config.shared,
    )
}

async fn stop_all(started: &[Option<Started>]) {
    let stops = started
        .iter()
        .flatten()
        .map(|start| start.supervisor.stop());
    futures::future::join_all(stops).await;
}

fn new_member(plan: ServerPlan, start: &Started, generation: u64, stamp: &Stamp) -> Arc<Member> {
    Arc::new(Member {
        plan,
        connection: Connection::new(start.supervisor.clone()),
        generation,
        changed: stamp.clone(),
    })
}

fn outcome(member: &Member, action: Action, applied: bool, start: &Started) -> ServerOutcome {
    ServerOutcome {
        connect_ms: Some(start.connect_ms),
        error: start.error.clone(),
        ..outcome_now(member, action).with_applied(applied)
    }
}

fn outcome_now(member: &Member, action: Action) -> ServerOutcome {
    let status = member.supervisor().status();
    ServerOutcome {
        server: member.id().to_string(),
        action,
        applied: true,
        state: status.state.as_str().to_owned(),
        tools: status.tools.len(),
        generation: member.generation,
        error: status.error,
        connect_ms: None,
    }
}

impl ServerOutcome {
    fn with_applied(mut self, applied: bool) -> Self {
        self.applied = applied;
        self
    }
}

/// Whether two plans of one server differ in what applies without a new connection.
fn differs_live(old: &ServerPlan, new: &ServerPlan) -> bool {
    old.prefix != new.prefix
        || old.overrides != new.overrides
        || old.call_timeout != new.call_timeout
        || old.category != new.category
}

/// Settings of `new` that differ from those the gateway started with and that only a
/// restart applies: each as `key (why)`.
pub(super) fn needs_restart(started: &Config, new: &Config) -> Vec<String> {
    let (a, b) = (&started.gateway, &new.gateway);
    let mut changed = Vec::new();
    let mut check = |differs: bool, key: &str| {
        if differs {
            changed.push(key.to_owned());
        }
    };
    check(a.ledger != b.ledger, "gateway.ledger");
    check(
        a.ledger_retention_days != b.ledger_retention_days,
        "gateway.ledger_retention_days",
    );
    check(
        a.ledger_max_rows != b.ledger_max_rows,
        "gateway.ledger_max_rows",
    );
    check(a.token_file != b.token_file, "gateway.token_file");
    check(a.busy_poll != b.busy_poll, "gateway.busy_poll");
    check(a.watch != b.watch, "gateway.watch");
    check(
        a.max_message_bytes != b.max_message_bytes,
        "gateway.max_message_bytes (of clients' messages; servers' connections take it at their next start)",
    );
    // The listeners' bounds are set when they start.
    check(
        a.header_timeout != b.header_timeout,
        "gateway.header_timeout",
    );
    check(
        a.max_connections != b.max_connections,
        "gateway.max_connections",
    );
    check(a.approval_key != b.approval_key, "gateway.approval_key");
    check(
        a.approval_timeout != b.approval_timeout,
        "gateway.approval_timeout",
    );
    // The task store's bounds are fixed when the Host starts.
    check(a.tasks != b.tasks, "gateway.tasks");
    check(started.tiers != new.tiers, "tiers");
    check(started.latency != new.latency, "latency");
    // The HTTP front's authenticators are built once, when it starts.
    check(started.auth != new.auth, "auth");
    // The key ring's file is followed as it changes; which file, only at start.
    check(started.shared.keys != new.shared.keys, "shared.keys");
    // The replicas' event bus is connected once; the limits follow a change at once.
    check(
        (&started.shared.redis, started.shared.deployment())
            != (&new.shared.redis, new.shared.deployment()),
        "shared.redis and shared.deployment (for the replicas' events; limits follow at once)",
    );
    // The rest of [manager] is read by each operation as it starts.
    check(
        started.manager.max_concurrent != new.manager.max_concurrent,
        "manager.max_concurrent",
    );
    check(
        started.manager.database != new.manager.database,
        "manager.database",
    );
    let tokens = |config: &Config| {
        config
            .agents
            .iter()
            .map(|(name, agent)| (name.clone(), agent.tokens.clone()))
            .collect::<Vec<_>>()
    };
    check(tokens(started) != tokens(new), "agents.*.tokens");
    changed
}
