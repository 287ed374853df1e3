//! Per-session state of the gateway: which tool categories a session loaded, results kept for
//! `read_more`, and the version its listing is at (bumped on every change that session must
//! hear about as `notifications/tools/list_changed`).
//!
//! A session is a stdio connection or an HTTP session; a stateless (2026-07-28) request has
//! none, so its state is kept per agent instead. The map is bounded: the least recently used
//! session nobody listens to for `list_changed` is dropped first.
//!
//! Every call of a session looks its state up, so the map is split into [`SHARDS`] maps,
//! each behind its own lock and with its own clock: calls of different sessions on different
//! cores rarely meet on one lock or one cache line. The bound and the least-recently-used
//! order hold per shard (each keeps at most its share of [`MAX_SESSIONS`]).
//!
//! With `[shared] redis` the state a session changes follows it to every replica
//! ([`shared`], over `crate::shared::sessions`); this map is then this replica's copy.

use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard};

use foldhash::fast::RandomState;
use switchboard_core::Caller;
use tokio::sync::watch;

use crate::shared::sessions::{SessionChange, SessionDigest, SessionRecord};

pub(crate) mod shared;

/// The most sessions kept at once.
const MAX_SESSIONS: usize = 10_000;
/// Maps the sessions are split into.
const SHARDS: usize = 32;

/// One session's state.
pub(crate) struct SessionState {
    /// Categories loaded with `load_category`.
    pub(crate) loaded: BTreeSet<String>,
    /// Whether `read_more` has been added to this session's listing.
    pub(crate) read_more_listed: bool,
    /// The session's latency tier, set by an operator.
    pub(crate) tier: Option<String>,
    /// Resources the session subscribed to (kept here only when shared with other replicas;
    /// the front keeps its own).
    pub(crate) resources: BTreeSet<String>,
    /// The tier of the session's last listing (`Some(None)`: listed with no tier; `None`:
    /// never listed), so a change of one tier's tools reaches only the sessions that see it.
    pub(crate) listed_tier: Option<Option<String>>,
    /// The version of the shared state this copy holds (`crate::shared::sessions`).
    shared_version: u64,
    /// The event bus's epoch in which the shared state was last read (0: not read since).
    synced_epoch: u64,
    /// The digest of the session's key, once it was shared.
    digest: Option<SessionDigest>,
    version: watch::Sender<u64>,
    last_used: u64,
}

impl SessionState {
    /// Tells the session its listing changed.
    pub(crate) fn bump(&self) {
        self.version.send_modify(|version| *version += 1);
    }

    /// Applies `change` here; whether it changed anything (the session is told if so).
    pub(crate) fn apply(&mut self, change: SessionChange<'_>) -> bool {
        let changed = match change {
            SessionChange::Load(category) => self.loaded.insert(category.to_owned()),
            SessionChange::Unload(category) => {
                let before = self.loaded.len();
                let below = format!("{category}/");
                self.loaded
                    .retain(|loaded| loaded != category && !loaded.starts_with(&below));
                self.loaded.len() != before
            }
            SessionChange::ReadMoreListed => !std::mem::replace(&mut self.read_more_listed, true),
            SessionChange::Tier(tier) => {
                let tier = tier.map(str::to_lowercase);
                std::mem::replace(&mut self.tier, tier.clone()) != tier
            }
            SessionChange::Subscribe(uri) => self.resources.insert(uri.to_owned()),
            SessionChange::Unsubscribe(uri) => self.resources.remove(uri),
        };
        if changed {
            self.bump();
        }
        changed
    }

    /// This copy as shared state, when it was shared (taken from Redis or the bus, or changed
    /// there) and holds anything (`None`: nothing to write back; what a replica kept alone
    /// while Redis was down, under `fail_open`, never was shared and stays its own).
    pub(crate) fn held(&self) -> Option<SessionRecord> {
        if self.shared_version == 0 {
            return None;
        }
        let record = SessionRecord {
            version: self.shared_version,
            categories: self.loaded.clone(),
            read_more: self.read_more_listed,
            tier: self.tier.clone(),
            resources: self.resources.clone(),
        };
        (!record.is_blank()).then_some(record)
    }

    /// Takes the shared state `record` unless this copy is of a later version; whether the
    /// session's state changed (it is told if so).
    pub(crate) fn adopt(&mut self, record: &SessionRecord) -> bool {
        if record.version < self.shared_version {
            return false;
        }
        self.shared_version = record.version;
        self.resources.clone_from(&record.resources);
        let changed = self.loaded != record.categories
            || self.read_more_listed != record.read_more
            || self.tier != record.tier;
        if changed {
            self.loaded.clone_from(&record.categories);
            self.read_more_listed = record.read_more;
            self.tier.clone_from(&record.tier);
            self.bump();
        }
        changed
    }
}

