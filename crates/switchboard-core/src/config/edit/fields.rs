//! The keys and values of a new server entry before either format writes them: the transport's
//! keys in the order a person writes them (`command`, `args`, `env`, `cwd`; `url`, the SSE
//! marker, `headers`, `tls`, `public_only`; `builtin`), then `sandbox` and `trust`, shared by
//! the TOML and the JSON editors.

use std::collections::BTreeMap;

use super::{EntrySandbox, EntryTls, EntryTransport};
use crate::config::Trust;

/// A value of a new entry.
pub(super) enum Field {
    Text(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
    Bool(bool),
    Integer(u64),
    /// An inline table of mixed values (a sandbox).
    Table(Vec<(&'static str, Field)>),
}

impl Field {
    fn text(text: &str) -> Self {
        Self::Text(text.to_owned())
    }

    fn map(map: &BTreeMap<String, String>) -> Self {
        Self::Map(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

/// The keys of `transport`, in the order a person writes them. `sse_key` names the key that
/// marks the legacy SSE transport (`"sse"`), or None where the file says so elsewhere.
pub(super) fn transport_fields(
    transport: &EntryTransport,
    sse_key: Option<&'static str>,
) -> Vec<(&'static str, Field)> {
    let mut fields = Vec::new();
    match transport {
        EntryTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            fields.push(("command", Field::text(command)));
            if !args.is_empty() {
                fields.push(("args", Field::List(args.clone())));
            }
            if !env.is_empty() {
                fields.push(("env", Field::map(env)));
            }
            fields.extend(cwd.as_deref().map(|cwd| ("cwd", Field::text(cwd))));
        }
        EntryTransport::Http {
            url,
            headers,
            tls,
            public_only,
        }
        | EntryTransport::Sse {
            url,
            headers,
            tls,
            public_only,
        } => {
            fields.push(("url", Field::text(url)));
            if let (EntryTransport::Sse { .. }, Some(key)) = (transport, sse_key) {
                fields.push((key, Field::text("sse")));
            }
            if !headers.is_empty() {
                fields.push(("headers", Field::map(headers)));
            }
            fields.extend(tls.as_ref().map(tls_field));
            if *public_only {
                fields.push(("public_only", Field::Bool(true)));
            }
        }
        EntryTransport::Builtin { name } => fields.push(("builtin", Field::text(name))),
    }
    fields
}

/// The `tls` key of a new entry: the table of the files given.
fn tls_field(tls: &EntryTls) -> (&'static str, Field) {
    let keys = [("ca", &tls.ca), ("cert", &tls.cert), ("key", &tls.key)]
        .into_iter()
        .filter_map(|(key, path)| path.as_deref().map(|path| (key, Field::text(path))))
        .collect();
    ("tls", Field::Table(keys))
}

/// The `sandbox` key of a new entry: `false`, `true`, or the table of what was set.
pub(super) fn sandbox_field(sandbox: &EntrySandbox) -> (&'static str, Field) {
    if sandbox.off {
        return ("sandbox", Field::Bool(false));
    }
    let mut keys = Vec::new();
    for (key, value) in [
        ("memory", &sandbox.memory),
        ("cpu", &sandbox.cpu),
        ("user", &sandbox.user),
        ("network", &sandbox.network),
    ] {
        keys.extend(value.as_deref().map(|value| (key, Field::text(value))));
    }
    for (key, count) in [("files", sandbox.files), ("processes", sandbox.processes)] {
        keys.extend(count.map(|count| (key, Field::Integer(count))));
    }
    if sandbox.inherit_env {
        keys.push(("inherit_env", Field::Bool(true)));
    }
    for (key, paths) in [
        ("readable", &sandbox.readable),
        ("writable", &sandbox.writable),
    ] {
        if !paths.is_empty() {
            keys.push((key, Field::List(paths.clone())));
        }
    }
    if keys.is_empty() {
        ("sandbox", Field::Bool(true))
    } else {
        ("sandbox", Field::Table(keys))
    }
}

/// The `trust` key of a new entry.
pub(super) fn trust_field(trust: Trust) -> (&'static str, Field) {
    let text = match trust {
        Trust::Auto => "auto",
        Trust::Pinned => "pinned",
    };
    ("trust", Field::text(text))
}
