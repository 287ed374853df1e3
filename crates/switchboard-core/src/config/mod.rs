//! What the operator asked for: a config file turned into a validated [`Config`].
//!
//! Three file shapes are accepted: the native TOML (`docs/config.md`), the `mcpServers` JSON of
//! Claude Desktop / Cursor (and VS Code's `servers` object), and the seeds' `servers[]` array.
//! Each is parsed into a tree of values that remember their line and column
//! ([`tree::Node`]), and one validator walks that tree, so every problem — in any format — is
//! reported with file, line, column and a hint, all at once. `${VAR}` and `${VAR:-default}` are
//! substituted in every string.
//!
//! Code map: `toml_tree`/`json` (text → tree), `validate` (root, `[gateway]`, typed readers),
//! `server` and `transport` (one server), `manager` (`[manager]`), `auth` (`[auth]`), `storage` (`[storage]`), `substitute` (and the
//! gateway's secrets file), `duration`, `suggest` (did-you-mean),
//! `model` (the result, a file per section), `problem` (located errors), `locate` (which file), `schema` (the
//! checked-in JSON Schema).
//!
//! This module reads no files except in [`Config::load`], [`locate`] and the secrets file of
//! [`GatewayEnvironment`] (which [`write_secret`] and [`remove_secrets`] change), and no
//! environment except through the [`Environment`] trait. It never starts anything: it only
//! describes.

mod agents;
mod auth;
mod builtin;
mod duration;
pub mod edit;
mod hooks;
mod json;
mod limits;
mod locate;
mod manager;
mod model;
mod problem;
mod reference;
mod sandbox;
mod schema;
mod server;
mod sessions_database;
mod shared;
mod storage;
mod substitute;
mod suggest;
mod tasks;
mod telemetry;
mod tiers;
mod toml_tree;
mod transport;
mod tree;
mod upstream_auth;
mod upstream_tls;
mod validate;

use std::path::Path;

pub use agents::is_token_hash;
pub use auth::{
    AuthConfig, DEFAULT_ALGORITHMS, Introspection, OAuthConfig, plain_http_off_loopback,
};
pub use builtin::BUILTINS;
pub use duration::{DURATION_HINT, parse_duration};
pub use locate::{Located, LookupStep, locate};
pub use model::{
    Activation, AgentConfig, ApprovalMode, BuiltinSettings, Config, CostConfig,
    DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_REGISTRY, EnergyConfig, EnergyRange,
    EraPreference, Exposure, GatewayConfig, HookConfig, HookEvent, JsonSearchMapping,
    LatencyConfig, LedgerUnavailable, LimitsConfig, MAX_INSTANCES, ManagerConfig, PlayerSetting,
    QuotaConfig, RootConfig, ScopeGrant, SecretString, ServerConfig, StorageConfig, StyleSetting,
    TasksConfig, TelemetryConfig, ToolOverrideConfig, Transport, Trust, UpstreamAuthConfig,
    UpstreamGrant, UpstreamTlsConfig, busy_poll_window,
};
pub use problem::{ConfigErrors, Origin, Problem};
pub use reference::shown_reference;
pub use sandbox::{NetworkAccess, SandboxConfig, SandboxSetting, parse_size};
pub use schema::native_schema;
pub use server::is_valid_id;
pub use shared::SharedConfig;
pub use storage::{check_postgres_url, check_private_key_file};
pub use substitute::{
    Environment, GatewayEnvironment, MapEnvironment, ProcessEnvironment, literal, remove_secret,
    remove_secrets, write_secret,
};
pub use tiers::default_tiers;
pub use transport::redacted_url;

/// The syntax of a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    /// The format a path's extension implies (`.json`/`.jsonc` → JSON, anything else TOML).
    pub fn of(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") || ext.eq_ignore_ascii_case("jsonc") => {
                Self::Json
            }
            _ => Self::Toml,
        }
    }
}

/// A parsed tree with the text and syntax it came from.
struct ParsedText<'a> {
    text: &'a str,
    format: Format,
    root: &'a tree::Node,
}

impl Config {
    /// Reads and validates a config file; the format follows the extension ([`Format::of`]).
    pub fn load(path: &Path, env: &dyn Environment) -> Result<Self, ConfigErrors> {
        let origin = Origin::from(path);
        let problem = |line, column, message| {
            ConfigErrors(vec![Problem::new(
                &origin.to_string(),
                line,
                column,
                message,
                None,
            )])
        };
        let bytes = std::fs::read(path)
            .map_err(|error| problem(0, 0, format!("cannot read the config file: {error}")))?;
        let text = String::from_utf8(bytes).map_err(|error| {
            // Located like any other problem: the first byte that is not UTF-8.
            let bytes = error.as_bytes();
            let valid = error.utf8_error().valid_up_to();
            let before = String::from_utf8_lossy(&bytes[..valid]);
            let pos = tree::Pos::at(&before, valid);
            problem(
                pos.line,
                pos.column,
                format!(
                    "the config file is not UTF-8: byte 0x{:02X} (at byte offset {valid}) cannot start or continue a character",
                    bytes.get(valid).copied().unwrap_or_default()
                ),
            )
        })?;
        Self::parse(&text, origin, Format::of(path), env)
    }

    /// Validates config text. `origin` names it in problems and, for a file, becomes
    /// [`Config::source`].
    pub fn parse(
        text: &str,
        origin: impl Into<Origin>,
        format: Format,
        env: &dyn Environment,
    ) -> Result<Self, ConfigErrors> {
        let origin = origin.into();
        let root = match format {
            Format::Toml => toml_tree::parse(text),
            Format::Json => json::parse(text),
        }
        .map_err(|(line, column, message)| {
            ConfigErrors(vec![Problem::new(
                &origin.to_string(),
                line,
                column,
                message,
                None,
            )])
        })?;
        let parsed = ParsedText {
            text,
            format,
            root: &root,
        };
        validate::validate(&parsed, &origin, env)
    }
}

#[cfg(test)]
mod tests;
