//! Which resources one client subscribed to, and the stream of `notifications/resources/updated`
//! it should get for them.
//!
//! The updates reach every stream through one bounded broadcast channel (the backend's), which
//! never waits for a slow reader: a stream that falls so far behind that updates it had not
//! read yet were dropped is told that every URI its client is subscribed to was updated. So
//! no update is lost, only merged into more notices than changes (MCP's notice says the
//! resource may need to be read again), and a burst — a restarted server's resubscribed URIs,
//! past the channel's capacity — costs no memory beyond the channel and the subscriptions.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use switchboard_core::Caller;

use super::backend::Backend;
use crate::jsonrpc::Message;

/// One client's (or session's) resource subscriptions.
#[derive(Debug, Default)]
pub struct ResourceSubscriptions {
    uris: Mutex<HashSet<String>>,
}

/// What a `resources/subscribe` or `resources/unsubscribe` request asks, applied to a
/// client's [`ResourceSubscriptions`] once its answer is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionChange {
    uri: String,
    subscribe: bool,
}

impl SubscriptionChange {
    /// The change `method` asks for, if it is a subscription request naming a URI.
    pub fn of(method: &str, params: Option<&Value>) -> Option<Self> {
        let subscribe = match method {
            "resources/subscribe" => true,
            "resources/unsubscribe" => false,
            _ => return None,
        };
        let uri = params?.get("uri")?.as_str()?.to_owned();
        Some(Self { uri, subscribe })
    }
}

impl ResourceSubscriptions {
    /// Notes a `resources/subscribe` or `resources/unsubscribe` request of the client before
    /// its answer is known (a streamed answer); see [`ResourceSubscriptions::apply`].
    pub fn note(&self, method: &str, params: Option<&Value>) {
        if let Some(change) = SubscriptionChange::of(method, params) {
            self.set(&change);
        }
    }

    /// Applies `change` once the request was `answer`ed: a subscription only when it
    /// succeeded (a refused one delivers nothing), an unsubscription whatever the answer
    /// (the client wants no more updates).
    pub fn apply(&self, change: &SubscriptionChange, answer: &Message) {
        if !change.subscribe || matches!(answer, Message::Response { .. }) {
            self.set(change);
        }
    }

    fn set(&self, change: &SubscriptionChange) {
        let Ok(mut uris) = self.uris.lock() else {
            return;
        };
        if change.subscribe {
            uris.insert(change.uri.clone());
        } else {
            uris.remove(&change.uri);
        }
    }

    fn wants(&self, uri: &str) -> bool {
        self.uris
            .lock()
            .map(|uris| uris.contains(uri))
            .unwrap_or(false)
    }

    /// Updates of the resources this client (`caller`) subscribed to — here, or through
    /// another replica as the backend knows ([`Backend::resource_subscribed`]) — as
    /// notifications (after a lag, one for each of them: the module doc); ends when the
    /// backend offers no updates.
    pub fn updates(
        self: Arc<Self>,
        backend: Arc<dyn Backend>,
        caller: Caller,
    ) -> impl Stream<Item = Message> + Send + 'static {
        let following = Following {
            receiver: backend.resource_updates(),
            subscriptions: self,
            backend,
            caller,
            owed: VecDeque::new(),
        };
        futures::stream::unfold(following, |mut following| async move {
            let uri = following.next_uri().await?;
            let note =
                Message::notification("notifications/resources/updated", json!({"uri": uri}));
            Some((note, following))
        })
    }
}

/// One client's place in the backend's updates.
struct Following {
    receiver: Option<broadcast::Receiver<String>>,
    subscriptions: Arc<ResourceSubscriptions>,
    backend: Arc<dyn Backend>,
    caller: Caller,
    /// URIs to report before reading on: every one subscribed to, after a lag.
    owed: VecDeque<String>,
}

