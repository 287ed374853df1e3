//! Approvals: which calls wait for a human, and the seam through which one answers.
//!
//! Rules come per agent (`approval = "never" | "always" | "destructive"`, plus globs of
//! auto-approved tools) and per tool (an operator's `approval` and `destructive` override the
//! agent's rule and the tool's own `destructiveHint`, which is untrusted and defaults to true
//! when absent, as MCP says). An [`Approver`] asks someone — the calling client through
//! elicitation, or an operator — and answers with a [`Decision`]; no answer in time is a
//! denial.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// The key of the gateway's own approval question in an `input_required` result's
/// `inputRequests`, and of its answer in the retried request's `inputResponses`.
pub const APPROVAL_INPUT_KEY: &str = "switchboard_approval";

use crate::agent::ToolPattern;
use crate::{CallContext, CatalogEntry};

/// When an agent's calls need approval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Never (the default).
    #[default]
    Never,
    /// Every call.
    Always,
    /// Calls of tools that may destroy something (`destructiveHint`, true when absent).
    Destructive,
}

/// An agent's approval rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentApproval {
    pub mode: ApprovalMode,
    /// Tools that never need approval for this agent.
    pub auto_approve: Vec<ToolPattern>,
}

/// An operator's rules for one tool (by server id and upstream name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolApproval {
    /// Replaces the agent's mode for this tool.
    pub mode: Option<ApprovalMode>,
    /// Replaces the tool's `destructiveHint`.
    pub destructive: Option<bool>,
}

/// Every approval rule of the gateway.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovalRules {
    pub agents: std::collections::HashMap<String, AgentApproval>,
    /// Keyed by (server id, upstream tool name).
    pub tools: std::collections::HashMap<(String, String), ToolApproval>,
    /// Rules for callers without an agent.
    pub default: AgentApproval,
}

impl ApprovalRules {
    /// Why this call needs approval, or `None`.
    pub fn reason(&self, entry: &CatalogEntry, agent: Option<&str>) -> Option<String> {
        let rules = agent
            .and_then(|a| self.agents.get(a))
            .unwrap_or(&self.default);
        let tool = self.tools.get(&(
            entry.spec.server.as_str().to_owned(),
            entry.upstream_name.clone(),
        ));
        // The tool's own mode replaces every agent's rule, `auto_approve` included; without
        // one, the agent's `auto_approve` comes before its mode.
        let mode = match tool.and_then(|t| t.mode) {
            Some(mode) => mode,
            None if rules.auto_approve.iter().any(|p| p.matches(entry)) => return None,
            None => rules.mode,
        };
        match mode {
            ApprovalMode::Never => None,
            ApprovalMode::Always => Some("this agent's calls need approval".to_owned()),
            ApprovalMode::Destructive => {
                let declared = entry
                    .spec
                    .definition
                    .annotations
                    .as_ref()
                    .and_then(|a| a.destructive_hint);
                let read_only = entry
                    .spec
                    .definition
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    == Some(true);
                let destructive = tool
                    .and_then(|t| t.destructive)
                    .unwrap_or(!read_only && declared.unwrap_or(true));
                destructive.then(|| match (tool.and_then(|t| t.destructive), declared) {
                    (Some(_), _) => "the operator marked this tool destructive".to_owned(),
                    (None, Some(true)) => "the tool says it may be destructive".to_owned(),
                    _ => "the tool does not say it is safe (destructiveHint absent)".to_owned(),
                })
            }
        }
    }
}

/// What is being approved.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub agent: Option<String>,
    pub tool: String,
    pub server: String,
    pub arguments: Map<String, Value>,
    pub reason: String,
}

impl ApprovalRequest {
    /// The question put to a human.
    pub fn message(&self) -> String {
        let arguments = serde_json::to_string(&self.arguments).unwrap_or_default();
        let shown: String = arguments.chars().take(2000).collect();
        format!(
            "Allow {agent} to call {tool} on server {server}?\nArguments: {shown}\nWhy approval is needed: {reason}",
            agent = self
                .agent
                .as_deref()
                .map_or("the client".to_owned(), |a| format!("agent '{a}'")),
            tool = self.tool,
            server = self.server,
            reason = self.reason,
        )
    }
}

