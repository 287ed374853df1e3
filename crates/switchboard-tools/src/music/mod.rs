//! `music`: background music and ambiance by mood for a game table. Each mood is a playlist
//! of files and directories ([`playlist`]); `play_track(mood)` answers at once with what is
//! playing while the player works in the background, `stop_music()` stops it and says what
//! stopped, `list_moods()` shows every mood with its track count and the problems of its
//! paths.
//!
//! The sound comes from a `Player` (`player.rs`): mpv driven over its JSON IPC socket
//! (`mpv.rs`, `ipc.rs`), a command line run per track (`command.rs`), or nothing at all
//! (`null.rs`, which answers the same and remembers what it would have played). Processes
//! the players start are killed with their process group when the provider is dropped
//! (`process.rs`).

mod command;
mod ipc;
mod mpv;
mod null;
mod player;
pub mod playlist;
mod process;

#[cfg(test)]
pub(crate) use mpv::STARTUP_TIMEOUT;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use rand::seq::SliceRandom;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, LatencyMeta, ToolAnnotations, ToolDefinition, ToolOutcome};

use player::Player;

/// Typical duration of `play_track`, in milliseconds (a warm player answers in a few ms).
pub const PLAY_TRACK_ESTIMATED_MS: u64 = 50;
/// The declared bound of `play_track`, in milliseconds: mpv's startup allowance
/// ([`mpv::STARTUP_TIMEOUT`], 2 s) and a second for its commands. The bound is the call's hard
/// deadline; the declared p90 (≈ 480 ms) keeps the tool in the FAST tier until measured.
pub const PLAY_TRACK_MAX_MS: u64 = 3_000;

/// Which player makes the sound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PlayerChoice {
    /// mpv when it is on `PATH`, else [`PlayerChoice::Null`].
    #[default]
    Auto,
    /// mpv, which must be on `PATH`.
    Mpv,
    /// No sound: plays are recorded and answered as if played.
    Null,
    /// This program and its arguments, run once per track; `{path}` in an argument is
    /// replaced by the track's path (no shell), e.g. `["paplay", "{path}"]`.
    Command(Vec<String>),
}

/// Settings of the music provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MusicSettings {
    pub player: PlayerChoice,
    /// Mood name → its playlist: files, and directories whose audio files (see
    /// [`playlist::AUDIO_EXTENSIONS`]) are played in name order.
    pub moods: BTreeMap<String, Vec<PathBuf>>,
    /// Extra arguments for mpv (`Auto` or `Mpv`), after the ones it always gets
    /// (`--idle=yes --no-video --no-terminal --loop-playlist=inf --input-ipc-server=…`),
    /// e.g. `["--ao=null"]` or `["--volume=40"]`.
    pub mpv_args: Vec<String>,
}

/// Why the music provider cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MusicError {
    #[error(
        "the mpv player was chosen but mpv is not on PATH (install mpv, or choose the \"null\" player or a command)"
    )]
    MpvNotFound,
    #[error(
        "the player command is empty: give the program and its arguments, e.g. [\"paplay\", \"{{path}}\"]"
    )]
    EmptyCommand,
    #[error("the player command's program '{program}' is not an executable file on PATH")]
    CommandNotFound { program: String },
    #[error("a mood has an empty name")]
    EmptyMoodName,
}

/// What plays now, as the last `play_track` started it.
struct Playing {
    mood: String,
}

/// The music provider.
pub struct Music {
    moods: BTreeMap<String, Vec<PathBuf>>,
    player: Arc<dyn Player>,
    playing: tokio::sync::Mutex<Option<Playing>>,
}

