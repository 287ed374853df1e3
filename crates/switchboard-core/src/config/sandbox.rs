//! `[servers.ID.sandbox]` and `[gateway.sandbox]`: what a stdio server's process may use —
//! resource limits, environment, file system and network — read into [`SandboxConfig`].
//!
//! This module only reads and checks the keys; the launcher that enforces them lives in
//! `switchboard::sandbox`, and the stdio transport runs it. A server entry may say
//! `sandbox = false` (off, whatever the gateway's default), `sandbox = true` (the gateway's
//! default, or the defaults below when it has none) or give a table of its own, which
//! replaces the gateway's default whole.

use std::path::PathBuf;
use std::time::Duration;

use super::duration::{DURATION_HINT, parse_duration};
use super::model::Transport;
use super::tree::{Node, Pos, Value};
use super::validate::Walk;

/// Keys of a sandbox table.
pub(super) const SANDBOX_KEYS: [&str; 9] = [
    "memory",
    "cpu",
    "files",
    "processes",
    "inherit_env",
    "readable",
    "writable",
    "network",
    "user",
];

/// The hint shown with a size that does not parse.
const SIZE_HINT: &str = "write e.g. \"512MiB\", \"1GiB\", \"1.5G\" or an integer number of bytes";

/// What a sandboxed server's process may use. `None` limits are not set (the gateway's own
/// limits are inherited).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SandboxConfig {
    /// Address space in bytes (`RLIMIT_AS`).
    pub memory: Option<u64>,
    /// CPU time (`RLIMIT_CPU`, whole seconds, rounded up).
    pub cpu: Option<Duration>,
    /// Open file descriptors (`RLIMIT_NOFILE`).
    pub files: Option<u64>,
    /// Processes of the server's user (`RLIMIT_NPROC`; does not bind root).
    pub processes: Option<u64>,
    /// true passes the gateway's whole environment on; false (the default) only `PATH`,
    /// `HOME`, `LANG`, `TMPDIR` and the server's configured `env`.
    pub inherit_env: bool,
    /// Paths the server may read besides the system's (Landlock).
    pub readable: Vec<PathBuf>,
    /// Paths the server may read and write (Landlock); nothing else is writable.
    pub writable: Vec<PathBuf>,
    /// What network the server may reach.
    pub network: NetworkAccess,
    /// An unprivileged user to run the server as (the gateway must be root to switch).
    pub user: Option<String>,
}

/// `network = "none" | "loopback" | "any"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NetworkAccess {
    /// No TCP connections or binds.
    None,
    /// Only to and on the loopback interface.
    Loopback,
    /// No restriction (the default).
    #[default]
    Any,
}

impl NetworkAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Loopback => "loopback",
            Self::Any => "any",
        }
    }
}

/// A server entry's `sandbox` key.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SandboxSetting {
    /// Not written: the gateway's default applies (a stdio server only).
    #[default]
    Default,
    /// `sandbox = false`: never sandboxed.
    Off,
    /// `sandbox = true`: the gateway's default, or [`SandboxConfig::default`] without one.
    On,
    /// A table of its own.
    Own(SandboxConfig),
}

impl SandboxSetting {
    /// The sandbox a server runs in, given the gateway's default; only stdio servers have
    /// one.
    pub fn resolve(
        &self,
        transport: &Transport,
        default: Option<&SandboxConfig>,
    ) -> Option<SandboxConfig> {
        if !matches!(transport, Transport::Stdio { .. }) {
            return None;
        }
        match self {
            Self::Default => default.cloned(),
            Self::Off => None,
            Self::On => Some(default.cloned().unwrap_or_default()),
            Self::Own(own) => Some(own.clone()),
        }
    }
}

/// Parses `"1GiB"`, `"512MiB"`, `"64KiB"`, `"1.5G"`, `"100M"`, `"4096"` (bytes; `K`/`M`/`G`/`T`
/// with or without `iB`/`B` are powers of 1024).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return None;
    }
    let number: f64 = number.parse().ok()?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KiB" | "k" => 10,
        "M" | "MB" | "MiB" => 20,
        "G" | "GB" | "GiB" => 30,
        "T" | "TB" | "TiB" => 40,
        _ => return None,
    };
    let bytes = number * f64::from(1u32 << (shift / 2)) * f64::from(1u32 << (shift - shift / 2));
    (1.0..1.8e19).contains(&bytes).then(|| bytes.round() as u64)
}

