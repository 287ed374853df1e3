//! A file a running gateway follows (the token file, the key ring): looked at again at most
//! every [`RECHECK`], and read again only when its modification time, size or inode
//! changed. Whoever finds another caller looking goes on with what was read before.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// How often a followed file is looked at.
pub const RECHECK: Duration = Duration::from_millis(500);

/// What tells a rewritten file from the one read: modification time, size, inode.
type FileStamp = (SystemTime, u64, u64);

fn stamp_of(path: &Path) -> Option<FileStamp> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len(), metadata.ino()))
}

/// One followed file and when it is looked at next.
#[derive(Debug)]
pub struct FollowedFile {
    path: PathBuf,
    /// When the file is looked at next, and what it looked like when last read.
    check: Mutex<(Instant, Option<FileStamp>)>,
}

impl FollowedFile {
    /// Follows `path` as it is at `now` (call before reading it the first time).
    pub fn new(path: &Path, now: Instant) -> Self {
        Self {
            path: path.to_owned(),
            check: Mutex::new((now + RECHECK, stamp_of(path))),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When the look is due and the file changed since it was last read, `read` is called;
    /// its success marks the file as read (a failure is retried at the next look).
    pub fn reread<E>(&self, now: Instant, read: impl FnOnce(&Path) -> Result<(), E>) {
        let Ok(mut check) = self.check.try_lock() else {
            return;
        };
        if now < check.0 {
            return;
        }
        check.0 = now + RECHECK;
        let stamp = stamp_of(&self.path);
        if stamp == check.1 {
            return;
        }
        if read(&self.path).is_ok() {
            check.1 = stamp;
        }
    }
}