impl Music {
    /// Checks the settings and chooses the player; nothing is started before the first play.
    pub fn new(settings: MusicSettings) -> Result<Self, MusicError> {
        let player: Arc<dyn Player> = match settings.player {
            PlayerChoice::Auto => match process::find_program("mpv") {
                Some(mpv) => Arc::new(mpv::MpvPlayer::new(mpv, settings.mpv_args)),
                None => Arc::new(null::NullPlayer::default()),
            },
            PlayerChoice::Mpv => {
                let mpv = process::find_program("mpv").ok_or(MusicError::MpvNotFound)?;
                Arc::new(mpv::MpvPlayer::new(mpv, settings.mpv_args))
            }
            PlayerChoice::Null => Arc::new(null::NullPlayer::default()),
            PlayerChoice::Command(argv) => {
                let program = argv.first().ok_or(MusicError::EmptyCommand)?;
                if process::find_program(program).is_none() {
                    return Err(MusicError::CommandNotFound {
                        program: program.clone(),
                    });
                }
                Arc::new(command::CommandPlayer::new(argv))
            }
        };
        Self::with_player(settings.moods, player)
    }

    pub(crate) fn with_player(
        moods: BTreeMap<String, Vec<PathBuf>>,
        player: Arc<dyn Player>,
    ) -> Result<Self, MusicError> {
        if moods.keys().any(|name| name.trim().is_empty()) {
            return Err(MusicError::EmptyMoodName);
        }
        Ok(Self {
            moods,
            player,
            playing: tokio::sync::Mutex::new(None),
        })
    }

    /// The player's name in answers: `mpv`, `command` or `null`.
    pub fn backend(&self) -> &'static str {
        self.player.backend()
    }

    async fn play_track(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, ToolError> {
        let mood = arguments
            .get("mood")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("'mood' must be a mood name from list_moods"))?;
        let shuffle = match arguments.get("shuffle") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(shuffle)) => *shuffle,
            Some(_) => return Err(ToolError::new("'shuffle' must be true or false")),
        };
        let paths = self.moods.get(mood).ok_or_else(|| {
            let known: Vec<&str> = self.moods.keys().map(String::as_str).collect();
            ToolError::new(if known.is_empty() {
                format!("no mood '{mood}': no moods are configured")
            } else {
                format!("no mood '{mood}' (moods: {})", known.join(", "))
            })
        })?;
        let mut playlist = playlist::resolve(paths);
        if playlist.tracks.is_empty() {
            return Err(ToolError::new(format!(
                "mood '{mood}' has nothing to play: {}",
                playlist.problems.join("; ")
            )));
        }
        if shuffle {
            playlist.tracks.shuffle(&mut rand::rng());
        }
        let mut playing = self.playing.lock().await;
        let started = self
            .player
            .play(&playlist.tracks)
            .await
            .map_err(|error| ToolError::new(format!("cannot play mood '{mood}': {error}")))?;
        *playing = Some(Playing {
            mood: mood.to_owned(),
        });
        let text = format!(
            "playing '{mood}' on {}: {} (1 of {}, looping{})",
            self.backend(),
            started.track.display(),
            started.playlist_length,
            if shuffle { ", shuffled" } else { "" }
        );
        Ok(ToolOutcome::structured_with_text(
            json!({
                "mood": mood,
                "track": started.track.to_string_lossy(),
                "playlist_length": started.playlist_length,
                "backend": self.backend(),
                "shuffle": shuffle,
                "problems": playlist.problems,
            }),
            text,
        ))
    }

    async fn stop_music(&self) -> Result<ToolOutcome, ToolError> {
        let mut playing = self.playing.lock().await;
        let track = self
            .player
            .stop()
            .await
            .map_err(|error| ToolError::new(format!("cannot stop the music: {error}")))?;
        let was = playing.take();
        let (value, text) = match track {
            Some(track) => {
                let mood = was.map(|was| was.mood);
                let text = format!(
                    "stopped {}{}",
                    mood.as_deref()
                        .map(|mood| format!("'{mood}': "))
                        .unwrap_or_default(),
                    track.display()
                );
                (
                    json!({"stopped": true, "mood": mood, "track": track.to_string_lossy(), "backend": self.backend()}),
                    text,
                )
            }
            None => (
                json!({"stopped": false, "mood": null, "track": null, "backend": self.backend()}),
                "nothing was playing".to_owned(),
            ),
        };
        Ok(ToolOutcome::structured_with_text(value, text))
    }

    fn list_moods(&self) -> ToolOutcome {
        let mut lines = Vec::new();
        let moods: Vec<Value> = self
            .moods
            .iter()
            .map(|(name, paths)| {
                let playlist = playlist::resolve(paths);
                lines.push(format!(
                    "{name}: {} tracks{}",
                    playlist.tracks.len(),
                    if playlist.problems.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", playlist.problems.join("; "))
                    }
                ));
                json!({"name": name, "tracks": playlist.tracks.len(), "problems": playlist.problems})
            })
            .collect();
        let text = if lines.is_empty() {
            "no moods are configured".to_owned()
        } else {
            lines.join("\n")
        };
        ToolOutcome::structured_with_text(json!({"moods": moods, "backend": self.backend()}), text)
    }
}

