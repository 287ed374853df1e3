//! A replica's own copy of a server another replica installed. With `[storage] url` the
//! managed configuration reaches every replica, but an installed package lies on the disk
//! of the replica that installed it; the config entry names it by its path under
//! `[manager] install_dir`. A replica that runs the entry without that path installs the
//! same package (name and exact version from the shared install record, resolved again from
//! its registries) into the same path, then restarts the server here only. It refuses,
//! saying what to do, when the recorded path is not `install_dir/SERVER` of its own
//! `install_dir` or a secret the server needs is missing from its own secrets file. Whether
//! it installs or finds the directory here already, it makes the `TMPDIR` and `HOME` the
//! entry names inside it (as does the heartbeat for a copy it never replicates:
//! [`complete_private_dirs`]).

use serde_json::json;

use super::confinement::{PRIVATE_DIRS, make_private_dirs};
use super::install::{install_error, install_root, is_install_dir, remove_dir};
use super::{Job, Outcome, failed};
use crate::live::Change;
use crate::manager::inputs;

impl Job<'_> {
    pub(super) async fn replicate(&self, server: &str) -> Outcome {
        let installed = self
            .manager
            .installed_server(server)
            .map_err(failed)?
            .ok_or_else(|| failed(format!("no install of '{server}' is on record")))?;
        let by = installed.replica.as_deref().unwrap_or("another replica");
        let root = install_root(self.settings)?;
        // The record may say anything (any replica writes it): only `root/SERVER` is ever
        // installed into, and removed again on failure.
        if !is_install_dir(&root, server, &installed.dir) {
            return Err(failed(format!(
                "'{server}' was installed into {} on replica {by}, which is not {} under this replica's [manager] install_dir: give every replica the same install_dir",
                installed.dir.display(),
                root.join(server).display()
            )));
        }
        let missing = inputs::missing_secrets(&installed.secrets);
        if !missing.is_empty() {
            return Err(failed(format!(
                "'{server}' needs {} from the secrets file, which this replica's lacks (replica {by} has them): copy them into this replica's secrets file and restart it",
                missing.join(", ")
            )));
        }
        let wanted = format!("{}@{}", installed.name, installed.version);
        if installed.dir.exists() {
            self.step(50, &format!("{} is here already", installed.dir.display()));
            // A copy made before installs had a `HOME` lacks the one the entry names.
            make_private_dirs(&installed.dir)?;
        } else {
            self.step(
                5,
                &format!("looking up {wanted} (installed on replica {by})"),
            );
            let registry = self.manager.registry(self.settings);
            let listing = self
                .or_cancel(registry.get(&installed.name, Some(&installed.version)))
                .await?
                .map_err(failed)?;
            let resolution = switchboard_registry::resolve(&listing.server).map_err(failed)?;
            self.step(15, &format!("installing into {}", installed.dir.display()));
            let progress = |percent: u8, message: &str| {
                let scaled =
                    15 + u8::try_from(u16::from(percent.min(100)) * 70 / 100).unwrap_or(70);
                self.step(scaled, message);
            };
            let outcome = switchboard_registry::install(
                &resolution,
                &installed.dir,
                self.settings.step_timeout,
                self.cancel,
                &progress,
            )
            .await;
            // The entry's `TMPDIR` and `HOME`, when it is confined, are inside the install.
            let outcome = outcome
                .map_err(install_error)
                .and_then(|_| make_private_dirs(&installed.dir));
            if let Err(error) = outcome {
                if let Err(e) = remove_dir(&installed.dir).await {
                    tracing::warn!("{e}");
                }
                return Err(error);
            }
        }
        let configured = self
            .host
            .config()
            .is_some_and(|c| c.server(server).is_some());
        if configured {
            self.step(90, &format!("restarting '{server}' on this replica"));
            self.apply(Change::Restart {
                server: server.to_owned(),
            })
            .await?;
        }
        Ok(json!({
            "server": server,
            "package": wanted,
            "dir": installed.dir,
            "installed_by": installed.replica,
            "restarted": configured,
        }))
    }
}

/// Makes the `TMPDIR` and `HOME` of `installed` when its directory is here and is the
/// manager's own for the server under `settings`: the entry every replica shares names them,
/// and a copy made before installs had a `HOME` (never replicated again, since its directory
/// exists) lacks it. Nothing is made anywhere else, whatever the record says, and never the
/// install directory itself: one removed meanwhile stays removed.
pub(in crate::manager) fn complete_private_dirs(
    settings: &switchboard_core::config::ManagerConfig,
    installed: &crate::manager::Installed,
) -> Result<(), String> {
    let Ok(root) = install_root(settings) else {
        return Ok(());
    };
    if !is_install_dir(&root, &installed.server, &installed.dir) {
        return Ok(());
    }
    for name in PRIVATE_DIRS {
        let private = installed.dir.join(name);
        match std::fs::create_dir(&private) {
            Err(error)
                if !matches!(
                    error.kind(),
                    std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound
                ) =>
            {
                return Err(format!("cannot create {}: {error}", private.display()));
            }
            _ => {}
        }
    }
    Ok(())
}