/// Every session's state.
pub(crate) struct Sessions {
    shards: Box<[Mutex<Shard>]>,
    /// Picks a key's shard. foldhash's quality variant, so the low bits spread evenly.
    hasher: foldhash::quality::RandomState,
    /// The keys of the shared sessions held here, by digest: where a change heard from
    /// another replica goes. Locked after a shard, never before one.
    shared: Mutex<HashMap<SessionDigest, String>>,
}

/// One shard: its sessions, and the clock that orders their use.
#[derive(Default)]
struct Shard {
    /// Hashed with foldhash, on every call (the keys are the gateway's session ids and the
    /// agents' names).
    map: HashMap<String, SessionState, RandomState>,
    clock: u64,
}

impl Default for Sessions {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: foldhash::quality::RandomState::default(),
            shared: Mutex::default(),
        }
    }
}

/// The key of a caller's state: its session, else its agent. (Put together by hand: it is
/// made several times a call, and `format!` costs more than the copy.)
pub(crate) fn key_of(caller: &Caller) -> String {
    let (kind, name) = match (&caller.session, &caller.agent) {
        (Some(session), _) => ("session:", session),
        (None, Some(agent)) => ("agent:", agent),
        (None, None) => return "anonymous".to_owned(),
    };
    let mut key = String::with_capacity(kind.len() + name.len());
    key.push_str(kind);
    key.push_str(name);
    key
}

fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    match shard.lock() {
        Ok(shard) => shard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Sessions {
    fn shard(&self, key: &str) -> &Mutex<Shard> {
        // Reduced modulo a small power of two: the hash's low bits are as good as any.
        let index = (self.hasher.hash_one(key) as usize) % self.shards.len();
        &self.shards[index]
    }

    /// Runs `f` on the caller's state, creating it on first use.
    pub(crate) fn with<R>(&self, caller: &Caller, f: impl FnOnce(&mut SessionState) -> R) -> R {
        let key = key_of(caller);
        let mut shard = lock(self.shard(&key));
        shard.clock += 1;
        let tick = shard.clock;
        if !shard.map.contains_key(&key) && shard.map.len() >= MAX_SESSIONS / SHARDS {
            // The least recently used that nobody listens to: a session whose stream waits
            // for list_changed (a GET stream, stdio, a modern listen) calls seldom, and
            // dropping its state would silence that stream for good. With every one
            // listened to the shard grows past its share, as far as open streams go.
            let oldest = shard
                .map
                .iter()
                .filter(|(_, state)| state.version.receiver_count() == 0)
                .min_by_key(|(_, state)| state.last_used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest
                && let Some(gone) = shard.map.remove(&oldest)
            {
                self.unshare(gone.digest.as_ref());
            }
        }
        let state = shard.map.entry(key).or_insert_with(|| SessionState {
            loaded: BTreeSet::new(),
            read_more_listed: false,
            tier: None,
            resources: BTreeSet::new(),
            listed_tier: None,
            shared_version: 0,
            synced_epoch: 0,
            digest: None,
            version: watch::channel(0).0,
            last_used: tick,
        });
        state.last_used = tick;
        f(state)
    }

    /// Whether the caller has state here (without making any).
    pub(crate) fn holds(&self, caller: &Caller) -> bool {
        let key = key_of(caller);
        lock(self.shard(&key)).map.contains_key(&key)
    }

    /// A receiver that changes whenever the caller's listing may have changed.
    pub(crate) fn subscribe(&self, caller: &Caller) -> watch::Receiver<u64> {
        self.with(caller, |state| state.version.subscribe())
    }

    /// The catalog changed: every session's listing may have.
    pub(crate) fn bump_all(&self) {
        for shard in &self.shards {
            for state in lock(shard).map.values() {
                state.bump();
            }
        }
    }

    /// Tells the sessions whose last listing was in one of `tiers` (or that never listed)
    /// that it changed.
    pub(crate) fn bump_tiers(&self, tiers: &[String]) {
        for shard in &self.shards {
            for state in lock(shard).map.values() {
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
        let key = format!("session:{session}");
        let gone = lock(self.shard(&key)).map.remove(&key);
        if let Some(gone) = gone {
            self.unshare(gone.digest.as_ref());
        }
    }

    /// Notes that the state kept under `key` is shared as `digest`, so that changes heard
    /// for it reach it.
    fn share(&self, digest: SessionDigest, key: String) {
        lock_index(&self.shared).insert(digest, key);
    }

    fn unshare(&self, digest: Option<&SessionDigest>) {
        if let Some(digest) = digest {
            lock_index(&self.shared).remove(digest);
        }
    }

    /// The shared sessions held here that hold anything, with their state: what is written
    /// back when Redis may have lost it.
    pub(crate) fn held_shared(&self) -> Vec<(SessionDigest, SessionRecord)> {
        let index: Vec<(SessionDigest, String)> = lock_index(&self.shared)
            .iter()
            .map(|(digest, key)| (*digest, key.clone()))
            .collect();
        index
            .into_iter()
            .filter_map(|(digest, key)| {
                let held = lock(self.shard(&key)).map.get(&key)?.held()?;
                Some((digest, held))
            })
            .collect()
    }

    /// A change of a shared session heard from another replica: taken if the session is
    /// held here (and the change is not older than what it holds).
    pub(crate) fn heard(&self, digest: &SessionDigest, record: &SessionRecord) {
        let Some(key) = lock_index(&self.shared).get(digest).cloned() else {
            return;
        };
        if let Some(state) = lock(self.shard(&key)).map.get_mut(&key) {
            state.adopt(record);
        }
    }
}

fn lock_index(
    index: &Mutex<HashMap<SessionDigest, String>>,
) -> MutexGuard<'_, HashMap<SessionDigest, String>> {
    index
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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

    #[test]
    fn a_change_heard_reaches_only_a_session_held_here_and_never_goes_back() {
        let sessions = Sessions::default();
        let held = Caller::new(Some("npc".into()), Some("s1".into()));
        let digest = [1; 32];
        let record = |version: u64, category: &str| SessionRecord {
            version,
            categories: [category.to_owned()].into(),
            ..SessionRecord::default()
        };
        // Not held here: nothing is made of it.
        sessions.heard(&digest, &record(5, "games"));
        assert_eq!(
            sessions
                .shards
                .iter()
                .map(|s| lock(s).map.len())
                .sum::<usize>(),
            0
        );

        sessions.with(&held, |state| state.digest = Some(digest));
        sessions.share(digest, key_of(&held));
        let mut version = sessions.subscribe(&held);
        version.mark_unchanged();
        sessions.heard(&digest, &record(5, "games"));
        assert!(sessions.with(&held, |s| s.loaded.contains("games")));
        assert!(
            version.has_changed().unwrap_or(false),
            "the session hears it"
        );
        // An older state (a change heard late) is ignored; a newer one is taken.
        sessions.heard(&digest, &record(4, "files"));
        assert!(sessions.with(&held, |s| s.loaded.contains("games")));
        sessions.heard(&digest, &record(6, "files"));
        assert!(sessions.with(&held, |s| s.loaded.contains("files")
            && !s.loaded.contains("games")));
        // Closed: no longer reached.
        sessions.close("s1");
        sessions.heard(&digest, &record(7, "games"));
        assert!(!sessions.with(&held, |s| s.loaded.contains("games")));
    }

    #[test]
    fn the_map_stays_bounded_and_drops_the_least_recently_used_first() {
        let sessions = Sessions::default();
        let caller = |i: usize| Caller::new(None, Some(format!("s{i}")));
        let keep = caller(0);
        for i in 0..MAX_SESSIONS + 2_000 {
            sessions.with(&caller(i), |s| s.read_more_listed = true);
            // Session 0 is used all along: it is never the least recently used of its shard.
            sessions.with(&keep, |_| ());
        }
        let kept: usize = sessions.shards.iter().map(|s| lock(s).map.len()).sum();
        assert!(kept <= MAX_SESSIONS, "{kept} sessions kept");
        assert!(sessions.with(&keep, |s| s.read_more_listed));
        let newest = caller(MAX_SESSIONS + 1_999);
        assert!(sessions.with(&newest, |s| s.read_more_listed));
        // The first sessions after 0, unused since, are gone.
        assert!(!sessions.with(&caller(1), |s| s.read_more_listed));
    }

    /// A session that calls seldom but listens for list_changed (its stream open) keeps its
    /// state however many others come and go, and still hears a change.
    #[test]
    fn a_listened_to_session_is_never_dropped() {
        let sessions = Sessions::default();
        let caller = |i: usize| Caller::new(None, Some(format!("s{i}")));
        let quiet = caller(usize::MAX);
        sessions.with(&quiet, |s| {
            s.loaded.insert("games".to_owned());
        });
        let listening = sessions.subscribe(&quiet);
        for i in 0..MAX_SESSIONS * 2 {
            sessions.with(&caller(i), |_| ());
        }
        let kept: usize = sessions.shards.iter().map(|s| lock(s).map.len()).sum();
        assert!(kept <= MAX_SESSIONS + 1, "{kept} sessions kept");
        assert!(sessions.with(&quiet, |s| s.loaded.contains("games")));
        sessions.bump_all();
        assert!(
            listening.has_changed().unwrap_or(false),
            "the change is heard"
        );
    }
}
