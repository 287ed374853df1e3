//! The sandbox of a server the manager installs as a package on this machine (npm, PyPI):
//! `[manager] sandbox` — the gateway's `[gateway.sandbox]` or the defaults (`true`), a table
//! of its own, or none (`false`) — with the server's install directory readable and writable
//! (node and python read the whole package tree, `node_modules` or the venv, which the
//! launcher's derived paths do not cover, and write their caches beside it), and `TMPDIR` and
//! `HOME` directories inside it (`tmp`, `home`), since neither `/tmp` nor the gateway's home
//! is writable in a sandbox and a package that writes a cache or `~/.config` would fail. The
//! private home hides the gateway's where the server could have read it (no Landlock, or
//! `readable` naming places in it): docs/sandbox.md says how an operator gives it back. The
//! home outlives an install of the same server again (`kept_home`). The whole sandbox is
//! written into the entry the manager adds, so probation and every later run are the same,
//! and the config file and `servers show` say what the server runs under.
//!
//! The launcher also makes every absolute path among a server's arguments readable (a script
//! and its siblings, a directory to serve): a model's install whose command line names one
//! outside its install directory — from its `server.json` or a value given with the install —
//! is refused ([`check_arguments`]), or the sandbox would open `/root/.ssh` to it. An
//! operator's install may name such paths: the operator chose them.
//!
//! Not for OCI images (they run in their container) nor remotes (nothing runs here). A Host
//! without a sandbox launcher refuses such an install before anything is downloaded: it
//! never runs a model's pick unconfined because the embedder forgot the launcher.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use switchboard_core::config::edit::EntrySandbox;
use switchboard_core::config::{ManagerConfig, SandboxConfig, literal};
use switchboard_registry::{Choice, Launch, Resolution};

use super::{WorkError, failed};
use crate::Host;

/// The directory inside an install that is the server's `TMPDIR`.
const TEMP_DIR: &str = "tmp";

/// The directory inside an install that is the server's `HOME`.
pub(super) const HOME_DIR: &str = "home";

/// The directories inside an install that the entry names: its `TMPDIR` and `HOME`.
pub(super) const PRIVATE_DIRS: [&str; 2] = [TEMP_DIR, HOME_DIR];

/// How a package the manager installs is confined.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Confinement {
    sandbox: SandboxConfig,
    /// The server's install directory.
    dir: PathBuf,
}

impl Confinement {
    /// The confinement of `resolution` installed into `dir` under `host`'s settings: None for
    /// what does not run here as a package (an image, a remote) and with `[manager] sandbox =
    /// false`; refused when the Host has no sandbox launcher to run it with.
    pub(super) fn of(
        host: &Host,
        settings: &ManagerConfig,
        resolution: &Resolution,
        dir: &Path,
    ) -> Result<Option<Self>, WorkError> {
        if !matches!(resolution.choice, Choice::Npm { .. } | Choice::Pypi { .. }) {
            return Ok(None);
        }
        let config = host.config();
        let gateway = config.as_deref().and_then(|c| c.gateway.sandbox.as_ref());
        let Some(sandbox) = settings.install_sandbox(gateway) else {
            return Ok(None);
        };
        if host.inner.options.sandbox_launcher.is_none() {
            return Err(failed(
                "the servers the manager installs run in a sandbox ([manager] sandbox), but this \
                 gateway has no sandbox launcher: a program embedding the library sets \
                 HostOptions::sandbox_launcher to a binary that runs switchboard::sandbox::exec, \
                 or the operator sets [manager] sandbox = false (the servers then run unconfined)",
            ));
        }
        Ok(Some(Self::around(sandbox, dir)))
    }

    /// `sandbox` with `dir` added to what it may read and write.
    fn around(mut sandbox: SandboxConfig, dir: &Path) -> Self {
        for paths in [&mut sandbox.readable, &mut sandbox.writable] {
            if !paths.iter().any(|path| path == dir) {
                paths.push(dir.to_path_buf());
            }
        }
        Self {
            sandbox,
            dir: dir.to_path_buf(),
        }
    }

    /// The entry's `sandbox`: every key of the sandbox, paths and all written literally (a
    /// `$` doubled), so the entry says exactly what the server runs under.
    pub(super) fn entry(&self) -> EntrySandbox {
        let sandbox = &self.sandbox;
        let paths = |paths: &[PathBuf]| -> Vec<String> {
            paths
                .iter()
                .map(|path| literal(&path.display().to_string()))
                .collect()
        };
        EntrySandbox {
            off: false,
            memory: sandbox.memory.map(|bytes| bytes.to_string()),
            cpu: sandbox.cpu.map(|cpu| {
                if cpu.subsec_nanos() == 0 {
                    format!("{}s", cpu.as_secs())
                } else {
                    format!("{}ms", cpu.as_millis())
                }
            }),
            user: sandbox.user.clone(),
            network: Some(sandbox.network.as_str().to_owned()),
            files: sandbox.files,
            processes: sandbox.processes,
            inherit_env: sandbox.inherit_env,
            readable: paths(&sandbox.readable),
            writable: paths(&sandbox.writable),
        }
    }

    /// The variables the server gets on top of its own: `TMPDIR` and `HOME`, inside its
    /// install.
    pub(super) fn env(&self) -> BTreeMap<String, String> {
        let inside = |name: &str| literal(&self.dir.join(name).display().to_string());
        BTreeMap::from([
            ("TMPDIR".to_owned(), inside(TEMP_DIR)),
            ("HOME".to_owned(), inside(HOME_DIR)),
        ])
    }