impl Walk<'_> {
    /// A server entry's `sandbox`: false, true or a table. Refused at the key on a server
    /// that is not stdio (`None` = the transport unknown after a problem of its own).
    pub(super) fn server_sandbox(
        &mut self,
        node: &Node,
        key_pos: Pos,
        what: &str,
        transport: Option<&Transport>,
    ) -> SandboxSetting {
        let on = !matches!(node.value, Value::Bool(false));
        match transport {
            Some(Transport::Http { .. } | Transport::Sse { .. }) if on => {
                self.problem(
                    key_pos,
                    format!("{what} is for stdio servers, but this one has \"url\""),
                    Some(
                        "an HTTP server runs elsewhere: sandbox it where it runs (a container, \
                         systemd's sandboxing)"
                            .to_owned(),
                    ),
                );
                return SandboxSetting::Default;
            }
            Some(Transport::Builtin { .. }) if on => {
                self.problem(
                    key_pos,
                    format!("{what} is for stdio servers, but this one has \"builtin\""),
                    Some(
                        "a built-in runs inside the gateway: its own settings (roots, \
                         allow_private) confine it"
                            .to_owned(),
                    ),
                );
                return SandboxSetting::Default;
            }
            _ => {}
        }
        self.sandbox_setting(node, what)
    }

    /// A `sandbox` that is false, true or a table (a server's, or `[manager] sandbox`);
    /// anything else is a problem at the value and reads as [`SandboxSetting::Default`].
    pub(super) fn sandbox_setting(&mut self, node: &Node, what: &str) -> SandboxSetting {
        match node.value {
            Value::Bool(false) => SandboxSetting::Off,
            Value::Bool(true) => SandboxSetting::On,
            Value::Table(_) => SandboxSetting::Own(self.sandbox(node, what)),
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a table, true or false, found {}",
                        other.kind()
                    ),
                    None,
                );
                SandboxSetting::Default
            }
        }
    }

    /// A sandbox table (a server's or `[gateway.sandbox]`).
    pub(super) fn sandbox(&mut self, node: &Node, what: &str) -> SandboxConfig {
        let mut sandbox = SandboxConfig::default();
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "memory" => sandbox.memory = self.size(value, &key_what),
                "cpu" => sandbox.cpu = self.cpu_time(value, &key_what),
                "files" => sandbox.files = self.count(value, &key_what),
                "processes" => sandbox.processes = self.count(value, &key_what),
                "inherit_env" => sandbox.inherit_env = self.bool(value, &key_what).unwrap_or(false),
                "readable" => sandbox.readable = self.path_array(value, &key_what),
                "writable" => sandbox.writable = self.path_array(value, &key_what),
                "network" => sandbox.network = self.network(value, &key_what),
                "user" => sandbox.user = self.user(value, &key_what),
                other => self.unknown(*key_pos, other, &format!("[{what}]"), &SANDBOX_KEYS),
            }
        }
        sandbox
    }

    fn size(&mut self, node: &Node, what: &str) -> Option<u64> {
        let parsed = match &node.value {
            Value::Integer(n) if *n >= 1 => u64::try_from(*n).ok(),
            Value::String(_) => parse_size(&self.string(node, what)?),
            _ => None,
        };
        if parsed.is_none() {
            self.problem(
                node.pos,
                format!("{what} is not a size"),
                Some(SIZE_HINT.to_owned()),
            );
        }
        parsed
    }

    fn cpu_time(&mut self, node: &Node, what: &str) -> Option<Duration> {
        let parsed = match &node.value {
            Value::Integer(ms) => u64::try_from(*ms).ok().map(Duration::from_millis),
            Value::String(_) => parse_duration(&self.string(node, what)?),
            _ => None,
        };
        match parsed {
            Some(cpu) if !cpu.is_zero() => Some(cpu),
            Some(_) => {
                self.problem(
                    node.pos,
                    format!("{what} must be more than zero"),
                    Some(
                        "CPU time is counted in whole seconds, e.g. \"30s\" or \"10m\"".to_owned(),
                    ),
                );
                None
            }
            None => {
                self.problem(
                    node.pos,
                    format!("{what} is not a duration"),
                    Some(DURATION_HINT.to_owned()),
                );
                None
            }
        }
    }

    fn network(&mut self, node: &Node, what: &str) -> NetworkAccess {
        match self.string(node, what).as_deref() {
            Some("none") => NetworkAccess::None,
            Some("loopback") => NetworkAccess::Loopback,
            Some("any") => NetworkAccess::Any,
            Some(other) => {
                self.problem(
                    node.pos,
                    format!("{what} must be \"none\", \"loopback\" or \"any\", found '{other}'"),
                    None,
                );
                NetworkAccess::Any
            }
            None => NetworkAccess::Any,
        }
    }

    fn user(&mut self, node: &Node, what: &str) -> Option<String> {
        let user = self.string(node, what)?;
        let valid = !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid {
            self.problem(
                node.pos,
                format!("{what} '{user}' is not a user name"),
                Some("name an existing unprivileged user, e.g. \"nobody\"".to_owned()),
            );
            return None;
        }
        if user == "root" || user == "0" {
            self.problem(
                node.pos,
                format!("{what} '{user}' would run the server with every privilege the sandbox takes away"),
                Some("name an existing unprivileged user, e.g. \"nobody\"".to_owned()),
            );
            return None;
        }
        Some(user)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_as_operators_write_them() {
        let cases = [
            ("1GiB", Some(1 << 30)),
            ("1G", Some(1 << 30)),
            ("512MiB", Some(512 << 20)),
            ("64 KiB", Some(64 << 10)),
            ("1.5G", Some(3 << 29)),
            ("4096", Some(4096)),
            ("2TiB", Some(2 << 40)),
            ("0", None),
            ("GiB", None),
            ("1 parsec", None),
            ("-1G", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), expected, "{text:?}");
        }
    }
}
