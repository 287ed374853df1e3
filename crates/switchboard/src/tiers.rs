//! The active latency tier of a caller and the view it narrows. In order: a tier chosen on
//! the request (an endpoint such as `/mcp/tiers/fast`, or the `Switchboard-Tier` header), the
//! session's tier (set by an operator: `switchboard tier set`), the tier a scope of the
//! caller's OAuth token chooses (`[agents.X.scopes]`; the fastest when several do), an
//! operator's tier for the agent, the agent's default tier; none of these = no tier, every
//! permitted tool. What is permitted is the agent's view, narrowed for an OAuth caller to
//! what its token's scopes open.
//! A change of a session's or an agent's tier announces `list_changed`.
//!
//! Whether a tool fits a tier is the latency budget's call (`crate::latency`): measured
//! latency once there are enough samples, declared before, demoted one tier while degraded.

use std::collections::HashSet;
use std::sync::Arc;

use switchboard_budget::TierId;
use switchboard_core::agent::{View, scoped_view};
use switchboard_core::tier::Tier;
use switchboard_core::{Caller, CatalogEntry, ServerId};

use crate::host::Host;
use crate::shared::sessions::SessionChange;

/// A view narrowed to a tier: permitted, and placed in this tier or a faster one.
struct TierFit {
    permitted: Arc<dyn View>,
    fits: Arc<crate::latency::Fits>,
    tier: Option<TierId>,
}

impl View for TierFit {
    fn contains(&self, entry: &CatalogEntry) -> bool {
        let fits = self.tier.is_some_and(|tier| {
            self.fits
                .get(&entry.exposed)
                .copied()
                .flatten()
                .is_some_and(|fastest| fastest <= tier)
        });
        fits && self.permitted.contains(entry)
    }

    fn contains_server(&self, server: &str) -> bool {
        self.permitted.contains_server(server)
    }
}

/// A tier name the config does not define (`serve --tier`, `tools --tier`, `tier set`).
#[derive(Debug, thiserror::Error)]
#[error("unknown tier '{name}' (the config defines: {})", known.join(", "))]
pub struct UnknownTier {
    pub name: String,
    /// The configured tiers' names, fastest first.
    pub known: Vec<String>,
}

impl Host {
    /// The tier named `name` (case-insensitive); an unknown name has a zero ceiling, so
    /// nothing fits it.
    pub fn tier(&self, name: &str) -> Tier {
        let name = name.to_lowercase();
        self.inner
            .options
            .tiers
            .iter()
            .find(|tier| tier.name == name)
            .cloned()
            .unwrap_or(Tier {
                name,
                ceiling: std::time::Duration::ZERO,
            })
    }

    /// `Ok` when a tier of this name (case-insensitive) is configured; else an error that
    /// names the tiers that are, for the operator who mistyped one.
    pub fn check_tier(&self, name: &str) -> Result<(), UnknownTier> {
        // The latency budget's tiers: the configured ones, or the defaults a Host built
        // without any (an embedder's `HostOptions::default()`) places its calls in.
        if self.inner.latency.tier_id(name).is_some() {
            return Ok(());
        }
        Err(UnknownTier {
            name: name.to_owned(),
            known: self.inner.latency.tier_names(),
        })
    }

    /// The caller's active tier, if any.
    pub fn active_tier(&self, caller: &Caller) -> Option<Tier> {
        let name = caller
            .tier
            .clone()
            .or_else(|| {
                caller
                    .session
                    .as_ref()
                    .and_then(|_| self.inner.sessions.with(caller, |state| state.tier.clone()))
            })
            .or_else(|| self.scope_tier(caller))
            .or_else(|| {
                let agent = caller.agent.as_ref()?;
                self.inner.agent_tiers.lock().ok()?.get(agent).cloned()
            })
            .or_else(|| self.profile(caller.agent.as_deref())?.tier.clone())?;
        Some(self.tier(&name))
    }

    /// The tier the scopes of the caller's OAuth token choose: the fastest of them.
    fn scope_tier(&self, caller: &Caller) -> Option<String> {
        let principal = caller.principal.as_ref()?;
        let profile = self.profile(caller.agent.as_deref())?;
        profile
            .scopes
            .iter()
            .filter(|gate| principal.has_scope(&gate.scope))
            .filter_map(|gate| gate.tier.as_ref())
            .min_by_key(|tier| self.tier(tier).ceiling)
            .cloned()
    }

    /// What `caller` may see and call in any tier: its agent's permissions, narrowed for an
    /// OAuth caller to what its token's scopes open.
    pub fn permitted(&self, caller: &Caller) -> Arc<dyn View> {
        let permitted = self.view(caller.agent.as_deref());
        match (&caller.principal, self.profile(caller.agent.as_deref())) {
            (Some(principal), Some(profile)) if !profile.scopes.is_empty() => {
                scoped_view(permitted, &profile.scopes, principal)
            }
            _ => permitted,
        }
    }

