//! Built-in tools: useful with nothing else installed. Each is a
//! [`switchboard_core::upstream::ToolProvider`], served in-process by the Host or standalone
//! over stdio by `switchboard tool-server NAME`.

pub mod clock;
pub mod dice;
pub mod files;
pub mod images;
pub mod memory;
pub mod music;
pub mod rules;
pub mod sessions;
pub mod web;

use std::sync::Arc;

use switchboard_core::clock::SystemClock;
use switchboard_core::config::BuiltinSettings;
use switchboard_core::upstream::ToolProvider;

/// Names of every built-in provider, for help texts (the config validator keeps the same
/// list in `switchboard_core::config::BUILTINS`).
pub const BUILTINS: [&str; 4] = ["clock", "dice", "files", "memory"];

/// Why a built-in could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error("unknown built-in '{name}' (available: {})", BUILTINS.join(", "))]
    Unknown { name: String },
    #[error("built-in '{name}' cannot start: {reason}")]
    Setup { name: String, reason: String },
}

/// The built-in provider `name`, set up with `settings` (unset values take the built-in's
/// defaults), on the system clock.
pub fn builtin(
    name: &str,
    settings: &BuiltinSettings,
) -> Result<Arc<dyn ToolProvider>, BuiltinError> {
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
                let cwd = std::env::current_dir().map_err(|error| BuiltinError::Setup {
                    name: name.to_owned(),
                    reason: format!("cannot read the working directory: {error}"),
                })?;
                roots.push(files::Root {
                    path: cwd,
                    read_only: false,
                });
            }
            let defaults = files::FilesSettings::default();
            let provider = files::Files::new(files::FilesSettings {
                roots,
                max_read_bytes: settings.max_read_bytes.unwrap_or(defaults.max_read_bytes),
                max_write_bytes: settings.max_write_bytes.unwrap_or(defaults.max_write_bytes),
            })
            .map_err(|error| BuiltinError::Setup {
                name: name.to_owned(),
                reason: error.to_string(),
            })?;
            Ok(Arc::new(provider))
        }
        "memory" => {
            let database = settings
                .database
                .clone()
                .unwrap_or_else(memory::default_database_path);
            let provider =
                memory::Memory::open(memory::MemorySettings { database }).map_err(|error| {
                    BuiltinError::Setup {
                        name: name.to_owned(),
                        reason: error.to_string(),
                    }
                })?;
            Ok(Arc::new(provider))
        }
        _ => Err(BuiltinError::Unknown {
            name: name.to_owned(),
        }),
    }
}
