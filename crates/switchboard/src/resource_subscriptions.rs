//! Resource subscriptions, counted: many sessions may subscribe to one URI, and the server
//! that owns it hears one `resources/subscribe` — the first session's — and one
//! `resources/unsubscribe` — when the last one leaves, unsubscribes or closes. A session's
//! unsubscription from a URI it never subscribed to changes nothing (it cannot end another
//! session's updates). The supervisor keeps what its server is subscribed to, so a
//! connection that replaces a lost one subscribes again
//! (`switchboard_mcp::upstream::Supervisor::note_subscription`), and then, once that
//! connection's resources are listed (so a read at once is routed to it), reports each of
//! those URIs updated: its subscribers read again what the restart may have changed.
//!
//! With `[shared] redis`, a session's subscriptions are also kept in its shared state, so its
//! updates reach its GET stream on whichever replica serves it; the upstream subscription
//! stays with the replica that made it.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use switchboard_core::{Caller, ServerId};
use switchboard_mcp::jsonrpc::{RpcError, code};

use crate::Host;
use crate::shared::sessions::SessionChange;

/// Which sessions are subscribed to which URI of which server.
#[derive(Debug, Default)]
pub(crate) struct Subscribers {
    by_resource: HashMap<(ServerId, String), HashSet<String>>,
}

impl Subscribers {
    /// The server `session` is subscribed to `uri` on, if any.
    fn server_of(&self, session: &str, uri: &str) -> Option<ServerId> {
        self.by_resource
            .iter()
            .find(|((_, subscribed), sessions)| subscribed == uri && sessions.contains(session))
            .map(|((server, _), _)| server.clone())
    }

    /// A server some session is subscribed to `uri` on already, among `servers`.
    fn subscribed_on<'a>(
        &self,
        uri: &str,
        mut servers: impl Iterator<Item = &'a ServerId>,
    ) -> Option<ServerId> {
        servers
            .find(|server| {
                self.by_resource
                    .contains_key(&((*server).clone(), uri.to_owned()))
            })
            .cloned()
    }

    fn add(&mut self, server: ServerId, uri: &str, session: &str) {
        self.by_resource
            .entry((server, uri.to_owned()))
            .or_default()
            .insert(session.to_owned());
    }

    /// Takes `session` off `uri` on `server`; says whether it was the last subscriber.
    fn remove(&mut self, server: &ServerId, uri: &str, session: &str) -> bool {
        let key = (server.clone(), uri.to_owned());
        let Some(sessions) = self.by_resource.get_mut(&key) else {
            return false;
        };
        sessions.remove(session);
        let last = sessions.is_empty();
        if last {
            self.by_resource.remove(&key);
        }
        last
    }

    /// Takes `session` off every URI; returns those it was the last subscriber of.
    fn remove_session(&mut self, session: &str) -> Vec<(ServerId, String)> {
        let mut emptied = Vec::new();
        self.by_resource.retain(|key, sessions| {
            if sessions.remove(session) && sessions.is_empty() {
                emptied.push(key.clone());
                return false;
            }
            true
        });
        emptied
    }
}

