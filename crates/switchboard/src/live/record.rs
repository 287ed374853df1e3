//! Configuration changes as rows of the audit ledger: who, through which surface, what, and
//! the server's entry before and after — secret values (env, headers) redacted, `${VAR}`
//! references shown.

use serde_json::{Value, json};
use switchboard_core::config::{Config, SandboxSetting, ServerConfig, Transport};
use switchboard_core::pipeline::ChangeRecord;

use super::{Action, ChangeError, ChangeRequest, ServerOutcome, Surface};
use crate::Host;

/// What stands in for a secret value.
const REDACTED: &str = "[redacted]";

impl Host {
    /// One ledger row per server a change or reload touched.
    pub(super) fn record_changes(
        &self,
        by: Surface,
        actor: Option<&str>,
        before: &Config,
        after: &Config,
        outcomes: &[ServerOutcome],
    ) {
        let recorder = self.inner.pipeline.recorder();
        for outcome in outcomes.iter().filter(|o| o.action != Action::Unchanged) {
            let verdict = if outcome.applied { "applied" } else { "failed" };
            recorder.record_change(&ChangeRecord {
                before: entry_of(before, &outcome.server),
                after: entry_of(after, &outcome.server),
                error: outcome.error.clone(),
                ..ChangeRecord::now(
                    by.as_str(),
                    actor,
                    outcome.action.as_str(),
                    &outcome.server,
                    verdict,
                )
            });
        }
    }

    /// The ledger row of a change that was refused or failed.
    pub(super) fn record_refusal(&self, request: &ChangeRequest, error: &ChangeError) {
        let server = request.change.server();
        self.inner.pipeline.recorder().record_change(&ChangeRecord {
            before: self.config().and_then(|config| entry_of(&config, server)),
            error: Some(format!("{}: {error}", error.code())),
            ..ChangeRecord::now(
                request.by.as_str(),
                request.actor.as_deref(),
                request.change.action(),
                server,
                "refused",
            )
        });
    }
}

/// A server's entry as the ledger and `servers show` see it, secrets redacted.
pub(crate) fn entry_of(config: &Config, server: &str) -> Option<Value> {
    config.server(server).map(redacted_entry)
}

/// The entry with every literal env and header value replaced by `[redacted]` (the keys
/// stay; a `${VAR}` reference shown as written, its default redacted), and a URL's user
/// info and query; the paths of its `tls` files, its own `sandbox` and
/// `public_only` (when set) as they are.
pub fn redacted_entry(server: &ServerConfig) -> Value {
    // A `${VAR}` reference is shown as written: it names where a secret is, not the secret.
    let hide = |map: &std::collections::BTreeMap<String, String>, table: &str| -> Value {
        map.keys()
            .map(|key| {
                let shown = server
                    .references
                    .get(&format!("{table}.{key}"))
                    .map_or(REDACTED, String::as_str);
                (key.clone(), Value::String(shown.to_owned()))
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let transport = match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!({"command": command, "args": args, "env": hide(env, "env"), "cwd": cwd}),
        Transport::Http { url, headers } => {
            json!({"url": switchboard_core::config::redacted_url(url), "headers": hide(headers, "headers")})
        }
        Transport::Sse { url, headers } => {
            json!({"url": switchboard_core::config::redacted_url(url), "transport": "sse", "headers": hide(headers, "headers")})
        }
        Transport::Builtin { name, .. } => json!({"builtin": name}),
    };
    let mut entry = json!({"id": server.id, "enabled": server.enabled});
    if let (Value::Object(entry), Value::Object(transport)) = (&mut entry, transport) {
        entry.extend(transport);
        if let Some(prefix) = &server.prefix {
            entry.insert("prefix".into(), json!(prefix));
        }
        if !server.tools.is_empty() {
            entry.insert(
                "tools".into(),
                json!(server.tools.keys().collect::<Vec<_>>()),
            );
        }
        if let Some(sandbox) = sandbox_of(&server.sandbox) {
            entry.insert("sandbox".into(), sandbox);
        }
        // Paths, not secrets: a change of files is seen in the record.
        if let Some(tls) = &server.tls {
            entry.insert(
                "tls".into(),
                json!({"ca": tls.ca, "cert": tls.cert, "key": tls.key}),
            );
        }
        if server.public_only {
            entry.insert("public_only".into(), json!(true));
        }
    }
    entry
}

/// A server's own `sandbox` as its entry says it: false, true, or the table (limits in bytes,
/// seconds and counts); None when it says nothing (the gateway's default applies).
fn sandbox_of(setting: &SandboxSetting) -> Option<Value> {
    match setting {
        SandboxSetting::Default => None,
        SandboxSetting::Off => Some(Value::Bool(false)),
        SandboxSetting::On => Some(Value::Bool(true)),
        SandboxSetting::Own(sandbox) => Some(json!({
            "memory": sandbox.memory,
            "cpu": sandbox.cpu.map(|cpu| cpu.as_secs_f64()),
            "files": sandbox.files,
            "processes": sandbox.processes,
            "inherit_env": sandbox.inherit_env,
            "readable": sandbox.readable,
            "writable": sandbox.writable,
            "network": sandbox.network.as_str(),
            "user": sandbox.user,
        })),
    }
}
