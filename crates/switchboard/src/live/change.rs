//! The change operation's vocabulary: a [`Change`], the request that carries it, the report
//! every surface answers with, and the typed errors with their stable codes.

use std::path::PathBuf;

use serde::Serialize;
use switchboard_core::config::edit::{EditError, ServerEntry};

use super::{ServerOutcome, Stamp, Surface};

/// One change to the servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Change {
    /// Adds a server (refused if the id is taken).
    Add { server: String, entry: ServerEntry },
    /// Removes a server; its calls in flight finish first (up to the drain timeout).
    Remove { server: String },
    /// Starts a disabled server.
    Enable { server: String },
    /// Stops a server but keeps its entry (`enabled = false`).
    Disable { server: String },
    /// Replaces the server's connection by a new one with the same settings.
    Restart { server: String },
}

impl Change {
    pub fn server(&self) -> &str {
        match self {
            Self::Add { server, .. }
            | Self::Remove { server }
            | Self::Enable { server }
            | Self::Disable { server }
            | Self::Restart { server } => server,
        }
    }

    pub fn action(&self) -> &'static str {
        match self {
            Self::Add { .. } => "add",
            Self::Remove { .. } => "remove",
            Self::Enable { .. } => "enable",
            Self::Disable { .. } => "disable",
            Self::Restart { .. } => "restart",
        }
    }
}

/// A change with who asked for it and what it was based on.
#[derive(Debug, Clone)]
pub struct ChangeRequest {
    pub change: Change,
    pub by: Surface,
    /// Who asked, when the surface knows.
    pub actor: Option<String>,
    /// The revision the change was based on ([`Host::revision`]); `None` = the current one.
    pub base_revision: Option<String>,
    /// Validate and show the file's diff, change nothing.
    pub dry_run: bool,
}

impl ChangeRequest {
    pub fn new(change: Change, by: Surface) -> Self {
        Self {
            change,
            by,
            actor: None,
            base_revision: None,
            dry_run: false,
        }
    }
}

/// What a change or reload did.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ChangeReport {
    /// The revision after the change (before it, for a dry run).
    pub revision: String,
    /// Every server the change touched.
    pub servers: Vec<ServerOutcome>,
    /// Settings that changed but apply only after a restart of the gateway (left as they were).
    pub needs_restart: Vec<String>,
    /// The config file written (or, for a dry run, that would be).
    pub file: Option<PathBuf>,
    /// Whether the file was created by this change (the gateway ran on its built-in default).
    pub created_file: bool,
    /// The unified diff of the config file.
    pub diff: String,
    pub dry_run: bool,
}

/// Why a change was refused or failed. Every surface reports the same [`ChangeError::code`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// `gateway.read_only` / `serve --read-only-config`.
    #[error(
        "the configuration is read-only (gateway.read_only or --read-only-config): edit the file instead"
    )]
    ReadOnly,
    /// The revision the change was based on is no longer current.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The config would be invalid: every problem, located (`file:line:column: message`).
    #[error("the configuration would be invalid:\n{}", .0.join("\n"))]
    Invalid(Vec<String>),
    #[error("no server '{0}' in the configuration")]
    NotFound(String),
    #[error("server '{0}' is already in the configuration")]
    Exists(String),
    /// It was valid, but applying it failed; nothing changed.
    #[error("server '{server}': {reason}; nothing was changed")]
    Failed { server: String, reason: String },
    /// Reading or writing the config file failed.
    #[error("{0}")]
    Io(String),
    /// The Host was shut down: nothing is changed, no server started again.
    #[error("the Host was shut down: no change applies after Host::shutdown")]
    ShutDown,
}

impl ChangeError {
    /// A stable code for programs: `read_only`, `conflict`, `invalid`, `not_found`, `exists`,
    /// `failed`, `io`, `shut_down`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Conflict(_) => "conflict",
            Self::Invalid(_) => "invalid",
            Self::NotFound(_) => "not_found",
            Self::Exists(_) => "exists",
            Self::Failed { .. } => "failed",
            Self::Io(_) => "io",
            Self::ShutDown => "shut_down",
        }
    }

    /// The HTTP status the admin endpoint answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::ReadOnly => 403,
            Self::Conflict(_) | Self::Exists(_) => 409,
            Self::Invalid(_) => 422,
            Self::NotFound(_) => 404,
            Self::Failed { .. } => 502,
            Self::Io(_) => 500,
            Self::ShutDown => 503,
        }
    }

    pub(super) fn from_edit(error: EditError) -> Self {
        match error {
            EditError::Exists(server) => Self::Exists(server),
            EditError::Missing(server) => Self::NotFound(server),
            other => Self::Invalid(vec![other.to_string()]),
        }
    }
}

/// A config file that failed validation: the gateway keeps the last good configuration.
#[derive(Debug, Clone, Serialize)]
pub struct FileError {
    pub file: PathBuf,
    /// Every problem as `file:line:column: message` (with its hint).
    pub problems: Vec<String>,
    pub since: Stamp,
}
