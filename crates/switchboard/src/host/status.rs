//! What `switchboard status` shows of each server: its connection (for a pool, its instances
//! up), its tools, its generation and last change, the calls it is still draining, a change
//! that failed, the protections of its sandbox in force; and the shared limiter's state.

use std::sync::Arc;

use serde::Serialize;
use switchboard_core::{CatalogProblem, ServerId};
use switchboard_mcp::upstream::InstanceCount;

use super::Host;
use crate::fleet::Stamp;

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
    /// Connection attempts that failed in a row (0 once it is up). While it is not up, its
    /// supervisor keeps retrying with backoff (0.5 s doubling to 30 s).
    pub failures: u32,
    /// Tools of this server that are not exposed, and why.
    pub notes: Vec<String>,
    /// Changes applied to this server since the gateway started (1 = as started).
    pub generation: u64,
    /// When and through which surface its settings last changed.
    pub changed: Option<Stamp>,
    /// Calls still finishing on connections this server had before a change.
    pub draining: Vec<DrainReport>,
    /// Calls on its current connection now.
    pub in_flight: usize,
    /// For a pool of stdio processes (`instances` > 1): how many are up, of how many.
    pub instances: Option<InstanceCount>,
    /// The last change to this server that failed, while its previous settings keep serving.
    pub change_error: Option<String>,
    /// For a sandboxed stdio server: which of its protections are in force.
    pub sandbox: Option<crate::sandbox::Protections>,
}

impl ServerReport {
    fn idle(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            state: "down",
            era: None,
            protocol_version: None,
            transport: "",
            tools: 0,
            error: None,
            failures: 0,
            notes: Vec::new(),
            generation: 0,
            changed: None,
            draining: Vec::new(),
            in_flight: 0,
            instances: None,
            change_error: None,
            sandbox: None,
        }
    }
}

/// A connection of a server being drained after it was removed or replaced.
#[derive(Debug, Clone, Serialize)]
pub struct DrainReport {
    /// "removed" or "replaced".
    pub why: &'static str,
    /// Calls still running on it.
    pub calls: usize,
    pub since: Stamp,
}

fn draining_of(draining: &[Arc<crate::fleet::Draining>], server: &ServerId) -> Vec<DrainReport> {
    draining
        .iter()
        .filter(|d| d.connection.supervisor.id() == server)
        .map(|d| DrainReport {
            why: d.why,
            calls: d.connection.in_flight(),
            since: d.since.clone(),
        })
        .collect()
}

/// The shared limiter (`[shared] redis`) in `switchboard status`.
#[derive(Debug, Clone, Serialize)]
pub struct SharedLimitsReport {
    /// The store: backend, target, reachable, error.
    #[serde(flatten)]
    pub health: switchboard_core::limits::SharedHealth,
    /// What limited calls meet while it is unreachable: "fail_open" or "fail_closed".
    pub when_unreachable: &'static str,
}

impl Host {
    /// The shared limiter's state; `None` when limits are kept in this process alone.
    pub fn shared_limits(&self) -> Option<SharedLimitsReport> {
        let governance = self.inner.pipeline.governance();
        let (health, policy) = governance.limits.shared_health()?;
        Some(SharedLimitsReport {
            health,
            when_unreachable: policy.as_str(),
        })
    }

    /// Per-server state, in config order; servers the config has but disables are listed
    /// as `disabled`.
    pub fn status(&self) -> Vec<ServerReport> {
        let catalog = self.catalog();
        let fleet = self.inner.fleet.load_full();
        let draining = self.inner.draining.snapshot();
        let config = self.config();
        let kernel = crate::sandbox::KernelSupport::probe();
        let root = nix::unistd::geteuid().is_root();
        let sandbox_of = |id: &str| {
            let config = config.as_deref()?;
            let sandbox = config.sandbox_of(config.server(id)?)?;
            Some(crate::sandbox::protections(&sandbox, kernel, root))
        };
        let mut reports: Vec<ServerReport> = fleet
            .members
            .iter()
            .map(|member| {
                let supervisor = member.supervisor();
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
                    transport: member.plan.spec.endpoint.transport_label(),
                    tools: catalog.count_for(supervisor.id()),
                    error: status.error,
                    failures: status.failures,
                    notes,
                    generation: member.generation,
                    changed: Some(member.changed.clone()),
                    draining: draining_of(&draining, supervisor.id()),
                    in_flight: member.connection.in_flight(),
                    instances: (status.instances.configured > 1).then_some(status.instances),
                    change_error: self.inner.live.failed_change(supervisor.id().as_str()),
                    sandbox: sandbox_of(supervisor.id().as_str()),
                }
            })
            .collect();
        for server in self.inner.live.disabled_servers() {
            reports.push(ServerReport {
                state: "disabled",
                change_error: self.inner.live.failed_change(&server.id),
                draining: draining_of(&draining, &ServerId::new(&server.id)),
                transport: match &server.transport {
                    switchboard_core::config::Transport::Stdio { .. } => "stdio",
                    switchboard_core::config::Transport::Http { .. } => "streamable-http",
                    switchboard_core::config::Transport::Sse { .. } => "sse",
                    switchboard_core::config::Transport::Builtin { .. } => "in-process",
                },
                ..ServerReport::idle(&server.id)
            });
        }
        reports
    }
}
