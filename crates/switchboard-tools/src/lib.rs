//! Built-in tools: useful with nothing else installed. Each is a
//! [`switchboard_core::upstream::ToolProvider`], served in-process by the Host or standalone
//! over stdio by `switchboard tool-server NAME`.
//!
//! [`BUILTINS`] are the nine that run on their own: `clock`, `dice`, `files`, `memory`,
//! `rules`, `sessions`, `music`, `web` and `images`. The config also knows `manager`
//! (`switchboard_core::config::BUILTINS` is this list plus `"manager"`), which acts on a
//! running gateway's servers and so is built by the gateway itself, never here.

mod cancel;
pub mod clock;
pub mod dice;
pub mod files;
pub mod images;
pub mod memory;
pub mod music;
pub mod rules;
pub mod sessions;
mod sqlite;
pub mod web;

use std::sync::Arc;

use switchboard_core::clock::SystemClock;
use switchboard_core::config::{BuiltinSettings, JsonSearchMapping, PlayerSetting, StyleSetting};
use switchboard_core::upstream::ToolProvider;

/// Names of every built-in provider that runs on its own, for help texts. The config
/// validator's list, `switchboard_core::config::BUILTINS`, is this one plus `"manager"`,
/// which only a gateway can serve.
pub const BUILTINS: [&str; 9] = [
    "clock", "dice", "files", "memory", "rules", "sessions", "music", "web", "images",
];

/// Why a built-in could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error("unknown built-in '{name}' (available: {})", BUILTINS.join(", "))]
    Unknown { name: String },
    #[error("built-in '{name}' cannot start: {reason}")]
    Setup { name: String, reason: String },
}

