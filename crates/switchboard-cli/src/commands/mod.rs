//! One module per subcommand; [`load_config`] is how every command gets its config, and
//! [`start_host`] how a one-off command gets its Host ([`one_off`]).

pub mod approvals;
pub mod audit;
pub mod calibrate;
pub mod call;
pub mod config;
pub mod console;
pub mod exposure_flag;
pub mod keys;
pub mod manager;
pub mod migrate;
pub mod one_off;
pub mod rules;
pub mod sandbox_exec;
pub mod serve;
pub mod servers;
pub mod status;
pub mod stop_signals;
pub mod tier;
pub mod token;
pub mod tool_server;
pub mod tools;

pub use one_off::{start_host, start_host_for_tool, start_host_with};

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use switchboard_core::config::{Config, Environment, GatewayEnvironment, Located, locate};

/// Finds and loads the config (lookup order in `Config` docs) and says which was used.
pub fn load_config(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let env = GatewayEnvironment::new();
    load_config_in(explicit, &env, &env)
}

/// [`load_config`] for a command that reads no server and no secret of the config (the
/// manager's operations, a search): a variable that is not set reads as empty, and each one
/// is named in a warning instead of refusing the file — an unset `${OTLP_TOKEN}` is no reason
/// not to list operations.
pub fn load_config_for_reading(explicit: Option<&Path>) -> anyhow::Result<Config> {
    let env = UnsetAsEmpty {
        inner: GatewayEnvironment::new(),
        unset: std::sync::Mutex::new(std::collections::BTreeSet::new()),
    };
    let config = load_config_in(explicit, &env.inner, &env)?;
    let unset = env.unset.into_inner().unwrap_or_else(|e| e.into_inner());
    if !unset.is_empty() {
        let names: Vec<String> = unset.into_iter().collect();
        tracing::warn!(
            "variables not set: {} (the config's values that use them read as empty; this command does not use them)",
            names.join(", ")
        );
    }
    Ok(config)
}

/// An environment in which a variable `inner` lacks reads as empty, its name noted.
struct UnsetAsEmpty {
    inner: GatewayEnvironment,
    unset: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Environment for UnsetAsEmpty {
    fn var(&self, name: &str) -> Option<String> {
        self.inner.var(name).or_else(|| {
            self.unset
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name.to_owned());
            Some(String::new())
        })
    }
}

/// The config found with `locating` (`$SWITCHBOARD_CONFIG`), its `${NAME}`s filled from
/// `substituting`.
fn load_config_in(
    explicit: Option<&Path>,
    locating: &dyn Environment,
    substituting: &dyn Environment,
) -> anyhow::Result<Config> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let user_dir = user_config_dir();
    let located = locate(explicit, locating, &cwd, user_dir.as_deref())
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    match located {
        Located::File { path, .. } => {
            tracing::info!("config: {}", path.display());
            Config::load(&path, substituting)
                .map_err(|errors| anyhow::anyhow!("invalid config:\n{errors}"))
        }
        Located::BuiltinDefault => {
            tracing::info!("config: built-in default (no config file found)");
            Ok(builtin_default())
        }
    }
}

/// The built-in default, less the `files` server where the working directory may not be its
/// root (`/`, the home directory): the other built-ins still serve, and a one-line notice
/// says why `files` is missing and how to give it a root. A config file that names `files`
/// with no root still fails to start it, with its own message.
fn builtin_default() -> Config {
    let mut config = Config::builtin_default();
    if let Some(why) = switchboard_tools::working_directory_unfit_as_files_root() {
        config.servers.retain(|server| server.id != "files");
        // Not `eprintln!`: a command whose stderr is closed still runs.
        let _ = writeln!(
            std::io::stderr(),
            "switchboard: notice: the built-in files server is left out: {why}; run from a project directory, or give it roots in a config file ([servers.files] builtin = \"files\", roots = [\"DIR\"])"
        );
    }
    config
}

/// The config file commands would load (None: the built-in default).
pub fn located_config_file(explicit: Option<&Path>) -> anyhow::Result<Option<std::path::PathBuf>> {
    Ok(match located_config(explicit)? {
        Located::File { path, .. } => Some(path),
        Located::BuiltinDefault => None,
    })
}

/// The config commands would load, and how it was found.
pub fn located_config(explicit: Option<&Path>) -> anyhow::Result<Located> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    locate(
        explicit,
        &GatewayEnvironment::new(),
        &cwd,
        user_config_dir().as_deref(),
    )
    .map_err(|errors| anyhow::anyhow!("{errors}"))
}

/// The user's config directory (`$XDG_CONFIG_HOME`, else `~/.config`).
pub fn user_config_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))
}

/// Where changes go when the gateway runs on the built-in default: the user config file.
pub fn user_config_file() -> Option<std::path::PathBuf> {
    Some(
        user_config_dir()?
            .join("switchboard")
            .join("switchboard.toml"),
    )
}

/// Refuses an agent name the config does not define (any name goes when it defines none).
pub fn check_agent(config: &Config, agent: Option<&str>) -> anyhow::Result<()> {
    match agent {
        Some(name) if !config.agents.is_empty() && !config.agents.contains_key(name) => {
            let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
            anyhow::bail!(
                "unknown agent '{name}' (the config defines: {})",
                known.join(", ")
            )
        }
        _ => Ok(()),
    }
}
