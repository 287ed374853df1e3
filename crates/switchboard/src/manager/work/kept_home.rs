//! A server's private `HOME` (`install_dir/SERVER/home`) kept across an install of the same
//! server again. What a server saves there (credentials, its config) would otherwise go with
//! the old install directory, which an install again removes. So before the old directory
//! goes, its home moves to `install_dir/.kept-homes/SERVER` (a name no server id can take),
//! with a note of whom it was kept for — the registry package and the agent that asked —
//! and the new install takes it back only when it is the same package for the same agent (an
//! operator's install: no agent); any other install of that server id drops it, so a server
//! never starts with what another package, or another agent's server, saved. Removing the
//! server drops it too. A kept home waits there across a failed install, for the next try.
//!
//! Only a real directory is kept: a `home` the server replaced with a link is not followed.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::confinement::HOME_DIR;
use super::{WorkError, failed};
use crate::manager::Installed;

/// The directory under `install_dir` where homes wait.
const KEPT_HOMES: &str = ".kept-homes";

/// Whom a kept home belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct HomeOwner {
    /// The registry name of the package.
    pub(super) package: String,
    /// The agent whose model asked for it; None for an operator's install.
    pub(super) agent: Option<String>,
}

impl HomeOwner {
    /// Whom the home of the install `installed` belongs to.
    pub(super) fn of(installed: &Installed) -> Self {
        Self {
            package: installed.name.clone(),
            agent: installed.agent.clone(),
        }
    }
}

/// Refuses a server id that could name a path outside [`KEPT_HOMES`] (`..`, `/`).
fn check_id(server: &str) -> Result<(), WorkError> {
    if crate::manager::valid_server_id(server) {
        Ok(())
    } else {
        Err(failed(format!(
            "'{server}' is not a server id: no home is kept for it"
        )))
    }
}

fn kept_dir(root: &Path, server: &str) -> PathBuf {
    root.join(KEPT_HOMES).join(server)
}

fn owner_file(root: &Path, server: &str) -> PathBuf {
    root.join(KEPT_HOMES).join(format!("{server}.json"))
}

/// Moves the home of `server`'s install in `dir` aside, for `owner`, before `dir` is removed
/// for an install again. A home kept earlier for the server is replaced; no home is no error.
pub(super) fn keep_home(
    root: &Path,
    server: &str,
    dir: &Path,
    owner: &HomeOwner,
) -> Result<(), WorkError> {
    check_id(server)?;
    let home = dir.join(HOME_DIR);
    let is_directory = std::fs::symlink_metadata(&home).is_ok_and(|meta| meta.is_dir());
    if !is_directory {
        return Ok(());
    }
    forget_kept_home(root, server)?;
    let kept = kept_dir(root, server);
    let note = owner_file(root, server);
    let bytes = serde_json::to_vec(owner).map_err(failed)?;
    let holder = root.join(KEPT_HOMES);
    std::fs::create_dir_all(&holder).map_err(|e| io_failure("create", &holder, &e))?;
    std::fs::write(&note, bytes).map_err(|e| io_failure("write", &note, &e))?;
    std::fs::rename(&home, &kept).map_err(|e| io_failure("move", &home, &e))
}

/// Moves the home kept for `server` into its new install in `dir` when `owner` is whom it
/// was kept for, replacing the empty one the install made; drops it otherwise. Says whether
/// a home was taken back.
pub(super) fn restore_home(
    root: &Path,
    server: &str,
    dir: &Path,
    owner: &HomeOwner,
) -> Result<bool, WorkError> {
    check_id(server)?;
    let kept = kept_dir(root, server);
    let kept_for: Option<HomeOwner> = std::fs::read(owner_file(root, server))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    if !kept.is_dir() || kept_for.as_ref() != Some(owner) {
        forget_kept_home(root, server)?;
        return Ok(false);
    }
    let home = dir.join(HOME_DIR);
    remove_if_there(&home)?;
    std::fs::rename(&kept, &home).map_err(|e| io_failure("move", &kept, &e))?;
    forget_kept_home(root, server)?;
    Ok(true)
}

