//! Relaying an upstream's requests to the real client: the gateway sends them to its client
//! under ids of its own (`sb-1`, `sb-2`, …; on an HTTP replica that shares a deployment,
//! `sb-<replica>-1`, so that an answer POSTed to another replica can be routed back to this
//! one: [`owner_of`]), matches the client's answers back, and only asks for what the client
//! declared it supports (its `initialize` capabilities).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_core::{CallerChannel, CallerError};
use tokio::sync::oneshot;

use super::dispatch::Notifier;
use crate::jsonrpc::{Message, RequestId, client_capability_for, code};

type Waiter = oneshot::Sender<Result<Value, CallerError>>;

/// The requests waiting for the client's answer, and whether the client is gone
/// ([`Relay::close`]): no request waits on a client that can no longer answer.
#[derive(Default)]
struct Pending {
    waiting: HashMap<String, Waiter>,
    closed: bool,
}

/// One client connection's (or session's) relay state.
#[derive(Default)]
pub struct Relay {
    pending: Mutex<Pending>,
    next: AtomicU64,
    capabilities: RwLock<Value>,
    /// The replica whose name the ids carry (`sb-<replica>-N`); none: `sb-N`.
    replica: Option<Arc<str>>,
}

/// The prefix of every id the gateway gives a request it relays.
const ID_PREFIX: &str = "sb-";

/// The replica named by a relayed request's id (`sb-<replica>-N`): the one whose call waits
/// for its answer. `None` for an id of another form (`sb-N`, or not the gateway's).
pub fn owner_of(id: &RequestId) -> Option<&str> {
    let RequestId::String(id) = id else {
        return None;
    };
    let (replica, number) = id.strip_prefix(ID_PREFIX)?.rsplit_once('-')?;
    (!replica.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(replica)
}

impl fmt::Debug for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Relay")
    }
}

impl Relay {
    /// A relay whose request ids name `replica` (`sb-<replica>-N`).
    pub fn for_replica(replica: Arc<str>) -> Self {
        Self {
            replica: Some(replica),
            ..Self::default()
        }
    }

    /// Remembers what the client declared in `initialize`.
    pub fn remember_capabilities(&self, initialize_params: Option<&Value>) {
        let capabilities = initialize_params
            .and_then(|p| p.get("capabilities"))
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Ok(mut slot) = self.capabilities.write() {
            *slot = capabilities;
        }
    }

    /// Takes a message from the client that answers one of our requests; returns whether it
    /// was one.
    pub fn complete(&self, message: &Message) -> bool {
        let (id, answer) = match message {
            Message::Response {
                id: RequestId::String(id),
                result,
            } => (id, Ok(result.clone())),
            Message::Error {
                id: Some(RequestId::String(id)),
                error,
            } => (
                id,
                Err(CallerError {
                    code: error.code,
                    message: error.message.clone(),
                    data: error.data.clone(),
                }),
            ),
            _ => return false,
        };
        let waiter = self
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.waiting.remove(id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(answer);
                true
            }
            None => false,
        }
    }

    /// The client can answer no more (its input ended): every request waiting on it ends
    /// with "the client went away", and any later one at once.
    pub fn close(&self) {
        let waiting = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.closed = true;
            std::mem::take(&mut pending.waiting)
        };
        // Dropped here, outside the lock: each waiter hears that the client went away.
        drop(waiting);
    }

    /// A caller channel that writes through `sink` (the connection, or one response stream).
    pub fn caller(self: &Arc<Self>, sink: Notifier) -> Arc<dyn CallerChannel> {
        Arc::new(RelayCaller {
            relay: self.clone(),
            sink,
        })
    }
}

struct RelayCaller {
    relay: Arc<Relay>,
    sink: Notifier,
}

impl fmt::Debug for RelayCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RelayCaller")
    }
}

/// Removes a relayed request's entry when its wait ends, however it ends.
struct Waiting<'a> {
    relay: &'a Relay,
    id: &'a str,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.relay.pending.lock() {
            pending.waiting.remove(self.id);
        }
    }
}

