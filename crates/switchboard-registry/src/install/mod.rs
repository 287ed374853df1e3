//! [`install`]: puts a [`Resolution`]'s package into a directory of its own and says how to
//! start it ([`Launch`]) — npm into `DIR/node_modules`, PyPI into `DIR/venv`, OCI pulled into
//! the local Docker engine, a remote needing nothing.
//!
//! Every step is a child process with no shell ([`process`]), in its own process group,
//! inheriting the environment (so `npm_config_*`, `PIP_*` and proxies reach the tools).
//! Cancellation, or a step running past its deadline ([`STEP_DEADLINE`] unless the caller
//! gives one), kills the group; any failure or cancellation removes the directory, so a
//! directory that exists after `install` returned `Ok` is a complete installation.

mod npm;
mod oci;
mod process;
mod pypi;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::resolve::{Choice, RemoteKind, Resolution, docker_env_args};

/// Progress of the install: percent (0..=100) and a short message.
pub type ProgressFn<'a> = &'a (dyn Fn(u8, &str) + Send + Sync);

/// How to start an installed server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// A command (absolute path, or `docker`) and its arguments; `env` is added to the
    /// gateway's environment, and the caller adds the inputs' values to it.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// Why an install did not finish.
#[derive(Debug, Error)]
pub enum InstallError {
    /// A tool the install needs is missing or not working; the message says how to get it.
    #[error("{0}")]
    Unavailable(String),
    /// A step exited unsuccessfully.
    #[error("`{command}` failed ({status}){}", output_note(.output))]
    Failed {
        command: String,
        status: String,
        /// The last lines it printed.
        output: String,
    },
    /// A step ran past its deadline: it was killed with everything it started.
    #[error(
        "`{command}` was stopped after {} s without finishing (with every process it started){}",
        .after.as_secs(),
        output_note(.output)
    )]
    TimedOut {
        command: String,
        after: Duration,
        /// The last lines it printed.
        output: String,
    },
    /// The package installed, but how to start it cannot be told (no bin, several, …).
    #[error("installed, but cannot tell which command starts the server: {0}")]
    NoCommand(String),
    #[error("install cancelled")]
    Cancelled,
    /// A file-system operation failed; the text says which.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
}

fn output_note(output: &str) -> String {
    if output.trim().is_empty() {
        " and printed nothing".to_owned()
    } else {
        format!("; its last output:\n{output}")
    }
}

/// How long one step of an install (`npm install`, `pip install`, `docker pull`, …) may run
/// when the caller has no deadline of its own: long enough for a large package on a slow
/// link, short enough that a hung one gives its slot back the same hour.
pub const STEP_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// Installs `resolution` into `dir` (created; removed again on failure or cancellation) and
/// returns how to start it. A step still running after `step_deadline` is killed with its
/// process group and the install fails ([`InstallError::TimedOut`]).
pub async fn install(
    resolution: &Resolution,
    dir: &Path,
    step_deadline: Duration,
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<Launch, InstallError> {
    let settings = Settings {
        deadline: step_deadline,
        ..Settings::default()
    };
    install_with(resolution, dir, &settings, cancel, progress).await
}

/// What an install's steps are given: each one's deadline, and — changed by tests — the spec
/// handed to npm or pip (a local tarball or wheel instead of `PACKAGE@VERSION`) and variables
/// for the children.
pub(crate) struct Settings {
    pub spec: Option<String>,
    pub env: Vec<(String, String)>,
    pub deadline: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            spec: None,
            env: Vec::new(),
            deadline: STEP_DEADLINE,
        }
    }
}

pub(crate) async fn install_with(
    resolution: &Resolution,
    dir: &Path,
    settings: &Settings,
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<Launch, InstallError> {
    if cancel.is_cancelled() {
        return Err(InstallError::Cancelled);
    }
    if let Choice::Remote {
        transport,
        url,
        headers,
    } = &resolution.choice
    {
        progress(100, "remote server: nothing to install");
        let (url, headers) = (url.clone(), headers.clone());
        return Ok(match transport {
            RemoteKind::Http => Launch::Http { url, headers },
            RemoteKind::Sse => Launch::Sse { url, headers },
        });
    }
    let dir = std::path::absolute(dir)
        .map_err(|error| InstallError::Io(format!("cannot resolve {}", dir.display()), error))?;
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|error| InstallError::Io(format!("cannot create {}", dir.display()), error))?;
    let result = install_package(resolution, &dir, settings, cancel, progress).await;
    match &result {
        Ok(_) => progress(100, "installed"),
        Err(error) => {
            if let Err(remove) = uninstall(&dir) {
                tracing::warn!(dir = %dir.display(), %remove, "cannot remove a failed install");
            }
            tracing::debug!(%error, "install failed");
        }
    }
    result
}

async fn install_package(
    resolution: &Resolution,
    dir: &Path,
    settings: &Settings,
    cancel: &CancellationToken,
    progress: ProgressFn<'_>,
) -> Result<Launch, InstallError> {
    match &resolution.choice {
        Choice::Npm {
            package,
            version,
            runtime_args,
            package_args,
            env: fixed,
        } => {
            if !runtime_args.is_empty() {
                tracing::warn!(
                    package,
                    ?runtime_args,
                    "npm runtime arguments (for node/npx) are ignored: the package's bin runs directly"
                );
            }
            let spec = settings
                .spec
                .clone()
                .unwrap_or_else(|| format!("{package}@{version}"));
            let bin = npm::install(&spec, package, dir, settings, cancel, progress).await?;
            Ok(stdio(bin, package_args.clone(), fixed))
        }
        Choice::Pypi {
            package,
            version,
            package_args,
            env: fixed,
        } => {
            let spec = settings
                .spec
                .clone()
                .unwrap_or_else(|| format!("{package}=={version}"));
            let script = pypi::install(&spec, package, dir, settings, cancel, progress).await?;
            Ok(stdio(script, package_args.clone(), fixed))
        }
        Choice::Oci {
            image,
            runtime_args,
            package_args,
            env: fixed,
        } => {
            oci::pull(image, settings, cancel, progress).await?;
            let names = fixed
                .keys()
                .chain(resolution.inputs.iter().map(|input| &input.name));
            let mut args: Vec<String> = ["run", "-i", "--rm"].map(str::to_owned).into();
            args.extend(docker_env_args(names));
            args.extend(runtime_args.iter().cloned());
            args.push(image.clone());
            args.extend(package_args.iter().cloned());
            Ok(Launch::Stdio {
                command: "docker".to_owned(),
                args,
                env: fixed.clone(),
            })
        }
        Choice::Remote { .. } => Err(InstallError::NoCommand(
            "a remote server has nothing to install".to_owned(),
        )),
    }
}

fn stdio(command: PathBuf, args: Vec<String>, env: &BTreeMap<String, String>) -> Launch {
    Launch::Stdio {
        command: command.display().to_string(),
        args,
        env: env.clone(),
    }
}

/// Removes an installation's directory; `Ok` when it is not there.
pub fn uninstall(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Whether each installer tool (`npm`, `python3`, `docker`) is on `PATH`.
pub fn tools_available() -> Vec<(&'static str, bool)> {
    ["npm", "python3", "docker"]
        .into_iter()
        .map(|tool| (tool, process::on_path(tool, &[])))
        .collect()
}
