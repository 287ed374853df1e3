//! Why a config that validated cannot be run: [`AssembleError`], what
//! [`crate::Host::from_config`] and the server plans fail with. Each variant names the
//! server or the config section at fault, and says how out where there is a way.

use crate::keyring::KeyRingError;
use crate::shared::SharedError;

/// A config that validated but cannot be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssembleError {
    /// A server's definition cannot be turned into a connection: its upstream credentials
    /// (`[servers.ID.auth]`) or its built-in (an unknown name, bad settings).
    #[error("server '{server}': {reason}")]
    Server { server: String, reason: String },
    /// A server has a sandbox, but the Host has no launcher to run it under; it is refused
    /// rather than run unsandboxed.
    #[error(
        "server '{server}' has a sandbox, but this gateway has no sandbox launcher: the \
         switchboard binary is its own; a program embedding the library sets \
         HostOptions::sandbox_launcher to a binary that runs switchboard::sandbox::exec \
         (or sets sandbox = false on the server)"
    )]
    SandboxWithoutLauncher { server: String },
    /// Servers say `trust = "pinned"`, no pin store was given, and the config names no
    /// place for one; they are refused rather than run unpinned.
    #[error(
        "{} trust = \"pinned\", but there is no place for pins: no gateway.pins, no \
         gateway.ledger and no data directory ($XDG_DATA_HOME or $HOME); set gateway.pins \
         in the config, or give HostOptions::pins (PinStore::open(None) keeps them in this \
         process's memory only)",
        pinned_servers(.servers)
    )]
    NoPlaceForPins { servers: Vec<String> },
    /// `[shared] redis` cannot be used (a bad URL, no Tokio runtime).
    #[error(transparent)]
    Shared(#[from] SharedError),
    /// The `[shared] keys` file cannot be followed.
    #[error("[shared] keys: {0}")]
    Keys(#[from] KeyRingError),
    /// `[storage] url` cannot be used by one of its parts (statistics, approvals, the
    /// server manager, quotas); `reason` names the part.
    #[error("[storage] url: {reason}")]
    Storage { reason: String },
}

/// `server 'a' has` / `servers 'a', 'b' have`.
fn pinned_servers(servers: &[String]) -> String {
    let quoted: Vec<String> = servers.iter().map(|id| format!("'{id}'")).collect();
    match quoted.as_slice() {
        [one] => format!("server {one} has"),
        many => format!("servers {} have", many.join(", ")),
    }
}

impl AssembleError {
    /// `[storage] url: {reason}`.
    pub(crate) fn storage(reason: impl std::fmt::Display) -> Self {
        Self::Storage {
            reason: reason.to_string(),
        }
    }

    /// `server '{server}': {reason}`.
    pub(crate) fn server(server: &str, reason: impl std::fmt::Display) -> Self {
        Self::Server {
            server: server.to_owned(),
            reason: reason.to_string(),
        }
    }
}
