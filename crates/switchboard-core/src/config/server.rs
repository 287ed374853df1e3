//! `[servers.ID]` (and the JSON `mcpServers` / `servers` forms): one server's settings and
//! its per-tool overrides. The transport keys are read by [`super::transport`].

use std::num::NonZeroU8;

use super::builtin::{SETTINGS_KEYS, keys_of};
use super::model::{
    EraPreference, MAX_INSTANCES, ServerConfig, ToolOverrideConfig, Transport, Trust,
};
use super::tree::{Node, Pos, Value};
use super::validate::{Walk, is_name_text};

/// Keys a server entry may carry (native and JSON forms together).
pub(super) const SERVER_KEYS: [&str; 25] = [
    "category",
    "limits",
    "cost",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "transport",
    "type",
    "builtin",
    "prefix",
    "era",
    "trust",
    "call_timeout",
    "instances",
    "sandbox",
    "auth",
    "tls",
    "public_only",
    "tools",
    "enabled",
    "id",
    "name",
];
/// Keys other MCP clients write in the same files; accepted and ignored (`disabled` is mapped).
pub(super) const FOREIGN_SERVER_KEYS: [&str; 5] = [
    "disabled",
    "autoApprove",
    "alwaysAllow",
    "timeout",
    "description",
];
pub(super) const TOOL_KEYS: [&str; 15] = [
    "read_only",
    "probe",
    "probe_arguments",
    "estimated_duration_ms",
    "max_duration_ms",
    "idempotent",
    "cacheable_seconds",
    "approval",
    "destructive",
    "name",
    "description",
    "hidden",
    "category",
    "limits",
    "cost",
];
const MAX_ID_LEN: usize = 64;

