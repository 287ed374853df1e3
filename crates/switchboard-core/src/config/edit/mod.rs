//! Format-preserving edits of a config file's server entries: when the running gateway adds,
//! removes, enables or disables a server, the change is written back into the user's file
//! touching only the affected entry — comments, key order, blank lines and the formatting of
//! everything else stay byte for byte.
//!
//! Code map: `toml` (native files, through `toml_edit`; `toml_tables` knows the printed order
//! of tables and which comments belong to a header), `json` (the three JSON shapes of
//! `docs/config.md`: the config reader's `json::scan` finds byte spans, `json_layout` splices
//! at them like the siblings are laid out, `json_render` writes a new entry), `fields` (a new
//! entry's keys, for both formats), `diff` (line diffs: the unified diff of `--dry-run`, and
//! the replay of a TOML re-print onto the original lines so that line breaks survive), `write`
//! (atomic writes with backups).
//!
//! Nothing here reads the environment: `${VAR}` references are written and kept verbatim.

mod diff;
mod fields;
mod json;
mod json_layout;
mod json_render;
mod toml;
mod toml_tables;
mod write;

use std::collections::BTreeMap;

use super::Format;

pub use diff::unified_diff;
pub use write::write_atomically;

/// How a server is reached, as the user writes it (strings are kept verbatim: `${VAR}` stays a
/// reference).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum EntryTransport {
    /// A child process spoken to over stdin/stdout.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Some: written as the entry's `tls` (an `https://` server's private CA or client
        /// certificate).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<EntryTls>,
        /// true: written as `public_only = true` (every connection held to public
        /// addresses); false writes nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        public_only: bool,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<EntryTls>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        public_only: bool,
    },
    /// A built-in tool provider, served in-process.
    Builtin { name: String },
}

/// A server entry to write.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerEntry {
    pub transport: EntryTransport,
    /// Some(false): written disabled. None: the key is not written.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Some: written as `trust = "pinned"` / `"trust": "pinned"`. None: the key is not
    /// written (the server's trust is then `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<super::Trust>,
    /// Some: written as the entry's `sandbox` (a stdio server's; see [`EntrySandbox`]).
    /// None: the key is not written (the gateway's default sandbox applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Box<EntrySandbox>>,
}

impl ServerEntry {
    /// An entry of `transport`, enabled, with the gateway's default trust and sandbox.
    ///
    /// ```
    /// use switchboard_core::config::edit::{EntryTransport, ServerEntry};
    /// let entry = ServerEntry::new(EntryTransport::Builtin { name: "dice".into() });
    /// assert_eq!(entry.enabled, None);
    /// ```
    pub fn new(transport: EntryTransport) -> Self {
        Self {
            transport,
            enabled: None,
            trust: None,
            sandbox: None,
        }
    }
}

/// The `tls` of a new HTTP server entry (`[servers.ID.tls]`, docs/config.md): the files, as
/// the user wrote them (a relative path is the config file's directory's).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntryTls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The `sandbox` of a new stdio server entry, as the user asked for it: `off` writes
/// `sandbox = false`; nothing set writes `sandbox = true` (the gateway's default sandbox);
/// otherwise a table of the keys set (strings kept verbatim, `${VAR}` included).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntrySandbox {
    #[serde(default)]
    pub off: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// true writes `inherit_env = true`; false writes nothing (the default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readable: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
}

/// Why an edit could not be made. The text is never half-edited: an error leaves it as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("server '{0}' is already in the config file")]
    Exists(String),
    #[error("server '{0}' is not in the config file")]
    Missing(String),
    /// The text could not be parsed for editing (line, column 1-based, message).
    #[error("{line}:{column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// The file's shape has no place for servers that this editor understands.
    #[error("{0}")]
    Unsupported(String),
}

impl EditError {
    /// A syntax error at byte `offset` of `text`.
    fn syntax_at(text: &str, offset: usize, message: impl Into<String>) -> Self {
        let pos = super::tree::Pos::at(text, offset);
        Self::Syntax {
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }
}

/// Adds server `id` at the end of the file's servers (a new `[servers.ID]` table after the last
/// server table; a new member of the `mcpServers` / `servers` object or array), or
/// [`EditError::Exists`] when the file already has it.
pub fn add_server(
    text: &str,
    format: Format,
    id: &str,
    entry: &ServerEntry,
) -> Result<String, EditError> {
    match format {
        Format::Toml => toml::add(text, id, entry),
        Format::Json => json::add(text, id, entry),
    }
}

/// Removes server `id` (its table and sub-tables, or its member and the comma that separated
/// it), or [`EditError::Missing`].
pub fn remove_server(text: &str, format: Format, id: &str) -> Result<String, EditError> {
    match format {
        Format::Toml => toml::remove(text, id),
        Format::Json => json::remove(text, id),
    }
}

/// Enables or disables server `id`: the value of an existing `enabled` / `disabled` key is
/// changed, else the key is added at the end of the entry (in JSON only when disabling: a
/// server without either key is enabled already).
pub fn set_enabled(
    text: &str,
    format: Format,
    id: &str,
    enabled: bool,
) -> Result<String, EditError> {
    match format {
        Format::Toml => toml::set_enabled(text, id, enabled),
        Format::Json => json::set_enabled(text, id, enabled),
    }
}

/// The entry of server `id` as it stands in the file (its text, for an audit's before/after),
/// or None.
pub fn server_text(text: &str, format: Format, id: &str) -> Option<String> {
    match format {
        Format::Toml => toml::server_text(text, id),
        Format::Json => json::server_text(text, id),
    }
}

/// The ids of the servers in the file, in file order.
pub fn server_ids(text: &str, format: Format) -> Result<Vec<String>, EditError> {
    match format {
        Format::Toml => toml::server_ids(text),
        Format::Json => json::server_ids(text),
    }
}

#[cfg(test)]
mod tests;
