//! [`locked`]: a change made to a file by reading it, changing it and writing it whole, run
//! holding an exclusive lock on `<file>.lock` beside it (created 0600; the file itself is
//! replaced, not written in place, so it cannot carry the lock). Other writers through this
//! function wait for it; readers do not. The token file, the key ring and the secrets file
//! are changed this way, so two writers at once never lose each other's change.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};

/// Runs `change` holding the lock of `path` (whose directory must exist).
pub fn locked<T>(path: &Path, change: impl FnOnce() -> T) -> io::Result<T> {
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let lock = options.open(PathBuf::from(lock_name))?;
    lock.lock()?;
    let changed = change();
    lock.unlock()?;
    Ok(changed)
}
