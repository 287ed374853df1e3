//! `[agents.NAME]` and `[capabilities]`: who may see which tools.
//!
//! ```toml
//! [capabilities]
//! read_memory = ["memory__query_entities", "memory__search_*"]
//!
//! [agents.npc]
//! allow = ["dice:*"]            # globs over exposed names, or server:tool globs
//! capabilities = ["read_memory"] # named sets of globs, added to allow
//! deny = ["dice__roll_table"]    # wins over allow
//! exposure = "full"              # full | categories | search
//! pinned = ["dice__roll"]        # always listed in full, in every exposure mode
//!
//! [agents.npc.scopes]            # OAuth callers: what each scope of their token opens
//! "dice:tables" = ["dice__roll_table"]  # seen only by tokens with this scope
//! voice = { tier = "fast" }      # a token with this scope runs in tier fast
//! ```

use std::collections::BTreeMap;

use super::model::{AgentConfig, ApprovalMode, Exposure, ScopeGrant};
use super::tree::{Node, Value};
use super::validate::Walk;

pub(super) const AGENT_KEYS: [&str; 14] = [
    "tier",
    "scopes",
    "tokens",
    "approval",
    "auto_approve",
    "limits",
    "quota",
    "allow",
    "deny",
    "capabilities",
    "exposure",
    "pinned",
    "max_listing_tokens",
    "max_result_tokens",
];

