//! The settings of a built-in tool server (`builtin = "files"` and friends): which keys each
//! built-in takes, and their values. Relative paths are taken from the config file's
//! directory (from the working directory when there is no file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::model::{
    BuiltinSettings, JsonSearchMapping, PlayerSetting, RootConfig, SecretString, StyleSetting,
};
use super::server::{FOREIGN_SERVER_KEYS, SERVER_KEYS};
use super::suggest;
use super::transport::check_url;
use super::tree::{Node, Pos, Value};
use super::validate::Walk;

/// Built-in tool providers a config may name (kept in step with `switchboard-tools`).
/// `manager` exposes the server manager's tools to models.
pub const BUILTINS: [&str; 10] = [
    "clock", "dice", "files", "memory", "manager", "rules", "sessions", "music", "web", "images",
];

/// The built-ins the gateway serves when no config file exists ([`super::Config::builtin_default`]):
/// every one except `manager`, which lets models install servers and is only served when a
/// config names it.
pub(super) const DEFAULT_BUILTINS: [&str; 4] = ["clock", "dice", "files", "memory"];

/// The settings keys of each built-in (a key several take names them in this order).
const KEYS: [(&str, &[&str]); 10] = [
    ("clock", &[]),
    ("manager", &[]),
    ("dice", &["tables_dir", "seed"]),
    ("files", &["roots", "max_read_bytes", "max_write_bytes"]),
    ("memory", &["database"]),
    ("rules", &["dirs", "database"]),
    ("sessions", &["database"]),
    ("music", &["player", "moods", "mpv_args"]),
    (
        "web",
        &[
            "backend",
            "url",
            "api_key",
            "allow_private",
            "max_bytes",
            "timeout",
            "max_redirects",
            "json",
        ],
    ),
    (
        "images",
        &[
            "backend",
            "url",
            "api_key",
            "model",
            "out_dir",
            "max_bytes",
            "timeout",
            "styles",
        ],
    ),
];

/// Every settings key of any built-in (all are valid server keys; which built-in they go
/// with is checked by [`Walk::builtin_settings`]).
pub(super) const SETTINGS_KEYS: [&str; 21] = [
    "tables_dir",
    "seed",
    "roots",
    "max_read_bytes",
    "max_write_bytes",
    "database",
    "dirs",
    "player",
    "moods",
    "mpv_args",
    "backend",
    "url",
    "api_key",
    "allow_private",
    "max_bytes",
    "timeout",
    "max_redirects",
    "json",
    "model",
    "out_dir",
    "styles",
];

/// The values `backend` takes, per built-in.
const BACKENDS: [(&str, &[&str]); 2] = [
    ("web", &["searxng", "brave", "json"]),
    ("images", &["openai", "automatic1111"]),
];
/// The named players of `music` (else a command line).
const PLAYERS: [&str; 3] = ["auto", "mpv", "null"];
const JSON_KEYS: [&str; 4] = ["results", "title", "url", "snippet"];
const STYLE_KEYS: [&str; 3] = ["suffix", "negative", "params"];

/// The settings keys of `builtin` (none for a name that is not a built-in).
pub(super) fn keys_of(builtin: &str) -> &'static [&'static str] {
    KEYS.iter()
        .find(|(name, _)| *name == builtin)
        .map_or(&[], |(_, keys)| keys)
}

/// The built-ins a settings key belongs to, in [`KEYS`] order.
fn owners_of(key: &str) -> Vec<&'static str> {
    KEYS.iter()
        .filter(|(_, keys)| keys.contains(&key))
        .map(|(name, _)| *name)
        .collect()
}

/// "the 'files' built-in", "the 'web' and 'images' built-ins",
/// "the 'memory', 'rules' and 'sessions' built-ins".
fn owners_phrase(owners: &[&str]) -> String {
    let quoted: Vec<String> = owners.iter().map(|name| format!("'{name}'")).collect();
    match quoted.as_slice() {
        [one] => format!("the {one} built-in"),
        [rest @ .., last] => format!("the {} and {last} built-ins", rest.join(", ")),
        [] => "no built-in".to_owned(),
    }
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"` (`conjunction` "or" or "and").
fn listed(values: &[&str], conjunction: &str) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    match quoted.as_slice() {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} {conjunction} {last}", rest.join(", ")),
        [] => String::new(),
    }
}

