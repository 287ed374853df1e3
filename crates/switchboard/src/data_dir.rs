//! Where Switchboard keeps its files when the config names no place: the data directory
//! (`$XDG_DATA_HOME/switchboard`, else `~/.local/share/switchboard`) and the files the
//! gateway and an embedding program share in it. One rule, so that a Host built by the
//! library and `switchboard serve` on the same config open the same files.
//!
//! Only paths are computed here: nothing is read or created.

use std::path::{Path, PathBuf};

use switchboard_core::config::Config;

/// Switchboard's data directory: `$XDG_DATA_HOME/switchboard`, else
/// `~/.local/share/switchboard` (`None` when neither variable is set).
pub fn data_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))
        .map(|data| data.join("switchboard"))
}

/// The audit ledger's SQLite file of a config: `gateway.ledger`, else `ledger.db` in the
/// data directory (`None` without one).
pub fn ledger_path(config: &Config) -> Option<PathBuf> {
    config
        .gateway
        .ledger
        .clone()
        .or_else(|| Some(data_dir()?.join("ledger.db")))
}

/// Where pinned tool definitions are kept: `gateway.pins`, else `pins.json` beside the
/// ledger (`None` without a place: no `gateway.pins`, no `gateway.ledger`, no data
/// directory).
pub fn pins_path(config: &Config) -> Option<PathBuf> {
    config
        .gateway
        .pins
        .clone()
        .or_else(|| Some(ledger_path(config)?.with_file_name("pins.json")))
}
