//! How a server is reached: exactly one of `command` (stdio child), `url` (Streamable HTTP or
//! legacy SSE) or `builtin` (in-process), plus the keys that go with it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::model::Transport;
use super::suggest;
use super::tree::{Node, Pos};
use super::validate::Walk;

use super::builtin::{BUILTINS, keys_of};
use super::tree::Value;

/// Spellings of the Streamable HTTP transport that MCP clients write.
const HTTP_KINDS: [&str; 4] = [
    "http",
    "streamable-http",
    "streamableHttp",
    "streamable_http",
];
const TRANSPORT_HINT: &str = "stdio: command = \"npx\"; HTTP: url = \"http://127.0.0.1:8000/mcp\"; built-in: builtin = \"clock\"";

impl Walk<'_> {
    /// Reads the transport of the server table `node`; `None` after reporting a problem.
    pub(super) fn transport(&mut self, node: &Node, what: &str) -> Option<Transport> {
        let field = |name: &str| node.get(name);
        let kind_node = field("transport").or_else(|| field("type"));
        let kind = kind_node.and_then(|n| self.string(n, &format!("{what}.transport")));
        let kind_pos = kind_node.map_or(node.pos, |n| n.pos);
        let builtin = field("builtin");
        // `url` is a setting of the built-ins that take one (`web`, `images`), not a transport.
        let url = field("url").filter(|_| !builtin.is_some_and(takes_url));
        let command = field("command");
        let given = [command, url, builtin].iter().flatten().count();
        if given != 1 {
            let (pos, message) = if given == 0 {
                (
                    node.pos,
                    format!(
                        "server '{what}' needs one of \"command\" (stdio), \"url\" (HTTP) or \"builtin\""
                    ),
                )
            } else {
                // Point at the second of the clashing keys, where the conflict becomes visible.
                let second = [("command", command), ("url", url), ("builtin", builtin)]
                    .into_iter()
                    .filter_map(|(key, value)| Some(node.key_pos(key).unwrap_or(value?.pos)))
                    .nth(1)
                    .unwrap_or(node.pos);
                (
                    second,
                    format!(
                        "server '{what}' has more than one of \"command\", \"url\" and \"builtin\""
                    ),
                )
            };
            self.problem(pos, message, Some(TRANSPORT_HINT.to_owned()));
            return None;
        }
        if let Some(command_node) = command {
            if let Some(kind) = kind.as_deref().filter(|k| *k != "stdio") {
                self.problem(
                    kind_pos,
                    format!("transport '{kind}' does not go with \"command\""),
                    Some(
                        "a command is run as a stdio child; drop transport, or use url for HTTP"
                            .to_owned(),
                    ),
                );
            }
            return self.stdio(node, command_node, what);
        }
        if let Some(url_node) = url {
            return self.http(node, url_node, kind.as_deref(), kind_pos, what);
        }
        let builtin_node = builtin?;
        if let Some(kind) = kind {
            self.problem(
                kind_pos,
                format!("transport '{kind}' does not go with \"builtin\""),
                Some("a built-in is served in-process; drop transport".to_owned()),
            );
        }
        let name = self.string(builtin_node, &format!("{what}.builtin"))?;
        if !BUILTINS.contains(&name.as_str()) {
            self.problem(
                builtin_node.pos,
                format!("unknown built-in '{name}'"),
                Some(suggest::hint(&name, &BUILTINS, "available")),
            );
            return None;
        }
        let settings = self.builtin_settings(node, Some(&name), what);
        Some(Transport::Builtin { name, settings })
    }

    fn stdio(&mut self, node: &Node, command_node: &Node, what: &str) -> Option<Transport> {
        let command = self.os_string(command_node, &format!("{what}.command"));
        let args = node
            .get("args")
            .map(|n| self.os_strings(n, &format!("{what}.args")))
            .unwrap_or_default();
        let env = node
            .get("env")
            .map(|n| self.os_string_map(n, &format!("{what}.env")))
            .unwrap_or_default();
        let cwd = node
            .get("cwd")
            .and_then(|n| self.os_string(n, &format!("{what}.cwd")))
            .map(PathBuf::from);
        self.reject_keys(node, what, &["url", "headers"], "HTTP", "\"command\"");
        let command = command?;
        if command.trim().is_empty() {
            self.problem(
                command_node.pos,
                format!("{what}.command is empty"),
                Some("name the program to run, e.g. command = \"npx\"".to_owned()),
            );
            return None;
        }
        Some(Transport::Stdio {
            command,
            args,
            env,
            cwd,
        })
    }

    fn http(
        &mut self,
        node: &Node,
        url_node: &Node,
        kind: Option<&str>,
        kind_pos: Pos,
        what: &str,
    ) -> Option<Transport> {
        let url = self.string(url_node, &format!("{what}.url"));
        let headers = node
            .get("headers")
            .map(|n| self.string_map(n, &format!("{what}.headers")))
            .unwrap_or_default();
        self.reject_keys(node, what, &["args", "env", "cwd"], "stdio", "\"url\"");
        let url = url?;
        if let Err(message) = check_url(&url) {
            self.problem(
                url_node.pos,
                format!("url '{}' {message}", redacted_url(&url)),
                Some(
                    "write e.g. \"http://127.0.0.1:8000/mcp\" or \"https://example.com/mcp\""
                        .to_owned(),
                ),
            );
            return None;
        }
        match kind {
            None => Some(Transport::Http { url, headers }),
            Some(k) if HTTP_KINDS.contains(&k) => Some(Transport::Http { url, headers }),
            Some("sse") => Some(Transport::Sse { url, headers }),
            Some(other) => {
                self.problem(
                    kind_pos,
                    format!("transport '{other}' does not go with \"url\""),
                    Some("use \"streamable-http\" (the default for url) or \"sse\"".to_owned()),
                );
                None
            }
        }
    }

    /// A string handed to the operating system with the child it starts (its program, an
    /// argument, its directory, an environment value: a stdio server's or a hook's): one holding a NUL byte, which no such
    /// string can carry, is reported where it was written — the server would otherwise fail
    /// to start on every try.
    pub(super) fn os_string(&mut self, node: &Node, what: &str) -> Option<String> {
        let text = self.string(node, what)?;
        self.without_nul(node.pos, what, text)
    }

    /// [`Self::os_string`] for each item of an array (`args`).
    pub(super) fn os_strings(&mut self, node: &Node, what: &str) -> Vec<String> {
        let Value::Array(items) = &node.value else {
            return self.strings(node, what);
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| self.os_string(item, &format!("{what}[{i}]")))
            .collect()
    }

    /// [`Self::os_string`] for each key and value of a table (`env`).
    fn os_string_map(&mut self, node: &Node, what: &str) -> BTreeMap<String, String> {
        self.table(node, what)
            .iter()
            .filter_map(|(key, key_pos, value)| {
                let key =
                    self.without_nul(*key_pos, &format!("{what} key {key:?}"), key.clone())?;
                let value = self.os_string(value, &format!("{what}.{key}"))?;
                Some((key, value))
            })
            .collect()
    }

    fn without_nul(&mut self, pos: Pos, what: &str, text: String) -> Option<String> {
        if !text.contains('\0') {
            return Some(text);
        }
        self.problem(
            pos,
            format!("{what} contains a NUL byte (\\u0000), which a program's name, arguments, environment and directory cannot hold"),
            Some("remove the \\u0000 (or the ${…} reference that brings it)".to_owned()),
        );
        None
    }

    /// Reports keys of the other transport (`args` next to `url`, `headers` next to `command`).
    fn reject_keys(&mut self, node: &Node, what: &str, keys: &[&str], other: &str, chosen: &str) {
        for key in keys {
            if let Some(value) = node.get(key) {
                let pos = node.key_pos(key).unwrap_or(value.pos);
                self.problem(
                    pos,
                    format!("{what}.{key} is for {other} servers, but this one has {chosen}"),
                    None,
                );
            }
        }
    }
}

