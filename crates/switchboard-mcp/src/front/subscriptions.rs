//! Which resources one client subscribed to, and the stream of `notifications/resources/updated`
//! it should get for them.

use std::collections::HashSet;
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
    /// notifications; ends when the backend offers no updates.
    pub fn updates(
        self: Arc<Self>,
        backend: Arc<dyn Backend>,
        caller: Caller,
    ) -> impl Stream<Item = Message> + Send + 'static {
        let receiver = backend.resource_updates();
        futures::stream::unfold(
            (receiver, self, backend, caller),
            |(mut receiver, subscriptions, backend, caller)| async move {
                loop {
                    let uri = match receiver.as_mut()?.recv().await {
                        Ok(uri) => uri,
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    };
                    if subscriptions.wants(&uri) || backend.resource_subscribed(&caller, &uri) {
                        let note = Message::notification(
                            "notifications/resources/updated",
                            json!({"uri": uri}),
                        );
                        return Some((note, (receiver, subscriptions, backend, caller)));
                    }
                }
            },
        )
    }
}