impl Walk<'_> {
    /// `[capabilities]`: name → globs.
    pub(super) fn capabilities(&mut self, node: &Node) -> BTreeMap<String, Vec<String>> {
        let mut capabilities = BTreeMap::new();
        for (name, _, value) in self.table(node, "capabilities") {
            let globs = self.strings(value, &format!("capabilities.{name}"));
            capabilities.insert(name.clone(), globs);
        }
        capabilities
    }

    /// `[agents]`: name → settings; every capability an agent names must be defined.
    pub(super) fn agents(
        &mut self,
        node: &Node,
        capabilities: &BTreeMap<String, Vec<String>>,
    ) -> BTreeMap<String, AgentConfig> {
        let mut agents = BTreeMap::new();
        for (name, name_pos, value) in self.table(node, "agents") {
            if !super::server::is_valid_id(name) {
                self.problem(
                    *name_pos,
                    format!("agent name '{name}' is not allowed"),
                    Some("use 1-64 characters of A-Z a-z 0-9 _ -".to_owned()),
                );
            }
            let agent = self.agent(value, &format!("agents.{name}"), capabilities);
            if let (Some(tier), Some(node)) = (&agent.tier, value.get("tier")) {
                self.agent_tiers
                    .insert(format!("agent '{name}'"), (tier.to_lowercase(), node.pos));
            }
            agents.insert(name.clone(), agent);
        }
        agents
    }

    fn agent(
        &mut self,
        node: &Node,
        what: &str,
        capabilities: &BTreeMap<String, Vec<String>>,
    ) -> AgentConfig {
        let mut agent = AgentConfig::default();
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "allow" => agent.allow = self.strings(value, &key_what),
                "deny" => agent.deny = self.strings(value, &key_what),
                "pinned" => agent.pinned = self.strings(value, &key_what),
                "capabilities" => {
                    if let Value::Array(items) = &value.value {
                        for (index, item) in items.iter().enumerate() {
                            let Some(name) = self.string(item, &format!("{key_what}[{index}]"))
                            else {
                                continue;
                            };
                            if !capabilities.contains_key(&name) {
                                let known: Vec<&str> =
                                    capabilities.keys().map(String::as_str).collect();
                                self.problem(
                                    item.pos,
                                    format!("{what} names unknown capability '{name}'"),
                                    Some(super::suggest::hint(
                                        &name,
                                        &known,
                                        "defined in [capabilities]",
                                    )),
                                );
                            }
                            agent.capabilities.push(name);
                        }
                    } else {
                        self.strings(value, &key_what);
                    }
                }
                "exposure" => {
                    agent.exposure = self.exposure(value, &key_what);
                }
                "max_listing_tokens" => agent.max_listing_tokens = self.count(value, &key_what),
                "max_result_tokens" => agent.max_result_tokens = self.count(value, &key_what),
                "limits" => agent.limits = self.limits(value, &key_what),
                "tier" => agent.tier = self.string(value, &key_what).map(|t| t.to_lowercase()),
                "quota" => agent.quota = self.quota(value, &key_what),
                "approval" => agent.approval = self.approval(value, &key_what).unwrap_or_default(),
                "auto_approve" => agent.auto_approve = self.strings(value, &key_what),
                "scopes" => agent.scopes = self.scopes(value, &key_what),
                "tokens" => {
                    if let Value::Array(items) = &value.value {
                        for (index, item) in items.iter().enumerate() {
                            let Some(text) = self.string(item, &format!("{key_what}[{index}]"))
                            else {
                                continue;
                            };
                            if !is_token_hash(&text) {
                                self.problem(
                                    item.pos,
                                    format!("{key_what}[{index}] is not a token hash (sha256$SALT$HASH)"),
                                    Some("never put a token itself in the config: `switchboard token create AGENT` stores its hash".to_owned()),
                                );
                            }
                            agent.tokens.push(text);
                        }
                    } else {
                        self.strings(value, &key_what);
                    }
                }
                other => self.unknown(*key_pos, other, what, &AGENT_KEYS),
            }
        }
        agent
    }

    /// `[agents.X.scopes]`: scope → a list of tool globs, or `{ tools = [...], tier = "..." }`.
    fn scopes(&mut self, node: &Node, what: &str) -> BTreeMap<String, ScopeGrant> {
        let mut scopes = BTreeMap::new();
        for (scope, scope_pos, value) in self.table(node, what) {
            let scope_what = format!("{what}.{scope}");
            if scope.is_empty()
                || scope
                    .chars()
                    .any(|c| c.is_whitespace() || c == '"' || c == '\\')
            {
                self.problem(
                    *scope_pos,
                    format!("{scope_what}: '{scope}' is not a scope (RFC 6749 §3.3: no spaces, quotes or backslashes)"),
                    None,
                );
            }
            let mut grant = ScopeGrant::default();
            match &value.value {
                Value::Table(_) => {
                    for (key, key_pos, item) in self.table(value, &scope_what) {
                        let item_what = format!("{scope_what}.{key}");
                        match key.as_str() {
                            "tools" => grant.tools = self.strings(item, &item_what),
                            "tier" => {
                                grant.tier = self.string(item, &item_what).map(|t| t.to_lowercase());
                                if let Some(tier) = &grant.tier {
                                    let who = what.trim_start_matches("agents.").trim_end_matches(".scopes");
                                    self.agent_tiers.insert(
                                        format!("agent '{who}' scope '{scope}'"),
                                        (tier.clone(), item.pos),
                                    );
                                }
                            }
                            other => self.unknown(*key_pos, other, &scope_what, &["tools", "tier"]),
                        }
                    }
                }
                Value::Array(_) => grant.tools = self.strings(value, &scope_what),
                other => self.problem(
                    value.pos,
                    format!(
                        "{scope_what} must be a list of tool globs or a table {{ tools = [...], tier = \"...\" }}, found {}",
                        other.kind()
                    ),
                    None,
                ),
            }
            scopes.insert(scope.clone(), grant);
        }
        scopes
    }

    /// `full`, `categories` or `search`.
    pub(super) fn exposure(&mut self, node: &Node, what: &str) -> Option<Exposure> {
        match self.string(node, what)?.as_str() {
            "full" => Some(Exposure::Full),
            "categories" => Some(Exposure::Categories),
            "search" => Some(Exposure::Search),
            other => {
                self.problem(
                    node.pos,
                    format!("{what} '{other}' is not known"),
                    Some("use \"full\", \"categories\" or \"search\"".to_owned()),
                );
                None
            }
        }
    }

    /// `never`, `always` or `destructive`.
    pub(super) fn approval(&mut self, node: &Node, what: &str) -> Option<ApprovalMode> {
        match self.string(node, what)?.as_str() {
            "never" => Some(ApprovalMode::Never),
            "always" => Some(ApprovalMode::Always),
            "destructive" => Some(ApprovalMode::Destructive),
            other => {
                self.problem(
                    node.pos,
                    format!("{what} '{other}' is not known"),
                    Some("use \"never\", \"always\" or \"destructive\"".to_owned()),
                );
                None
            }
        }
    }

    /// A positive integer.
    pub(super) fn count(&mut self, node: &Node, what: &str) -> Option<u64> {
        match node.value {
            Value::Integer(n) if n >= 1 => u64::try_from(n).ok(),
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a positive integer, found {}",
                        other.described()
                    ),
                    None,
                );
                None
            }
        }
    }
}

/// Whether `text` is a stored token's form: `sha256$<salt>$<64 hex digits>`.
pub fn is_token_hash(text: &str) -> bool {
    let parts: Vec<&str> = text.split('$').collect();
    parts.len() == 3
        && parts[0] == "sha256"
        && !parts[1].is_empty()
        && parts[2].len() == 64
        && parts[2].bytes().all(|b| b.is_ascii_hexdigit())
}