/// Drops the home kept for `server`, if any.
pub(super) fn forget_kept_home(root: &Path, server: &str) -> Result<(), WorkError> {
    check_id(server)?;
    remove_if_there(&kept_dir(root, server))?;
    let note = owner_file(root, server);
    match std::fs::remove_file(&note) {
        Err(error) if error.kind() != ErrorKind::NotFound => {
            Err(io_failure("remove", &note, &error))
        }
        _ => Ok(()),
    }
}

/// Removes `path` (a directory and what is in it, or a link itself), if it is there.
fn remove_if_there(path: &Path) -> Result<(), WorkError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Err(error) if error.kind() != ErrorKind::NotFound => {
            Err(io_failure("remove", path, &error))
        }
        _ => Ok(()),
    }
}

fn io_failure(what: &str, path: &Path, error: &std::io::Error) -> WorkError {
    failed(format!("cannot {what} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(package: &str, agent: Option<&str>) -> HomeOwner {
        HomeOwner {
            package: package.to_owned(),
            agent: agent.map(str::to_owned),
        }
    }

    /// An install directory `root/SERVER` whose home holds `creds.txt`.
    fn install_with_home(root: &Path, server: &str) -> PathBuf {
        let dir = root.join(server);
        std::fs::create_dir_all(dir.join(HOME_DIR)).expect("home");
        std::fs::write(dir.join(HOME_DIR).join("creds.txt"), "token").expect("creds");
        dir
    }

    /// A fresh install in `dir`, with the empty home the install makes.
    fn fresh_install(dir: &Path) {
        std::fs::remove_dir_all(dir).expect("the old install goes");
        std::fs::create_dir_all(dir.join(HOME_DIR)).expect("new home");
    }

    #[test]
    fn the_same_package_for_the_same_agent_takes_its_home_back() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = install_with_home(root.path(), "memory");
        let mine = owner("io.example/memory", Some("alice"));
        keep_home(root.path(), "memory", &dir, &mine).expect("kept");
        fresh_install(&dir);
        assert_eq!(
            restore_home(root.path(), "memory", &dir, &mine).ok(),
            Some(true)
        );
        let creds = std::fs::read_to_string(dir.join(HOME_DIR).join("creds.txt"));
        assert_eq!(creds.ok().as_deref(), Some("token"));
        assert!(!kept_dir(root.path(), "memory").exists());
        assert!(!owner_file(root.path(), "memory").exists());
    }

    /// Another package under the server's id, or another agent's install of it, starts with
    /// an empty home, and the kept one is gone.
    #[test]
    fn another_package_or_agent_starts_with_an_empty_home() {
        for other in [
            owner("io.example/other", Some("alice")),
            owner("io.example/memory", Some("mallory")),
            owner("io.example/memory", None),
        ] {
            let root = tempfile::tempdir().expect("tempdir");
            let dir = install_with_home(root.path(), "memory");
            let first = owner("io.example/memory", Some("alice"));
            keep_home(root.path(), "memory", &dir, &first).expect("kept");
            fresh_install(&dir);
            assert_eq!(
                restore_home(root.path(), "memory", &dir, &other).ok(),
                Some(false),
                "{other:?}"
            );
            assert!(!dir.join(HOME_DIR).join("creds.txt").exists(), "{other:?}");
            assert!(dir.join(HOME_DIR).is_dir(), "the new home stays");
            assert!(!kept_dir(root.path(), "memory").exists(), "{other:?}");
        }
    }

    #[test]
    fn a_removed_server_leaves_no_kept_home_and_no_home_is_no_error() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = install_with_home(root.path(), "memory");
        let mine = owner("io.example/memory", None);
        keep_home(root.path(), "memory", &dir, &mine).expect("kept");
        forget_kept_home(root.path(), "memory").expect("forgotten");
        assert!(!kept_dir(root.path(), "memory").exists());
        assert!(!owner_file(root.path(), "memory").exists());
        let bare = root.path().join("bare");
        std::fs::create_dir_all(&bare).expect("bare install");
        assert!(keep_home(root.path(), "bare", &bare, &mine).is_ok());
        assert!(!kept_dir(root.path(), "bare").exists());
    }
}
