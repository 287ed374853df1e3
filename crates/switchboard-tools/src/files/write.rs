//! Writing: atomically (a temporary file in the same directory, with the permissions of the
//! file it replaces, flushed to disk, then renamed over the target), within the size limit,
//! never under a read-only root; creating directories; moving files between or within roots.

use std::io::Write;

use cap_std::fs::OpenOptions;

use super::Files;
use super::roots::{Located, io_message, locate};

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
        let name = located
            .inner
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| format!("'{given}' has no file name"))?;
        let temp = located.inner.with_file_name(format!(
            ".{name}.switchboard-{:016x}.tmp",
            rand::random::<u64>()
        ));
        let dir = &located.root.dir;
        // A file written over keeps its permissions (a 0600 secret stays 0600, a script stays
        // executable); the new file is made with them before it takes the name.
        let kept = dir
            .symlink_metadata(&located.inner)
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
            dir.rename(&temp, dir, &located.inner)
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
