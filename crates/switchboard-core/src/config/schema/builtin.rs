//! The mirror types of the built-ins' settings in `[servers.X]` (music's player and moods,
//! web's JSON mapping, images' styles, files' roots, the backends) for the JSON Schema the
//! parent module generates.

use schemars::JsonSchema;

/// How the music built-in plays tracks.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Player {
    Named(PlayerName),
    /// A command line: the program and its arguments; {path} is replaced by the track.
    Command(#[schemars(length(min = 1))] Vec<String>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum PlayerName {
    /// mpv when it is installed, else silent.
    Auto,
    /// mpv.
    Mpv,
    /// No sound.
    Null,
}

/// A mood's tracks: a path, or an array of paths.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Tracks {
    One(String),
    Many(Vec<String>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum Backend {
    /// web: a SearXNG instance's JSON API (url: the instance).
    Searxng,
    /// web: Brave's Web Search API (api_key needed).
    Brave,
    /// web: any search URL answering JSON (url with {query}, and a json mapping).
    Json,
    /// images: OpenAI's image API or a compatible one.
    Openai,
    /// images: an AUTOMATIC1111 / Stable Diffusion web UI (url: the UI).
    Automatic1111,
}

/// Where a JSON search answer keeps its results.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct JsonMapping {
    /// Dotted path to the array of results, e.g. "data.items".
    #[schemars(length(min = 1))]
    results: String,
    /// The key of each result's title.
    #[schemars(length(min = 1))]
    title: String,
    /// The key of each result's URL.
    #[schemars(length(min = 1))]
    url: String,
    /// The key of each result's snippet.
    #[serde(default)]
    #[schemars(length(min = 1))]
    snippet: Option<String>,
}

/// A named image style.
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Style {
    /// Added to the prompt.
    suffix: Option<String>,
    /// Added to the negative prompt.
    negative: Option<String>,
    /// Backend parameters (any table).
    params: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A root of the files built-in: a path, or a path with flags.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Root {
    Path(String),
    Detailed {
        /// The directory.
        path: String,
        /// Refuse every write under this root (default false).
        #[serde(default)]
        read_only: bool,
    },
}
