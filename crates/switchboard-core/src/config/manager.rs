//! `[manager]`: where the server manager finds servers, how it installs and activates them,
//! and what its operations cost.
//!
//! ```toml
//! [manager]
//! registries = ["https://registry.modelcontextprotocol.io"]   # MCP registries (v0.1 API), in order
//! catalogs = ["catalog.json"]     # local files of server.json entries (relative to this file)
//! activation = "approval"         # approval | auto: a server the model asked for, once it passes probation
//! max_concurrent = 2              # operations run at once
//! install_dir = "servers"         # default: under $XDG_DATA_HOME
//! database = "manager.db"         # the operations database (default: the manager's)
//! registry_ttl = "10m"            # how long registry answers are cached
//! approval_timeout = "1h"         # how long an activation waits for an approval
//! step_timeout = "15m"            # how long one install step (npm, pip, docker pull) may run
//! trust = "pinned"                # pinned | auto: the trust of servers it installs
//! sandbox = true                  # npm/PyPI servers it installs: true ([gateway.sandbox] or the
//!                                 # defaults), a sandbox table, or false (none: they run unconfined)
//! allow_private_remotes = false   # may a model's remote be on loopback or a private network
//!
//! [manager.energy]
//! per_second = 2.0                # cost per second an operation runs
//! search = [20, 50]               # [min, max] of each operation
//! install = [10, 40]
//! add = [5, 10]
//! test = [10, 20]
//! modify = [2, 5]
//! remove = [2, 5]
//! ```
//!
//! `sandbox` takes a server's sandbox keys (`[servers.ID.sandbox]`, docs/sandbox.md); a bad
//! value is a problem at its key like a server's. Whatever it is (unless false), the entry the
//! manager writes holds the whole sandbox, with the server's install directory added to
//! `readable` and `writable`: it applies when the server is installed, and an operator edits
//! the entry to change it afterwards.
//!
//! `allow_private_remotes` lets a remote a model asks for be on a loopback, private or other
//! non-public address (every address its host resolves to is checked at install); an
//! operator's own install is never held to that.

use super::model::{Activation, EnergyConfig, EnergyRange, ManagerConfig};
use super::transport::check_url;
use super::tree::{Node, Value};
use super::validate::Walk;

pub(super) const MANAGER_KEYS: [&str; 13] = [
    "registries",
    "catalogs",
    "activation",
    "max_concurrent",
    "install_dir",
    "database",
    "registry_ttl",
    "approval_timeout",
    "step_timeout",
    "trust",
    "sandbox",
    "allow_private_remotes",
    "energy",
];
pub(super) const ENERGY_KEYS: [&str; 7] = [
    "per_second",
    "search",
    "install",
    "add",
    "test",
    "modify",
    "remove",
];

