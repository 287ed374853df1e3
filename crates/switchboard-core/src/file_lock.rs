//! [`locked`]: a change made to a file by reading it, changing it and writing it whole, run
//! holding an exclusive lock on `<file>.lock` beside it (created 0600; the file itself is
//! replaced, not written in place, so it cannot carry the lock). Other writers through this
//! function wait for it; readers do not. The token file, the key ring, the secrets file and
//! the pins file are changed this way, so two writers at once never lose each other's change.
//! [`FileLock`] is the lock itself, for a change that must go on without the file when the
//! lock cannot be had.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Runs `change` holding the lock of `path` (whose directory must exist). An error means
/// `change` did not run.
pub fn locked<T>(path: &Path, change: impl FnOnce() -> T) -> io::Result<T> {
    let lock = FileLock::acquire(path)?;
    let changed = change();
    drop(lock);
    Ok(changed)
}

/// The exclusive lock of `<path>.lock`, held until dropped (closing the file releases it).
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Waits for the lock of `path` (whose directory must exist).
    pub fn acquire(path: &Path) -> io::Result<FileLock> {
        let file = Self::open(path)?;
        file.lock()?;
        Ok(FileLock { _file: file })
    }

    /// `<path>.lock`, created 0600 if need be.
    fn open(path: &Path) -> io::Result<File> {
        let mut lock_name = path.as_os_str().to_owned();
        lock_name.push(".lock");
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(PathBuf::from(lock_name))
    }
}

impl FileLock {
    /// [`FileLock::acquire`], waiting at most `wait`: past it, an error of kind `TimedOut`
    /// saying another holder keeps the lock (a suspended process, a stuck writer).
    pub fn acquire_within(path: &Path, wait: std::time::Duration) -> io::Result<FileLock> {
        let file = Self::open(path)?;
        let deadline = std::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FileLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("another holder kept its lock for over {wait:?}"),
                    ));
                }
                Err(std::fs::TryLockError::Error(error)) => return Err(error),
            }
        }
    }
}
