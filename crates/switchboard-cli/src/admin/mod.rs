//! The admin endpoint: how operator commands (`switchboard approvals ...`) reach a running
//! gateway. `serve` listens on loopback with its own random bearer token and writes both to
//! an admin file (mode 0600) that the commands read:
//! `$SWITCHBOARD_ADMIN_FILE`, else `$XDG_STATE_HOME/switchboard/admin.json`, else
//! `~/.local/state/switchboard/admin.json`. The file is written once the gateway is ready to
//! serve (a start that fails leaves another gateway's file alone) and removed when it stops,
//! unless another gateway has written its own over it since ([`Published`]).
//!
//! **The first gateway keeps the file.** A second gateway on the same admin file while the
//! first still runs (say an operator's `serve --http` daemon, then a stdio `serve` that a
//! desktop client launches on the same state) leaves the first's file in place and does not
//! advertise its own endpoint, saying so in its log: operator commands (`status`,
//! `approvals`, `reload`) keep reaching the gateway the operator started and saw reachable,
//! rather than moving to whichever process a client started last and vanishing with it. A
//! gateway operators must reach alongside another gets its own `--admin-file`. A file whose
//! gateway is gone (its pid no longer runs, or its endpoint no longer answers) is replaced:
//! at start, and by a gateway left unadvertised, which looks again every
//! [`advertise::ADVERTISE_RETRY`] and takes the file once the first gateway has stopped. Of two
//! gateways starting together where there is no file, the first to write it keeps it.

pub(crate) mod advertise;
pub mod client;
pub(crate) mod operations;
pub mod server;
mod servers;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// An admin file this gateway wrote: removed when dropped (the gateway stops), unless it
/// is no longer this gateway's (another has written its own since, or removed it): a
/// gateway never removes a file it does not own.
#[derive(Debug)]
pub struct Published {
    path: PathBuf,
    token: String,
    pid: u32,
}

impl Published {
    /// Whether the file at the path is still the one this gateway wrote.
    fn still_ours(&self) -> bool {
        AdminFile::read(&self.path)
            .is_ok_and(|file| file.token == self.token && file.pid == self.pid)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        if self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// How long a gateway waits for another's admin endpoint to accept a connection before it
/// counts that gateway as gone (loopback: an answer or a refusal comes at once).
const LIVENESS_PATIENCE: Duration = Duration::from_millis(500);

impl AdminFile {
    /// Writes the file at `path` for this gateway, unless it names another gateway that
    /// still runs: that one keeps it (the module doc says why), and is returned.
    pub fn publish(&self, path: &Path) -> anyhow::Result<Result<Published, AdminFile>> {
        if let Ok(first) = Self::read(path)
            && first.pid != self.pid
            && first.is_running()
            && first.answers()
        {
            return Ok(Err(first));
        }
        let published = Published {
            path: path.to_owned(),
            token: self.token.clone(),
            pid: self.pid,
        };
        if path.exists() {
            // A gone gateway's file, or this one's.
            self.write(path)?;
            return Ok(Ok(published));
        }
        // No file: taken only if no gateway starting beside this one took it first.
        let text = serde_json::to_string_pretty(self)?;
        match switchboard::private_file::create_new(path, text.as_bytes()) {
            Ok(()) => Ok(Ok(published)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => self.publish(path),
            Err(error) => Err(error).with_context(|| format!("cannot write {}", path.display())),
        }
    }

    /// What a gateway that `keeper` keeps the admin file at `path` from says in its log.
    pub fn kept_by(path: &Path, keeper: &AdminFile) -> String {
        format!(
            "{} names the gateway already running at {} (pid {}, config {}); it keeps the file, so operator commands (status, approvals, reload, the console) reach that gateway, not this one, until it stops: give this gateway its own --admin-file to reach it",
            path.display(),
            keeper.url,
            keeper.pid,
            keeper.config.as_deref().map_or_else(
                || "built-in default".to_owned(),
                |c| c.display().to_string()
            ),
        )
    }

    /// Whether the process that wrote the file still runs.
    pub fn is_running(&self) -> bool {
        i32::try_from(self.pid)
            .is_ok_and(|pid| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok())
    }

    /// Whether the endpoint the file names accepts a connection: a gateway killed outright
    /// leaves its file behind, and its pid may since be another process's.
    fn answers(&self) -> bool {
        self.url
            .strip_prefix("http://")
            .and_then(|authority| authority.parse::<SocketAddr>().ok())
            .is_some_and(|address| TcpStream::connect_timeout(&address, LIVENESS_PATIENCE).is_ok())
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