impl Walk<'_> {
    pub(super) fn manager(&mut self, node: &Node) -> ManagerConfig {
        let mut manager = ManagerConfig::default();
        for (key, key_pos, value) in self.table(node, "manager") {
            let what = format!("manager.{key}");
            match key.as_str() {
                "registries" => manager.registries = self.registries(value, &what),
                "catalogs" => manager.catalogs = self.paths(value, &what),
                "activation" => {
                    if let Some(activation) = self.activation(value, &what) {
                        manager.activation = activation;
                    }
                }
                "max_concurrent" => {
                    if let Some(n) = self.count(value, &what) {
                        manager.max_concurrent = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                }
                "install_dir" => manager.install_dir = self.path(value, &what),
                "database" => manager.database = self.path(value, &what),
                "registry_ttl" => {
                    if let Some(ttl) = self.duration(value, &what) {
                        manager.registry_ttl = ttl;
                    }
                }
                "approval_timeout" => {
                    if let Some(timeout) = self.duration(value, &what) {
                        manager.approval_timeout = timeout;
                    }
                }
                "step_timeout" => {
                    manager.step_timeout =
                        self.positive_duration(value, &what, manager.step_timeout);
                }
                "trust" => {
                    if let Some(trust) = self.trust_mode(value, &what) {
                        manager.trust = trust;
                    }
                }
                "sandbox" => manager.sandbox = self.sandbox_setting(value, &what),
                "allow_private_remotes" => {
                    manager.allow_private_remotes = self.bool(value, &what).unwrap_or(false);
                }
                "energy" => manager.energy = self.energy(value, &what),
                other => self.unknown(*key_pos, other, "[manager]", &MANAGER_KEYS),
            }
        }
        manager
    }

    /// An array of http(s) base URLs (an empty one: no registry is searched).
    fn registries(&mut self, node: &Node, what: &str) -> Vec<String> {
        let Value::Array(items) = &node.value else {
            self.problem(
                node.pos,
                format!(
                    "{what} must be an array of URLs, found {}",
                    node.value.kind()
                ),
                Some("e.g. registries = [\"https://registry.modelcontextprotocol.io\"]".to_owned()),
            );
            return ManagerConfig::default().registries;
        };
        let mut registries = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let item_what = format!("{what}[{index}]");
            let Some(url) = self.string(item, &item_what) else {
                continue;
            };
            match check_url(&url) {
                Ok(()) => registries.push(url),
                Err(message) => self.problem(
                    item.pos,
                    format!("{item_what} '{}' {message}", super::redacted_url(&url)),
                    Some("write a registry's base URL, e.g. \"https://registry.modelcontextprotocol.io\"".to_owned()),
                ),
            }
        }
        registries
    }

    /// An array of paths, relative ones taken from the config file's directory.
    fn paths(&mut self, node: &Node, what: &str) -> Vec<std::path::PathBuf> {
        let Value::Array(items) = &node.value else {
            self.problem(
                node.pos,
                format!(
                    "{what} must be an array of paths, found {}",
                    node.value.kind()
                ),
                Some("e.g. catalogs = [\"catalog.json\"]".to_owned()),
            );
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| self.path(item, &format!("{what}[{index}]")))
            .collect()
    }

    fn activation(&mut self, node: &Node, what: &str) -> Option<Activation> {
        match self.string(node, what)?.as_str() {
            "approval" => Some(Activation::Approval),
            "auto" => Some(Activation::Auto),
            other => {
                self.problem(
                    node.pos,
                    format!("{what} '{other}' is not known"),
                    Some(
                        "use \"approval\" (an operator approves each activation) or \"auto\""
                            .to_owned(),
                    ),
                );
                None
            }
        }
    }

    fn energy(&mut self, node: &Node, what: &str) -> EnergyConfig {
        let mut energy = EnergyConfig::default();
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            let range = match key.as_str() {
                "per_second" => {
                    if let Some(per_second) = self.non_negative(value, &key_what) {
                        energy.per_second = per_second;
                    }
                    continue;
                }
                "search" => &mut energy.search,
                "install" => &mut energy.install,
                "add" => &mut energy.add,
                "test" => &mut energy.test,
                "modify" => &mut energy.modify,
                "remove" => &mut energy.remove,
                other => {
                    self.unknown(*key_pos, other, "[manager.energy]", &ENERGY_KEYS);
                    continue;
                }
            };
            if let Some(read) = self.energy_range(value, &key_what) {
                *range = read;
            }
        }
        energy
    }

    /// `[min, max]`: two numbers, `0 <= min <= max`.
    fn energy_range(&mut self, node: &Node, what: &str) -> Option<EnergyRange> {
        let hint = || {
            Some(format!(
                "write [min, max], e.g. {} = [10, 40]",
                key_of(what)
            ))
        };
        let items = match &node.value {
            Value::Array(items) if items.len() == 2 => items,
            Value::Array(items) => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be two numbers [min, max], found {} item{}",
                        items.len(),
                        if items.len() == 1 { "" } else { "s" }
                    ),
                    hint(),
                );
                return None;
            }
            other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be two numbers [min, max], found {}",
                        other.kind()
                    ),
                    hint(),
                );
                return None;
            }
        };
        let min = self.non_negative(&items[0], &format!("{what}[0]"));
        let max = self.non_negative(&items[1], &format!("{what}[1]"));
        let (min, max) = (min?, max?);
        if min > max {
            self.problem(
                node.pos,
                format!("{what}: min ({min}) is larger than max ({max})"),
                hint(),
            );
            return None;
        }
        Some(EnergyRange { min, max })
    }
}

/// The last part of a dotted `what` (`manager.energy.search` → `search`).
fn key_of(what: &str) -> &str {
    what.rsplit('.').next().unwrap_or(what)
}
