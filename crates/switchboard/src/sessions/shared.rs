//! The Host's side of sessions' shared state (`[shared] redis`, [`crate::shared::sessions`]):
//! before a session's listing or call, this replica's copy is brought up to date when it may
//! be stale; a change (`load_category`, `unload_category`, `read_more` listed, an operator's
//! tier) goes to Redis first and is taken here from what Redis answers; changes other
//! replicas make arrive on the event bus and are taken as they are heard.
//!
//! A session's copy is read from Redis on its first request on this replica and again once
//! after every new bus epoch (the bus may have missed a change meanwhile); in between, its
//! requests ask Redis nothing. When Redis lost the session's state (a restart or failover)
//! and this replica holds some, the read writes the copy back, and a change carries it to
//! be written back first: a change after the loss never stands for the whole state. Every
//! time the bus subscribes again, the sessions held here are written back where Redis has
//! none of their state, so a replica that never held one finds it whole after a restart. While Redis does not answer, listings and calls go on with the
//! copy held here (these are presentation and latency choices, not permissions: the view
//! never depends on them), and `[shared] redis_unavailable` decides for changes: `fail_open`
//! applies them here alone and says so, `fail_closed` refuses them saying why.
//!
//! Must never: ask Redis on a request whose session's copy is current, or let a change heard
//! from another replica create state for a session this replica does not hold.

use std::sync::Arc;

use switchboard_core::Caller;

use crate::host::Host;
use crate::sessions::key_of;
use crate::shared::SharedEvent;
use crate::shared::sessions::{SessionChange, SessionRecord, SharedSessions, session_digest};

/// How often the bus is checked for a new subscription, after which the sessions held here
/// are written back (a Redis that restarted empty has them back within about this).
const REWRITE_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// What a change of a session's state did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Whether it changed anything.
    pub(crate) changed: bool,
    /// Set when the change holds on this replica only (Redis did not answer, `fail_open`).
    pub(crate) only_here: Option<String>,
}

/// A change of a session's state refused because it cannot be shared now (`fail_closed`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unshared(pub String);

impl Host {
    fn shared_sessions(&self) -> Option<&Arc<SharedSessions>> {
        self.inner.options.shared_sessions.as_ref()
    }

    /// Brings the caller's copy of its session state up to date, if it may be stale; a
    /// Redis that does not answer leaves the copy as it is.
    pub(crate) async fn sync_session(&self, caller: &Caller) {
        let Some(shared) = self.shared_sessions() else {
            return;
        };
        if caller.session.is_none() && caller.agent.is_none() {
            return;
        }
        // The epoch before the question: a change published after it is heard in it.
        let epoch = shared.epoch();
        let sessions = &self.inner.sessions;
        if epoch != 0 && sessions.with(caller, |state| state.synced_epoch == epoch) {
            return;
        }
        let key = key_of(caller);
        let digest = session_digest(&key);
        // Registered before the question, so a change heard meanwhile is not lost.
        sessions.with(caller, |state| state.digest = Some(digest));
        sessions.share(digest, key);
        let Ok(mut record) = shared.read(&digest).await else {
            return;
        };
        if record.version == 0
            && let Some(held) = sessions.with(caller, |state| state.held())
        {
            // Redis lost the session's state (a restart or failover) while this copy holds
            // it: written back, so replicas that read it next find it whole.
            match shared.restore(&digest, &held).await {
                Ok(restored) => record = restored,
                Err(_) => return,
            }
        }
        sessions.with(caller, |state| {
            state.adopt(&record);
            state.synced_epoch = epoch;
        });
    }

    /// Applies `change` to the caller's session state: in Redis first when it is shared.
    pub(crate) async fn change_session(
        &self,
        caller: &Caller,
        change: SessionChange<'_>,
    ) -> Result<Applied, Unshared> {
        let sessions = &self.inner.sessions;
        let Some(shared) = self.shared_sessions() else {
            let changed = sessions.with(caller, |state| state.apply(change));
            return Ok(Applied {
                changed,
                only_here: None,
            });
        };
        let key = key_of(caller);
        let digest = session_digest(&key);
        sessions.with(caller, |state| state.digest = Some(digest));
        sessions.share(digest, key);
        let held = sessions.with(caller, |state| state.held());
        match shared.change(&digest, change, held.as_ref()).await {
            Ok(done) => {
                sessions.with(caller, |state| state.adopt(&done.record));
                Ok(Applied {
                    changed: done.changed,
                    only_here: None,
                })
            }
            Err(why) => match shared.refusal(&why) {
                Some(refusal) => Err(Unshared(refusal)),
                None => Ok(Applied {
                    changed: sessions.with(caller, |state| state.apply(change)),
                    only_here: Some(format!(
                        "kept on this replica only: the other replicas cannot be told now ({why}; shared.redis_unavailable = \"fail_open\")"
                    )),
                }),
            },
        }
    }

