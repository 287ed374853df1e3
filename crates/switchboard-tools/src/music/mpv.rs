//! The `mpv` player: one long-lived `mpv --idle=yes --no-video --no-terminal
//! --loop-playlist=inf --input-ipc-server=SOCKET` (plus the configured extra arguments, e.g.
//! `--ao=null` or `--volume=40`), driven over its JSON IPC socket ([`super::ipc`]). The
//! socket lies in a private temporary directory (mode 0700). mpv is started lazily on the
//! first play, started again when it has died, and killed with its process group when the
//! player is dropped; the directory goes with it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::ipc::{Ipc, IpcError};
use super::player::{Player, Started};
use super::process::{Group, PrivateDir};

/// How long mpv may take to open its socket after it is started (it takes 130-215 ms on a
/// desktop). `play_track` declares a bound above it (see [`super::PLAY_TRACK_MAX_MS`]): the
/// bound is the call's hard deadline, and a deadline shorter than the startup drops the call's
/// future mid-start, which kills mpv before it plays.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(2);

/// The arguments every mpv the server starts gets (before the socket and the extra ones).
pub(crate) const BASE_ARGS: [&str; 4] = [
    "--idle=yes",
    "--no-video",
    "--no-terminal",
    "--loop-playlist=inf",
];

struct Running {
    group: Group,
    ipc: Ipc,
}

/// Plays through mpv.
pub(crate) struct MpvPlayer {
    program: PathBuf,
    extra_args: Vec<String>,
    // Dropped in this order: mpv is killed before its socket's directory is removed.
    running: Mutex<Option<Running>>,
    dir: std::sync::Mutex<Option<PrivateDir>>,
}

impl MpvPlayer {
    /// A player that will run `program` (mpv) with `extra_args` after its own.
    pub(crate) fn new(program: PathBuf, extra_args: Vec<String>) -> Self {
        Self {
            program,
            extra_args,
            running: Mutex::new(None),
            dir: std::sync::Mutex::new(None),
        }
    }

    /// The IPC socket's path, once the private directory exists (the first play).
    #[cfg(test)]
    pub(crate) fn socket_path(&self) -> Option<PathBuf> {
        let dir = self.dir.lock().ok()?;
        dir.as_ref().map(|dir| dir.path().join("mpv.sock"))
    }

    /// The running mpv's process id.
    #[cfg(test)]
    pub(crate) async fn pid(&self) -> Option<u32> {
        self.running
            .lock()
            .await
            .as_ref()
            .and_then(|running| running.group.pid())
    }

    fn socket(&self) -> Result<PathBuf, String> {
        let mut dir = self
            .dir
            .lock()
            .map_err(|_| "the player's state is poisoned".to_owned())?;
        if dir.is_none() {
            *dir = Some(PrivateDir::create().map_err(|error| {
                format!("cannot create a private temp directory for mpv's socket: {error}")
            })?);
        }
        Ok(dir
            .as_ref()
            .map(|dir| dir.path().join("mpv.sock"))
            .unwrap_or_default())
    }

    /// Starts mpv and connects to its socket.
    async fn start(&self) -> Result<Running, String> {
        let socket = self.socket()?;
        let _ = std::fs::remove_file(&socket);
        let mut ipc_arg = OsString::from("--input-ipc-server=");
        ipc_arg.push(&socket);
        let args: Vec<OsString> = BASE_ARGS
            .iter()
            .map(OsString::from)
            .chain([ipc_arg])
            .chain(self.extra_args.iter().map(OsString::from))
            .collect();
        let mut group = Group::spawn(self.program.as_os_str(), &args)
            .map_err(|error| format!("cannot start {}: {error}", self.program.display()))?;
        let began = tokio::time::Instant::now();
        loop {
            match Ipc::connect(&socket).await {
                Ok(mut ipc) => {
                    // Only answers are read: events would pile up between calls.
                    let _ = ipc.command(json!(["disable_event", "all"])).await;
                    return Ok(Running { group, ipc });
                }
                Err(_) if began.elapsed() < STARTUP_TIMEOUT && group.running() => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(error) => {
                    let status = group.child.try_wait().ok().flatten();
                    group.kill().await;
                    return Err(match status {
                        Some(status) => format!(
                            "mpv exited as it started ({status}); run it by hand to see why: {} {}",
                            self.program.display(),
                            args.iter()
                                .map(|arg| arg.to_string_lossy())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                        None => format!(
                            "mpv did not open its IPC socket within {} s: {error}",
                            STARTUP_TIMEOUT.as_secs()
                        ),
                    });
                }
            }
        }
    }

    /// The running mpv, started (again) when there is none or it died.
    async fn ensure<'a>(&self, slot: &'a mut Option<Running>) -> Result<&'a mut Running, String> {
        if let Some(running) = slot.as_mut()
            && !running.group.running()
        {
            *slot = None;
        }
        if slot.is_none() {
            *slot = Some(self.start().await?);
        }
        slot.as_mut().ok_or_else(|| "mpv is not running".to_owned())
    }
}