fn tool(name: &str, title: &str, description: &str, input: Value, output: Value) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.title = Some(title.to_owned());
    definition.output_schema = Some(output);
    definition
}

fn annotate(
    definition: &mut ToolDefinition,
    read_only: bool,
    idempotent: bool,
    latency: LatencyMeta,
) {
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: Some(false),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    });
    latency
        .idempotent(idempotent)
        .cacheable_seconds(0)
        .write_into(&mut definition.meta);
}

impl ToolProvider for Music {
    fn name(&self) -> &str {
        "music"
    }

    fn description(&self) -> &str {
        "Background music and ambiance by mood"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        let mut mood =
            json!({"type": "string", "description": "A mood from list_moods, e.g. \"tavern\""});
        if !self.moods.is_empty() {
            mood["enum"] = json!(self.moods.keys().collect::<Vec<_>>());
        }
        let nullable = json!({"type": ["string", "null"]});
        let mut play = tool(
            "play_track",
            "Play music for a mood",
            "Start the mood's playlist (looping) in the background, replacing what plays; answers at once with the track now playing.",
            json!({
                "type": "object",
                "properties": {
                    "mood": mood,
                    "shuffle": {"type": "boolean", "description": "Play the playlist in random order (default false)"}
                },
                "required": ["mood"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "mood": {"type": "string"}, "track": {"type": "string"},
                    "playlist_length": {"type": "integer"}, "backend": {"type": "string"},
                    "shuffle": {"type": "boolean"},
                    "problems": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["mood", "track", "playlist_length", "backend"]
            }),
        );
        // A warm player answers in a few ms; the first play starts mpv (~100-200 ms).
        annotate(
            &mut play,
            false,
            false,
            LatencyMeta::new(PLAY_TRACK_ESTIMATED_MS, PLAY_TRACK_MAX_MS),
        );
        let mut stop = tool(
            "stop_music",
            "Stop the music",
            "Stop whatever music plays; answers what was stopped.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            json!({
                "type": "object",
                "properties": {"stopped": {"type": "boolean"}, "mood": nullable, "track": nullable, "backend": {"type": "string"}},
                "required": ["stopped", "backend"]
            }),
        );
        annotate(&mut stop, false, true, LatencyMeta::new(5, 50));
        let mut list = tool(
            "list_moods",
            "List music moods",
            "The moods play_track knows, with their track counts and any problems with their files.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            json!({
                "type": "object",
                "properties": {
                    "moods": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "tracks": {"type": "integer"},
                        "problems": {"type": "array", "items": {"type": "string"}}},
                        "required": ["name", "tracks", "problems"]}},
                    "backend": {"type": "string"}
                },
                "required": ["moods", "backend"]
            }),
        );
        annotate(&mut list, true, true, LatencyMeta::new(2, 50));
        vec![play, stop, list]
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            match tool {
                "play_track" => self.play_track(&arguments).await,
                "stop_music" => self.stop_music().await,
                "list_moods" => Ok(self.list_moods()),
                other => Err(ToolError::new(format!("music has no tool '{other}'"))),
            }
        })
    }
}

#[cfg(test)]
mod tests;
