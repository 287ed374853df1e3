//! Stage: admit the call under the gateway's limits — concurrency caps and request rates
//! (global, per agent, per server, per tool) and the agent's cost quota. A refused call
//! becomes a tool error the model can read ("rate limited, retry after N ms"). Also where a
//! call's cost is computed and charged once it ran.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::approval::{ApprovalRules, Approver};
use crate::hooks::Hook;
use crate::limits::{Admission, CostModel, Limits, Scope};
use crate::{CallContext, CatalogEntry, ToolOutcome};

/// Limits and costs, built once from config.
#[derive(Default)]
pub struct Governance {
    pub limits: Limits,
    /// Cost by server id, then by upstream tool name; `"*"` as the tool = the server's
    /// default. Nested, so a call looks its cost up by borrowed names, allocating nothing.
    pub costs: HashMap<String, HashMap<String, CostModel>>,
    /// Pre- and post-call hooks, in order.
    pub hooks: Vec<Arc<dyn Hook>>,
    /// Which calls need approval.
    pub approvals: ApprovalRules,
    /// Who approves them (none: calls that need approval are denied).
    pub approver: Option<Arc<dyn Approver>>,
}

impl Governance {
    /// The scopes a call is limited by, in the order they are checked.
    pub fn scopes(entry: &CatalogEntry, ctx: &CallContext) -> Vec<Scope> {
        let server = entry.spec.server.as_str();
        let mut scopes = vec![Scope::Global];
        if let Some(agent) = &ctx.agent {
            scopes.push(Scope::Agent(agent.clone()));
        }
        scopes.push(Scope::Server(server.to_owned()));
        scopes.push(Scope::Tool(format!("{server}/{}", entry.upstream_name)));
        scopes
    }

    /// What a call of `entry` that took `wall` costs.
    pub fn cost_of(&self, entry: &CatalogEntry, wall: Duration) -> f64 {
        let Some(tools) = self.costs.get(entry.spec.server.as_str()) else {
            return 0.0;
        };
        tools
            .get(&entry.upstream_name)
            .or_else(|| tools.get("*"))
            .map_or(0.0, |model| model.cost(wall))
    }

    pub fn charge(&self, ctx: &CallContext, cost: f64) {
        self.limits.charge(ctx.agent.as_deref(), cost);
    }
}

/// Admits the call or says why not.
pub async fn admit(
    governance: &Governance,
    entry: &CatalogEntry,
    ctx: &CallContext,
) -> Result<Admission, ToolOutcome> {
    if governance.limits.is_empty() {
        return Ok(Admission::default());
    }
    let scopes = Governance::scopes(entry, ctx);
    governance
        .limits
        .admit(&scopes, ctx.agent.as_deref())
        .await
        .map_err(|refusal| {
            ToolOutcome::error(format!("tool '{}' was not run: {refusal}", entry.exposed))
        })
}
