//! Hot reload: watch the config file's directory (editors save by writing a temp file and
//! renaming it over the original, which a watch on the file itself would lose), wait until
//! the file has been quiet for [`DEBOUNCE`], then reload it. The gateway's own writes are
//! recognised by their hash and change nothing; a file that fails validation keeps the last
//! good configuration running (`Host::reload_file`). The watcher looks once when it starts,
//! so an edit made while the gateway was starting is not missed.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use tokio::io::unix::AsyncFd;
use tokio::task::JoinHandle;

use super::Surface;
use crate::Host;

/// How long the file must be quiet before it is read: an editor's save is several events.
pub const DEBOUNCE: Duration = Duration::from_millis(300);

/// An inotify instance the runtime can wait on.
struct Events(Inotify);

impl AsRawFd for Events {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// What the watcher listens for: the file's own name in its directory — and, when the file
/// is a symlink (a Kubernetes ConfigMap, a dotfiles checkout), the target's name in the
/// target's directory and every change in the link's directory, where such setups swap the
/// link itself. A reload of an unchanged file is a no-op, so hearing too much costs nothing.
struct Interest {
    names: Vec<OsString>,
    any: bool,
}

impl Interest {
    fn matches(&self, batch: &[Option<OsString>]) -> bool {
        self.any
            || batch
                .iter()
                .flatten()
                .any(|name| self.names.iter().any(|wanted| wanted == name))
    }
}

/// Starts watching `path` for the Host; the task runs until aborted.
pub fn watch(host: Host, path: &Path) -> std::io::Result<JoinHandle<()>> {
    let absolute = std::path::absolute(path)?;
    let split = |path: &Path| -> std::io::Result<(PathBuf, OsString)> {
        let directory = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let name = path
            .file_name()
            .map(OsString::from)
            .ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
        Ok((directory, name))
    };
    let (directory, name) = split(&absolute)?;
    let linked = absolute
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink());
    let mut directories = vec![directory];
    let mut interest = Interest {
        names: vec![name],
        any: linked,
    };
    if linked && let Ok(target) = std::fs::canonicalize(&absolute) {
        let (directory, name) = split(&target)?;
        directories.push(directory);
        interest.names.push(name);
    }
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
    for directory in &directories {
        inotify.add_watch(
            directory,
            AddWatchFlags::IN_CLOSE_WRITE
                | AddWatchFlags::IN_MOVED_TO
                | AddWatchFlags::IN_CREATE
                | AddWatchFlags::IN_MODIFY
                | AddWatchFlags::IN_DELETE,
        )?;
    }
    // `AsyncFd::new` is deprecated because a wrapped value could close or replace its fd
    // while registered; `Events` owns its inotify fd and never does (the safe alternative,
    // `register`, is `unsafe`, which this crate forbids).
    #[allow(deprecated)]
    let events = AsyncFd::new(Events(inotify))?;
    tracing::info!(target: "switchboard::config", "watching {} for changes", absolute.display());
    Ok(tokio::spawn(run(host, events, interest)))
}

async fn run(host: Host, events: AsyncFd<Events>, interest: Interest) {
    // An edit between the gateway reading the file and the watch starting made no event
    // here: a first look applies it (a file as it was read changes nothing).
    reload(&host, Surface::File).await;
    loop {
        match next_batch(&events).await {
            Ok(batch) if interest.matches(&batch) => {}
            Ok(_) => continue,
            Err(error) => {
                tracing::error!(target: "switchboard::config", "the config watcher stopped: {error}");
                return;
            }
        }
        // Quiet for DEBOUNCE: an editor's save (truncate, write, rename) is one reload.
        // Only the config file's own events restart the wait: a busy neighbour (a database,
        // a log in the same directory) must not hold the reload back.
        let mut quiet_until = tokio::time::Instant::now() + DEBOUNCE;
        loop {
            match tokio::time::timeout_at(quiet_until, next_batch(&events)).await {
                Err(_) => break,
                Ok(Ok(batch)) if interest.matches(&batch) => {
                    quiet_until = tokio::time::Instant::now() + DEBOUNCE;
                }
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    tracing::error!(target: "switchboard::config", "the config watcher stopped: {error}");
                    return;
                }
            }
        }
        reload(&host, Surface::File).await;
    }
}

/// Reloads the file and logs what changed (or why nothing did).
pub async fn reload(host: &Host, by: Surface) {
    match host.reload_file(by).await {
        Ok(report) if report.servers.is_empty() && by == Surface::File => {}
        Ok(report) => {
            let changed: Vec<String> = report
                .servers
                .iter()
                .map(|s| match &s.error {
                    Some(error) if !s.applied => {
                        format!("{} {} failed: {error}", s.server, s.action.as_str())
                    }
                    _ => format!("{} {}", s.server, s.action.as_str()),
                })
                .collect();
            tracing::info!(target: "switchboard::config", revision = %report.revision, "configuration reloaded ({}): {}", by.as_str(), if changed.is_empty() { "no server changed".to_owned() } else { changed.join(", ") });
        }
        // Problems were logged, located, by reload_file; a Host shut down reloads nothing.
        Err(super::ChangeError::Invalid(_) | super::ChangeError::ShutDown) => {}
        Err(error) => tracing::error!(target: "switchboard::config", "reload failed: {error}"),
    }
}

/// The names of the files the next batch of events is about.
async fn next_batch(events: &AsyncFd<Events>) -> std::io::Result<Vec<Option<OsString>>> {
    loop {
        let mut ready = events.readable().await?;
        match ready.try_io(|inner| {
            inner
                .get_ref()
                .0
                .read_events()
                .map_err(std::io::Error::from)
        }) {
            Ok(Ok(batch)) => return Ok(batch.into_iter().map(|event| event.name).collect()),
            Ok(Err(error)) => return Err(error),
            Err(_would_block) => continue,
        }
    }
}
