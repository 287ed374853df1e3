//! Per-session state of the gateway: which tool categories a session loaded, results kept for
//! `read_more`, and the version its listing is at (bumped on every change that session must
//! hear about as `notifications/tools/list_changed`).
//!
//! A session is a stdio connection or an HTTP session; a stateless (2026-07-28) request has
//! none, so its state is kept per agent instead. The map is bounded: the least recently used
//! session is dropped first.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use switchboard_core::Caller;
use tokio::sync::watch;

/// The most sessions kept at once.
const MAX_SESSIONS: usize = 10_000;

/// One session's state.
pub(crate) struct SessionState {
    /// Categories loaded with `load_category`.
    pub(crate) loaded: BTreeSet<String>,
    /// Whether `read_more` has been added to this session's listing.
    pub(crate) read_more_listed: bool,
    /// The session's latency tier, set by an operator.
    pub(crate) tier: Option<String>,
    /// The tier of the session's last listing (`Some(None)`: listed with no tier; `None`:
    /// never listed), so a change of one tier's tools reaches only the sessions that see it.
    pub(crate) listed_tier: Option<Option<String>>,
    version: watch::Sender<u64>,
    last_used: u64,
}

impl SessionState {
    /// Tells the session its listing changed.
    pub(crate) fn bump(&self) {
        self.version.send_modify(|version| *version += 1);
    }
}

/// Every session's state.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, SessionState>>,
    clock: std::sync::atomic::AtomicU64,
}

/// The key of a caller's state: its session, else its agent.
pub(crate) fn key_of(caller: &Caller) -> String {
    match (&caller.session, &caller.agent) {
        (Some(session), _) => format!("session:{session}"),
        (None, Some(agent)) => format!("agent:{agent}"),
        (None, None) => "anonymous".to_owned(),
    }
}

impl Sessions {
    /// Runs `f` on the caller's state, creating it on first use.
    pub(crate) fn with<R>(&self, caller: &Caller, f: impl FnOnce(&mut SessionState) -> R) -> R {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = match self.map.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let key = key_of(caller);
        if !map.contains_key(&key) && map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, state)| state.last_used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                map.remove(&oldest);
            }
        }
        let state = map.entry(key).or_insert_with(|| SessionState {
            loaded: BTreeSet::new(),
            read_more_listed: false,
            tier: None,
            listed_tier: None,
            version: watch::channel(0).0,
            last_used: tick,
        });
        state.last_used = tick;
        f(state)
    }

    /// A receiver that changes whenever the caller's listing may have changed.
    pub(crate) fn subscribe(&self, caller: &Caller) -> watch::Receiver<u64> {
        self.with(caller, |state| state.version.subscribe())
    }

    /// The catalog changed: every session's listing may have.
    pub(crate) fn bump_all(&self) {
        if let Ok(map) = self.map.lock() {
            for state in map.values() {
                state.bump();
            }
        }
    }

    /// Tells the sessions whose last listing was in one of `tiers` (or that never listed)
    /// that it changed.
    pub(crate) fn bump_tiers(&self, tiers: &[String]) {
        if let Ok(map) = self.map.lock() {
            for state in map.values() {
                let affected = match &state.listed_tier {
                    None => true,
                    Some(None) => false,
                    Some(Some(tier)) => tiers.contains(tier),
                };
                if affected {
                    state.bump();
                }
            }
        }
    }

    pub(crate) fn close(&self, session: &str) {
        if let Ok(mut map) = self.map.lock() {
            map.remove(&format!("session:{session}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_kept_per_session_else_per_agent() {
        let sessions = Sessions::default();
        let a = Caller::new(Some("npc".into()), Some("s1".into()));
        let b = Caller::new(Some("npc".into()), Some("s2".into()));
        let stateless = Caller::new(Some("npc".into()), None);
        sessions.with(&a, |s| s.loaded.insert("games".into()));
        assert!(sessions.with(&a, |s| s.loaded.contains("games")));
        assert!(!sessions.with(&b, |s| s.loaded.contains("games")));
        assert!(!sessions.with(&stateless, |s| s.loaded.contains("games")));
        let version = sessions.subscribe(&a);
        sessions.with(&a, |s| s.bump());
        assert!(version.has_changed().unwrap_or(false));
        sessions.close("s1");
        assert!(!sessions.with(&a, |s| s.loaded.contains("games")));
    }
}
