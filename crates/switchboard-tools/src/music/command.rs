//! The `command` player: a configured command line run once per track, with `{path}` in any
//! argument replaced by the track's path (no shell: the words are passed as they are). The
//! tracks play one after another, looping over the playlist; a new play or a stop kills
//! the running one (its whole process group). A player that fails, or a playlist that
//! plays through in under a second (a command that does not play), ends the loop.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::player::{Player, Started};
use super::process::{Group, kill_group};

/// The shortest time a whole playlist may take for the loop to go round again.
const MIN_CYCLE: Duration = Duration::from_secs(1);

/// What the background loop is doing.
#[derive(Default)]
struct Now {
    track: Option<PathBuf>,
    pid: Option<u32>,
}

struct Session {
    cancel: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    now: Arc<Mutex<Now>>,
}

impl Session {
    /// Kills the running command and waits for the loop to end.
    async fn end(mut self) -> Option<PathBuf> {
        let track = lock(&self.now).track.clone();
        if let Some(cancel) = self.cancel.take() {
            let _ = cancel.send(());
        }
        if tokio::time::timeout(Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
        track
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Killed at once, not when the runtime next polls the aborted loop (which drops its
        // group and so kills it too): the runtime may be going away with the provider.
        if let Some(pid) = lock(&self.now).pid {
            kill_group(pid);
        }
        self.task.abort();
    }
}

fn lock(now: &Mutex<Now>) -> std::sync::MutexGuard<'_, Now> {
    match now.lock() {
        Ok(now) => now,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Plays by running a command per track.
pub(crate) struct CommandPlayer {
    argv: Vec<String>,
    session: tokio::sync::Mutex<Option<Session>>,
}

impl CommandPlayer {
    /// `argv`: the program and its arguments (not empty; checked by the caller).
    pub(crate) fn new(argv: Vec<String>) -> Self {
        Self {
            argv,
            session: tokio::sync::Mutex::new(None),
        }
    }

    /// The process id of the command playing now.
    #[cfg(test)]
    pub(crate) async fn pid(&self) -> Option<u32> {
        let session = self.session.lock().await;
        session.as_ref().and_then(|session| lock(&session.now).pid)
    }

    fn spawn(&self, track: &Path) -> Result<Group, String> {
        let (program, template) = self
            .argv
            .split_first()
            .ok_or_else(|| "the player command is empty".to_owned())?;
        Group::spawn(program.as_ref(), arguments(template, track)).map_err(|error| {
            let hint = if error.kind() == std::io::ErrorKind::NotFound {
                " (is it installed and on PATH?)"
            } else {
                ""
            };
            format!("cannot start the player '{program}': {error}{hint}")
        })
    }
}

/// The arguments for one track: every `{path}` replaced by the track's path.
pub(crate) fn arguments(template: &[String], track: &Path) -> Vec<OsString> {
    template
        .iter()
        .map(|argument| {
            let mut parts = argument.split("{path}");
            let mut out = OsString::from(parts.next().unwrap_or_default());
            for part in parts {
                out.push(track.as_os_str());
                out.push(part);
            }
            out
        })
        .collect()
}

/// Plays `tracks` from the second on after `first` (the first track's running command),
/// round and round, until cancelled or the player fails.
async fn play_loop(
    player: Arc<[String]>,
    tracks: Vec<PathBuf>,
    first: Group,
    now: Arc<Mutex<Now>>,
    mut cancel: oneshot::Receiver<()>,
) {
    let mut group = first;
    let mut index = 0;
    let mut cycle = tokio::time::Instant::now();
    loop {
        let exited = tokio::select! {
            _ = &mut cancel => None,
            status = group.child.wait() => Some(status),
        };
        let Some(status) = exited else {
            group.kill().await;
            *lock(&now) = Now::default();
            return;
        };
        // The track is over; anything it left running in its group goes with it.
        drop(group);
        index += 1;
        if index == tracks.len() {
            index = 0;
            if cycle.elapsed() < MIN_CYCLE {
                break;
            }
            cycle = tokio::time::Instant::now();
        }
        if !matches!(status, Ok(status) if status.success()) {
            break;
        }
        let (program, template) = match player.split_first() {
            Some(split) => split,
            None => break,
        };
        match Group::spawn(program.as_ref(), arguments(template, &tracks[index])) {
            Ok(next) => {
                *lock(&now) = Now {
                    track: Some(tracks[index].clone()),
                    pid: next.pid(),
                };
                group = next;
            }
            Err(_) => break,
        }
    }
    *lock(&now) = Now::default();
}

impl Player for CommandPlayer {
    fn backend(&self) -> &'static str {
        "command"
    }

    fn play<'a>(&'a self, tracks: &'a [PathBuf]) -> BoxFuture<'a, Result<Started, String>> {
        Box::pin(async move {
            let first = tracks
                .first()
                .ok_or_else(|| "the playlist is empty".to_owned())?;
            let mut session = self.session.lock().await;
            if let Some(previous) = session.take() {
                previous.end().await;
            }
            let group = self.spawn(first)?;
            let now = Arc::new(Mutex::new(Now {
                track: Some(first.clone()),
                pid: group.pid(),
            }));
            let (cancel, cancelled) = oneshot::channel();
            let task = tokio::spawn(play_loop(
                self.argv.clone().into(),
                tracks.to_vec(),
                group,
                Arc::clone(&now),
                cancelled,
            ));
            *session = Some(Session {
                cancel: Some(cancel),
                task,
                now,
            });
            Ok(Started {
                track: first.clone(),
                playlist_length: tracks.len(),
            })
        })
    }

    fn stop(&self) -> BoxFuture<'_, Result<Option<PathBuf>, String>> {
        Box::pin(async move {
            let session = self.session.lock().await.take();
            Ok(match session {
                Some(session) => session.end().await,
                None => None,
            })
        })
    }
}
