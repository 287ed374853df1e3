//! `switchboard tool-server NAME`: one built-in provider as a standalone MCP server over
//! stdio, so other MCP hosts can use Switchboard's built-in tools. Its flags are the
//! built-in's config keys (see docs/cli.md); a flag of another built-in is refused.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use switchboard::{Host, HostOptions, ServerPlan};
use switchboard_core::ServerId;
use switchboard_core::config::{
    BuiltinSettings, JsonSearchMapping, PlayerSetting, RootConfig, SecretString, StyleSetting,
};
use switchboard_mcp::front::stdio::{self, StdioOptions};
use switchboard_mcp::front::{Dispatcher, ServerIdentity};
use switchboard_mcp::upstream::{Endpoint, EraChoice, UpstreamSpec};
use tokio_util::sync::CancellationToken;

/// Why `tool-server manager` is refused.
pub const MANAGER_ALONE: &str = "the manager acts on a gateway's servers and cannot run alone: name it in a gateway's config instead ([servers.manager] builtin = \"manager\") and run `switchboard serve`";

#[derive(Debug, clap::Args)]
pub struct ToolServerArgs {
    /// The built-in provider to serve: clock, dice, files, memory, rules, sessions, music,
    /// web or images (not manager, which acts on a gateway).
    name: String,
    /// files: a directory it may read and write (repeatable; default: the working directory).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// files: a directory it may only read (repeatable).
    #[arg(long = "read-only-root", value_name = "DIR")]
    read_only_roots: Vec<PathBuf>,
    /// files: the largest file read, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_read_bytes: Option<u64>,
    /// files: the largest file written, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_write_bytes: Option<u64>,
    /// dice: the directory of random tables (*.toml, *.csv).
    #[arg(long, value_name = "DIR")]
    tables_dir: Option<PathBuf>,
    /// dice: a fixed seed, for reproducible rolls.
    #[arg(long)]
    seed: Option<u64>,
    /// memory, sessions: the SQLite file (default: memory.db under the user data directory);
    /// rules: its index (default: rules.db there).
    #[arg(long, value_name = "FILE")]
    database: Option<PathBuf>,
    /// rules: a directory of rules files, searched recursively (repeatable).
    #[arg(long = "dir", value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// music: the player, auto (mpv when installed, else silent), mpv or null (silent).
    #[arg(long, value_enum, conflicts_with = "player_command")]
    player: Option<Player>,
    /// music: play each track with this command line instead, split on whitespace (no
    /// shell, no quoting); {path} in it stands for the track, e.g. "paplay {path}".
    #[arg(long, value_name = "\"CMD ARGS…\"")]
    player_command: Option<String>,
    /// music: a mood and one of its tracks or directories of tracks (repeatable; a mood
    /// named again gets more tracks).
    #[arg(long = "mood", value_name = "NAME=PATH", value_parser = name_value)]
    moods: Vec<(String, String)>,
    /// music: an extra argument for mpv, e.g. --mpv-arg=--volume=40 (repeatable).
    #[arg(long = "mpv-arg", value_name = "ARG", allow_hyphen_values = true)]
    mpv_args: Vec<String>,
    /// web: the search backend, searxng, brave or json (required); images: openai
    /// (default) or automatic1111.
    #[arg(long, value_name = "NAME")]
    backend: Option<String>,
    /// web, images: the backend's URL (web with --backend json: a template with {query}).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// web, images: read the backend's API key from this environment variable (a key is
    /// never given on the command line, where other users could see it).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// web with --backend json: where a result's fields are in the answer, as dotted paths:
    /// results=PATH, title=PATH, url=PATH (all three needed) and snippet=PATH (repeatable).
    #[arg(long = "json", value_name = "KEY=PATH", value_parser = name_value)]
    json: Vec<(String, String)>,
    /// web: let fetch_page reach loopback, private and link-local addresses too.
    #[arg(long)]
    allow_private: bool,
    /// web, images: the largest answer read, in bytes.
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<u64>,
    /// web, images: how long one call may take, e.g. 15s, 2m or 500ms (a bare number is
    /// milliseconds).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    timeout: Option<Duration>,
    /// web: the most redirects fetch_page follows.
    #[arg(long, value_name = "N")]
    max_redirects: Option<u32>,
    /// images: the model (OpenAI; default gpt-image-1) or checkpoint (Automatic1111).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// images: save each image, with a JSON sidecar, in this directory.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// images: a style a prompt may ask for, with the text appended to the prompt
    /// (repeatable); a style named "default" applies when none is asked for.
    #[arg(long = "style", value_name = "NAME=SUFFIX", value_parser = name_value)]
    styles: Vec<(String, String)>,
    /// images: what a style's images should not show (repeatable; the style needs no
    /// --style of its own).
    #[arg(long = "style-negative", value_name = "NAME=TEXT", value_parser = name_value)]
    style_negatives: Vec<(String, String)>,
}

/// `--player`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Player {
    Auto,
    Mpv,
    Null,
}

