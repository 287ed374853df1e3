//! What the operator asked for: a config file turned into a validated [`Config`].
//!
//! Three file shapes are accepted: the native TOML (`docs/config.md`), the `mcpServers` JSON of
//! Claude Desktop / Cursor (and VS Code's `servers` object), and the seeds' `servers[]` array.
//! Each is parsed into a tree of values that remember their line and column
//! ([`tree::Node`]), and one validator walks that tree, so every problem — in any format — is
//! reported with file, line, column and a hint, all at once. `${VAR}` and `${VAR:-default}` are
//! substituted in every string.
//!
//! This module reads no files except in [`Config::load`], and no environment except through
//! the [`Environment`] trait.

mod json;
mod locate;
mod model;
mod problem;
mod schema;
mod substitute;
mod toml_tree;
mod tree;
mod validate;

use std::path::Path;

pub use locate::{Located, locate};
pub use model::{
    Config, EraPreference, GatewayConfig, ServerConfig, ToolOverrideConfig, Transport,
};
pub use problem::{ConfigErrors, Problem};
pub use schema::native_schema;
pub use substitute::{Environment, MapEnvironment, ProcessEnvironment};

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
            Some("json" | "jsonc") => Self::Json,
            _ => Self::Toml,
        }
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path, env: &dyn Environment) -> Result<Self, ConfigErrors> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| {
            ConfigErrors(vec![Problem::new(
                &origin,
                0,
                0,
                format!("cannot read the config file: {error}"),
                None,
            )])
        })?;
        let mut config = Self::parse(&text, &origin, Format::of(path), env)?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Validates config text; `origin` names it in problems.
    pub fn parse(
        text: &str,
        origin: &str,
        format: Format,
        env: &dyn Environment,
    ) -> Result<Self, ConfigErrors> {
        let root = match format {
            Format::Toml => toml_tree::parse(text),
            Format::Json => json::parse(text),
        }
        .map_err(|(line, column, message)| {
            ConfigErrors(vec![Problem::new(origin, line, column, message, None)])
        })?;
        validate::validate(&root, origin, format, env)
    }
}

#[cfg(test)]
mod tests;