    /// The servers whose prompts, resources, completions and subscriptions `caller` may see:
    /// those its permitted view, in any tier, holds one of the tools of, or opens as a whole
    /// (`server:*`, or no allow list) — how a server of prompts or resources alone is opened
    /// to a restricted agent. One view and one pass over the catalog per request.
    pub(crate) fn servers_seen_by(&self, caller: &Caller) -> HashSet<ServerId> {
        let view = self.permitted(caller);
        let mut seen: HashSet<ServerId> = self
            .catalog()
            .entries()
            .iter()
            .filter(|entry| view.contains(entry))
            .map(|entry| entry.spec.server.clone())
            .collect();
        for member in &self.inner.fleet.load().members {
            let server = &member.plan.spec.id;
            if !seen.contains(server) && view.contains_server(server.as_str()) {
                seen.insert(server.clone());
            }
        }
        seen
    }

    /// Whether the scopes of the caller's token narrow its agent's view.
    pub(crate) fn scope_narrowed(&self, caller: &Caller) -> bool {
        caller.principal.is_some()
            && self
                .profile(caller.agent.as_deref())
                .is_some_and(|profile| !profile.scopes.is_empty())
    }

    /// Remembers the tier a session listed tools in (see `Sessions::bump_tiers`).
    pub(crate) fn note_listed_tier(&self, caller: &Caller) {
        if caller.session.is_none() && caller.agent.is_none() {
            return;
        }
        let tier = self.active_tier(caller).map(|tier| tier.name);
        self.inner
            .sessions
            .with(caller, |state| state.listed_tier = Some(tier));
    }

    /// What `caller` may see and call: [`Host::permitted`], narrowed to its active tier.
    pub fn view_for(&self, caller: &Caller) -> Arc<dyn View> {
        self.view_at(caller, self.active_tier(caller).as_ref())
    }

    /// The caller's permissions narrowed to `tier` (none: not narrowed).
    pub(crate) fn view_at(&self, caller: &Caller, tier: Option<&Tier>) -> Arc<dyn View> {
        let permitted = self.permitted(caller);
        match tier {
            None => permitted,
            Some(tier) => Arc::new(TierFit {
                permitted,
                fits: self.inner.latency.fits(),
                tier: self.inner.latency.tier_id(&tier.name),
            }),
        }
    }

    /// The library's view of an agent in a tier: what it may see and call there.
    pub fn view_in(&self, agent: Option<&str>, tier: Option<&str>) -> Arc<dyn View> {
        self.view_for(
            &Caller::new(agent.map(str::to_owned), None).with_tier(tier.map(str::to_owned)),
        )
    }

    /// The catalog entries `caller` may see, in listing order.
    pub fn visible_for(&self, caller: &Caller) -> Vec<Arc<CatalogEntry>> {
        self.entries_in(self.view_for(caller).as_ref())
    }

    /// Whether `session` may be a live session of this gateway: one this replica holds, or —
    /// with `[shared] redis` — any (another replica may hold it).
    pub fn knows_session(&self, session: &str) -> bool {
        self.inner.options.shared_sessions.is_some()
            || self
                .inner
                .sessions
                .holds(&Caller::new(None, Some(session.to_owned())))
    }

    /// Sets (or, with `None`, clears) one session's tier; the session hears `list_changed`.
    /// With `[shared] redis` every replica serving the session applies it; refused when
    /// Redis does not answer under `fail_closed`.
    pub async fn set_session_tier(
        &self,
        session: &str,
        tier: Option<String>,
    ) -> Result<(), crate::Unshared> {
        let caller = Caller::new(None, Some(session.to_owned()));
        let tier = tier.map(|tier| tier.to_lowercase());
        let applied = self
            .change_session(&caller, SessionChange::Tier(tier.as_deref()))
            .await?;
        if let Some(note) = applied.only_here {
            tracing::warn!(target: "switchboard::shared", "a session's tier is {note}");
        }
        Ok(())
    }

    /// Sets (or clears) an agent's tier, over its configured default; every session hears
    /// `list_changed`.
    pub fn set_agent_tier(&self, agent: &str, tier: Option<String>) {
        if let Ok(mut tiers) = self.inner.agent_tiers.lock() {
            match tier {
                Some(tier) => tiers.insert(agent.to_owned(), tier.to_lowercase()),
                None => tiers.remove(agent),
            };
        }
        self.inner.sessions.bump_all();
    }
}