/// How an approval ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Approved {
        by: String,
        channel: String,
    },
    Denied {
        by: String,
        channel: String,
        reason: String,
    },
    /// The answer must come in a later request (the 2026-07-28 era's `input_required`).
    InputRequired {
        input_requests: Value,
        request_state: String,
    },
}

impl Decision {
    /// One line for the ledger.
    pub fn summary(&self) -> String {
        match self {
            Self::Approved { by, channel } => format!("approved by {by} via {channel}"),
            Self::Denied {
                by,
                channel,
                reason,
            } => format!("denied by {by} via {channel}: {reason}"),
            Self::InputRequired { .. } => "asked the client (input_required)".to_owned(),
        }
    }
}

/// Asks someone to approve a call.
pub trait Approver: Send + Sync {
    fn decide<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Decision>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::catalog::{ListedTool, NamingRules, ServerSlice};
    use crate::{Catalog, ServerId, ToolAnnotations, ToolDefinition};

    fn catalog() -> Catalog {
        let tool = |name: &str, destructive: Option<bool>, read_only: Option<bool>| {
            let mut definition = ToolDefinition::new(name, "d", json!({"type": "object"}));
            definition.annotations = Some(ToolAnnotations {
                destructive_hint: destructive,
                read_only_hint: read_only,
                ..ToolAnnotations::default()
            });
            ListedTool::compile(definition)
        };
        let slice = ServerSlice {
            held: Default::default(),
            server: ServerId::new("fs"),
            prefix: "fs".into(),
            tools: Arc::from(vec![
                tool("delete", Some(true), None),
                tool("read", Some(false), Some(true)),
                tool("unknown", None, None),
                tool("safe_write", Some(false), None),
            ]),
            overrides: Default::default(),
            call_timeout: std::time::Duration::from_secs(1),
            category: String::new(),
        };
        Catalog::build(&[slice], &NamingRules::default())
    }

    #[test]
    fn destructive_mode_trusts_only_what_is_declared_safe_and_operators_override() {
        let catalog = catalog();
        let entry = |name: &str| catalog.resolve(name).expect(name).clone();
        let mut rules = ApprovalRules::default();
        rules.agents.insert(
            "qa".into(),
            AgentApproval {
                mode: ApprovalMode::Destructive,
                auto_approve: vec![ToolPattern::parse("fs__safe_*")],
            },
        );
        let needs = |rules: &ApprovalRules, name: &str| rules.reason(&entry(name), Some("qa"));
        assert!(needs(&rules, "fs__delete").is_some());
        assert!(needs(&rules, "fs__read").is_none());
        assert!(
            needs(&rules, "fs__unknown")
                .expect("absent hint")
                .contains("absent")
        );
        assert!(needs(&rules, "fs__safe_write").is_none(), "auto-approved");
        assert!(
            rules.reason(&entry("fs__delete"), Some("npc")).is_none(),
            "other agents: never"
        );
        rules.tools.insert(
            ("fs".into(), "read".into()),
            ToolApproval {
                mode: None,
                destructive: Some(true),
            },
        );
        rules.tools.insert(
            ("fs".into(), "delete".into()),
            ToolApproval {
                mode: Some(ApprovalMode::Never),
                destructive: None,
            },
        );
        assert!(
            needs(&rules, "fs__read")
                .expect("overridden")
                .contains("operator")
        );
        assert!(needs(&rules, "fs__delete").is_none());
        // A tool the operator says always needs approval needs it even where an agent's
        // auto_approve names it.
        rules.tools.insert(
            ("fs".into(), "safe_write".into()),
            ToolApproval {
                mode: Some(ApprovalMode::Always),
                destructive: None,
            },
        );
        assert!(needs(&rules, "fs__safe_write").is_some());
    }
}
