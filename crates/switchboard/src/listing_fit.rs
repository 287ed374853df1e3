//! Fitting a listing into an agent's `max_listing_tokens`: the gateway tries, in order, the
//! full listing, a compact one (first-sentence descriptions, slimmed schemas), categories
//! mode, then search mode, and lists the first that fits, in o200k_base tokens of the MCP
//! JSON — what `switchboard tools --format mcp|mcp-compact --count-tokens` counts. The
//! choice is made once per catalog version and agent, and logged.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_core::config::Exposure;
use switchboard_core::{Caller, ToolDefinition};

use switchboard_render::mcp::compacted;

use crate::host::Host;
use crate::meta_tools;

/// What a caller's listing looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingMode {
    Full,
    /// Every visible tool, with first-sentence descriptions and slimmed schemas.
    Compact,
    Categories,
    Search,
}

impl ListingMode {
    /// The exposure whose meta-tools are active.
    pub fn exposure(self) -> Exposure {
        match self {
            Self::Full | Self::Compact => Exposure::Full,
            Self::Categories => Exposure::Categories,
            Self::Search => Exposure::Search,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Compact => "compact",
            Self::Categories => "categories",
            Self::Search => "search",
        }
    }
}

impl From<Exposure> for ListingMode {
    fn from(exposure: Exposure) -> Self {
        match exposure {
            Exposure::Full => Self::Full,
            Exposure::Categories => Self::Categories,
            Exposure::Search => Self::Search,
        }
    }
}

/// Choices already made, per agent and view (the tools it lists, which a tier or the
/// token's scopes narrow), with the catalog version they were made for.
#[derive(Default)]
pub(crate) struct FitCache {
    chosen: Mutex<HashMap<(String, u64), (u64, ListingMode)>>,
}

/// Views held at most; past it the cache starts afresh.
const MAX_FITTED_VIEWS: usize = 1024;

/// Which view `visible` is: a digest of its tools' names.
fn view_key(visible: &[std::sync::Arc<switchboard_core::CatalogEntry>]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for entry in visible {
        entry.exposed.hash(&mut hasher);
    }
    hasher.finish()
}

fn tokens_of(tools: &[ToolDefinition]) -> usize {
    switchboard_render::tokens::count(&serde_json::to_string(tools).unwrap_or_default())
}

impl Host {
    /// The listing mode of a caller: its exposure, or — with `max_listing_tokens` and a full
    /// exposure — the first of full, compact, categories, search that fits.
    pub fn listing_mode(&self, caller: &Caller) -> ListingMode {
        let exposure = self.exposure_of(caller);
        let profile = self.profile(caller.agent.as_deref());
        let (Some(profile), Exposure::Full) = (profile, exposure) else {
            return exposure.into();
        };
        let (Some(max), Some(agent)) = (profile.max_listing_tokens, caller.agent.as_deref()) else {
            return exposure.into();
        };
        let version = *self.inner.version_now();
        // The same agent sees other tools in another tier or with other scopes: each view
        // is fitted on its own.
        let visible = self.visible_for(caller);
        let key = (agent.to_owned(), view_key(&visible));
        if let Ok(chosen) = self.inner.fit.chosen.lock()
            && let Some((at, mode)) = chosen.get(&key)
            && *at == version
        {
            return *mode;
        }
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let full: Vec<ToolDefinition> = visible.iter().map(|e| e.spec.definition.clone()).collect();
        let mode = if tokens_of(&full) <= max {
            ListingMode::Full
        } else if tokens_of(&full.iter().map(compacted).collect::<Vec<_>>()) <= max {
            ListingMode::Compact
        } else {
            let pinned: Vec<ToolDefinition> = visible
                .iter()
                .filter(|e| profile.pinned.iter().any(|p| p.matches(e)))
                .map(|e| e.spec.definition.clone())
                .collect();
            let mut categories = meta_tools::category_tools();
            categories.extend(pinned.iter().cloned());
            if tokens_of(&categories) <= max {
                ListingMode::Categories
            } else {
                ListingMode::Search
            }
        };
        tracing::info!(
            agent,
            max_listing_tokens = max,
            mode = mode.name(),
            "listing fitted to the token budget"
        );
        if let Ok(mut chosen) = self.inner.fit.chosen.lock() {
            if chosen.len() >= MAX_FITTED_VIEWS {
                chosen.clear();
            }
            chosen.insert(key, (version, mode));
        }
        mode
    }
}