/// `NAME=VALUE`, split at the first `=`; the name may not be empty.
fn name_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("'{text}' is not NAME=VALUE")),
    }
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    // A bare number is milliseconds, as in the config file.
    let parsed = match text.trim().parse::<u64>() {
        Ok(ms) => Some(Duration::from_millis(ms)),
        Err(_) => switchboard_core::config::parse_duration(text),
    };
    match parsed {
        Some(duration) if !duration.is_zero() => Ok(duration),
        Some(_) => Err("must be more than zero".to_owned()),
        None => Err(switchboard_core::config::DURATION_HINT.to_owned()),
    }
}

/// Which built-ins take each flag (the config keys of `switchboard_core::config` builtin).
const FLAG_OWNERS: [(&str, &[&str]); 22] = [
    ("--root", &["files"]),
    ("--read-only-root", &["files"]),
    ("--max-read-bytes", &["files"]),
    ("--max-write-bytes", &["files"]),
    ("--tables-dir", &["dice"]),
    ("--seed", &["dice"]),
    ("--database", &["memory", "rules", "sessions"]),
    ("--dir", &["rules"]),
    ("--player", &["music"]),
    ("--player-command", &["music"]),
    ("--mood", &["music"]),
    ("--mpv-arg", &["music"]),
    ("--backend", &["web", "images"]),
    ("--url", &["web", "images"]),
    ("--api-key-env", &["web", "images"]),
    ("--json", &["web"]),
    ("--allow-private", &["web"]),
    ("--max-bytes", &["web", "images"]),
    ("--timeout", &["web", "images"]),
    ("--max-redirects", &["web"]),
    ("--model", &["images"]),
    ("--out-dir", &["images"]),
];

impl ToolServerArgs {
    /// The flags given, by name (`--style` and `--style-negative`, which only `images`
    /// takes, last).
    fn given(&self) -> Vec<&'static str> {
        let set = [
            !self.roots.is_empty(),
            !self.read_only_roots.is_empty(),
            self.max_read_bytes.is_some(),
            self.max_write_bytes.is_some(),
            self.tables_dir.is_some(),
            self.seed.is_some(),
            self.database.is_some(),
            !self.dirs.is_empty(),
            self.player.is_some(),
            self.player_command.is_some(),
            !self.moods.is_empty(),
            !self.mpv_args.is_empty(),
            self.backend.is_some(),
            self.url.is_some(),
            self.api_key_env.is_some(),
            !self.json.is_empty(),
            self.allow_private,
            self.max_bytes.is_some(),
            self.timeout.is_some(),
            self.max_redirects.is_some(),
            self.model.is_some(),
            self.out_dir.is_some(),
        ];
        let mut given: Vec<&'static str> = FLAG_OWNERS
            .iter()
            .zip(set)
            .filter(|(_, set)| *set)
            .map(|((flag, _), _)| *flag)
            .collect();
        if !self.styles.is_empty() {
            given.push("--style");
        }
        if !self.style_negatives.is_empty() {
            given.push("--style-negative");
        }
        given
    }

    /// Refuses a flag that belongs to another built-in (it would be silently ignored).
    fn check_flags(&self) -> anyhow::Result<()> {
        for flag in self.given() {
            let owners: &[&str] = FLAG_OWNERS
                .iter()
                .find(|(name, _)| *name == flag)
                .map_or(&["images"], |(_, owners)| owners);
            if !owners.contains(&self.name.as_str()) {
                let quoted: Vec<String> = owners.iter().map(|o| format!("'{o}'")).collect();
                let owners = match quoted.as_slice() {
                    [rest @ .., last] if !rest.is_empty() => {
                        format!("{} or {last}", rest.join(", "))
                    }
                    _ => quoted.join(""),
                };
                anyhow::bail!("{flag} is a setting of {owners}, not of '{}'", self.name);
            }
        }
        Ok(())
    }

    fn settings(&self) -> anyhow::Result<BuiltinSettings> {
        let root = |read_only: bool| {
            move |path: &PathBuf| RootConfig {
                path: path.clone(),
                read_only,
            }
        };
        let player = match (&self.player, &self.player_command) {
            (Some(Player::Auto), _) => Some(PlayerSetting::Auto),
            (Some(Player::Mpv), _) => Some(PlayerSetting::Mpv),
            (Some(Player::Null), _) => Some(PlayerSetting::Null),
            (None, Some(command)) => {
                let argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
                if argv.is_empty() {
                    anyhow::bail!(
                        "--player-command is empty: give the program and its arguments, e.g. \"paplay {{path}}\""
                    );
                }
                Some(PlayerSetting::Command(argv))
            }
            (None, None) => None,
        };
        let mut moods: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        for (mood, path) in &self.moods {
            moods
                .entry(mood.clone())
                .or_default()
                .push(PathBuf::from(path));
        }
        let api_key = match &self.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => Some(SecretString(key.trim().to_owned())),
                _ => anyhow::bail!(
                    "--api-key-env {var}: the environment variable {var} is not set (or empty)"
                ),
            },
            None => None,
        };
        let mut styles: BTreeMap<String, StyleSetting> = BTreeMap::new();
        for (name, suffix) in &self.styles {
            styles.entry(name.clone()).or_default().suffix = Some(suffix.clone());
        }
        for (name, negative) in &self.style_negatives {
            styles.entry(name.clone()).or_default().negative = Some(negative.clone());
        }
        Ok(BuiltinSettings {
            roots: self
                .roots
                .iter()
                .map(root(false))
                .chain(self.read_only_roots.iter().map(root(true)))
                .collect(),
            max_read_bytes: self.max_read_bytes,
            max_write_bytes: self.max_write_bytes,
            tables_dir: self.tables_dir.clone(),
            seed: self.seed,
            database: self.database.clone(),
            dirs: self.dirs.clone(),
            player,
            moods,
            mpv_args: self.mpv_args.clone(),
            backend: self.backend.clone(),
            url: self.url.clone(),
            api_key,
            allow_private: self.allow_private.then_some(true),
            max_bytes: self.max_bytes,
            timeout: self.timeout,
            max_redirects: self.max_redirects,
            json: self.json_mapping()?,
            model: self.model.clone(),
            out_dir: self.out_dir.clone(),
            styles,
        })
    }

    /// `--json results=… --json title=… --json url=… [--json snippet=…]`.
    fn json_mapping(&self) -> anyhow::Result<Option<JsonSearchMapping>> {
        if self.json.is_empty() {
            return Ok(None);
        }
        let mut fields: BTreeMap<&str, String> = BTreeMap::new();
        for (key, path) in &self.json {
            match key.as_str() {
                "results" | "title" | "url" | "snippet" => {
                    fields.insert(key.as_str(), path.clone());
                }
                other => {
                    anyhow::bail!("--json {other}=…: the keys are results, title, url and snippet")
                }
            }
        }
        let mut take = |key: &str| fields.remove(key);
        match (take("results"), take("title"), take("url")) {
            (Some(results), Some(title), Some(url)) => Ok(Some(JsonSearchMapping {
                results,
                title,
                url,
                snippet: take("snippet"),
            })),
            _ => anyhow::bail!(
                "--json needs results=PATH, title=PATH and url=PATH, e.g. --json results=data.items --json title=name --json url=link"
            ),
        }
    }
}

