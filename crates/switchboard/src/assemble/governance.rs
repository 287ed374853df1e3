//! What governs calls, from the config: limits, quotas and costs by scope, who must approve
//! what, and — in a deployment of replicas — the limits kept in `[shared] redis` and the
//! quota spending shared on `[storage] url`.

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_core::agent::ToolPattern;
use switchboard_core::approval::{AgentApproval, ApprovalRules, ToolApproval};
use switchboard_core::config::{ApprovalMode, Config, CostConfig, LimitsConfig};
use switchboard_core::limits::{
    CostModel, LimitSpec, Limits, Quota, Scope, SharedLimiter, SharedSpending,
};
use switchboard_core::pipeline::Governance;

use super::AssembleError;

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
pub(super) fn share_quotas(url: &str) -> Result<Arc<SharedSpending>, AssembleError> {
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
