//! How the tools a caller may see are presented: in full, behind categories that the model
//! loads on demand, or behind search. Pinned tools are always listed in full.
//!
//! The view (what may be called) never depends on the mode: a tool in the caller's view is
//! callable whether or not it is listed right now, and a tool outside it never is.

use std::collections::BTreeMap;

use std::sync::Arc;

use serde_json::{Map, Value, json};
use switchboard_core::agent::{AgentPolicy, ScopeGate, ToolPattern};
use switchboard_core::config::Exposure;
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, Caller, CatalogEntry, ToolDefinition, ToolOutcome};
use switchboard_render::mcp::compacted;

use crate::host::Host;
use crate::listing_fit::ListingMode;
use crate::meta_tools::{
    self, CALL_TOOL, DESCRIBE_TOOL, LIST_CATEGORIES, LOAD_CATEGORY, READ_MORE, SEARCH_TOOLS,
    UNLOAD_CATEGORY,
};
use crate::shared::sessions::SessionChange;

/// An agent as the Host runs it: its permissions and how its listing is presented.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    pub policy: Arc<AgentPolicy>,
    /// The agent's default latency tier.
    pub tier: Option<String>,
    /// None = the gateway's default mode.
    pub exposure: Option<Exposure>,
    /// Tools always listed in full.
    pub pinned: Vec<ToolPattern>,
    pub max_listing_tokens: Option<u64>,
    pub max_result_tokens: Option<u64>,
    /// What OAuth scopes open: tools seen only with a scope, tiers a scope chooses.
    pub scopes: Arc<[ScopeGate]>,
}

impl AgentProfile {
    /// An agent that sees everything, listed in full.
    pub fn unrestricted(name: &str) -> Self {
        Self {
            policy: Arc::new(AgentPolicy::unrestricted(name)),
            tier: None,
            exposure: None,
            pinned: Vec::new(),
            max_listing_tokens: None,
            max_result_tokens: None,
            scopes: Arc::from([]),
        }
    }
}