/// The track mpv plays (or is opening: `path` is unavailable until a file is open, so the
/// current playlist entry's file then); `None` when it is idle.
async fn now_playing(ipc: &mut Ipc) -> Result<Option<PathBuf>, IpcError> {
    let answers = ipc
        .run(vec![
            json!(["get_property", "path"]),
            json!(["get_property", "playlist-pos"]),
        ])
        .await?;
    let text = |answer: Option<&Result<Value, String>>| {
        answer
            .and_then(|answer| answer.as_ref().ok())
            .and_then(Value::as_str)
            .map(PathBuf::from)
    };
    if let Some(path) = text(answers.first()) {
        return Ok(Some(path));
    }
    match answers
        .get(1)
        .and_then(|pos| pos.as_ref().ok())
        .and_then(Value::as_i64)
    {
        Some(pos) if pos >= 0 => {
            let entry = ipc
                .command(json!(["get_property", format!("playlist/{pos}/filename")]))
                .await?;
            Ok(text(Some(&entry)))
        }
        _ => Ok(None),
    }
}

/// Kills the running mpv, if any.
async fn kill(slot: &mut Option<Running>) {
    if let Some(running) = slot.take() {
        running.group.kill().await;
    }
}

/// Loads `tracks` as mpv's whole playlist, playing the first.
async fn load(ipc: &mut Ipc, tracks: &[PathBuf]) -> Result<Result<Started, String>, IpcError> {
    // A path that is not UTF-8 cannot go into JSON (playlists skip them; this is the guard).
    let mut names = Vec::with_capacity(tracks.len());
    for track in tracks {
        match track.to_str() {
            Some(name) => names.push(name),
            None => {
                return Ok(Err(format!(
                    "{} has a name that is not valid UTF-8, which mpv's JSON IPC cannot carry",
                    track.to_string_lossy()
                )));
            }
        }
    }
    let Some(first) = names.first() else {
        return Ok(Err("the playlist is empty".to_owned()));
    };
    let mut commands = vec![
        json!(["playlist-clear"]),
        json!(["loadfile", first, "replace"]),
    ];
    commands.extend(
        names[1..]
            .iter()
            .map(|track| json!(["loadfile", track, "append"])),
    );
    commands.push(json!(["get_property", "playlist-count"]));
    let answers = ipc.run(commands).await?;
    for (answer, track) in answers.iter().skip(1).zip(tracks) {
        if let Err(error) = answer {
            return Ok(Err(format!("mpv refused {}: {error}", track.display())));
        }
    }
    let count = answers
        .last()
        .and_then(|answer| answer.as_ref().ok())
        .and_then(Value::as_u64)
        .and_then(|count| usize::try_from(count).ok())
        .unwrap_or(tracks.len());
    Ok(Ok(Started {
        track: PathBuf::from(first),
        playlist_length: count,
    }))
}

impl Player for MpvPlayer {
    fn backend(&self) -> &'static str {
        "mpv"
    }

    fn play<'a>(&'a self, tracks: &'a [PathBuf]) -> BoxFuture<'a, Result<Started, String>> {
        Box::pin(async move {
            let mut slot = self.running.lock().await;
            // A connection that fails is a dead or hung mpv: kill it, start one, try once more.
            for attempt in 0..2 {
                let running = self.ensure(&mut slot).await?;
                match load(&mut running.ipc, tracks).await {
                    Ok(answer) => return answer,
                    Err(error) => {
                        kill(&mut slot).await;
                        if attempt == 1 {
                            return Err(error.0);
                        }
                    }
                }
            }
            Err("mpv could not be reached".to_owned())
        })
    }

    fn stop(&self) -> BoxFuture<'_, Result<Option<PathBuf>, String>> {
        Box::pin(async move {
            let mut slot = self.running.lock().await;
            let Some(running) = slot.as_mut() else {
                return Ok(None);
            };
            if !running.group.running() {
                *slot = None;
                return Ok(None);
            }
            match now_playing(&mut running.ipc).await {
                Ok(track) => match running.ipc.command(json!(["stop"])).await {
                    Ok(Ok(_)) => Ok(track),
                    Ok(Err(error)) => Err(format!("mpv refused to stop: {error}")),
                    Err(_) => {
                        kill(&mut slot).await;
                        Ok(track)
                    }
                },
                Err(_) => {
                    // Unreachable: killing it stops the music just as well.
                    kill(&mut slot).await;
                    Ok(None)
                }
            }
        })
    }
}
