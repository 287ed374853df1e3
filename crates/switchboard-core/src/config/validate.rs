//! One walk over the [`Node`] tree that builds a [`Config`] and collects every problem.
//!
//! The walk never stops at the first problem: a bad value is reported and replaced by its
//! default so the rest of the file is still checked. Servers are in [`super::server`], their
//! transports in [`super::transport`]; this file holds the root, `[gateway]`, `[aliases]` and
//! the typed readers (string with substitution, bool, duration, …) they all share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::duration::{DURATION_HINT, parse_duration};
use super::model::{Config, GatewayConfig, TelemetryConfig, busy_poll_window};
use super::problem::{ConfigErrors, Origin, Problem};
use super::substitute::{Environment, substitute};
use super::suggest;
use super::tree::{Node, Pos, Value};
use super::{Format, ParsedText};

pub(super) const ROOT_KEYS: [&str; 15] = [
    "auth",
    "telemetry",
    "shared",
    "storage",
    "manager",
    "tiers",
    "latency",
    "hooks",
    "gateway",
    "servers",
    "aliases",
    "mcpServers",
    "agents",
    "capabilities",
    "inputs",
];
pub(super) const GATEWAY_KEYS: [&str; 24] = [
    "ledger",
    "ledger_retention_days",
    "ledger_max_rows",
    "pins",
    "token_file",
    "approval",
    "approval_timeout",
    "approval_key",
    "exposure",
    "limits",
    "separator",
    "prefix_tools",
    "call_timeout",
    "connect_timeout",
    "discover_timeout",
    "max_message_bytes",
    "header_timeout",
    "max_connections",
    "busy_poll",
    "watch",
    "read_only",
    "drain_timeout",
    "sandbox",
    "tasks",
];
/// The smallest `max_message_bytes` accepted (an `initialize` response must fit).
const MIN_MESSAGE_BYTES: i64 = 1024;

/// The state of one walk: where problems go, and what positions refer to.
pub(super) struct Walk<'a> {
    origin: String,
    /// The source text, to turn a byte offset inside a string into a line and column.
    text: &'a str,
    pub(super) env: &'a dyn Environment,
    /// The config file's directory: relative paths in the file are taken from it.
    base_dir: Option<PathBuf>,
    /// The tiers agents and their scopes name (by who names them: "agent 'x'") and where,
    /// checked once `[tiers]` is read.
    pub(super) agent_tiers: BTreeMap<String, (String, Pos)>,
    problems: Vec<Problem>,
}

/// Builds a [`Config`] from a parsed tree, or returns every problem found.
pub fn validate(
    parsed: &ParsedText<'_>,
    origin: &Origin,
    env: &dyn Environment,
) -> Result<Config, ConfigErrors> {
    let root = parsed.root;
    let mut walk = Walk {
        origin: origin.to_string(),
        text: parsed.text,
        env,
        base_dir: origin
            .path()
            .and_then(|path| path.parent())
            .map(ToOwned::to_owned),
        problems: Vec::new(),
        agent_tiers: BTreeMap::new(),
    };
    let mut config = Config {
        source: origin.path().map(ToOwned::to_owned),
        source_digest: origin.path().map(|_| {
            crate::hex::encode(&<sha2::Sha256 as sha2::Digest>::digest(
                parsed.text.as_bytes(),
            ))
        }),
        gateway: GatewayConfig::default(),
        servers: Vec::new(),
        aliases: BTreeMap::new(),
        capabilities: BTreeMap::new(),
        agents: BTreeMap::new(),
        hooks: Vec::new(),
        tiers: super::tiers::default_tiers(),
        latency: super::model::LatencyConfig::default(),
        manager: super::model::ManagerConfig::default(),
        auth: super::auth::AuthConfig::default(),
        telemetry: TelemetryConfig::default(),
        shared: super::shared::SharedConfig::default(),
        storage: super::model::StorageConfig::default(),
    };
    let Value::Table(entries) = &root.value else {
        walk.problem(
            root.pos,
            format!(
                "the config must be a table/object, found {}",
                root.value.kind()
            ),
            None,
        );
        return Err(ConfigErrors(walk.problems));
    };
    // Capabilities first: agents refer to them wherever they are written.
    if let Some((_, _, node)) = entries.iter().find(|(key, _, _)| key == "capabilities") {
        config.capabilities = walk.capabilities(node);
    }
    for (key, key_pos, node) in entries {
        match key.as_str() {
            "capabilities" => {}
            "hooks" => config.hooks = walk.hooks(node),
            "tiers" => config.tiers = walk.tiers(node),
            "latency" => config.latency = walk.latency(node),
            "manager" => config.manager = walk.manager(node),
            "auth" => config.auth = walk.auth(node),
            "telemetry" => config.telemetry = walk.telemetry(node),
            "shared" => config.shared = walk.shared(node),
            "storage" => config.storage = walk.storage(node),
            "agents" => config.agents = walk.agents(node, &config.capabilities),
            "gateway" => walk.gateway(node, &mut config.gateway),
            "aliases" => config.aliases = walk.string_map(node, "aliases"),
            "servers" | "mcpServers" => walk.servers(node, key, &mut config.servers),
            // VS Code's mcp.json: the prompts behind its `${input:ID}` references. Read by
            // VS Code, not here; a reference to one is refused where it is used.
            "inputs" => {}
            other => walk.unknown(*key_pos, other, "", &ROOT_KEYS),
        }
    }
    super::sessions_database::follow_memory_database(&mut config.servers);
    if let Some((_, _, node)) = entries.iter().find(|(key, _, _)| key == "auth") {
        walk.check_auth_agents(&config.auth, &config.agents, node.pos);
    }
    if let Some((_, _, node)) = entries.iter().find(|(key, _, _)| key == "agents") {
        walk.check_scopes_need_oauth(&config.auth, node);
    }
    let wanted = std::mem::take(&mut walk.agent_tiers);
    walk.check_tier_names(&config.tiers, &wanted);
    let has_servers = entries
        .iter()
        .any(|(k, _, _)| k == "servers" || k == "mcpServers");
    if parsed.format == Format::Json && !has_servers {
        walk.problem(
            root.pos,
            "no servers: expected an \"mcpServers\" object or a \"servers\" object or array",
            Some("see docs/config.md for the JSON shapes Switchboard reads".to_owned()),
        );
    }
    if walk.problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(walk.problems))
    }
}