    /// Makes what the server expects inside its install directory (its `TMPDIR` and `HOME`),
    /// once the package is in place.
    pub(super) fn prepare(&self) -> Result<(), WorkError> {
        make_private_dirs(&self.dir)
    }
}

/// Refuses a command line that names an absolute path outside `dir` (see the module doc).
pub(super) fn check_arguments(launch: &Launch, dir: &Path) -> Result<(), WorkError> {
    let Launch::Stdio { args, .. } = launch else {
        return Ok(());
    };
    let outside = args.iter().find(|arg| {
        let path = Path::new(arg.as_str());
        let climbs = path.components().any(|c| c == Component::ParentDir);
        path.is_absolute() && (climbs || !path.starts_with(dir))
    });
    match outside {
        None => Ok(()),
        Some(arg) => Err(failed(format!(
            "its command line names '{arg}', outside its install directory {}: a sandboxed \
             server may read every absolute path among its arguments, so a server a model asks \
             for may name only its own files (an operator may install it with `switchboard \
             install`)",
            dir.display()
        ))),
    }
}

/// Makes the `TMPDIR` and `HOME` of the server installed into `dir`: for a fresh install,
/// and for a copy of an install another replica made (the entry names them).
pub(super) fn make_private_dirs(dir: &Path) -> Result<(), WorkError> {
    for name in PRIVATE_DIRS {
        let private = dir.join(name);
        std::fs::create_dir_all(&private)
            .map_err(|error| failed(format!("cannot create {}: {error}", private.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use switchboard_core::config::NetworkAccess;

    use super::*;

    #[test]
    fn a_command_line_may_name_no_absolute_path_outside_the_install() {
        let dir = Path::new("/var/lib/switchboard/servers/fs");
        let launch = |args: &[&str]| Launch::Stdio {
            command: "/usr/bin/node".to_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: BTreeMap::new(),
        };
        let inside = launch(&[
            "/var/lib/switchboard/servers/fs/node_modules/x/dist/index.js",
            "--verbose",
            "relative/path",
        ]);
        assert!(check_arguments(&inside, dir).is_ok());
        for named in [
            "/root/.ssh",
            "/var/lib/switchboard/servers/fs/../other",
            "/var/lib/switchboard/servers/fsx",
        ] {
            let error = match check_arguments(&launch(&["index.js", named]), dir) {
                Err(WorkError::Failed(reason)) => reason,
                other => format!("{other:?}"),
            };
            assert!(error.contains(named), "{named}: {error}");
        }
        let remote = Launch::Http {
            url: "https://example.com/mcp".to_owned(),
            headers: BTreeMap::new(),
        };
        assert!(check_arguments(&remote, dir).is_ok());
    }

    #[test]
    fn the_install_directory_is_added_and_every_key_is_written() {
        let gateway = SandboxConfig {
            memory: Some(1 << 30),
            cpu: Some(Duration::from_millis(1500)),
            files: Some(256),
            processes: Some(64),
            inherit_env: false,
            readable: vec![PathBuf::from("/srv/shared")],
            writable: vec![PathBuf::from("/srv/$work")],
            network: NetworkAccess::None,
            user: Some("nobody".to_owned()),
        };
        let dir = Path::new("/var/lib/switchboard/servers/memory");
        let confinement = Confinement::around(gateway, dir);
        let entry = confinement.entry();
        assert_eq!(entry.memory.as_deref(), Some("1073741824"));
        assert_eq!(entry.cpu.as_deref(), Some("1500ms"));
        assert_eq!((entry.files, entry.processes), (Some(256), Some(64)));
        assert_eq!(entry.network.as_deref(), Some("none"));
        assert_eq!(entry.user.as_deref(), Some("nobody"));
        assert_eq!(entry.readable, ["/srv/shared", dir.to_str().unwrap_or("")]);
        assert_eq!(entry.writable, ["/srv/$$work", dir.to_str().unwrap_or("")]);
        assert_eq!(
            confinement.env()["TMPDIR"],
            "/var/lib/switchboard/servers/memory/tmp"
        );
        assert_eq!(
            confinement.env()["HOME"],
            "/var/lib/switchboard/servers/memory/home"
        );
        let defaults = Confinement::around(SandboxConfig::default(), dir).entry();
        assert_eq!(defaults.network.as_deref(), Some("any"));
        assert_eq!((defaults.memory, defaults.cpu), (None, None));
        assert_eq!(defaults.writable, [dir.to_str().unwrap_or("")]);
    }

    /// A package that writes to `~` (a cache, `~/.config`) needs a writable home: the install
    /// makes the `HOME` and `TMPDIR` its entry names, inside the (writable) install directory.
    #[test]
    fn the_install_makes_the_servers_home_and_temp_dirs() {
        let install = tempfile::tempdir().expect("tempdir");
        let confinement = Confinement::around(SandboxConfig::default(), install.path());
        confinement.prepare().expect("prepare");
        for name in ["HOME", "TMPDIR"] {
            let made = PathBuf::from(&confinement.env()[name]);
            assert!(
                made.starts_with(install.path()),
                "{name}: {}",
                made.display()
            );
            assert!(made.is_dir(), "{name}: {}", made.display());
        }
    }
}