/// Whether `builtin` (the value of a server's `builtin` key) names a built-in that takes `url`.
fn takes_url(builtin: &Node) -> bool {
    matches!(&builtin.value, Value::String(name) if keys_of(name).contains(&"url"))
}

/// A URL without what may carry a secret — its user info and its query — for messages, logs
/// and records (a value substituted from the environment or the secrets file may be there).
pub fn redacted_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, _)) => (base, "?[redacted]"),
        None => (url, ""),
    };
    let Some((scheme, rest)) = base.split_once("://") else {
        return format!("{base}{query}");
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://[redacted]@{host}{path}{query}"),
        None => format!("{base}{query}"),
    }
}

/// An upstream URL: `http://` or `https://` and a host.
pub(super) fn check_url(url: &str) -> Result<(), &'static str> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("must start with http:// or https://");
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err("must start with http:// or https://");
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("has no host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::redacted_url;

    #[test]
    fn urls_lose_their_user_info_and_query() {
        assert_eq!(
            redacted_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
        assert_eq!(
            redacted_url("https://bob:pw@h.example/mcp?token=abc"),
            "https://[redacted]@h.example/mcp?[redacted]"
        );
        assert_eq!(redacted_url("https://h/a@b"), "https://h/a@b");
        assert_eq!(redacted_url("not a url?x"), "not a url?[redacted]");
    }
}