impl Following {
    /// The next URI to report updated to the client; None once the updates end.
    async fn next_uri(&mut self) -> Option<String> {
        loop {
            if let Some(uri) = self.owed.pop_front() {
                return Some(uri);
            }
            let uri = match self.receiver.as_mut()?.recv().await {
                Ok(uri) => uri,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    self.owed = self.everything_subscribed();
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if self.subscriptions.wants(&uri)
                || self.backend.resource_subscribed(&self.caller, &uri)
            {
                return Some(uri);
            }
        }
    }

    /// Every URI the client is subscribed to, here or through another replica, each once.
    fn everything_subscribed(&self) -> VecDeque<String> {
        let mut uris: BTreeSet<String> = self
            .subscriptions
            .uris
            .lock()
            .map(|uris| uris.iter().cloned().collect())
            .unwrap_or_default();
        uris.extend(self.backend.resource_subscriptions(&self.caller));
        uris.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use futures::StreamExt;
    use futures::future::BoxFuture;
    use switchboard_core::pipeline::CallError;
    use switchboard_core::{CallContext, ToolCall, ToolDefinition, ToolOutcome};
    use tokio::sync::watch;

    use super::*;
    use crate::front::backend::ServerIdentity;

    /// Updates through a channel of `CAPACITY`, as the Host's (smaller, for a short test).
    const CAPACITY: usize = 16;

    struct Updates(broadcast::Sender<String>);

    impl Backend for Updates {
        fn identity(&self) -> ServerIdentity {
            ServerIdentity {
                name: "updates".into(),
                version: "1".into(),
                instructions: None,
            }
        }

        fn list_tools<'a>(&'a self, _caller: &'a Caller) -> BoxFuture<'a, Vec<ToolDefinition>> {
            Box::pin(async { Vec::new() })
        }

        fn call_tool(
            &self,
            _ctx: CallContext,
            _call: ToolCall,
        ) -> BoxFuture<'_, Result<ToolOutcome, CallError>> {
            Box::pin(async { Ok(ToolOutcome::text("")) })
        }

        fn listing_version(&self, _caller: &Caller) -> watch::Receiver<u64> {
            watch::channel(0).1
        }

        fn resource_updates(&self) -> Option<broadcast::Receiver<String>> {
            Some(self.0.subscribe())
        }
    }

    /// More updates than the channel holds arrive before the client's stream reads any (a
    /// restarted server reports every URI it subscribed to again): the stream fell behind,
    /// and still reports every URI its client is subscribed to.
    #[tokio::test]
    async fn a_stream_that_falls_behind_still_reports_every_subscribed_uri() {
        let (sender, _) = broadcast::channel(CAPACITY);
        let backend: Arc<dyn Backend> = Arc::new(Updates(sender.clone()));
        let subscriptions = Arc::new(ResourceSubscriptions::default());
        let uris: BTreeSet<String> = (0..CAPACITY * 3).map(|n| format!("test://r/{n}")).collect();
        for uri in &uris {
            subscriptions.note("resources/subscribe", Some(&json!({"uri": uri})));
        }
        let updates = subscriptions.updates(backend, Caller::new(None, None));
        futures::pin_mut!(updates);
        for uri in &uris {
            let _ = sender.send(uri.clone());
            let _ = sender.send("test://not-subscribed".to_owned());
        }
        let mut reported = BTreeSet::new();
        while reported != uris {
            let next = tokio::time::timeout(Duration::from_secs(2), updates.next()).await;
            let Ok(Some(Message::Notification { method, params })) = next else {
                panic!(
                    "{} of {} URIs reported: {reported:?}",
                    reported.len(),
                    uris.len()
                );
            };
            assert_eq!(method, "notifications/resources/updated");
            let uri = params
                .as_ref()
                .and_then(|params| params["uri"].as_str())
                .unwrap_or_default();
            assert!(uris.contains(uri), "{uri} was reported");
            reported.insert(uri.to_owned());
        }
    }
}
