//! `bench live`'s side of the admin endpoint ([`crate::admin`]): `POST /changes`, and the
//! change report read back and checked.

use anyhow::{Context, bail};
use serde_json::{Value, json};

pub use crate::admin::Admin;

impl Admin {
    /// Adds the stdio server `name` running `command args`; returns its part of the report.
    pub fn add_stdio(&self, name: &str, command: &str, args: &[&str]) -> anyhow::Result<Value> {
        let entry = json!({"transport": {"kind": "stdio", "command": command, "args": args}});
        let report = self
            .change(&json!({"op": "add", "server": name, "entry": entry}))
            .with_context(|| format!("adding server {name}"))?;
        outcome(&report, name).with_context(|| format!("adding server {name}"))
    }

    /// Removes the server `name`; returns its part of the report.
    pub fn remove(&self, name: &str) -> anyhow::Result<Value> {
        let report = self
            .change(&json!({"op": "remove", "server": name}))
            .with_context(|| format!("removing server {name}"))?;
        outcome(&report, name).with_context(|| format!("removing server {name}"))
    }

    /// One `POST /changes`; its change report.
    fn change(&self, body: &Value) -> anyhow::Result<Value> {
        self.send("POST", "/changes", Some(body))
    }
}

/// `name`'s part of a change report, which must say it was applied without error.
pub fn outcome(report: &Value, name: &str) -> anyhow::Result<Value> {
    let server = report
        .get("servers")
        .and_then(Value::as_array)
        .and_then(|servers| {
            servers
                .iter()
                .find(|s| s.get("server") == Some(&json!(name)))
        })
        .with_context(|| format!("the change report does not name {name}: {report}"))?;
    if server.get("applied") != Some(&Value::Bool(true)) {
        bail!("not applied: {server}");
    }
    if let Some(error) = server.get("error").filter(|e| !e.is_null()) {
        bail!("applied with an error: {error}");
    }
    Ok(server.clone())
}

/// The new server's own start, handshake and listing time in an add's outcome, in ms.
pub fn connect_ms(outcome: &Value) -> anyhow::Result<f64> {
    outcome
        .get("connect_ms")
        .and_then(Value::as_f64)
        .with_context(|| format!("the add's report has no connect_ms: {outcome}"))
}