impl CallerChannel for RelayCaller {
    fn supports(&self, method: &str) -> bool {
        if method == "notifications/message" {
            return true;
        }
        let Some(capability) = client_capability_for(method) else {
            return false;
        };
        self.relay
            .capabilities
            .read()
            .map(|caps| caps.get(capability).is_some())
            .unwrap_or(false)
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'_, Result<Value, CallerError>> {
        let method = method.to_owned();
        Box::pin(async move {
            let number = self.relay.next.fetch_add(1, Ordering::Relaxed) + 1;
            let id = match &self.relay.replica {
                Some(replica) => format!("{ID_PREFIX}{replica}-{number}"),
                None => format!("{ID_PREFIX}{number}"),
            };
            let (waiter, answer) = oneshot::channel();
            let gone = || CallerError {
                code: code::INTERNAL_ERROR,
                message: "the client went away".to_owned(),
                data: None,
            };
            match self.relay.pending.lock() {
                Ok(mut pending) if !pending.closed => {
                    pending.waiting.insert(id.clone(), waiter);
                }
                _ => return Err(gone()),
            }
            // However the wait ends — answered, or given up (the call cancelled, its deadline
            // passed) — the entry goes.
            let _waiting = Waiting {
                relay: &self.relay,
                id: &id,
            };
            (self.sink)(Message::Request {
                id: RequestId::String(id.clone()),
                method,
                params: Some(params),
            });
            answer.await.unwrap_or_else(|_| Err(gone()))
        })
    }

    fn notify(&self, method: &str, params: Value) {
        (self.sink)(Message::Notification {
            method: method.to_owned(),
            params: Some(params),
        });
    }

    /// One per client connection or session: every call of it relays through one `Relay`.
    fn client_key(&self) -> usize {
        Arc::as_ptr(&self.relay) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relay_capturing() -> (Arc<Relay>, Arc<dyn CallerChannel>) {
        let relay = Arc::new(Relay::default());
        relay.remember_capabilities(Some(&serde_json::json!({"capabilities": {"roots": {}}})));
        let caller = relay.caller(Arc::new(|_message| {}));
        (relay, caller)
    }

    /// A wait given up on leaves no entry behind; a client gone ends every wait at once.
    #[tokio::test]
    async fn waits_end_when_given_up_on_or_when_the_client_goes() {
        let (relay, caller) = relay_capturing();
        let given_up = tokio::time::timeout(
            std::time::Duration::from_millis(10),
            caller.request("roots/list", Value::Null),
        )
        .await;
        assert!(given_up.is_err(), "no answer came");
        assert!(relay.pending.lock().expect("lock").waiting.is_empty());

        let waiting = tokio::spawn({
            let caller = caller.clone();
            async move { caller.request("roots/list", Value::Null).await }
        });
        while relay.pending.lock().expect("lock").waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        relay.close();
        let ended = waiting.await.expect("joined");
        assert!(
            matches!(&ended, Err(error) if error.message == "the client went away"),
            "{ended:?}"
        );
        let later = caller.request("roots/list", Value::Null).await;
        assert!(later.is_err(), "a closed relay asks nothing more");
    }

    #[test]
    fn a_relayed_id_names_its_replica_when_it_has_one() {
        let id = |text: &str| RequestId::String(text.to_owned());
        assert_eq!(
            owner_of(&id("sb-3f2a9c01d4e5b6a7-12")),
            Some("3f2a9c01d4e5b6a7")
        );
        assert_eq!(owner_of(&id("sb-12")), None, "a gateway without replicas");
        assert_eq!(owner_of(&id("sb--1")), None);
        assert_eq!(owner_of(&id("sb-r1-x")), None);
        assert_eq!(owner_of(&id("client-7")), None);
        assert_eq!(owner_of(&RequestId::Number(7)), None);
    }
}
