//! `[manager]` and `[manager.energy]`: where the server manager finds servers, how it installs
//! and activates them, and what its operations cost.

use std::path::PathBuf;
use std::time::Duration;

use super::Trust;
use crate::config::sandbox::{SandboxConfig, SandboxSetting};

/// The registry searched when `[manager] registries` is not written.
pub const DEFAULT_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// `[manager]`: how the server manager finds, installs and activates servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// Base URLs of MCP registries (v0.1 API), searched in order. Default:
    /// `["https://registry.modelcontextprotocol.io"]`. Must be http(s) URLs.
    pub registries: Vec<String>,
    /// Local catalog files of server.json entries (relative paths are taken from the config
    /// file's directory).
    pub catalogs: Vec<PathBuf>,
    /// Whether a server the model asked for is activated when it passes probation (Auto) or
    /// waits for an approval (Approval, the default).
    pub activation: Activation,
    /// Operations run at once (default 2, at least 1).
    pub max_concurrent: usize,
    /// Where installed servers live (None: the manager's default under `$XDG_DATA_HOME`).
    pub install_dir: Option<PathBuf>,
    /// The operations database (None: the manager's default).
    pub database: Option<PathBuf>,
    /// How long registry answers are cached (default 10 min).
    pub registry_ttl: Duration,
    /// How long an activation waits for an approval (default 1 h).
    pub approval_timeout: Duration,
    /// How long one install step (`npm install`, `pip install`, `docker pull`) may run before
    /// it is killed and its operation fails (default 15 min, more than zero).
    pub step_timeout: Duration,
    /// The trust given to servers the manager installs (default [`Trust::Pinned`]).
    pub trust: Trust,
    /// The sandbox of the stdio servers it installs from npm and PyPI, written into the entry
    /// it adds with the server's install directory readable and writable:
    /// [`SandboxSetting::On`] (the default: `[gateway.sandbox]`, or the sandbox defaults),
    /// [`SandboxSetting::Own`] (a table of its own) or [`SandboxSetting::Off`] (none).
    /// [`SandboxSetting::Default`] reads as `On`.
    pub sandbox: SandboxSetting,
    /// Whether a remote a model asks for may be on a loopback, private (RFC 1918, ULA, CGNAT)
    /// or otherwise non-public address (default false: refused; an operator's install
    /// may always name one). Link-local and metadata addresses are refused regardless.
    pub allow_private_remotes: bool,
    /// Energy costs of operations (`[manager.energy]`).
    pub energy: EnergyConfig,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        Self {
            registries: vec![DEFAULT_REGISTRY.to_owned()],
            catalogs: Vec::new(),
            activation: Activation::Approval,
            max_concurrent: 2,
            install_dir: None,
            database: None,
            registry_ttl: Duration::from_secs(10 * 60),
            approval_timeout: Duration::from_secs(60 * 60),
            step_timeout: Duration::from_secs(15 * 60),
            trust: Trust::Pinned,
            sandbox: SandboxSetting::On,
            allow_private_remotes: false,
            energy: EnergyConfig::default(),
        }
    }
}

impl ManagerConfig {
    /// The sandbox of a stdio server the manager installs, before its install directory is
    /// added, given the gateway's default (`[gateway.sandbox]`); None: `sandbox = false`.
    pub fn install_sandbox(&self, gateway: Option<&SandboxConfig>) -> Option<SandboxConfig> {
        match &self.sandbox {
            SandboxSetting::Off => None,
            SandboxSetting::Own(own) => Some(own.clone()),
            SandboxSetting::On | SandboxSetting::Default => {
                Some(gateway.cloned().unwrap_or_default())
            }
        }
    }
}

/// `[manager] activation`: what happens to a server the model asked for once it passes
/// probation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activation {
    /// It waits for an operator's approval (`"approval"`).
    #[default]
    Approval,
    /// It is activated at once (`"auto"`).
    Auto,
}

/// `[manager.energy]`: what each operation of the manager costs, in energy units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyConfig {
    /// Cost per second an operation runs (default 2.0, at least 0).
    pub per_second: f64,
    /// Searching the registries and catalogs (default 20..50).
    pub search: EnergyRange,
    /// Installing a server (default 10..40).
    pub install: EnergyRange,
    /// Adding a server to the config (default 5..10).
    pub add: EnergyRange,
    /// Testing a server (default 10..20).
    pub test: EnergyRange,
    /// Changing a server's settings (default 2..5).
    pub modify: EnergyRange,
    /// Removing a server (default 2..5).
    pub remove: EnergyRange,
}

impl Default for EnergyConfig {
    fn default() -> Self {
        Self {
            per_second: 2.0,
            search: EnergyRange::new(20.0, 50.0),
            install: EnergyRange::new(10.0, 40.0),
            add: EnergyRange::new(5.0, 10.0),
            test: EnergyRange::new(10.0, 20.0),
            modify: EnergyRange::new(2.0, 5.0),
            remove: EnergyRange::new(2.0, 5.0),
        }
    }
}

/// A cost between `min` and `max` (written `[min, max]`; `0 <= min <= max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyRange {
    pub min: f64,
    pub max: f64,
}

impl EnergyRange {
    pub const fn new(min: f64, max: f64) -> Self {
        Self { min, max }
    }
}
