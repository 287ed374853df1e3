//! One walk over the [`Node`] tree that builds a [`Config`] and collects every problem.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::Format;
use super::model::{
    Config, EraPreference, GatewayConfig, ServerConfig, ToolOverrideConfig, Transport,
};
use super::problem::{ConfigErrors, Problem};
use super::substitute::{Environment, substitute};
use super::tree::{Node, Pos, Value};

/// Built-in tool providers a config may name (kept in step with `switchboard-tools`).
pub const BUILTINS: [&str; 1] = ["clock"];

const ROOT_KEYS: [&str; 4] = ["gateway", "servers", "aliases", "mcpServers"];
const GATEWAY_KEYS: [&str; 6] = [
    "separator",
    "prefix_tools",
    "call_timeout",
    "connect_timeout",
    "discover_timeout",
    "max_message_bytes",
];
const SERVER_KEYS: [&str; 16] = [
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
    "call_timeout",
    "tools",
    "enabled",
    "id",
    "name",
];
/// Keys other MCP clients write in the same files; accepted and ignored (or mapped).
const FOREIGN_SERVER_KEYS: [&str; 5] = [
    "disabled",
    "autoApprove",
    "alwaysAllow",
    "timeout",
    "description",
];
const TOOL_KEYS: [&str; 3] = ["name", "description", "hidden"];

struct Walk<'a> {
    origin: &'a str,
    env: &'a dyn Environment,
    problems: Vec<Problem>,
}

pub fn validate(
    root: &Node,
    origin: &str,
    format: Format,
    env: &dyn Environment,
) -> Result<Config, ConfigErrors> {
    let mut walk = Walk {
        origin,
        env,
        problems: Vec::new(),
    };
    let mut config = Config {
        source: None,
        gateway: GatewayConfig::default(),
        servers: Vec::new(),
        aliases: BTreeMap::new(),
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
    for (key, key_pos, node) in entries {
        match key.as_str() {
            "gateway" => walk.gateway(node, &mut config.gateway),
            "aliases" => config.aliases = walk.string_map(node, "aliases"),
            "servers" | "mcpServers" => walk.servers(node, key, &mut config.servers),
            other => walk.unknown(*key_pos, other, "", &ROOT_KEYS),
        }
    }
    if format == Format::Json
        && entries
            .iter()
            .all(|(k, _, _)| k != "servers" && k != "mcpServers")
    {
        walk.problem(
            root.pos,
            "no servers: expected an \"mcpServers\" object or a \"servers\" object or array",
            None,
        );
    }
    if walk.problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigErrors(walk.problems))
    }
}

