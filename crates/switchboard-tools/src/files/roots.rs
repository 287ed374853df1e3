//! Confinement: every path a caller gives is mapped to (root, path inside the root), and
//! every file operation runs through the root's capability handle (`cap_std::fs::Dir`), which
//! resolves the path — `..` and symlinks included — inside that directory and refuses to
//! leave it, at the moment of use. There is no separate check that a swapped symlink could
//! slip past: the check and the use are the same system calls.

use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// One configured root.
pub struct RootDir {
    /// The root as configured, canonicalized at start.
    pub path: PathBuf,
    pub read_only: bool,
    pub dir: Dir,
}

/// A caller's path, resolved to a root.
pub struct Located<'r> {
    pub root: &'r RootDir,
    /// Relative to the root; empty = the root itself.
    pub inner: PathBuf,
}

impl Located<'_> {
    /// The path as the caller should see it (inside the root).
    pub fn shown(&self) -> PathBuf {
        self.root.path.join(&self.inner)
    }

    /// `inner`, or `.` for the root itself (what cap-std wants).
    pub fn rel(&self) -> &Path {
        if self.inner.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.inner
        }
    }
}

/// Why a root could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("files: root {}: {reason}", path.display())]
pub struct RootError {
    pub path: PathBuf,
    pub reason: String,
}

impl RootDir {
    pub fn open(path: &Path, read_only: bool) -> Result<Self, RootError> {
        let error = |reason: String| RootError {
            path: path.to_owned(),
            reason,
        };
        let canonical = std::fs::canonicalize(path).map_err(|e| error(e.to_string()))?;
        if !canonical.is_dir() {
            return Err(error("is not a directory".to_owned()));
        }
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority())
            .map_err(|e| error(e.to_string()))?;
        Ok(Self {
            path: canonical,
            read_only,
            dir,
        })
    }
}

/// Lexically normalizes `path`: drops `.`, resolves `..` against earlier components, and
/// reports a path that climbs above its start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => out.push(component.as_os_str()),
        }
    }
    Some(out)
}

/// Maps a caller's path to a root: absolute paths must lie under a root; relative paths are
/// taken from the first root. Either way the deepest root that holds the path wins, so a
/// path reaches a nested root's files as that root (its `read_only` included) however it is
/// written.
pub fn locate<'r>(roots: &'r [RootDir], given: &str) -> Result<Located<'r>, String> {
    let refuse =
        || format!("'{given}' is outside the allowed roots (list_allowed_roots shows them)");
    if given.contains('\0') {
        return Err(format!(
            "'{}' contains a NUL byte",
            given.replace('\0', "\\0")
        ));
    }
    let path = Path::new(given);
    let first = roots.first().ok_or_else(refuse)?;
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        first.path.join(path)
    };
    {
        let normal = normalize(&absolute).ok_or_else(refuse)?;
        let root = roots
            .iter()
            .filter(|root| normal.starts_with(&root.path))
            .max_by_key(|root| root.path.components().count())
            .ok_or_else(refuse)?;
        let inner = normal
            .strip_prefix(&root.path)
            .map_err(|_| refuse())?
            .to_owned();
        Ok(Located { root, inner })
    }
}

/// Turns an I/O error of a confined operation into a message that names the caller's path
/// (an escape attempt surfaces as a permission error from cap-std).
pub fn io_message(given: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!("'{given}' does not exist"),
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "'{given}' is not accessible: it leads outside the allowed roots, or permission is denied"
            )
        }
        std::io::ErrorKind::AlreadyExists => format!("'{given}' already exists"),
        _ => {
            let text = error.to_string();
            if text.contains("outside") || text.contains("escape") {
                format!("'{given}' leads outside the allowed roots")
            } else {
                format!("'{given}': {text}")
            }
        }
    }
}
