//! The mirror types of `[agents.X]` (what each agent sees, its OAuth scopes, how its listing
//! is presented) for the JSON Schema the parent module generates.

use std::collections::BTreeMap;

use schemars::JsonSchema;

use super::calls::{Limits, Quota};
use super::gateway::Approval;

/// One agent.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Agent {
    /// Globs over exposed names ("dice__*") or server:tool globs ("files:read_*"); empty (and
    /// no capabilities) = every tool.
    allow: Vec<String>,
    /// Globs that are refused even when allowed.
    deny: Vec<String>,
    /// Names from [capabilities] whose globs are added to allow.
    capabilities: Vec<String>,
    /// How tools are listed: full (default), categories or search.
    exposure: Option<ExposureMode>,
    /// Globs of tools always listed in full, in every exposure mode.
    pinned: Vec<String>,
    /// The listing must fit in this many tokens; the gateway picks the exposure that fits.
    #[schemars(range(min = 1))]
    max_listing_tokens: Option<u64>,
    /// Larger tool results are truncated (default 25000 tokens).
    #[schemars(range(min = 1))]
    max_result_tokens: Option<u64>,
    /// Limits on this agent's calls together.
    limits: Option<Limits>,
    /// Cost budget over a window.
    quota: Option<Quota>,
    /// When this agent's calls need approval (default never).
    approval: Option<Approval>,
    /// Globs of tools that never need approval for this agent.
    auto_approve: Vec<String>,
    /// Salted hashes of the agent's HTTP bearer tokens (from `switchboard token create`).
    tokens: Vec<String>,
    /// The agent's default latency tier (one of [tiers]).
    tier: Option<String>,
    /// OAuth scope → what a token with it opens: tools seen only with that scope, and the
    /// tier it runs in (needs [auth] mode "oauth").
    scopes: BTreeMap<String, ScopeGrant>,
}

/// What one OAuth scope opens for an agent.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum ScopeGrant {
    /// Globs of tools seen only by tokens with this scope.
    Tools(Vec<String>),
    /// Tools and a tier.
    Grant(ScopeGrantTable),
}

#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct ScopeGrantTable {
    /// Globs of tools seen only by tokens with this scope.
    tools: Vec<String>,
    /// The latency tier a token with this scope runs in, unless the request names one.
    tier: Option<String>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum ExposureMode {
    /// Every visible tool.
    Full,
    /// Meta-tools list_categories / load_category / unload_category.
    Categories,
    /// Meta-tools search_tools / describe_tool / call_tool.
    Search,
}
