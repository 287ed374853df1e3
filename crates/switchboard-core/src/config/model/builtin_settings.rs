//! The settings of a built-in tool server (`builtin = "files"` and the others): one struct
//! holding every built-in's keys, and the small types some of them take.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::SecretString;

/// Settings of a built-in tool server; each built-in reads only its own keys (the validator
/// refuses the others). Unset values take the built-in's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuiltinSettings {
    /// `files`: the directories it may touch (default: the working directory).
    pub roots: Vec<RootConfig>,
    /// `files`: the largest file read, in bytes.
    pub max_read_bytes: Option<u64>,
    /// `files`: the largest file written, in bytes.
    pub max_write_bytes: Option<u64>,
    /// `dice`: where random tables are read from.
    pub tables_dir: Option<PathBuf>,
    /// `dice`: a fixed seed for reproducible rolls (default: OS randomness).
    pub seed: Option<u64>,
    /// `memory`, `rules`, `sessions`: the SQLite file (default: under the user data
    /// directory).
    pub database: Option<PathBuf>,
    /// `rules`: directories of rule files.
    pub dirs: Vec<PathBuf>,
    /// `music`: how tracks are played (default: the built-in's own choice, `auto`).
    pub player: Option<PlayerSetting>,
    /// `music`: mood → its tracks (files or directories).
    pub moods: BTreeMap<String, Vec<PathBuf>>,
    /// `music`: extra arguments for mpv (e.g. `--ao=null`).
    pub mpv_args: Vec<String>,
    /// `web` (`searxng` | `brave` | `json`), `images` (`openai` | `automatic1111`): the
    /// service used, one of the built-in's own values.
    pub backend: Option<String>,
    /// `web`, `images`: the backend's URL (http or https; for the `json` search backend a
    /// template containing `{query}`).
    pub url: Option<String>,
    /// `web`, `images`: the backend's API key (redacted in `Debug`).
    pub api_key: Option<SecretString>,
    /// `web`: pages on private, loopback and link-local addresses may be fetched too (default
    /// false).
    pub allow_private: Option<bool>,
    /// `web`, `images`: the largest answer read, in bytes.
    pub max_bytes: Option<u64>,
    /// `web`, `images`: the deadline of one request to the backend.
    pub timeout: Option<Duration>,
    /// `web`: redirects followed per fetch.
    pub max_redirects: Option<u32>,
    /// `web` with `backend = "json"`: where the results are in the answer.
    pub json: Option<JsonSearchMapping>,
    /// `images`: the model asked for.
    pub model: Option<String>,
    /// `images`: where generated images are written.
    pub out_dir: Option<PathBuf>,
    /// `images`: named styles a prompt may ask for.
    pub styles: BTreeMap<String, StyleSetting>,
}

/// `music`'s `player`: a named player, or a command line in which `{path}` is replaced by the
/// track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlayerSetting {
    /// mpv when it is installed, else no sound.
    Auto,
    /// mpv (an error when it is not installed).
    Mpv,
    /// No sound: tracks are "played" silently.
    Null,
    /// The program and its arguments; `{path}` is replaced by the track.
    Command(Vec<String>),
}

/// How the `web` built-in's `json` search backend reads an answer: `results` is a dotted
/// path to the array of results, the others are keys in each result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSearchMapping {
    pub results: String,
    pub title: String,
    pub url: String,
    pub snippet: Option<String>,
}

/// A named style of the `images` built-in: text added to the prompt and to the negative
/// prompt, and backend parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StyleSetting {
    pub suffix: Option<String>,
    pub negative: Option<String>,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// One root of the `files` built-in.
#[derive(Debug, Clone, PartialEq)]
pub struct RootConfig {
    pub path: PathBuf,
    pub read_only: bool,
}