impl Walk<'_> {
    /// `servers` / `mcpServers`: an object keyed by id, or the seeds' array of `{"id": …}`.
    pub(super) fn servers(&mut self, node: &Node, key: &str, servers: &mut Vec<ServerConfig>) {
        match &node.value {
            Value::Table(entries) => {
                for (id, id_pos, server) in entries {
                    self.server(id, *id_pos, server, key, servers);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    match item.get("id") {
                        Some(Node {
                            value: Value::String(id),
                            pos,
                        }) => self.server(id, *pos, item, key, servers),
                        Some(other) => self.problem(
                            other.pos,
                            format!(
                                "{key}[{index}].id must be a string, found {}",
                                other.value.kind()
                            ),
                            None,
                        ),
                        None => self.problem(
                            item.pos,
                            format!("{key}[{index}] has no \"id\""),
                            Some("each entry of a servers array needs an \"id\" string".to_owned()),
                        ),
                    }
                }
            }
            other => self.problem(
                node.pos,
                format!(
                    "{key} must be a table/object or an array, found {}",
                    other.kind()
                ),
                None,
            ),
        }
    }

    fn server(
        &mut self,
        id: &str,
        id_pos: Pos,
        node: &Node,
        section: &str,
        servers: &mut Vec<ServerConfig>,
    ) {
        let what = format!("{section}.{id}");
        if !is_valid_id(id) {
            self.problem(
                id_pos,
                format!("server id '{id}' is not allowed"),
                Some(format!("use 1-{MAX_ID_LEN} characters of A-Z a-z 0-9 _ -")),
            );
        }
        if servers.iter().any(|s| s.id == id) {
            self.problem(
                id_pos,
                format!("server id '{id}' is used twice"),
                Some("server ids must be unique across \"servers\" and \"mcpServers\"".to_owned()),
            );
        }
        let entries = self.table(node, &what);
        // A misspelled key is matched against the server keys and its built-in's settings.
        let known: Vec<&str> = match node.get("builtin").map(|n| &n.value) {
            Some(Value::String(name)) => SERVER_KEYS.iter().chain(keys_of(name)).copied().collect(),
            _ => SERVER_KEYS.to_vec(),
        };
        for (key, key_pos, _) in entries {
            if !SERVER_KEYS.contains(&key.as_str())
                && !FOREIGN_SERVER_KEYS.contains(&key.as_str())
                && !SETTINGS_KEYS.contains(&key.as_str())
            {
                self.unknown(*key_pos, key, &what, &known);
            }
        }
        let transport = self.transport(node, &what);
        if !matches!(transport, Some(Transport::Builtin { .. })) && node.get("builtin").is_none() {
            self.builtin_settings(node, None, &what);
        }
        // A placeholder keeps the walk going; the problem above already fails the config.
        let transport_known = transport.is_some();
        let placeholder = Transport::builtin("");
        let mut server = ServerConfig::new(id, transport.unwrap_or(placeholder));
        server.references = super::reference::references_in(node.get("env"), "env");
        server.references.extend(super::reference::references_in(
            node.get("headers"),
            "headers",
        ));
        let mut auth_pos = None;
        for (key, key_pos, value) in entries {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "name" => server.display_name = self.string(value, &key_what),
                "enabled" => server.enabled = self.bool(value, &key_what).unwrap_or(true),
                "disabled" => server.enabled = !self.bool(value, &key_what).unwrap_or(false),
                "prefix" => server.prefix = self.prefix(value, &key_what),
                "call_timeout" => server.call_timeout = self.duration(value, &key_what),
                "category" => server.category = self.category(value, &key_what),
                "limits" => server.limits = self.limits(value, &key_what),
                "cost" => server.cost = self.cost(value, &key_what),
                "era" => server.era = self.era(value, &key_what),
                "trust" => server.trust = self.trust(value, &key_what),
                "instances" => {
                    let transport = transport_known.then_some(&server.transport);
                    if let Some(instances) = self.instances(value, *key_pos, &key_what, transport) {
                        server.instances = instances;
                    }
                }
                "sandbox" => {
                    let transport = transport_known.then_some(&server.transport);
                    server.sandbox = self.server_sandbox(value, *key_pos, &key_what, transport);
                }
                "auth" => {
                    let transport = transport_known.then_some(&server.transport);
                    server.auth = self.upstream_auth(value, *key_pos, &key_what, transport);
                    auth_pos = Some(value.pos);
                }
                "tls" => {
                    let transport = transport_known.then_some(&server.transport);
                    server.tls = self.upstream_tls(value, *key_pos, &key_what, transport);
                }
                "public_only" => {
                    let transport = transport_known.then_some(&server.transport);
                    server.public_only = self.public_only(value, *key_pos, &key_what, transport);
                }
                "tools" => {
                    for (tool, _, spec) in self.table(value, &key_what) {
                        let spec = self.tool_override(spec, &format!("{key_what}.{tool}"));
                        server.tools.insert(tool.clone(), spec);
                    }
                }
                _ => {}
            }
        }
        if let (Some(pos), Some(auth)) = (auth_pos, &server.auth)
            && auth.server_tls
            && server.tls.is_none()
        {
            self.problem(
                pos,
                format!("{what}.auth.server_tls asks for the server's tls, and it has none"),
                Some(format!("set {what}.tls, or drop server_tls")),
            );
        }
        servers.push(server);
    }

    /// `public_only`: every connection to this HTTP server goes to public internet
    /// addresses only, checked as it is made. Refused at the key on a stdio or built-in
    /// server, whose connections (if any) the gateway does not make; `None` (the transport
    /// unknown after a problem of its own) judges only the value.
    fn public_only(
        &mut self,
        node: &Node,
        key_pos: Pos,
        what: &str,
        transport: Option<&Transport>,
    ) -> bool {
        if let Some(Transport::Stdio { .. } | Transport::Builtin { .. }) = transport {
            self.problem(
                key_pos,
                format!("{what} is for HTTP servers (\"url\"), and this one is not"),
                Some(
                    "it holds the gateway's connections to a server's url to public \
                     addresses; a process or a built-in reaches what it likes"
                        .to_owned(),
                ),
            );
            return false;
        }
        self.bool(node, what).unwrap_or(false)
    }

    /// `instances`: how many processes of a stdio server run side by side (1..=64). Refused
    /// at the key on any other transport, which has no process to start several of; `None`
    /// (the transport unknown after a problem of its own) judges only the value.
    fn instances(
        &mut self,
        node: &Node,
        key_pos: Pos,
        what: &str,
        transport: Option<&Transport>,
    ) -> Option<NonZeroU8> {
        let not_here = match transport {
            None | Some(Transport::Stdio { .. }) => None,
            Some(Transport::Http { .. } | Transport::Sse { .. }) => Some((
                "\"url\"",
                "an HTTP server is one endpoint: to spread its load, run its replicas behind a \
                 load balancer and give that URL",
            )),
            Some(Transport::Builtin { .. }) => Some((
                "\"builtin\"",
                "a built-in runs inside the gateway: there is no process to start several of",
            )),
        };
        if let Some((chosen, hint)) = not_here {
            self.problem(
                key_pos,
                format!("{what} is for stdio servers, but this one has {chosen}"),
                Some(hint.to_owned()),
            );
            return None;
        }
        let range = 1..=i64::from(MAX_INSTANCES);
        match node.value {
            Value::Integer(n) if range.contains(&n) => {
                u8::try_from(n).ok().and_then(NonZeroU8::new)
            }
            Value::Integer(n) => {
                self.problem(
                    node.pos,
                    format!("{what} must be from 1 to {MAX_INSTANCES}, found {n}"),
                    Some(
                        "1 (the default) runs one process; more run side by side, for servers \
                         whose tools keep no state between calls"
                            .to_owned(),
                    ),
                );
                None
            }
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be an integer from 1 to {MAX_INSTANCES}, found {}",
                        other.described()
                    ),
                    None,
                );
                None
            }
        }
    }

    fn prefix(&mut self, node: &Node, what: &str) -> Option<String> {
        let prefix = self.string(node, what)?;
        if !is_name_text(&prefix) {
            self.problem(
                node.pos,
                format!("prefix '{prefix}' is not allowed"),
                Some("use A-Z a-z 0-9 _ - . or \"\" for no prefix".to_owned()),
            );
        }
        Some(prefix)
    }

    /// A category path: levels of `A-Z a-z 0-9 _ - .` separated by single `/`.
    fn category(&mut self, node: &Node, what: &str) -> Option<String> {
        let category = self.string(node, what)?;
        let valid = !category.is_empty()
            && category
                .split('/')
                .all(|level| !level.is_empty() && is_name_text(level));
        if !valid {
            self.problem(
                node.pos,
                format!("category '{category}' is not allowed"),
                Some(
                    "use levels of A-Z a-z 0-9 _ - . separated by /, e.g. \"games/dice\""
                        .to_owned(),
                ),
            );
            return None;
        }
        Some(category)
    }

    fn era(&mut self, node: &Node, what: &str) -> EraPreference {
        match self.string(node, what).as_deref() {
            Some("auto") | None => EraPreference::Auto,
            Some("legacy") => EraPreference::Legacy,
            Some("modern") => EraPreference::Modern,
            Some(other) => {
                self.problem(
                    node.pos,
                    format!("era '{other}' is not known"),
                    Some("use \"auto\", \"legacy\" or \"modern\"".to_owned()),
                );
                EraPreference::Auto
            }
        }
    }

    fn trust(&mut self, node: &Node, what: &str) -> Trust {
        self.trust_mode(node, what).unwrap_or_default()
    }

    /// `"auto"` or `"pinned"`; None after reporting a problem.
    pub(super) fn trust_mode(&mut self, node: &Node, what: &str) -> Option<Trust> {
        match self.string(node, what)?.as_str() {
            "auto" => Some(Trust::Auto),
            "pinned" => Some(Trust::Pinned),
            other => {
                self.problem(
                    node.pos,
                    format!("trust '{other}' is not known"),
                    Some("use \"auto\" or \"pinned\"".to_owned()),
                );
                None
            }
        }
    }

    fn tool_override(&mut self, node: &Node, what: &str) -> ToolOverrideConfig {
        let mut spec = ToolOverrideConfig::default();
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "name" => {
                    spec.name = self.string(value, &key_what);
                    if spec.name.as_deref() == Some("") {
                        self.problem(
                            value.pos,
                            format!("{key_what} is empty"),
                            Some(
                                "omit it to keep the upstream name, or set hidden = true"
                                    .to_owned(),
                            ),
                        );
                    }
                }
                "description" => spec.description = self.string(value, &key_what),
                "hidden" => spec.hidden = self.bool(value, &key_what).unwrap_or(false),
                "category" => spec.category = self.category(value, &key_what),
                "limits" => spec.limits = self.limits(value, &key_what),
                "cost" => spec.cost = self.cost(value, &key_what),
                "approval" => spec.approval = self.approval(value, &key_what),
                "destructive" => spec.destructive = self.bool(value, &key_what),
                "read_only" => spec.read_only = self.bool(value, &key_what),
                "estimated_duration_ms" => {
                    spec.latency.estimated_duration_ms = self.millis(value, &key_what);
                }
                "max_duration_ms" => spec.latency.max_duration_ms = self.millis(value, &key_what),
                "idempotent" => spec.latency.idempotent = self.bool(value, &key_what),
                "cacheable_seconds" => {
                    spec.latency.cacheable_seconds = self.millis(value, &key_what);
                }
                "probe" => spec.probe = self.bool(value, &key_what),
                "probe_arguments" => match value.to_json() {
                    serde_json::Value::Object(arguments) => spec.probe_arguments = Some(arguments),
                    _ => self.problem(
                        value.pos,
                        format!("{key_what} must be a table, not {}", value.value.kind()),
                        Some("e.g. probe_arguments = { query = \"ping\" }".to_owned()),
                    ),
                },
                other => self.unknown(*key_pos, other, what, &TOOL_KEYS),
            }
        }
        spec
    }
}

/// A server id: 1–64 characters of `A-Z a-z 0-9 _ -`.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
