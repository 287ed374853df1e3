//! Processes the players start: each in a process group of its own, killed whole when its
//! [`Group`] is dropped (a player that forks — mpv running a downloader, a wrapper script —
//! leaves no orphans; the signalling is `switchboard_core::process_group`'s); the private
//! directory that holds mpv's socket; finding programs on
//! `PATH`.

use std::ffi::OsStr;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use switchboard_core::process_group::ProcessGroup;
pub(crate) use switchboard_core::process_group::kill_group;
use tokio::process::{Child, Command};

/// A started child and its process group, killed (SIGKILL) when dropped.
pub(crate) struct Group {
    group: ProcessGroup,
    pub(crate) child: Child,
}

impl Group {
    /// Starts `program` with `args` in a new process group, with no standard input and its
    /// output discarded.
    pub(crate) fn spawn<I, S>(program: &OsStr, args: I) -> std::io::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let group = ProcessGroup::led_by(child.id());
        Ok(Self { group, child })
    }

    /// The process id of the child (also its group's id).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.group.id()
    }

    /// Whether the child is still running (not exited, or exited and not yet reaped).
    pub(crate) fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the group and reaps the child.
    pub(crate) async fn kill(mut self) {
        self.group.kill();
        let _ = self.child.wait().await;
        // Reaped: its id may be reused, so the drop must not signal it again.
        self.group.forget();
    }
}

/// A directory only this user can enter, removed with its contents when dropped.
pub(crate) struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    /// Creates `switchboard-music-PID-RANDOM` (mode 0700) in the system's temp directory.
    pub(crate) fn create() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        let mut last_error = None;
        for _ in 0..8 {
            let path = base.join(format!(
                "switchboard-music-{}-{:016x}",
                std::process::id(),
                rand::random::<u64>()
            ));
            // `create`, not `create_all`: an existing directory (someone else's) is an error.
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| std::io::Error::other("no temp directory")))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Where `program` would be run from: itself when it names a path (has a `/`), else the
/// first executable file of that name in a `PATH` directory.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    let executable = |path: &Path| {
        std::fs::metadata(path)
            .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}
