//! The settings of a built-in tool server (`builtin = "files"` and friends): which keys each
//! built-in takes, and their values. Relative paths are taken from the config file's
//! directory (from the working directory when there is no file).

use std::path::{Path, PathBuf};

use super::model::{BuiltinSettings, RootConfig};
use super::tree::{Node, Value};
use super::validate::Walk;

/// Built-in tool providers a config may name (kept in step with `switchboard-tools`).
/// `manager` exposes the server manager's tools to models.
pub const BUILTINS: [&str; 5] = ["clock", "dice", "files", "memory", "manager"];

/// The built-ins the gateway serves when no config file exists ([`super::Config::builtin_default`]):
/// every one except `manager`, which lets models install servers and is only served when a
/// config names it.
pub(super) const DEFAULT_BUILTINS: [&str; 4] = ["clock", "dice", "files", "memory"];

/// The settings keys of each built-in.
const KEYS: [(&str, &[&str]); 5] = [
    ("clock", &[]),
    ("manager", &[]),
    ("dice", &["tables_dir", "seed"]),
    ("files", &["roots", "max_read_bytes", "max_write_bytes"]),
    ("memory", &["database"]),
];

/// Every settings key of any built-in (all are valid server keys; which built-in they go
/// with is checked by [`Walk::builtin_settings`]).
pub(super) const SETTINGS_KEYS: [&str; 6] = [
    "tables_dir",
    "seed",
    "roots",
    "max_read_bytes",
    "max_write_bytes",
    "database",
];

fn keys_of(builtin: &str) -> &'static [&'static str] {
    KEYS.iter()
        .find(|(name, _)| *name == builtin)
        .map_or(&[], |(_, keys)| keys)
}

/// The built-in a settings key belongs to.
fn owner_of(key: &str) -> Option<&'static str> {
    KEYS.iter()
        .find(|(_, keys)| keys.contains(&key))
        .map(|(name, _)| *name)
}

impl Walk<'_> {
    /// Reads the settings keys of server `node`. `builtin` is `None` for a server that is
    /// not a built-in: any settings key is then misplaced.
    pub(super) fn builtin_settings(
        &mut self,
        node: &Node,
        builtin: Option<&str>,
        what: &str,
    ) -> BuiltinSettings {
        let mut settings = BuiltinSettings::default();
        let Value::Table(entries) = &node.value else {
            return settings;
        };
        for (key, key_pos, value) in entries {
            let Some(owner) = owner_of(key) else {
                continue;
            };
            if builtin.is_some_and(|name| !keys_of(name).contains(&key.as_str()))
                || builtin.is_none()
            {
                let here = builtin.map_or_else(
                    || "this server is not a built-in".to_owned(),
                    |name| format!("this one is builtin = \"{name}\""),
                );
                self.problem(
                    *key_pos,
                    format!("{what}.{key} is a setting of the '{owner}' built-in, but {here}"),
                    None,
                );
                continue;
            }
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "tables_dir" => settings.tables_dir = self.path(value, &key_what),
                "database" => settings.database = self.path(value, &key_what),
                "seed" => settings.seed = self.unsigned(value, &key_what, 0),
                "max_read_bytes" => settings.max_read_bytes = self.unsigned(value, &key_what, 1),
                "max_write_bytes" => {
                    settings.max_write_bytes = self.unsigned(value, &key_what, 1);
                }
                "roots" => settings.roots = self.roots(value, &key_what),
                _ => {}
            }
        }
        settings
    }

    /// A path; relative ones are taken from the config file's directory.
    pub(super) fn path(&mut self, node: &Node, what: &str) -> Option<PathBuf> {
        let text = self.string(node, what)?;
        if text.is_empty() {
            self.problem(node.pos, format!("{what} is empty"), None);
            return None;
        }
        Some(self.resolve(Path::new(&text)))
    }

    fn resolve(&self, path: &Path) -> PathBuf {
        match (path.is_absolute(), self.base_dir()) {
            (false, Some(base)) => base.join(path),
            _ => path.to_owned(),
        }
    }

    fn unsigned(&mut self, node: &Node, what: &str, min: i64) -> Option<u64> {
        match node.value {
            Value::Integer(n) if n >= min => u64::try_from(n).ok(),
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be an integer of at least {min}, found {}",
                        match other {
                            Value::Integer(n) => n.to_string(),
                            other => other.kind().to_owned(),
                        }
                    ),
                    None,
                );
                None
            }
        }
    }

    /// `roots = ["dir", { path = "dir", read_only = true }]`.
    fn roots(&mut self, node: &Node, what: &str) -> Vec<RootConfig> {
        let Value::Array(items) = &node.value else {
            self.problem(
                node.pos,
                format!("{what} must be an array, found {}", node.value.kind()),
                Some(
                    "e.g. roots = [\"./work\", { path = \"/srv/docs\", read_only = true }]"
                        .to_owned(),
                ),
            );
            return Vec::new();
        };
        let mut roots = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let item_what = format!("{what}[{index}]");
            let root = match &item.value {
                Value::String(_) => self.path(item, &item_what).map(|path| RootConfig {
                    path,
                    read_only: false,
                }),
                Value::Table(entries) => {
                    let mut path = None;
                    let mut read_only = false;
                    for (key, key_pos, value) in entries {
                        match key.as_str() {
                            "path" => path = self.path(value, &format!("{item_what}.path")),
                            "read_only" => {
                                read_only = self
                                    .bool(value, &format!("{item_what}.read_only"))
                                    .unwrap_or(false);
                            }
                            other => {
                                self.unknown(*key_pos, other, &item_what, &["path", "read_only"]);
                            }
                        }
                    }
                    if path.is_none() && !entries.iter().any(|(k, _, _)| k == "path") {
                        self.problem(item.pos, format!("{item_what} has no \"path\""), None);
                    }
                    path.map(|path| RootConfig { path, read_only })
                }
                other => {
                    self.problem(
                        item.pos,
                        format!(
                            "{item_what} must be a path or {{ path, read_only }}, found {}",
                            other.kind()
                        ),
                        None,
                    );
                    None
                }
            };
            roots.extend(root);
        }
        roots
    }
}