impl Walk<'_> {
    /// Reads the settings keys of server `node`. `builtin` is `None` for a server that is
    /// not a built-in: any settings key is then misplaced (except `url`, its transport, and
    /// `timeout`, which other MCP clients write for themselves).
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
            let owners = owners_of(key);
            if owners.is_empty() {
                continue;
            }
            let Some(name) = builtin else {
                if !SERVER_KEYS.contains(&key.as_str())
                    && !FOREIGN_SERVER_KEYS.contains(&key.as_str())
                {
                    self.problem(
                        *key_pos,
                        format!(
                            "{what}.{key} is a setting of {}, but this server is not a built-in",
                            owners_phrase(&owners)
                        ),
                        None,
                    );
                }
                continue;
            };
            if !keys_of(name).contains(&key.as_str()) {
                self.problem(
                    *key_pos,
                    format!(
                        "{what}.{key} is a setting of {}, but this one is builtin = \"{name}\"",
                        owners_phrase(&owners)
                    ),
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
                "dirs" => settings.dirs = self.path_array(value, &key_what),
                "player" => settings.player = self.player(value, &key_what),
                "moods" => settings.moods = self.moods(value, &key_what),
                "mpv_args" => settings.mpv_args = self.strings(value, &key_what),
                "backend" => settings.backend = self.backend(value, name, &key_what),
                "url" => settings.url = self.backend_url(value, &key_what),
                "api_key" => settings.api_key = self.string(value, &key_what).map(SecretString),
                "allow_private" => settings.allow_private = self.bool(value, &key_what),
                "max_bytes" => settings.max_bytes = self.unsigned(value, &key_what, 1),
                "timeout" => settings.timeout = self.duration(value, &key_what),
                "max_redirects" => {
                    settings.max_redirects = self
                        .unsigned(value, &key_what, 0)
                        .and_then(|n| self.at_most_u32(n, value.pos, &key_what));
                }
                "json" => settings.json = self.json_mapping(value, &key_what),
                "model" => settings.model = self.string(value, &key_what),
                "out_dir" => settings.out_dir = self.path(value, &key_what),
                "styles" => settings.styles = self.styles(value, &key_what),
                _ => {}
            }
        }
        if builtin == Some("web") {
            self.json_backend(node, &settings, what);
        }
        settings
    }

    /// `backend = "json"` needs `json = { results, title, url }` and a `url` template with
    /// `{query}`; a `json` table goes with no other backend.
    fn json_backend(&mut self, node: &Node, settings: &BuiltinSettings, what: &str) {
        let Some(backend) = settings.backend.as_deref() else {
            return;
        };
        let backend_pos = node.get("backend").map_or(node.pos, |n| n.pos);
        if backend != "json" {
            if let Some(pos) = node.key_pos("json") {
                self.problem(
                    pos,
                    format!(
                        "{what}.json maps the answers of backend = \"json\", but this one's backend is \"{backend}\""
                    ),
                    Some("drop json, or set backend = \"json\"".to_owned()),
                );
            }
            return;
        }
        if node.get("json").is_none() {
            self.problem(
                backend_pos,
                format!(
                    "{what}: backend = \"json\" needs a json table saying where the results are"
                ),
                Some(JSON_EXAMPLE.to_owned()),
            );
        }
        match (node.get("url"), settings.url.as_deref()) {
            (None, _) => self.problem(
                backend_pos,
                format!("{what}: backend = \"json\" needs url, the search URL with {{query}}"),
                Some(URL_TEMPLATE_EXAMPLE.to_owned()),
            ),
            (Some(url_node), Some(url)) if !url.contains("{query}") => self.problem(
                url_node.pos,
                format!(
                    "{what}.url '{}' has no {{query}}: with backend = \"json\" it is a template and {{query}} is replaced by the search",
                    super::redacted_url(url)
                ),
                Some(URL_TEMPLATE_EXAMPLE.to_owned()),
            ),
            _ => {}
        }
    }

    /// Paths, each relative one taken from the config file's directory.
    pub(super) fn path_array(&mut self, node: &Node, what: &str) -> Vec<PathBuf> {
        let Value::Array(items) = &node.value else {
            self.problem(
                node.pos,
                format!(
                    "{what} must be an array of paths, found {}",
                    node.value.kind()
                ),
                None,
            );
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| self.path(item, &format!("{what}[{index}]")))
            .collect()
    }

    /// `player = "auto" | "mpv" | "null"`, or a command line `["paplay", "{path}"]`.
    fn player(&mut self, node: &Node, what: &str) -> Option<PlayerSetting> {
        match &node.value {
            Value::String(_) => {
                let name = self.string(node, what)?;
                match name.as_str() {
                    "auto" => Some(PlayerSetting::Auto),
                    "mpv" => Some(PlayerSetting::Mpv),
                    "null" => Some(PlayerSetting::Null),
                    other => {
                        self.not_one_of(node.pos, what, other, &PLAYERS, Some(PLAYER_COMMAND));
                        None
                    }
                }
            }
            Value::Array(items) => {
                let count = items.len();
                let command = self.strings(node, what);
                if command.len() != count {
                    return None;
                }
                if command
                    .first()
                    .is_none_or(|program| program.trim().is_empty())
                {
                    self.problem(
                        node.pos,
                        format!("{what} has no program"),
                        Some(PLAYER_COMMAND.to_owned()),
                    );
                    return None;
                }
                Some(PlayerSetting::Command(command))
            }
            other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be {} or a command line (an array of strings), found {}",
                        PLAYERS.map(|p| format!("\"{p}\"")).join(", "),
                        other.kind()
                    ),
                    Some(PLAYER_COMMAND.to_owned()),
                );
                None
            }
        }
    }

    /// `moods = { calm = ["music/calm"], battle = "music/battle.ogg" }`.
    fn moods(&mut self, node: &Node, what: &str) -> BTreeMap<String, Vec<PathBuf>> {
        let mut moods = BTreeMap::new();
        for (mood, mood_pos, tracks) in self.table(node, what) {
            let mood_what = format!("{what}.{mood}");
            if mood.trim().is_empty() {
                self.problem(
                    *mood_pos,
                    format!("{what} has a mood with an empty name"),
                    None,
                );
                continue;
            }
            let paths = match &tracks.value {
                Value::String(_) => self.path(tracks, &mood_what).into_iter().collect(),
                Value::Array(_) => self.path_array(tracks, &mood_what),
                other => {
                    self.problem(
                        tracks.pos,
                        format!(
                            "{mood_what} must be a path or an array of paths, found {}",
                            other.kind()
                        ),
                        Some("e.g. calm = [\"music/calm\", \"music/rain.ogg\"]".to_owned()),
                    );
                    continue;
                }
            };
            moods.insert(mood.clone(), paths);
        }
        moods
    }

    /// `backend`: one of the values built-in `builtin` knows.
    fn backend(&mut self, node: &Node, builtin: &str, what: &str) -> Option<String> {
        let allowed = BACKENDS
            .iter()
            .find(|(name, _)| *name == builtin)
            .map_or(&[][..], |(_, values)| values);
        let value = self.string(node, what)?;
        if allowed.contains(&value.as_str()) {
            return Some(value);
        }
        self.not_one_of(node.pos, what, &value, allowed, None);
        None
    }

    /// The URL of a built-in's backend: `http://` or `https://` with a host.
    fn backend_url(&mut self, node: &Node, what: &str) -> Option<String> {
        let url = self.string(node, what)?;
        if let Err(message) = check_url(&url) {
            self.problem(
                node.pos,
                format!("{what} '{}' {message}", super::redacted_url(&url)),
                Some("write e.g. \"https://search.example.org\"".to_owned()),
            );
            return None;
        }
        Some(url)
    }

    /// `json = { results = "data.items", title = "name", url = "link", snippet = "summary" }`.
    fn json_mapping(&mut self, node: &Node, what: &str) -> Option<JsonSearchMapping> {
        let Value::Table(entries) = &node.value else {
            self.table(node, what);
            return None;
        };
        // Per key of JSON_KEYS: None = absent, Some(None) = given but wrong.
        let mut fields: [Option<Option<String>>; 4] = Default::default();
        for (key, key_pos, value) in entries {
            let Some(index) = JSON_KEYS.iter().position(|k| k == key) else {
                self.unknown(*key_pos, key, what, &JSON_KEYS);
                continue;
            };
            let key_what = format!("{what}.{key}");
            let text = self.string(value, &key_what);
            if text.as_deref().is_some_and(|t| t.trim().is_empty()) {
                self.problem(value.pos, format!("{key_what} is empty"), None);
                fields[index] = Some(None);
            } else {
                fields[index] = Some(text);
            }
        }
        let missing: Vec<&str> = JSON_KEYS[..3]
            .iter()
            .zip(&fields)
            .filter(|(_, field)| field.is_none())
            .map(|(key, _)| *key)
            .collect();
        if !missing.is_empty() {
            self.problem(
                node.pos,
                format!("{what} needs {}", listed(&missing, "and")),
                Some(JSON_EXAMPLE.to_owned()),
            );
        }
        let [results, title, url, snippet] = fields;
        Some(JsonSearchMapping {
            results: results??,
            title: title??,
            url: url??,
            snippet: match snippet {
                None => None,
                Some(given) => Some(given?),
            },
        })
    }

    /// `styles = { noir = { suffix = "…", negative = "…", params = { steps = 30 } } }`.
    fn styles(&mut self, node: &Node, what: &str) -> BTreeMap<String, StyleSetting> {
        let mut styles = BTreeMap::new();
        for (name, name_pos, style_node) in self.table(node, what) {
            let style_what = format!("{what}.{name}");
            if name.trim().is_empty() {
                self.problem(
                    *name_pos,
                    format!("{what} has a style with an empty name"),
                    None,
                );
                continue;
            }
            let mut style = StyleSetting::default();
            for (key, key_pos, value) in self.table(style_node, &style_what) {
                let key_what = format!("{style_what}.{key}");
                match key.as_str() {
                    "suffix" => style.suffix = self.string(value, &key_what),
                    "negative" => style.negative = self.string(value, &key_what),
                    "params" => match value.to_json() {
                        serde_json::Value::Object(params) => style.params = params,
                        _ => self.problem(
                            value.pos,
                            format!("{key_what} must be a table, found {}", value.value.kind()),
                            Some("e.g. params = { steps = 30, cfg_scale = 7 }".to_owned()),
                        ),
                    },
                    other => self.unknown(*key_pos, other, &style_what, &STYLE_KEYS),
                }
            }
            styles.insert(name.clone(), style);
        }
        styles
    }

    /// An enumerated value that is none of `allowed`.
    pub(super) fn not_one_of(
        &mut self,
        pos: Pos,
        what: &str,
        value: &str,
        allowed: &[&str],
        or: Option<&str>,
    ) {
        let hint = suggest::closest(value, allowed)
            .map(|close| format!("did you mean '{close}'?"))
            .or_else(|| or.map(str::to_owned));
        self.problem(
            pos,
            format!(
                "{what} '{value}' is not known; use {}",
                listed(allowed, "or")
            ),
            hint,
        );
    }

    fn at_most_u32(&mut self, n: u64, pos: Pos, what: &str) -> Option<u32> {
        let fits = u32::try_from(n).ok();
        if fits.is_none() {
            self.problem(
                pos,
                format!("{what} must be at most {}, found {n}", u32::MAX),
                None,
            );
        }
        fits
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

    pub(super) fn unsigned(&mut self, node: &Node, what: &str, min: i64) -> Option<u64> {
        match node.value {
            Value::Integer(n) if n >= min => u64::try_from(n).ok(),
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be an integer of at least {min}, found {}",
                        other.described()
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

const PLAYER_COMMAND: &str =
    "or a command line in which {path} is the track, e.g. player = [\"paplay\", \"{path}\"]";
const JSON_EXAMPLE: &str = "e.g. json = { results = \"data.items\", title = \"name\", url = \"link\", snippet = \"summary\" }";
const URL_TEMPLATE_EXAMPLE: &str =
    "e.g. url = \"https://search.example.org/api?q={query}&n={limit}\"";

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{KEYS, SETTINGS_KEYS, owners_phrase};

    #[test]
    fn settings_keys_are_the_keys_of_every_builtin() {
        let from_keys: BTreeSet<&str> = KEYS
            .iter()
            .flat_map(|(_, keys)| keys.iter().copied())
            .collect();
        let listed: BTreeSet<&str> = SETTINGS_KEYS.into_iter().collect();
        assert_eq!(listed, from_keys);
        assert_eq!(listed.len(), SETTINGS_KEYS.len(), "no key twice");
    }

    #[test]
    fn owners_are_named_in_a_sentence() {
        assert_eq!(owners_phrase(&["files"]), "the 'files' built-in");
        assert_eq!(
            owners_phrase(&["web", "images"]),
            "the 'web' and 'images' built-ins"
        );
        assert_eq!(
            owners_phrase(&["memory", "rules", "sessions"]),
            "the 'memory', 'rules' and 'sessions' built-ins"
        );
    }
}
