//! The pins file: read when the store opens and, under the file's lock
//! (`switchboard_core::file_lock`), brought up to date before every change, so that
//! processes sharing the file (`switchboard serve` and CLI commands, gateways on one
//! machine) each change the pins the file holds now instead of writing back the copy they
//! read at start — which dropped the others' pins, and let a process that had not seen
//! another's pin pin a changed definition on "first sight". Written whole and atomically,
//! readable by the gateway's user only.
//!
//! Catching up is cheap when nothing changed: the file's identity (inode, size, time) is
//! compared with what this store last read or wrote, and only a different file is read. A
//! change this store could not write (the lock not had in [`LOCK_WAIT`], a full disk) is
//! not lost: until a write succeeds the store is *unsaved*, and catching up then adds the
//! file's pins to its own instead of taking the file's (a pin removed here may come back
//! from the file; nothing pinned here is dropped). A file that cannot be read for a moment
//! is skipped, the change kept unsaved; one that is not valid pins JSON is never
//! overwritten (the store keeps its pins in memory only from then).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use switchboard_core::file_lock::FileLock;

use super::{PinError, Stored};

/// How long a change waits for another holder of the file's lock before it is made in
/// memory only (and written with the next change that gets the lock).
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(2);

/// What tells one version of the file from another: every write replaces the file, so a
/// new inode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Stamp {
    inode: u64,
    len: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            inode: metadata.ino(),
            len: metadata.len(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
        }
    }
}

/// What this store knows of the file.
#[derive(Default)]
pub(super) struct Synced {
    /// The version last read or written here.
    seen: Option<Stamp>,
    /// A change made here is not in the file yet.
    pub(super) unsaved: bool,
}

impl Synced {
    /// In step with the version `stamp`, just read.
    pub(super) fn read(stamp: Stamp) -> Synced {
        Synced {
            seen: Some(stamp),
            unsaved: false,
        }
    }
}

/// What the pins file holds.
pub(super) enum OnDisk {
    /// No file yet.
    Missing,
    Stored(Stored, Stamp),
    /// Not valid pins JSON (the reason): it is never overwritten.
    Invalid(String),
    /// It could not be read now (the reason).
    Failed(String),
}

/// Reads the pins file at `path`.
pub(super) fn read(path: &Path) -> OnDisk {
    let failed = |error: std::io::Error| {
        OnDisk::Failed(format!(
            "cannot read the pins file {}: {error}",
            path.display()
        ))
    };
    let (text, stamp) = match std::fs::File::open(path).and_then(|mut file| {
        let stamp = Stamp::of(&file.metadata()?);
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text)?;
        Ok((text, stamp))
    }) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return OnDisk::Missing,
        Err(error) => return failed(error),
    };
    match serde_json::from_str(&text) {
        Ok(stored) => OnDisk::Stored(stored, stamp),
        Err(error) => OnDisk::Invalid(format!(
            "the pins file {} is not valid ({error})",
            path.display()
        )),
    }
}

/// The file's lock, its directory created first, waited for at most [`LOCK_WAIT`].
pub(super) fn lock(path: &Path) -> std::io::Result<FileLock> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    FileLock::acquire_within(path, LOCK_WAIT)
}

/// Why a store could not catch up with its file.
pub(super) enum Behind {
    /// Not valid pins JSON: never to be written.
    Invalid(String),
    /// Not readable now.
    Failed(String),
}

/// Brings `stored` up to what the file at `path` holds (the lock held), unless it is the
/// version this store last read or wrote; while `synced` is unsaved, the file's pins are
/// added to `stored`'s rather than taking their place.
pub(super) fn catch_up(
    path: &Path,
    stored: &mut Stored,
    synced: &mut Synced,
) -> Result<(), Behind> {
    let now = std::fs::metadata(path)
        .ok()
        .map(|metadata| Stamp::of(&metadata));
    if now.is_some() && now == synced.seen {
        return Ok(());
    }
    match read(path) {
        // Deleted since (or never written yet): what this store holds is written back.
        OnDisk::Missing => Ok(()),
        OnDisk::Stored(theirs, stamp) => {
            if synced.unsaved {
                for (key, pin) in theirs.pins {
                    stored.pins.entry(key).or_insert(pin);
                }
                stored.closed.extend(theirs.closed);
            } else {
                *stored = theirs;
            }
            synced.seen = Some(stamp);
            Ok(())
        }
        OnDisk::Invalid(reason) => Err(Behind::Invalid(reason)),
        OnDisk::Failed(reason) => Err(Behind::Failed(reason)),
    }
}

/// Writes `stored` to the pins file at `path`, whole (the lock held); `synced` then knows
/// the version written, or stays unsaved.
pub(super) fn write(path: &Path, stored: &Stored, synced: &mut Synced) -> Result<(), PinError> {
    let io = |reason: String| PinError::Io {
        path: path.display().to_string(),
        reason,
    };
    let written = serde_json::to_string_pretty(stored)
        .map_err(|error| io(error.to_string()))
        .and_then(|text| {
            crate::private_file::write(path, text.as_bytes()).map_err(|error| io(error.to_string()))
        });
    match written {
        Ok(()) => {
            synced.unsaved = false;
            synced.seen = std::fs::metadata(path).ok().map(|m| Stamp::of(&m));
        }
        Err(_) => synced.unsaved = true,
    }
    written
}
