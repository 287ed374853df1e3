//! The Host's side of the replicas' event bus (`[shared] redis`, [`crate::shared::EventBus`]):
//! a change of the tools this replica lists is told to the others, and what the others tell
//! reaches this replica's listeners as `tools/list_changed`. Without a bus, both do nothing.
//!
//! Must never: republish what it heard (that would loop between replicas).

use std::sync::Weak;

use tokio::sync::broadcast::error::RecvError;

use super::{Host, Inner};
use crate::shared::SharedEvent;

impl Inner {
    /// Tells the other replicas (if any share a bus) that the tools listed here changed.
    pub(crate) fn tell_replicas(&self, event: SharedEvent) {
        if let Some(bus) = &self.options.events {
            bus.publish(event);
        }
    }

    /// Every session here hears `list_changed` (the caches keyed by the catalog version go).
    pub(crate) fn bump_listings(&self) {
        self.version.send_modify(|version| *version += 1);
        self.sessions.bump_all();
    }
}

impl Host {
    /// Follows the other replicas' events until the Host goes.
    pub(crate) fn follow_replicas(&self) {
        let Some(bus) = &self.inner.options.events else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut events = bus.subscribe();
        let weak: Weak<Inner> = std::sync::Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    // Missed some: a change is a change, listeners list again.
                    Err(RecvError::Lagged(_)) => SharedEvent::ToolsListChanged,
                    Err(RecvError::Closed) => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                match event {
                    SharedEvent::ToolsListChanged => inner.bump_listings(),
                    // The sessions' own follower (`shared::marks`) keeps the end; the
                    // session's tasks running here stop, as on the replica that ended it.
                    SharedEvent::SessionEnded { session, .. } => {
                        inner.tasks.close_session_digest(&session);
                    }
                    SharedEvent::TaskChanged { .. } => {
                        crate::tasks::shared::relay_change(&inner.tasks, &event);
                    }
                    // Taken by the sessions' own follower (`sessions::shared`) as it is heard.
                    SharedEvent::SessionChanged { .. } => {}
                    // Heard only from others: never published again from here.
                    SharedEvent::ResourceUpdated { uri } => {
                        let _ = inner.resource_updates.send(uri);
                    }
                }
            }
        });
    }
}