impl Walk<'_> {
    fn problem(&mut self, pos: Pos, message: impl Into<String>, hint: Option<String>) {
        self.problems.push(Problem::new(
            self.origin,
            pos.line,
            pos.column,
            message,
            hint,
        ));
    }

    fn unknown(&mut self, pos: Pos, key: &str, section: &str, known: &[&str]) {
        let hint = closest(key, known)
            .map(|k| format!("did you mean '{k}'?"))
            .or_else(|| Some(format!("known keys: {}", known.join(", "))));
        let place = if section.is_empty() {
            String::new()
        } else {
            format!(" in {section}")
        };
        self.problem(pos, format!("unknown key '{key}'{place}"), hint);
    }

    fn table<'n>(&mut self, node: &'n Node, what: &str) -> &'n [(String, Pos, Node)] {
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

    fn string(&mut self, node: &Node, what: &str) -> Option<String> {
        match &node.value {
            Value::String(text) => match substitute(text, self.env) {
                Ok(expanded) => Some(expanded),
                Err(error) => {
                    // +1 for the opening quote.
                    let pos = Pos {
                        line: node.pos.line,
                        column: node.pos.column + 1 + error.offset,
                    };
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

    fn bool(&mut self, node: &Node, what: &str) -> Option<bool> {
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

    fn strings(&mut self, node: &Node, what: &str) -> Vec<String> {
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

    fn string_map(&mut self, node: &Node, what: &str) -> BTreeMap<String, String> {
        let entries = self.table(node, what);
        entries
            .iter()
            .filter_map(|(key, _, value)| {
                Some((key.clone(), self.string(value, &format!("{what}.{key}"))?))
            })
            .collect()
    }

    fn duration(&mut self, node: &Node, what: &str) -> Option<Duration> {
        let parsed = match &node.value {
            Value::Integer(ms) if *ms >= 0 => u64::try_from(*ms).ok().map(Duration::from_millis),
            Value::String(text) => parse_duration(text),
            _ => None,
        };
        if parsed.is_none() {
            self.problem(
                node.pos,
                format!("{what} is not a duration"),
                Some(
                    "write e.g. \"500ms\", \"30s\", \"2m\", or an integer number of milliseconds"
                        .to_owned(),
                ),
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
                        if separator.is_empty()
                            || !separator
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                        {
                            self.problem(value.pos, format!("separator '{separator}' is not allowed"), Some("use one or more of A-Z a-z 0-9 _ - . (default \"__\", which every LLM API accepts)".to_owned()));
                        } else {
                            gateway.separator = separator;
                        }
                    }
                }
                "prefix_tools" => gateway.prefix_tools = self.bool(value, &what).unwrap_or(true),
                "call_timeout" => {
                    gateway.call_timeout =
                        self.duration(value, &what).unwrap_or(gateway.call_timeout)
                }
                "connect_timeout" => {
                    gateway.connect_timeout = self
                        .duration(value, &what)
                        .unwrap_or(gateway.connect_timeout)
                }
                "discover_timeout" => {
                    gateway.discover_timeout = self
                        .duration(value, &what)
                        .unwrap_or(gateway.discover_timeout)
                }
                "max_message_bytes" => match value.value {
                    Value::Integer(n) if n >= 1024 => {
                        gateway.max_message_bytes = usize::try_from(n).unwrap_or(usize::MAX)
                    }
                    _ => self.problem(
                        value.pos,
                        format!("{what} must be an integer of at least 1024"),
                        None,
                    ),
                },
                other => self.unknown(*key_pos, other, "[gateway]", &GATEWAY_KEYS),
            }
        }
    }

    fn servers(&mut self, node: &Node, key: &str, servers: &mut Vec<ServerConfig>) {
        match &node.value {
            Value::Table(entries) => {
                for (id, id_pos, server) in entries {
                    self.server(id, *id_pos, server, key, servers);
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let id = match item.get("id").or_else(|| item.get("name")) {
                        Some(Node {
                            value: Value::String(id),
                            ..
                        }) => id.clone(),
                        _ => {
                            self.problem(
                                item.pos,
                                format!("{key}[{index}] has no \"id\""),
                                Some(
                                    "each entry of a servers array needs an \"id\" string"
                                        .to_owned(),
                                ),
                            );
                            continue;
                        }
                    };
                    self.server(&id, item.pos, item, key, servers);
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
        if id.is_empty()
            || id.len() > 64
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.problem(
                id_pos,
                format!("server id '{id}' is not allowed"),
                Some("use 1-64 characters of A-Z a-z 0-9 _ -".to_owned()),
            );
        }
        if servers.iter().any(|s| s.id == id) {
            self.problem(id_pos, format!("server id '{id}' is used twice"), None);
        }
        let entries = self.table(node, &what);
        let field = |name: &str| {
            entries
                .iter()
                .find(|(k, _, _)| k == name)
                .map(|(_, _, v)| v)
        };
        for (key, key_pos, _) in entries {
            if !SERVER_KEYS.contains(&key.as_str()) && !FOREIGN_SERVER_KEYS.contains(&key.as_str())
            {
                self.unknown(*key_pos, key, &what, &SERVER_KEYS);
            }
        }
        let transport = self.transport(node, &what, &field);
        let mut server = ServerConfig::new(
            id,
            transport.unwrap_or(Transport::Builtin {
                name: String::new(),
            }),
        );
        if let Some(node) = field("name") {
            server.display_name = self.string(node, &format!("{what}.name"));
        }
        if let Some(node) = field("enabled") {
            server.enabled = self.bool(node, &format!("{what}.enabled")).unwrap_or(true);
        }
        if let Some(node) = field("disabled") {
            server.enabled = !self
                .bool(node, &format!("{what}.disabled"))
                .unwrap_or(false);
        }
        if let Some(node) = field("prefix")
            && let Some(prefix) = self.string(node, &format!("{what}.prefix"))
        {
            {
                if !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                {
                    self.problem(
                        node.pos,
                        format!("prefix '{prefix}' is not allowed"),
                        Some("use A-Z a-z 0-9 _ - . or \"\" for no prefix".to_owned()),
                    );
                }
                server.prefix = Some(prefix);
            }
        }
        if let Some(node) = field("call_timeout") {
            server.call_timeout = self.duration(node, &format!("{what}.call_timeout"));
        }
        if let Some(node) = field("era") {
            server.era = match self.string(node, &format!("{what}.era")).as_deref() {
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
            };
        }
        if let Some(node) = field("tools") {
            for (tool, tool_pos, spec) in self.table(node, &format!("{what}.tools")) {
                let mut override_ = ToolOverrideConfig::default();
                let tool_what = format!("{what}.tools.{tool}");
                for (key, key_pos, value) in self.table(spec, &tool_what) {
                    match key.as_str() {
                        "name" => override_.name = self.string(value, &format!("{tool_what}.name")),
                        "description" => {
                            override_.description =
                                self.string(value, &format!("{tool_what}.description"))
                        }
                        "hidden" => {
                            override_.hidden = self
                                .bool(value, &format!("{tool_what}.hidden"))
                                .unwrap_or(false)
                        }
                        other => self.unknown(*key_pos, other, &tool_what, &TOOL_KEYS),
                    }
                }
                let _ = tool_pos;
                server.tools.insert(tool.clone(), override_);
            }
        }
        servers.push(server);
    }

    fn transport<'n>(
        &mut self,
        node: &Node,
        what: &str,
        field: &dyn Fn(&str) -> Option<&'n Node>,
    ) -> Option<Transport> {
        let kind_node = field("transport").or_else(|| field("type"));
        let kind = kind_node.and_then(|n| self.string(n, &format!("{what}.transport")));
        let (command, url, builtin) = (field("command"), field("url"), field("builtin"));
        let given = [command.is_some(), url.is_some(), builtin.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if given != 1 {
            let message = if given == 0 {
                format!(
                    "server '{what}' needs one of \"command\" (stdio), \"url\" (HTTP) or \"builtin\""
                )
            } else {
                format!("server '{what}' has more than one of \"command\", \"url\" and \"builtin\"")
            };
            self.problem(node.pos, message, Some("stdio: command = \"npx\"; HTTP: url = \"http://127.0.0.1:8000/mcp\"; built-in: builtin = \"clock\"".to_owned()));
            return None;
        }
        if let Some(command_node) = command {
            let command = self.string(command_node, &format!("{what}.command"));
            let args = field("args")
                .map(|n| self.strings(n, &format!("{what}.args")))
                .unwrap_or_default();
            let env = field("env")
                .map(|n| self.string_map(n, &format!("{what}.env")))
                .unwrap_or_default();
            let cwd = field("cwd")
                .and_then(|n| self.string(n, &format!("{what}.cwd")))
                .map(PathBuf::from);
            if let Some(kind) = kind.as_deref().filter(|k| *k != "stdio") {
                self.problem(
                    kind_node.map_or(node.pos, |n| n.pos),
                    format!("transport '{kind}' does not go with \"command\""),
                    Some(
                        "a command is run as a stdio child; drop transport, or use url for HTTP"
                            .to_owned(),
                    ),
                );
            }
            let command = command?;
            if command.trim().is_empty() {
                self.problem(command_node.pos, format!("{what}.command is empty"), None);
                return None;
            }
            return Some(Transport::Stdio {
                command,
                args,
                env,
                cwd,
            });
        }
        if let Some(url_node) = url {
            let url = self.string(url_node, &format!("{what}.url"))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                self.problem(
                    url_node.pos,
                    format!("url '{url}' must start with http:// or https://"),
                    None,
                );
                return None;
            }
            let headers = field("headers")
                .map(|n| self.string_map(n, &format!("{what}.headers")))
                .unwrap_or_default();
            return match kind.as_deref() {
                None | Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => {
                    Some(Transport::Http { url, headers })
                }
                Some("sse") => Some(Transport::Sse { url, headers }),
                Some(other) => {
                    self.problem(
                        kind_node.map_or(node.pos, |n| n.pos),
                        format!("transport '{other}' is not known"),
                        Some("use \"streamable-http\" (default for url) or \"sse\"".to_owned()),
                    );
                    None
                }
            };
        }
        let builtin_node = builtin?;
        let name = self.string(builtin_node, &format!("{what}.builtin"))?;
        if !BUILTINS.contains(&name.as_str()) {
            let hint = closest(&name, &BUILTINS)
                .map(|b| format!("did you mean '{b}'?"))
                .unwrap_or_else(|| format!("available: {}", BUILTINS.join(", ")));
            self.problem(
                builtin_node.pos,
                format!("unknown built-in '{name}'"),
                Some(hint),
            );
            return None;
        }
        Some(Transport::Builtin { name })
    }
}

/// Parses "500ms", "30s", "2m", "1h", "1.5s".
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "s" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// The known key closest to a misspelled one, if any is close enough.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}