/// The server's call timeout: a minute, or the built-in's own timeout and 5 s when that is
/// longer (images wait 2 minutes for a picture by default). It never decides alone: a call's
/// hard deadline is the smallest of this and the tool's declared `max_duration_ms`, so web and
/// images declare their configured timeout as that bound (and the other built-ins bounds above
/// their own internal waits) — this timeout only must not undercut it.
fn call_timeout(args: &ToolServerArgs) -> Duration {
    let own = match args.name.as_str() {
        "images" => args
            .timeout
            .unwrap_or(switchboard_tools::images::ImagesSettings::default().timeout),
        "web" => args
            .timeout
            .unwrap_or(switchboard_tools::web::WebSettings::default().timeout),
        _ => Duration::ZERO,
    };
    Duration::from_secs(60).max(own + Duration::from_secs(5))
}

pub async fn run(args: ToolServerArgs) -> anyhow::Result<ExitCode> {
    if args.name == "manager" {
        anyhow::bail!("{MANAGER_ALONE}");
    }
    if !switchboard_tools::BUILTINS.contains(&args.name.as_str()) {
        anyhow::bail!(
            "unknown built-in '{}' (available: {})",
            args.name,
            switchboard_tools::BUILTINS.join(", ")
        );
    }
    args.check_flags()?;
    let provider = switchboard_tools::builtin(&args.name, &args.settings()?).map_err(|error| {
        match args.name.as_str() {
            // The reason names config keys; say which flags set them.
            "web" | "images" => anyhow::anyhow!(
                "{error} (here: --backend NAME, --url URL, --api-key-env VAR{})",
                if args.name == "web" {
                    ", --json KEY=PATH"
                } else {
                    ""
                }
            ),
            _ => error.into(),
        }
    })?;
    let plan = ServerPlan {
        spec: UpstreamSpec {
            id: ServerId::new(&args.name),
            endpoint: Endpoint::InProcess(provider),
            era: EraChoice::Auto,
            connect_timeout: Duration::from_secs(1),
            discover_timeout: Duration::from_secs(1),
            max_message_bytes: 16 << 20,
            instances: std::num::NonZeroU8::MIN,
        },
        prefix: String::new(),
        overrides: Default::default(),
        call_timeout: call_timeout(&args),
        category: String::new(),
        fingerprint: String::new(),
        pinned: false,
    };
    let options = HostOptions {
        identity: ServerIdentity {
            name: format!("switchboard-{}", args.name),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
        },
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan], options);
    let dispatcher = Dispatcher::new(Arc::new(host.clone()), None);
    let options = StdioOptions {
        max_message_bytes: 16 << 20,
        grace: Duration::from_secs(5),
        max_owed_answers: stdio::MAX_OWED_ANSWERS,
    };
    stdio::serve(
        dispatcher,
        crate::process_stdio::stdin(),
        crate::process_stdio::stdout(),
        options,
        CancellationToken::new(),
    )
    .await;
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
