//! `bench manager`'s side of the admin endpoint ([`crate::admin`]): the server manager's
//! routes (`POST /operations`, `GET /operations/{id}`), and the requests it queues.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::admin::Admin;

impl Admin {
    /// Queues an operation (`POST /operations` with a manager `Request`); its id.
    pub fn queue(&self, request: &Value) -> anyhow::Result<String> {
        let answer = self.send("POST", "/operations", Some(request))?;
        answer
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("POST /operations answered no id: {answer}"))
    }

    /// The operation `id` as it stands (`GET /operations/{id}`).
    pub fn operation(&self, id: &str) -> anyhow::Result<Value> {
        self.send("GET", &format!("/operations/{id}"), None)
    }

    /// The operation `id` once it is over, waiting up to `limit`.
    pub fn finished(&self, id: &str, limit: Duration) -> anyhow::Result<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let wait_ms = deadline
                .saturating_duration_since(Instant::now())
                .as_millis()
                .clamp(1, 30_000);
            let operation =
                self.send("GET", &format!("/operations/{id}?wait_ms={wait_ms}"), None)?;
            if is_final(&operation) || Instant::now() >= deadline {
                return Ok(operation);
            }
        }
    }
}

/// The install request of the benchmark: `name` as server `server`, activated at once.
pub fn install_request(name: &str, server: &str) -> Value {
    json!({
        "work": {
            "op": "install",
            "name": name,
            "version": null,
            "server": server,
            "values": {},
            "activation": "now",
        },
        "priority": "medium",
    })
}

/// The request removing (and uninstalling) `server`.
pub fn remove_request(server: &str) -> Value {
    json!({"work": {"op": "remove", "server": server}, "priority": "medium"})
}

/// An operation's state (`queued`, `in_progress`, `completed`, …).
pub fn state(operation: &Value) -> &str {
    operation
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
}

/// Whether an operation is over.
pub fn is_final(operation: &Value) -> bool {
    matches!(state(operation), "completed" | "failed" | "cancelled")
}
