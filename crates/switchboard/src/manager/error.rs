//! Why the manager refused or could not do what was asked, with a stable code per kind for
//! programs (the CLI, the admin endpoint, the built-in's tools).

use super::StoreError;

/// Why the manager refused or could not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManagerError {
    #[error("no operation '{0}' (switchboard operations list)")]
    NotFound(String),
    #[error("operation {id} is already {state}")]
    Finished { id: String, state: &'static str },
    #[error("operation {0} is not waiting for input")]
    NotWaiting(String),
    #[error("{0}")]
    Refused(String),
    /// The operation runs on another replica of the deployment: only that one can change it.
    #[error("operation {id} runs on replica {replica}: do this through that replica")]
    Elsewhere { id: String, replica: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the gateway is shutting down")]
    Gone,
}

impl ManagerError {
    /// A stable code for programs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "not_found",
            Self::Finished { .. } => "finished",
            Self::NotWaiting(_) => "not_waiting",
            Self::Refused(_) => "refused",
            Self::Elsewhere { .. } => "elsewhere",
            Self::Store(_) => "io",
            Self::Gone => "gone",
        }
    }
}
