//! Writing: atomically (a temporary file in the same directory, with the permissions of the
//! file it replaces, flushed to disk, then renamed over the target), within the size limit,
//! never under a read-only root; creating directories; moving files between or within roots.
//! Writing to a symlink writes the file it points to (beside it, keeping its permissions), so
//! a link stays a link; a link that leads out of the root or to nothing is refused.

use std::io::Write;

use cap_std::fs::OpenOptions;

use super::Files;
use super::roots::{Located, io_message, locate};

/// Where a write to `located` lands: the path itself, or, when it is a symlink, the file it
/// resolves to inside the same root (cap-std refuses a resolution that leaves it).
fn symlink_target(located: &Located<'_>, given: &str) -> Result<std::path::PathBuf, String> {
    let dir = &located.root.dir;
    let is_link = dir
        .symlink_metadata(&located.inner)
        .is_ok_and(|metadata| metadata.file_type().is_symlink());
    if !is_link {
        return Ok(located.inner.clone());
    }
    let real = dir.canonicalize(&located.inner).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            format!(
                "'{given}' is a symlink to a file that does not exist; write to the file itself"
            )
        } else {
            io_message(given, &error)
        }
    })?;
    match dir.metadata(&real) {
        Ok(metadata) if metadata.is_file() => Ok(real),
        _ => Err(format!(
            "'{given}' is a symlink to something that is not a file"
        )),
    }
}

/// `Err` saying so when the directory a file would be written (or moved) in is missing (or
/// is not a directory): a write or a move creates the file, never its directories. `action`
/// words the refusal: "write" or "move to".
fn parent_exists(
    located: &Located<'_>,
    target: &std::path::Path,
    given: &str,
    action: &str,
) -> Result<(), String> {
    let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let shown = std::path::Path::new(given)
        .parent()
        .map_or_else(|| parent.display().to_string(), |p| p.display().to_string());
    match located.root.dir.metadata(parent) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "cannot {action} '{given}': '{shown}' is not a directory"
        )),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "cannot {action} '{given}': its directory '{shown}' does not exist (create it first with create_directory)"
        )),
        Err(error) => Err(io_message(given, &error)),
    }
}

impl Files {
    fn writable<'r>(&'r self, given: &str) -> Result<Located<'r>, String> {
        let located = locate(&self.roots, given)?;
        if located.root.read_only {
            return Err(format!(
                "'{given}' is under the read-only root {}",
                located.root.path.display()
            ));
        }
        if located.inner.as_os_str().is_empty() {
            return Err(format!("'{given}' is a root directory, not a file"));
        }
        Ok(located)
    }

    /// Writes `content` to `given`, atomically.
    pub(super) fn write(&self, given: &str, content: &str) -> Result<u64, String> {
        if content.len() as u64 > self.max_write_bytes {
            return Err(format!(
                "the content is {} bytes, over the write limit of {} bytes",
                content.len(),
                self.max_write_bytes
            ));
        }
        let located = self.writable(given)?;
        let target = symlink_target(&located, given)?;
        parent_exists(&located, &target, given, "write")?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("'{given}' has no file name"))?;
        let temp = target.with_file_name(format!(
            ".{name}.switchboard-{:016x}.tmp",
            rand::random::<u64>()
        ));
        let dir = &located.root.dir;
        // A file written over keeps its permissions (a 0600 secret stays 0600, a script stays
        // executable); the new file is made with them before it takes the name.
        let kept = dir
            .symlink_metadata(&target)
            .ok()
            .filter(|metadata| metadata.is_file())
            .map(|metadata| metadata.permissions());
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let written = (|| {
            let mut file = dir.open_with(&temp, &options)?;
            if let Some(permissions) = kept {
                file.set_permissions(permissions)?;
            }
            file.write_all(content.as_bytes())?;
            file.sync_all()?;
            crate::cancel::ensure_running().map_err(std::io::Error::other)?;
            dir.rename(&temp, dir, &target)
        })();
        if let Err(error) = written {
            let _ = dir.remove_file(&temp);
            return Err(io_message(given, &error));
        }
        Ok(content.len() as u64)
    }

    pub(super) fn create_directory(&self, given: &str) -> Result<(), String> {
        let located = self.writable(given)?;
        located
            .root
            .dir
            .create_dir_all(&located.inner)
            .map_err(|e| io_message(given, &e))
    }

    pub(super) fn move_file(&self, from: &str, to: &str, overwrite: bool) -> Result<(), String> {
        let source = self.writable(from)?;
        let target = self.writable(to)?;
        // Name the path that is missing: the rename's own error cannot tell which.
        match source.root.dir.symlink_metadata(&source.inner) {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("cannot move '{from}': it does not exist"));
            }
            Err(error) => return Err(io_message(from, &error)),
        }
        parent_exists(&target, &target.inner, to, "move to")?;
        if !overwrite && target.root.dir.symlink_metadata(&target.inner).is_ok() {
            return Err(format!(
                "'{to}' already exists (pass overwrite: true to replace it)"
            ));
        }
        crate::cancel::ensure_running()?;
        source
            .root
            .dir
            .rename(&source.inner, &target.root.dir, &target.inner)
            .map_err(|e| io_message(&format!("{from} -> {to}"), &e))
    }
}
