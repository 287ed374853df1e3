//! Files only their owner may read (tokens, the admin endpoint's address and secret, key
//! rings), written whole: a temporary file with mode 0600 is renamed over the target, or
//! linked to a name no file holds yet ([`create_new`]). A change read
//! from the file and written back is made under [`locked`], so two writers at once (the CLI
//! and the console) never lose each other's change.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Writes `bytes` to `path` (creating its directory), readable by the owner only.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = written_beside(path, bytes)?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// Writes `bytes` to `path` only if no file is there (`AlreadyExists` otherwise), whole or
/// not at all: a crash or a full disk never leaves a part of it under its name.
pub fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = written_beside(path, bytes)?;
    // A link, unlike a rename, fails when the name is taken.
    let linked = std::fs::hard_link(&temp, path);
    let _ = std::fs::remove_file(&temp);
    linked
}

/// A temporary file beside `path` (its directory created) holding `bytes`, synced, mode 0600.
fn written_beside(path: &Path, bytes: &[u8]) -> std::io::Result<std::path::PathBuf> {
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
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    Ok(temp)
}

/// Runs `change` holding an exclusive lock on `<path>.lock`, creating the directory first
/// (`switchboard_core::file_lock`). Other writers through this function wait for it; readers
/// do not.
pub fn locked<T>(path: &Path, change: impl FnOnce() -> T) -> std::io::Result<T> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    switchboard_core::file_lock::locked(path, change)
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

    /// A file created new is there whole, 0600, with no temporary file left; a second
    /// create of the same name is refused and leaves the first.
    #[test]
    fn create_new_never_overwrites_and_leaves_no_temporary_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ring.json");
        super::create_new(&path, b"first").expect("created");
        let again = super::create_new(&path, b"second").expect_err("exists");
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).expect("read"), b"first");
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let entries = std::fs::read_dir(dir.path()).expect("dir").count();
        assert_eq!(entries, 1, "no temporary file is left");
    }
}
