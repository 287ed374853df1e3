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

impl ResourceSubscriptions {
    /// Notes a `resources/subscribe` or `resources/unsubscribe` request of the client.
    pub fn note(&self, method: &str, params: Option<&Value>) {
        let Some(uri) = params.and_then(|p| p.get("uri")).and_then(Value::as_str) else {
            return;
        };
        let Ok(mut uris) = self.uris.lock() else {
            return;
        };
        match method {
            "resources/subscribe" => {
                uris.insert(uri.to_owned());
            }
            "resources/unsubscribe" => {
                uris.remove(uri);
            }
            _ => {}
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
