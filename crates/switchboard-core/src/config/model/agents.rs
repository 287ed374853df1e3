//! `[agents.NAME]`: what one agent may call, how its listing is shown to it, and the OAuth
//! scopes that open more tools or choose its tier.

use std::collections::BTreeMap;

use super::{ApprovalMode, LimitsConfig, QuotaConfig};

/// `[agents.NAME]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    /// Globs over exposed names or `server:tool`; empty (and no capabilities) = every tool.
    pub allow: Vec<String>,
    /// Wins over allow.
    pub deny: Vec<String>,
    /// Names from `[capabilities]`, whose globs are added to `allow`.
    pub capabilities: Vec<String>,
    /// How the listing is presented to this agent (None = the gateway's default).
    pub exposure: Option<Exposure>,
    /// Globs of tools always listed in full, whatever the exposure mode.
    pub pinned: Vec<String>,
    /// The listing must fit in this many tokens (the gateway picks the exposure that fits).
    pub max_listing_tokens: Option<u64>,
    /// Larger tool results are truncated (default 25,000 tokens).
    pub max_result_tokens: Option<u64>,
    /// Limits on this agent's calls together.
    pub limits: LimitsConfig,
    /// Cost budget over a window.
    pub quota: Option<QuotaConfig>,
    /// When this agent's calls need approval.
    pub approval: ApprovalMode,
    /// Globs of tools that never need approval for this agent.
    pub auto_approve: Vec<String>,
    /// Salted hashes of the agent's HTTP bearer tokens (`sha256$salt$hash`).
    pub tokens: Vec<String>,
    /// The agent's default latency tier (None = no tier: every tool fits).
    pub tier: Option<String>,
    /// OAuth scope → what it opens: tools an OAuth caller sees only with that scope, and
    /// the tier the scope chooses (`[agents.X.scopes]`).
    pub scopes: BTreeMap<String, ScopeGrant>,
}

/// What one OAuth scope means for an agent: `"files:write" = ["fs__write*"]`, or
/// `voice = { tier = "fast" }`, or both as `{ tools = [...], tier = "..." }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeGrant {
    /// Globs of tools (exposed names or `server:tool`) seen only with this scope.
    pub tools: Vec<String>,
    /// The latency tier a token with this scope runs in, unless the request names one.
    pub tier: Option<String>,
}

/// How an agent's tools are listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Exposure {
    /// Every visible tool.
    #[default]
    Full,
    /// Meta-tools to list and load categories; loaded categories' tools are listed.
    Categories,
    /// Meta-tools to search, describe and call tools.
    Search,
}
