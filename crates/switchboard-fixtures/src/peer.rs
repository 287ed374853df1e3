//! The `conformance` fixture's side of its connection: [`Peer`] sends answers and
//! notifications, asks the client things mid-call (`Peer::ask`, answered through the
//! reading loop) and keeps one cancel flag per running `tools/call`, which a
//! `notifications/cancelled` for that request raises.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::server::Out;

pub(crate) type Pending = Arc<Mutex<HashMap<i64, Sender<Value>>>>;

pub(crate) struct Peer {
    pub out: Out,
    pub pending: Pending,
    pub next_id: AtomicI64,
    /// Flipped by each `test_trigger_tool_change`: while set, the tool list holds one more
    /// tool, so every trigger really changes the list.
    pub grown: AtomicBool,
    /// Flipped by each `test_trigger_prompt_change`: while set, the prompt list holds one more
    /// prompt.
    pub prompts_grown: AtomicBool,
    /// The cancel flags of the running calls, by their request id (as JSON text).
    pub cancels: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// The resource URIs the client subscribed to.
    subscribed: Mutex<std::collections::BTreeSet<String>>,
}

impl Peer {
    pub fn new(out: Out, pending: Pending) -> Self {
        Self {
            out,
            pending,
            next_id: AtomicI64::new(1_000_000),
            grown: AtomicBool::new(false),
            prompts_grown: AtomicBool::new(false),
            cancels: Mutex::default(),
            subscribed: Mutex::default(),
        }
    }

    /// Notes a `resources/subscribe` (`true`) or `resources/unsubscribe` of `uri`.
    pub fn note_subscription(&self, uri: &str, subscribed: bool) {
        if let Ok(mut uris) = self.subscribed.lock() {
            if subscribed {
                uris.insert(uri.to_owned());
            } else {
                uris.remove(uri);
            }
        }
    }

    /// The resource URIs subscribed to now, in order.
    pub fn subscriptions(&self) -> Vec<String> {
        self.subscribed
            .lock()
            .map(|uris| uris.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Sends a request to the client and waits for its answer: the result, or the error
    /// object.
    pub fn ask(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        self.out
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| error_object(-32603, "no answer from the client"))?;
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    pub fn log(&self, text: &str) {
        self.log_at("info", text);
    }

    pub fn log_at(&self, level: &str, text: &str) {
        self.out.notify(
            "notifications/message",
            json!({"level": level, "data": text}),
        );
    }

    /// The cancel flag of request `id`, registered before the call starts so that a
    /// cancellation arriving at once is not lost.
    pub fn register(&self, id: &Value) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        if let Ok(mut cancels) = self.cancels.lock() {
            cancels.insert(id.to_string(), flag.clone());
        }
        flag
    }

    /// Forgets request `id`'s flag once its call is over.
    pub fn finish(&self, id: &Value) {
        if let Ok(mut cancels) = self.cancels.lock() {
            cancels.remove(&id.to_string());
        }
    }

    /// Raises the flag of the request a `notifications/cancelled` names, if it still runs.
    pub fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId") else {
            return;
        };
        if let Some(flag) = self
            .cancels
            .lock()
            .ok()
            .and_then(|cancels| cancels.get(&id.to_string()).cloned())
        {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// A JSON-RPC error object.
pub(crate) fn error_object(code: i64, message: impl Into<String>) -> Value {
    json!({"code": code, "message": message.into()})
}

/// The message of an error object.
pub(crate) fn message_of(error: &Value) -> &str {
    error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error")
}
