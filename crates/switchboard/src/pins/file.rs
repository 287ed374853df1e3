//! The pins file: read when the store opens and again, under the file's lock
//! (`switchboard_core::file_lock`), before every change, so that processes sharing the file
//! (`switchboard serve` and CLI commands, gateways on one machine) each change the pins the
//! file holds now instead of writing back the copy they read at start — which dropped the
//! others' pins, and let a process that had not seen another's pin pin a changed definition
//! on "first sight". Written whole and atomically, readable by the gateway's user only.

use std::path::Path;

use super::{PinError, Stored};

/// What the pins file holds.
pub(super) enum OnDisk {
    /// No file yet.
    Missing,
    Stored(Stored),
    /// The file cannot be read or is not valid (the reason): it is never overwritten.
    Unreadable(String),
}

/// Reads the pins file at `path`.
pub(super) fn read(path: &Path) -> OnDisk {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str(&text) {
            Ok(stored) => OnDisk::Stored(stored),
            Err(error) => OnDisk::Unreadable(format!(
                "the pins file {} is not valid ({error})",
                path.display()
            )),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => OnDisk::Missing,
        Err(error) => OnDisk::Unreadable(format!(
            "cannot read the pins file {}: {error}",
            path.display()
        )),
    }
}

/// Writes `stored` to the pins file at `path`, whole.
pub(super) fn write(path: &Path, stored: &Stored) -> Result<(), PinError> {
    let io = |reason: String| PinError::Io {
        path: path.display().to_string(),
        reason,
    };
    let text = serde_json::to_string_pretty(stored).map_err(|error| io(error.to_string()))?;
    crate::private_file::write(path, text.as_bytes()).map_err(|error| io(error.to_string()))
}
