//! Writing an edited config file without ever leaving a half-written one: a temp file in the
//! same directory, fsync, rename over the file, fsync of the directory — after keeping the
//! previous file as `PATH.bak` (older ones rotated to `PATH.bak.1` …).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `text` to `path` atomically: a temp file in the same directory, fsync, rename, fsync of
/// the directory. Before it, keeps the previous file as `PATH.bak` (rotating `PATH.bak.1` … up
/// to `keep` backups, newest `PATH.bak`). Keeps the file's permission bits. Creates the parent
/// directory when missing.
///
/// A `path` that is a symbolic link is followed: the file it points at is replaced (and backed
/// up next to itself), so a config kept in a dotfiles repository stays linked.
pub fn write_atomically(path: &Path, text: &str, keep: usize) -> io::Result<()> {
    let path = resolve_link(path)?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let previous = match fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Some(meta.permissions()),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    if previous.is_some() && keep > 0 {
        back_up(&path, keep)?;
    }
    let temp = temp_path(&dir, &path);
    let written = write_temp(&temp, text, previous).and_then(|()| fs::rename(&temp, &path));
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    sync_dir(&dir)
}

/// The file a symbolic link points at (the path itself when it is no link or does not exist).
fn resolve_link(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(target) => Ok(target),
            // A dangling link: write where it points.
            Err(_) => {
                let target = fs::read_link(path)?;
                Ok(match path.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                })
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// `PATH.bak` (n = 0) or `PATH.bak.n`.
fn backup_name(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".bak");
    if n > 0 {
        name.push(format!(".{n}"));
    }
    PathBuf::from(name)
}

/// Shifts `PATH.bak` → `PATH.bak.1` → … (the oldest beyond `keep` is overwritten) and copies the
/// current file to `PATH.bak`.
fn back_up(path: &Path, keep: usize) -> io::Result<()> {
    for n in (1..keep).rev() {
        let older = backup_name(path, n - 1);
        if older.exists() {
            fs::rename(&older, backup_name(path, n))?;
        }
    }
    let backup = backup_name(path, 0);
    fs::copy(path, &backup)?;
    File::open(&backup)?.sync_all()
}

fn temp_path(dir: &Path, path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "config".into(), |n| n.to_string_lossy().into_owned());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

fn write_temp(temp: &Path, text: &str, permissions: Option<fs::Permissions>) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(temp)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}