impl BuiltinError {
    fn setup(name: &str, reason: impl std::fmt::Display) -> Self {
        Self::Setup {
            name: name.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// The built-in provider `name`, set up with `settings` (unset values take the built-in's
/// defaults), on the system clock.
pub fn builtin(
    name: &str,
    settings: &BuiltinSettings,
) -> Result<Arc<dyn ToolProvider>, BuiltinError> {
    let setup = |error: &dyn std::fmt::Display| BuiltinError::setup(name, error);
    match name {
        "clock" => Ok(Arc::new(clock::Clock::new(Arc::new(SystemClock)))),
        "dice" => Ok(Arc::new(dice::Dice::new(dice::DiceSettings {
            tables_dir: settings.tables_dir.clone(),
            seed: settings.seed,
        }))),
        "files" => {
            let mut roots: Vec<files::Root> = settings
                .roots
                .iter()
                .map(|root| files::Root {
                    path: root.path.clone(),
                    read_only: root.read_only,
                })
                .collect();
            if roots.is_empty() {
                // The default: the directory the gateway was started in.
                let cwd = std::env::current_dir().map_err(|error| {
                    setup(&format!("cannot read the working directory: {error}"))
                })?;
                let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
                roots.push(files::Root {
                    path: implicit_files_root(cwd, home.as_deref()).map_err(|e| setup(&e))?,
                    read_only: false,
                });
            }
            let defaults = files::FilesSettings::default();
            let provider = files::Files::new(files::FilesSettings {
                roots,
                max_read_bytes: settings.max_read_bytes.unwrap_or(defaults.max_read_bytes),
                max_write_bytes: settings.max_write_bytes.unwrap_or(defaults.max_write_bytes),
            })
            .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "memory" => {
            let database = settings
                .database
                .clone()
                .unwrap_or_else(memory::default_database_path);
            let provider = memory::Memory::open(memory::MemorySettings { database })
                .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "rules" => {
            let provider =
                rules::Rules::open(rules_settings(settings)).map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "sessions" => {
            let database = settings
                .database
                .clone()
                .unwrap_or_else(memory::default_database_path);
            let provider = sessions::Sessions::open(sessions::SessionsSettings { database })
                .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "music" => {
            let provider = music::Music::new(music::MusicSettings {
                player: settings
                    .player
                    .as_ref()
                    .map_or(music::PlayerChoice::Auto, player_choice),
                moods: settings.moods.clone(),
                mpv_args: settings.mpv_args.clone(),
            })
            .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "web" => {
            let provider = web::Web::new(web_settings(settings).map_err(|reason| setup(&reason))?)
                .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "images" => {
            let provider =
                images::Images::new(images_settings(settings).map_err(|reason| setup(&reason))?)
                    .map_err(|error| setup(&error))?;
            Ok(Arc::new(provider))
        }
        "manager" => Err(setup(
            &"the manager acts on a gateway's servers and cannot run alone; name it in a gateway's config (builtin = \"manager\")",
        )),
        _ => Err(BuiltinError::Unknown {
            name: name.to_owned(),
        }),
    }
}

/// The root of a `files` server that names none: the working directory — unless that is `/`
/// or the user's home ([`unfit_implicit_root`]).
fn implicit_files_root(
    cwd: std::path::PathBuf,
    home: Option<&std::path::Path>,
) -> Result<std::path::PathBuf, String> {
    match unfit_implicit_root(&cwd, home) {
        None => Ok(cwd),
        Some(why) => Err(format!(
            "no roots are configured and {why}. Name the directories it may use: roots = [\"DIR\"] under [servers.ID] (or --root DIR)"
        )),
    }
}

/// Why the working directory may not be the root of a `files` server that names none
/// (`None`: it may): `/` or the user's home, as it is for a gateway started by a desktop host
/// or systemd, where a writable root would reach the whole filesystem or every dotfile and
/// key. Reads the process's working directory and `$HOME`; a working directory that cannot be
/// read is left for the server's start to report.
pub fn working_directory_unfit_as_files_root() -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    unfit_implicit_root(&cwd, home.as_deref())
}

/// [`working_directory_unfit_as_files_root`] for a given working directory and home.
fn unfit_implicit_root(cwd: &std::path::Path, home: Option<&std::path::Path>) -> Option<String> {
    let same = |a: &std::path::Path, b: &std::path::Path| {
        a == b
            || a.canonicalize()
                .ok()
                .is_some_and(|a| b.canonicalize().ok() == Some(a))
    };
    let what = if cwd.parent().is_none() {
        "the filesystem root"
    } else if home.is_some_and(|home| same(cwd, home)) {
        "your home directory"
    } else {
        return None;
    };
    Some(format!(
        "the working directory is {} ({what}); a files server there could read and write all of it",
        cwd.display()
    ))
}

/// The `rules` settings: `dirs`, `database` (default [`rules::default_database_path`]).
pub fn rules_settings(settings: &BuiltinSettings) -> rules::RulesSettings {
    rules::RulesSettings {
        dirs: settings.dirs.clone(),
        database: settings
            .database
            .clone()
            .unwrap_or_else(rules::default_database_path),
    }
}

fn player_choice(player: &PlayerSetting) -> music::PlayerChoice {
    match player {
        PlayerSetting::Auto => music::PlayerChoice::Auto,
        PlayerSetting::Mpv => music::PlayerChoice::Mpv,
        PlayerSetting::Null => music::PlayerChoice::Null,
        PlayerSetting::Command(argv) => music::PlayerChoice::Command(argv.clone()),
    }
}

/// What `web` needs besides its backend name, for the error when there is none.
const WEB_BACKENDS: &str = "backend = \"searxng\" with url (the instance), \"brave\" with api_key, or \"json\" with url (a template with {query}) and json = { results, title, url }";

/// The `web` settings; `backend` is required (there is no search service to default to).
fn web_settings(settings: &BuiltinSettings) -> Result<web::WebSettings, String> {
    let backend = match settings.backend.as_deref() {
        None => return Err(format!("web needs a search backend: {WEB_BACKENDS}")),
        Some("searxng") => web::SearchBackend::Searxng,
        Some("brave") => web::SearchBackend::Brave,
        Some("json") => match &settings.json {
            Some(mapping) => json_backend(mapping),
            None => {
                return Err(
                    "backend = \"json\" needs json = { results, title, url } saying where the results are in the answer"
                        .to_owned(),
                );
            }
        },
        Some(other) => {
            return Err(format!("unknown web backend '{other}': use {WEB_BACKENDS}"));
        }
    };
    let defaults = web::WebSettings::default();
    Ok(web::WebSettings {
        backend,
        url: settings.url.clone(),
        api_key: settings.api_key.clone(),
        allow_private: settings.allow_private.unwrap_or(defaults.allow_private),
        max_bytes: settings.max_bytes.unwrap_or(defaults.max_bytes),
        timeout: settings.timeout.unwrap_or(defaults.timeout),
        max_redirects: settings.max_redirects.unwrap_or(defaults.max_redirects),
    })
}

fn json_backend(mapping: &JsonSearchMapping) -> web::SearchBackend {
    web::SearchBackend::Json {
        results_path: mapping.results.clone(),
        title: mapping.title.clone(),
        url: mapping.url.clone(),
        snippet: mapping.snippet.clone(),
        // The config has no key for it: a key goes into the URL template as {key}.
        key_header: None,
    }
}

/// The `images` settings: backend default `openai`, its default URL unless `url`.
fn images_settings(settings: &BuiltinSettings) -> Result<images::ImagesSettings, String> {
    let backend = match settings.backend.as_deref() {
        None | Some("openai") => images::ImageBackend::OpenAi,
        Some("automatic1111") => images::ImageBackend::Automatic1111,
        Some(other) => {
            return Err(format!(
                "unknown images backend '{other}': use backend = \"openai\" (with api_key) or \"automatic1111\" (with url)"
            ));
        }
    };
    let defaults = images::ImagesSettings::for_backend(backend);
    Ok(images::ImagesSettings {
        url: settings.url.clone().unwrap_or(defaults.url),
        api_key: settings.api_key.clone(),
        model: settings.model.clone(),
        out_dir: settings.out_dir.clone(),
        styles: settings
            .styles
            .iter()
            .map(|(name, style)| (name.clone(), style_spec(style)))
            .collect(),
        max_bytes: settings.max_bytes.unwrap_or(defaults.max_bytes),
        timeout: settings.timeout.unwrap_or(defaults.timeout),
        backend,
    })
}

fn style_spec(style: &StyleSetting) -> images::StyleSpec {
    images::StyleSpec {
        suffix: style.suffix.clone(),
        negative: style.negative.clone(),
        params: style.params.clone(),
    }
}

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod cancel_tests;
#[cfg(test)]
mod sqlite_tests;
#[cfg(test)]
mod tests;