    /// Whether the caller's session subscribed to `uri` through any replica (known only
    /// when sessions' state is shared; the front keeps what it saw itself).
    pub(crate) fn resource_subscribed(&self, caller: &Caller, uri: &str) -> bool {
        self.shared_sessions().is_some()
            && self
                .inner
                .sessions
                .with(caller, |state| state.resources.contains(uri))
    }

    /// Every URI `caller`'s session is subscribed to in its shared state (none without
    /// `[shared] redis`).
    pub(crate) fn resource_subscriptions(&self, caller: &Caller) -> Vec<String> {
        if self.shared_sessions().is_none() {
            return Vec::new();
        }
        self.inner
            .sessions
            .with(caller, |state| state.resources.iter().cloned().collect())
    }

    /// The session ended here (DELETE): its shared state goes too, in the background.
    pub(crate) fn forget_shared_session(&self, session: &str) {
        let Some(shared) = self.shared_sessions().cloned() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let digest = session_digest(&format!("session:{session}"));
        runtime.spawn(async move {
            if let Err(why) = shared.forget(&digest).await {
                tracing::debug!(target: "switchboard::shared", "a session's state was not forgotten: {why}");
            }
        });
    }

    /// Takes the session changes other replicas announce, as the bus's subscriber hears
    /// them (so none is missed while subscribed), and writes the sessions held here back
    /// whenever the bus subscribes again, until the Host goes.
    pub(crate) fn follow_sessions(&self) {
        let Some(shared) = self.shared_sessions() else {
            return;
        };
        let Some(bus) = shared.bus() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(write_back_after_resubscribing(
                shared.clone(),
                Arc::downgrade(&self.inner),
            ));
        }
        let weak = Arc::downgrade(&self.inner);
        bus.on_event(Box::new(move |event| {
            let SharedEvent::SessionChanged {
                session,
                version,
                categories,
                resources,
                read_more,
                tier,
            } = event
            else {
                return;
            };
            let Some(digest) = switchboard_core::hex::decode(session)
                .and_then(|bytes| <[u8; 32]>::try_from(bytes.as_slice()).ok())
            else {
                return;
            };
            let Some(inner) = weak.upgrade() else {
                return;
            };
            let record = SessionRecord {
                version: *version,
                categories: categories.iter().cloned().collect(),
                resources: resources.iter().cloned().collect(),
                read_more: *read_more,
                tier: tier.clone(),
            };
            inner.sessions.heard(&digest, &record);
        }));
    }
}

/// Every time the event bus subscribes again (Redis restarted, failed over, or the
/// connection was lost), writes back the state of every shared session held here where
/// Redis has none (`SharedSessions::restore` writes nothing where it has some): a replica
/// that never held a session finds it whole after a Redis restart without waiting for a
/// replica holding it to serve it. Checked every [`REWRITE_CHECK_EVERY`], until the Host goes.
async fn write_back_after_resubscribing(
    shared: Arc<SharedSessions>,
    host: std::sync::Weak<crate::host::Inner>,
) {
    // The subscription whose sessions are written back (or need not be).
    let mut done = shared.epoch();
    let mut check = tokio::time::interval(REWRITE_CHECK_EVERY);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        check.tick().await;
        if host.strong_count() == 0 {
            return;
        }
        // Epochs count subscriptions from 1, and 0 while none holds: the first needs none.
        let now = shared.epoch();
        if now == 0 || now == done {
            continue;
        }
        if now == 1 {
            done = now;
            continue;
        }
        let Some(held) = host.upgrade().map(|inner| inner.sessions.held_shared()) else {
            return;
        };
        if write_back(&shared, &host, held).await {
            done = now;
        }
    }
}

/// Writes back each of `held` where Redis has no state of it, taking what Redis then holds;
/// whether all were written (a failure leaves the rest for the next try).
async fn write_back(
    shared: &SharedSessions,
    host: &std::sync::Weak<crate::host::Inner>,
    held: Vec<(crate::shared::sessions::SessionDigest, SessionRecord)>,
) -> bool {
    for (digest, held) in held {
        let record = match shared.restore(&digest, &held).await {
            Ok(record) => record,
            Err(why) => {
                tracing::debug!(target: "switchboard::shared", "sessions' state not written back yet: {why}");
                return false;
            }
        };
        match host.upgrade() {
            Some(inner) => inner.sessions.heard(&digest, &record),
            None => return true,
        }
    }
    true
}