/// Whether `entry` is in `category` or below it (`games` holds `games/dice`).
pub(crate) fn in_category(entry: &CatalogEntry, category: &str) -> bool {
    entry.category == category
        || entry
            .category
            .strip_prefix(category)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Host {
    /// The exposure mode of a caller: its agent's, else the gateway default.
    pub fn exposure_of(&self, caller: &Caller) -> Exposure {
        self.profile(caller.agent.as_deref())
            .and_then(|profile| profile.exposure)
            .unwrap_or(self.inner.settings.load().exposure)
    }

    /// The tool definitions listed to `caller` right now, in its exposure mode.
    pub fn listed_tools(&self, caller: &Caller) -> Vec<ToolDefinition> {
        let visible = self.visible_for(caller);
        let pinned = self
            .profile(caller.agent.as_deref())
            .map(|profile| profile.pinned.clone())
            .unwrap_or_default();
        let is_pinned = |entry: &CatalogEntry| pinned.iter().any(|p| p.matches(entry));
        let mut listed: Vec<ToolDefinition> = match self.listing_mode(caller) {
            ListingMode::Full => {
                return self.with_read_more(
                    caller,
                    visible.iter().map(|e| e.spec.definition.clone()).collect(),
                );
            }
            ListingMode::Compact => {
                return self.with_read_more(
                    caller,
                    visible
                        .iter()
                        .map(|e| compacted(&e.spec.definition))
                        .collect(),
                );
            }
            ListingMode::Categories => {
                let loaded = self
                    .inner
                    .sessions
                    .with(caller, |state| state.loaded.clone());
                let mut tools = meta_tools::category_tools();
                tools.extend(
                    visible
                        .iter()
                        .filter(|e| is_pinned(e) || loaded.iter().any(|c| in_category(e, c)))
                        .map(|e| e.spec.definition.clone()),
                );
                tools
            }
            ListingMode::Search => {
                let mut tools = meta_tools::search_tools();
                tools.extend(
                    visible
                        .iter()
                        .filter(|e| is_pinned(e))
                        .map(|e| e.spec.definition.clone()),
                );
                tools
            }
        };
        listed.dedup_by(|a, b| a.name == b.name);
        self.with_read_more(caller, listed)
    }

    fn with_read_more(
        &self,
        caller: &Caller,
        mut tools: Vec<ToolDefinition>,
    ) -> Vec<ToolDefinition> {
        if self
            .inner
            .sessions
            .with(caller, |state| state.read_more_listed)
        {
            tools.push(meta_tools::read_more_tool());
        }
        tools
    }

    /// Answers a call to one of the gateway's own tools, if `name` is one in the caller's
    /// mode; `None` lets the call go on to the pipeline.
    pub(crate) async fn call_meta(
        &self,
        ctx: &CallContext,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Result<ToolOutcome, CallError>> {
        // Most calls are not meta-tool calls: decide that without touching any state.
        if !meta_tools::is_meta(name) {
            return None;
        }
        let caller = Caller::of(ctx);
        if name == READ_MORE
            && self
                .inner
                .sessions
                .with(&caller, |state| state.read_more_listed)
        {
            return Some(Ok(self.meta_read_more(ctx, arguments).await));
        }
        match (self.listing_mode(&caller).exposure(), name) {
            (Exposure::Categories, LIST_CATEGORIES) => Some(Ok(self.list_categories(&caller))),
            (Exposure::Categories, LOAD_CATEGORY | UNLOAD_CATEGORY) => {
                let load = name == LOAD_CATEGORY;
                Some(Ok(self.change_category(&caller, arguments, load).await))
            }
            (Exposure::Search, SEARCH_TOOLS) => Some(Ok(self.meta_search(ctx, arguments))),
            (Exposure::Search, DESCRIBE_TOOL) => Some(Ok(self.meta_describe(ctx, arguments))),
            (Exposure::Search, CALL_TOOL) => Some(self.meta_call(ctx, arguments).await),
            _ => None,
        }
    }

    /// Category → (tools visible to the caller, loaded?), parents included.
    fn categories(&self, caller: &Caller) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for entry in self.visible_for(caller) {
            let mut path = String::new();
            for level in entry.category.split('/') {
                if !path.is_empty() {
                    path.push('/');
                }
                path.push_str(level);
                *counts.entry(path.clone()).or_insert(0) += 1;
            }
        }
        counts
    }

    fn list_categories(&self, caller: &Caller) -> ToolOutcome {
        let loaded = self
            .inner
            .sessions
            .with(caller, |state| state.loaded.clone());
        let categories: Vec<Value> = self
            .categories(caller)
            .into_iter()
            .map(|(name, tools)| {
                let is_loaded = loaded.iter().any(|l| {
                    *l == name
                        || name
                            .strip_prefix(l.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                });
                json!({"name": name, "tools": tools, "loaded": is_loaded})
            })
            .collect();
        let text = categories
            .iter()
            .map(|c| {
                format!(
                    "{} ({} tools){}",
                    c["name"].as_str().unwrap_or(""),
                    c["tools"],
                    if c["loaded"] == true { ", loaded" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        ToolOutcome::structured_with_text(json!({"categories": categories}), text)
    }

    async fn change_category(
        &self,
        caller: &Caller,
        arguments: &Map<String, Value>,
        load: bool,
    ) -> ToolOutcome {
        let Some(name) = arguments.get("name").and_then(Value::as_str) else {
            return ToolOutcome::error("'name' must be a string: a category from list_categories");
        };
        let categories = self.categories(caller);
        if !categories.contains_key(name) {
            let known: Vec<&str> = categories.keys().map(String::as_str).collect();
            return ToolOutcome::error(format!(
                "unknown category '{name}'; categories: {}",
                known.join(", ")
            ));
        }
        let change = if load {
            SessionChange::Load(name)
        } else {
            SessionChange::Unload(name)
        };
        let applied = match self.change_session(caller, change).await {
            Ok(applied) => applied,
            Err(refused) => {
                let verb = if load { "loaded" } else { "unloaded" };
                return ToolOutcome::error(format!(
                    "category '{name}' cannot be {verb} now: {refused}"
                ));
            }
        };
        let changed = applied.changed;
        let tools: Vec<String> = self
            .visible_for(caller)
            .iter()
            .filter(|entry| in_category(entry, name))
            .map(|entry| entry.exposed.clone())
            .collect();
        let verb = if load { "loaded" } else { "unloaded" };
        let mut text = match (changed, load) {
            (false, true) => format!("category '{name}' was already loaded"),
            (false, false) => format!("category '{name}' was not loaded"),
            (true, _) => format!("{verb} category '{name}': {}", tools.join(", ")),
        };
        if let Some(note) = &applied.only_here {
            text.push_str(&format!(" ({note})"));
        }
        ToolOutcome::structured_with_text(
            json!({"category": name, verb: tools, "changed": changed}),
            text,
        )
    }
}