/// Whether a server's handshake `capabilities` say it takes `resources/subscribe`.
pub(crate) fn takes_subscriptions(capabilities: &Value) -> bool {
    capabilities
        .pointer("/resources/subscribe")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The key a caller's subscriptions are counted under: its session (a stdio client has one
/// connection, and no session id).
fn session_key(caller: &Caller) -> &str {
    caller.session.as_deref().unwrap_or("")
}

impl Host {
    fn subscribers(&self) -> std::sync::MutexGuard<'_, Subscribers> {
        self.inner
            .resource_subscribers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `resources/subscribe` or `resources/unsubscribe` of `caller` on the server that owns
    /// `uri` (among those it may see), counted as the module doc says; with sessions' state
    /// shared, the session's subscription is then kept for every replica.
    pub(crate) async fn subscribe_resource(
        &self,
        caller: &Caller,
        uri: &str,
        subscribe: bool,
    ) -> Result<Value, RpcError> {
        self.wait_for_startup().await;
        let session = session_key(caller);
        let answer = if subscribe {
            self.subscribe_counted(caller, uri, session).await?
        } else {
            self.unsubscribe_counted(uri, session).await?
        };
        let change = if subscribe {
            SessionChange::Subscribe(uri)
        } else {
            SessionChange::Unsubscribe(uri)
        };
        if self.inner.options.shared_sessions.is_some() {
            let applied = self.change_session(caller, change).await.map_err(|refused| {
                RpcError::new(
                    code::INTERNAL_ERROR,
                    format!("the subscription to {uri} cannot be shared with the other replicas now: {refused}"),
                )
            })?;
            if let Some(note) = applied.only_here {
                tracing::warn!(target: "switchboard::shared", "a subscription to {uri} is {note}");
            }
        }
        Ok(answer)
    }

    async fn subscribe_counted(
        &self,
        caller: &Caller,
        uri: &str,
        session: &str,
    ) -> Result<Value, RpcError> {
        let candidates = self.resource_candidates(caller, uri);
        let already = self
            .subscribers()
            .subscribed_on(uri, candidates.iter().map(|m| &m.plan.spec.id));
        if let Some(server) = already {
            self.subscribers().add(server, uri, session);
            return Ok(json!({}));
        }
        let mut last_error = None;
        for member in candidates {
            let supervisor = member.supervisor();
            let subscribable = takes_subscriptions(&supervisor.status().capabilities);
            let Some(client) = supervisor.client().filter(|_| subscribable) else {
                continue;
            };
            let request = json!({"uri": uri});
            let timeout = member.plan.call_timeout;
            match self
                .forward(&client, "resources/subscribe", request, timeout)
                .await
            {
                Ok(answer) => {
                    supervisor.note_subscription(uri, true);
                    self.subscribers()
                        .add(member.plan.spec.id.clone(), uri, session);
                    return Ok(answer);
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!("no server offers subscriptions to {uri}"),
            )
        }))
    }

    /// Takes the session off `uri`; the last one to leave unsubscribes the server.
    async fn unsubscribe_counted(&self, uri: &str, session: &str) -> Result<Value, RpcError> {
        let last_on = {
            let mut subscribers = self.subscribers();
            subscribers
                .server_of(session, uri)
                .filter(|server| subscribers.remove(server, uri, session))
        };
        if let Some(server) = last_on {
            self.unsubscribe_upstream(&server, uri).await?;
        }
        Ok(json!({}))
    }

    /// Unsubscribes `server` from `uri`, which no session wants any more.
    async fn unsubscribe_upstream(&self, server: &ServerId, uri: &str) -> Result<(), RpcError> {
        let fleet = self.inner.fleet.load_full();
        let Some(member) = fleet.find(server) else {
            return Ok(());
        };
        let supervisor = member.supervisor();
        supervisor.note_subscription(uri, false);
        let Some(client) = supervisor.client() else {
            return Ok(());
        };
        let timeout = member.plan.call_timeout;
        self.forward(
            &client,
            "resources/unsubscribe",
            json!({"uri": uri}),
            timeout,
        )
        .await
        .map(|_| ())
    }

    /// A session closed: its subscriptions end, and the servers it was the last subscriber
    /// of are unsubscribed (in the background).
    pub(crate) fn forget_subscriptions_of(&self, session: &str) {
        let emptied = self.subscribers().remove_session(session);
        if emptied.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let host = self.clone();
        runtime.spawn(async move {
            for (server, uri) in emptied {
                if let Err(error) = host.unsubscribe_upstream(&server, &uri).await {
                    tracing::debug!(target: "switchboard::upstream", %server, "unsubscribing from {uri} after its last session closed: {}", error.message);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_of_several_sessions_to_leave_is_the_last_subscriber() {
        let mut subscribers = Subscribers::default();
        let files = ServerId::new("files");
        subscribers.add(files.clone(), "file:///a", "s1");
        subscribers.add(files.clone(), "file:///a", "s2");
        subscribers.add(files.clone(), "file:///b", "s1");
        assert_eq!(
            subscribers.subscribed_on("file:///a", [files.clone()].iter()),
            Some(files.clone())
        );
        // A session that never subscribed finds nothing to leave.
        assert_eq!(subscribers.server_of("s3", "file:///a"), None);
        assert!(!subscribers.remove(&files, "file:///a", "s1"));
        assert!(subscribers.remove(&files, "file:///a", "s2"));
        assert_eq!(
            subscribers.subscribed_on("file:///a", [files.clone()].iter()),
            None
        );
        // Closing s1 empties file:///b, which s1 alone held.
        assert_eq!(
            subscribers.remove_session("s1"),
            vec![(files.clone(), "file:///b".to_owned())]
        );
        assert!(subscribers.remove_session("s1").is_empty());
    }
}
