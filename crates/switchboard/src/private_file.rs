//! Files only their owner may read (tokens, the admin endpoint's address and secret),
//! written whole: a temporary file with mode 0600 is renamed over the target. A change read
//! from the file and written back is made under [`locked`], so two writers at once (the CLI
//! and the console) never lose each other's change.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `bytes` to `path` (creating its directory), readable by the owner only.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // A name of its own per writer: processes writing the same file at once never collide.
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(format!(
        ".{}-{:08x}.tmp",
        std::process::id(),
        rand::random::<u32>()
    ));
    let temp = std::path::PathBuf::from(temp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temp, path)
}

/// Runs `change` holding an exclusive lock on `<path>.lock` (created 0600 beside the file;
/// the file itself is replaced, not written in place, so it cannot carry the lock). Other
/// writers through this function wait for it; readers do not.
pub fn locked<T>(path: &Path, change: impl FnOnce() -> T) -> std::io::Result<T> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(std::path::PathBuf::from(lock_name))?;
    lock.lock()?;
    let changed = change();
    lock.unlock()?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// Eight writers adding a line each, read-modify-write, under the lock: none is lost.
    #[test]
    fn changes_under_the_lock_are_never_lost() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = Arc::new(dir.path().join("file"));
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    super::locked(&path, || {
                        let before = std::fs::read_to_string(&*path).unwrap_or_default();
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        super::write(&path, format!("{before}{i}\n").as_bytes())
                    })
                })
            })
            .collect();
        for writer in writers {
            let written = writer.join().expect("writer");
            assert!(matches!(written, Ok(Ok(()))), "{written:?}");
        }
        let lines = std::fs::read_to_string(&*path).expect("read");
        assert_eq!(lines.lines().count(), 8, "{lines}");
    }
}