impl Walk<'_> {
    pub(super) fn base_dir(&self) -> Option<&Path> {
        self.base_dir.as_deref()
    }

    pub(super) fn problem(&mut self, pos: Pos, message: impl Into<String>, hint: Option<String>) {
        self.problems.push(Problem::new(
            &self.origin,
            pos.line,
            pos.column,
            message,
            hint,
        ));
    }

    /// An unknown key, with the closest known one as a hint.
    pub(super) fn unknown(&mut self, pos: Pos, key: &str, section: &str, known: &[&str]) {
        let place = if section.is_empty() {
            String::new()
        } else {
            format!(" in {section}")
        };
        let hint = suggest::hint(key, known, "known keys");
        self.problem(pos, format!("unknown key '{key}'{place}"), Some(hint));
    }

    pub(super) fn table<'n>(&mut self, node: &'n Node, what: &str) -> &'n [(String, Pos, Node)] {
        match &node.value {
            Value::Table(entries) => entries,
            other => {
                self.problem(
                    node.pos,
                    format!("{what} must be a table/object, found {}", other.kind()),
                    None,
                );
                &[]
            }
        }
    }

    /// A string with `${VAR}` references expanded.
    pub(super) fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::String(text) => match substitute(text, self.env) {
                Ok(expanded) => Some(expanded),
                Err(error) => {
                    let pos = self.dollar_pos(node.pos, text, error.offset);
                    self.problem(pos, format!("{what}: {}", error.message), error.hint);
                    None
                }
            },
            other => {
                self.problem(
                    node.pos,
                    format!("{what} must be a string, found {}", other.kind()),
                    None,
                );
                None
            }
        }
    }

    /// Where the `$` at byte `offset` of a decoded string was written in the source: the
    /// same-numbered `$` after the string's start (escapes never produce one in practice).
    fn dollar_pos(&self, start: Pos, decoded: &str, offset: usize) -> Pos {
        let nth = decoded
            .get(..offset)
            .map_or(0, |before| before.matches('$').count());
        self.text
            .get(start.offset..)
            .and_then(|raw| raw.match_indices('$').nth(nth))
            .map_or(start, |(at, _)| Pos::at(self.text, start.offset + at))
    }

    pub(super) fn bool(&mut self, node: &Node, what: &str) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            ref other => {
                self.problem(
                    node.pos,
                    format!("{what} must be true or false, found {}", other.kind()),
                    None,
                );
                None
            }
        }
    }

    pub(super) fn strings(&mut self, node: &Node, what: &str) -> Vec<String> {
        match &node.value {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| self.string(item, &format!("{what}[{i}]")))
                .collect(),
            other => {
                self.problem(
                    node.pos,
                    format!("{what} must be an array of strings, found {}", other.kind()),
                    None,
                );
                Vec::new()
            }
        }
    }

    pub(super) fn string_map(&mut self, node: &Node, what: &str) -> BTreeMap<String, String> {
        let entries = self.table(node, what);
        entries
            .iter()
            .filter_map(|(key, _, value)| {
                Some((key.clone(), self.string(value, &format!("{what}.{key}"))?))
            })
            .collect()
    }

    pub(super) fn duration(&mut self, node: &Node, what: &str) -> Option<Duration> {
        let parsed = match &node.value {
            Value::Integer(ms) => u64::try_from(*ms).ok().map(Duration::from_millis),
            Value::String(_) => parse_duration(&self.string(node, what)?),
            _ => None,
        };
        if parsed.is_none() {
            self.problem(
                node.pos,
                format!("{what} is not a duration"),
                Some(DURATION_HINT.to_owned()),
            );
        }
        parsed
    }

    fn gateway(&mut self, node: &Node, gateway: &mut GatewayConfig) {
        for (key, key_pos, value) in self.table(node, "gateway") {
            let what = format!("gateway.{key}");
            match key.as_str() {
                "separator" => {
                    if let Some(separator) = self.string(value, &what) {
                        if is_name_text(&separator) && !separator.is_empty() {
                            gateway.separator = separator;
                        } else {
                            self.problem(
                                value.pos,
                                format!("separator '{separator}' is not allowed"),
                                Some("use one or more of A-Z a-z 0-9 _ - . (default \"__\", which every LLM API accepts)".to_owned()),
                            );
                        }
                    }
                }
                "prefix_tools" => gateway.prefix_tools = self.bool(value, &what).unwrap_or(true),
                "watch" => gateway.watch = self.bool(value, &what).unwrap_or(true),
                "read_only" => gateway.read_only = self.bool(value, &what).unwrap_or(false),
                "drain_timeout" => {
                    gateway.drain_timeout =
                        self.duration(value, &what).unwrap_or(gateway.drain_timeout);
                }
                "limits" => gateway.limits = self.limits(value, &what),
                "sandbox" => gateway.sandbox = Some(self.sandbox(value, &what)),
                "tasks" => gateway.tasks = self.tasks(value, &what),
                "approval" => {
                    gateway.approval = self.approval(value, &what).unwrap_or_default();
                }
                "approval_timeout" => {
                    gateway.approval_timeout = self
                        .duration(value, &what)
                        .unwrap_or(gateway.approval_timeout);
                }
                "approval_key" => gateway.approval_key = self.string(value, &what),
                "token_file" => gateway.token_file = self.path(value, &what),
                "ledger" => gateway.ledger = self.path(value, &what),
                "ledger_retention_days" => gateway.ledger_retention_days = self.count(value, &what),
                "ledger_max_rows" => gateway.ledger_max_rows = self.count(value, &what),
                "pins" => gateway.pins = self.path(value, &what),
                "exposure" => {
                    gateway.exposure = self.exposure(value, &what).unwrap_or(gateway.exposure);
                }
                "call_timeout" => {
                    gateway.call_timeout =
                        self.duration(value, &what).unwrap_or(gateway.call_timeout);
                }
                "connect_timeout" => {
                    gateway.connect_timeout = self
                        .duration(value, &what)
                        .unwrap_or(gateway.connect_timeout);
                }
                "discover_timeout" => {
                    gateway.discover_timeout = self
                        .duration(value, &what)
                        .unwrap_or(gateway.discover_timeout);
                }
                "busy_poll" => match self.duration(value, &what).map(busy_poll_window) {
                    Some(Ok(window)) => gateway.busy_poll = window,
                    Some(Err(problem)) => self.problem(
                        value.pos,
                        format!("{what} {problem}"),
                        Some(
                            "a window of 50us to 200us catches quick answers; \"0\" turns polling off"
                                .to_owned(),
                        ),
                    ),
                    None => {}
                },
                "max_message_bytes" => match value.value {
                    Value::Integer(n) if n >= MIN_MESSAGE_BYTES => {
                        gateway.max_message_bytes = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                    _ => self.problem(
                        value.pos,
                        format!("{what} must be an integer of at least {MIN_MESSAGE_BYTES}"),
                        Some("the default is 16777216 (16 MiB)".to_owned()),
                    ),
                },
                "header_timeout" => {
                    if let Some(timeout) = self.duration(value, &what) {
                        gateway.header_timeout = (!timeout.is_zero()).then_some(timeout);
                    }
                }
                "max_connections" => {
                    if let Some(n) = self.unsigned(value, &what, 1) {
                        gateway.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                }
                other => self.unknown(*key_pos, other, "[gateway]", &GATEWAY_KEYS),
            }
        }
    }
}

/// Only characters every LLM API accepts in a tool name: `A-Z a-z 0-9 _ - .`.
pub(super) fn is_name_text(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}
