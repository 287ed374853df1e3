//! The admin endpoint: how operator commands (`switchboard approvals ...`) reach a running
//! gateway. `serve` listens on loopback with its own random bearer token and writes both to
//! an admin file (mode 0600) that the commands read:
//! `$SWITCHBOARD_ADMIN_FILE`, else `$XDG_STATE_HOME/switchboard/admin.json`, else
//! `~/.local/state/switchboard/admin.json`. The file is written once the gateway is ready to
//! serve (a start that fails leaves another gateway's file alone) and removed when it stops,
//! unless another gateway has written its own over it since ([`Published`]).

pub mod client;
pub(crate) mod operations;
pub mod server;
mod servers;

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// Where a running gateway's admin endpoint is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdminFile {
    pub url: String,
    pub token: String,
    pub pid: u32,
    /// The config file the gateway runs (None: the built-in default), so `status` asks the
    /// gateway that serves the config it is looking at.
    #[serde(default)]
    pub config: Option<PathBuf>,
}

/// The admin file's path.
pub fn admin_path(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os("SWITCHBOARD_ADMIN_FILE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/state")))
        .context("cannot find a state directory: set XDG_STATE_HOME or HOME")?;
    Ok(state.join("switchboard").join("admin.json"))
}

/// An admin file this gateway wrote: removed when dropped (the gateway stops), unless
/// another gateway has written its own over it since.
#[derive(Debug)]
pub struct Published {
    path: PathBuf,
    token: String,
}

impl Drop for Published {
    fn drop(&mut self) {
        if AdminFile::read(&self.path).is_ok_and(|file| file.token == self.token) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl AdminFile {
    /// Writes the file at `path` for this gateway, saying so when it replaces the file of
    /// another gateway still running (operator commands reach this one from now on).
    pub fn publish(&self, path: &Path) -> anyhow::Result<Published> {
        if let Ok(previous) = Self::read(path)
            && previous.pid != self.pid
            && previous.is_running()
        {
            tracing::warn!(
                "{} named the running gateway {} (pid {}, config {}); operator commands reach this gateway from now on (give each gateway its own --admin-file to keep them apart)",
                path.display(),
                previous.url,
                previous.pid,
                previous.config.as_deref().map_or_else(
                    || "built-in default".to_owned(),
                    |c| c.display().to_string()
                ),
            );
        }
        self.write(path)?;
        Ok(Published {
            path: path.to_owned(),
            token: self.token.clone(),
        })
    }

    /// Whether the process that wrote the file still runs.
    pub fn is_running(&self) -> bool {
        i32::try_from(self.pid)
            .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok())
    }

    /// Writes the file readable by its owner only.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        switchboard::private_file::write(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
    }

    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read {}: is `switchboard serve` running? (or pass --admin-file)",
                path.display()
            )
        })?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not an admin file", path.display()))
    }
}
