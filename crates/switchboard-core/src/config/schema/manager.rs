//! The mirror types of `[manager]`, the server manager (where it finds servers, how it
//! installs and activates them, what its operations cost), for the JSON Schema the parent
//! module generates.

use schemars::JsonSchema;

use super::Duration;
use super::security::ServerSandbox;
use super::server::TrustMode;

/// The server manager: where it finds servers, how it installs and activates them, and what
/// its operations cost.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Manager {
    /// Base URLs of MCP registries (v0.1 API), searched in order (default
    /// ["https://registry.modelcontextprotocol.io"]; [] searches none).
    #[schemars(inner(regex(pattern = r"^(https?://|\$\{)")))]
    registries: Option<Vec<String>>,
    /// Local catalog files of server.json entries (relative paths are taken from the config
    /// file's directory).
    catalogs: Option<Vec<String>>,
    /// What happens to a server a model asked for once it passes probation: approval
    /// (default; it waits for an operator) or auto (activated at once).
    activation: Option<ActivationMode>,
    /// Operations run at once (default 2).
    #[schemars(range(min = 1))]
    max_concurrent: Option<u64>,
    /// Where installed servers live (default: under $XDG_DATA_HOME/switchboard).
    install_dir: Option<String>,
    /// The manager's operations database (default: under $XDG_DATA_HOME/switchboard).
    database: Option<String>,
    /// How long registry answers are cached (default "10m").
    registry_ttl: Option<Duration>,
    /// How long an activation waits for an approval (default "1h").
    approval_timeout: Option<Duration>,
    /// How long one install step (npm install, pip install, docker pull) may run before it is
    /// killed and its operation fails (default "15m").
    step_timeout: Option<Duration>,
    /// The trust given to the servers it installs (default "pinned").
    trust: Option<TrustMode>,
    /// The sandbox of the npm and PyPI servers it installs, written into their entries with
    /// the install directory readable and writable: true (default; [gateway.sandbox], or the
    /// defaults), a table of its own, or false (none: they run unconfined).
    sandbox: Option<ServerSandbox>,
    /// Whether a remote a model asks for may be on a loopback, private or other non-public
    /// address (default false: refused; an operator's install may name one).
    allow_private_remotes: Option<bool>,
    /// Energy costs of its operations.
    energy: Option<Energy>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum ActivationMode {
    /// An operator approves each activation.
    Approval,
    /// Activated once it passes probation.
    Auto,
}

/// Energy costs of the manager's operations: a cost per second, and [min, max] per operation.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Energy {
    /// Cost per second an operation runs (default 2).
    #[schemars(range(min = 0))]
    per_second: Option<f64>,
    /// Searching registries and catalogs (default [20, 50]).
    search: Option<EnergyRange>,
    /// Installing a server (default [10, 40]).
    install: Option<EnergyRange>,
    /// Adding a server to the config (default [5, 10]).
    add: Option<EnergyRange>,
    /// Testing a server (default [10, 20]).
    test: Option<EnergyRange>,
    /// Changing a server's settings (default [2, 5]).
    modify: Option<EnergyRange>,
    /// Removing a server (default [2, 5]).
    remove: Option<EnergyRange>,
}

/// [min, max]: two numbers, 0 <= min <= max.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub(super) struct EnergyRange(#[schemars(inner(range(min = 0)))] [f64; 2]);
