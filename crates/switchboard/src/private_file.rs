//! Files only their owner may read (tokens, the admin endpoint's address and secret),
//! written whole: a temporary file with mode 0600 is renamed over the target.

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
