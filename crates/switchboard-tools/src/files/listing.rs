//! Looking around: directory listings, a depth-limited tree, file search by glob and content,
//! and file information. Walks never follow symlinks, and every walk has a limit.

use std::path::Path;

use cap_std::fs::{Dir, MetadataExt};
use serde_json::{Value, json};
use switchboard_core::agent::glob_match;

use super::Files;
use super::roots::{io_message, locate};

/// Entries a tree or a search visits at most.
const MAX_VISITED: usize = 20_000;
/// Files larger than this (or than `max_read_bytes`) are not searched by content.
const MAX_SEARCHED_BYTES: u64 = 1 << 20;

fn kind(meta: &cap_std::fs::Metadata) -> &'static str {
    if meta.is_symlink() {
        "symlink"
    } else if meta.is_dir() {
        "directory"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    }
}

/// One entry of a directory.
struct Entry {
    /// The name as shown (not UTF-8: with replacement characters).
    name: String,
    /// The name as the file system has it, to reach the entry by.
    file_name: std::ffi::OsString,
    /// Its metadata, symlinks not followed.
    meta: cap_std::fs::Metadata,
}

/// At most `max` entries of one directory, sorted by name, and whether there were more (then
/// the reading stopped: which `max` are listed is the file system's order, not the names').
/// An entry that goes between the listing and the look at it (a file another call is writing
/// and renaming) is passed over, not an error.
fn entries(dir: &Dir, path: &Path, max: usize) -> std::io::Result<(Vec<Entry>, bool)> {
    let mut found = Vec::new();
    let mut more = false;
    for entry in dir.read_dir(path)? {
        let entry = entry?;
        if found.len() >= max {
            more = true;
            break;
        }
        let meta = match entry.metadata() {
            Ok(meta) => meta,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let file_name = entry.file_name();
        found.push(Entry {
            name: file_name.to_string_lossy().into_owned(),
            file_name,
            meta,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((found, more))
}

impl Files {
    /// At most `max` entries of a directory, and whether it has more.
    pub(super) fn list_directory(
        &self,
        given: &str,
        max: usize,
    ) -> Result<(Vec<Value>, bool), String> {
        let located = locate(&self.roots, given)?;
        let (listed, more) =
            entries(&located.root.dir, located.rel(), max).map_err(|e| io_message(given, &e))?;
        let listed = listed
            .into_iter()
            .map(|Entry { name, meta, .. }| {
                json!({"name": name, "type": kind(&meta), "size": meta.len()})
            })
            .collect();
        Ok((listed, more))
    }

    pub(super) fn directory_tree(
        &self,
        given: &str,
        depth: usize,
        limit: usize,
    ) -> Result<(Value, bool), String> {
        let located = locate(&self.roots, given)?;
        let mut visited = 0usize;
        let mut truncated = false;
        let tree = self
            .tree(
                &located.root.dir,
                located.rel(),
                depth,
                limit,
                &mut visited,
                &mut truncated,
            )
            .map_err(|e| io_message(given, &e))?;
        Ok((tree, truncated))
    }

    fn tree(
        &self,
        dir: &Dir,
        path: &Path,
        depth: usize,
        limit: usize,
        visited: &mut usize,
        truncated: &mut bool,
    ) -> std::io::Result<Value> {
        let mut children = Vec::new();
        // Read no more of a directory than the tree may still show (and one to know).
        let (listed, more) = entries(dir, path, limit.saturating_sub(*visited))?;
        if more {
            *truncated = true;
        }
        for Entry {
            name,
            file_name,
            meta,
        } in listed
        {
            if *visited >= limit {
                *truncated = true;
                break;
            }
            *visited += 1;
            let mut node = json!({"name": name, "type": kind(&meta)});
            if meta.is_dir() && !meta.is_symlink() {
                if depth > 1 {
                    // A directory below that cannot be read is marked, and the rest is shown.
                    let below = path.join(&file_name);
                    match self.tree(dir, &below, depth - 1, limit, visited, truncated) {
                        Ok(children) => node["children"] = children,
                        Err(_) => node["unreadable"] = Value::Bool(true),
                    }
                } else {
                    *truncated = true;
                }
            }
            children.push(node);
        }
        Ok(Value::Array(children))
    }

    /// Files under `given` whose relative path or name matches `pattern` (a glob with `*`
    /// and `?`), optionally containing `content`.
    pub(super) fn search(
        &self,
        given: &str,
        pattern: &str,
        content: Option<&str>,
        exclude: &[String],
        max_results: usize,
    ) -> Result<(Vec<String>, bool), String> {
        let located = locate(&self.roots, given)?;
        let dir = &located.root.dir;
        let mut found = Vec::new();
        let mut stack = vec![located.rel().to_path_buf()];
        let mut visited = 0usize;
        let mut truncated = false;
        while let Some(path) = stack.pop() {
            let listed = match entries(dir, &path, MAX_VISITED.saturating_sub(visited)) {
                Ok((listed, more)) => {
                    truncated |= more;
                    listed
                }
                Err(error) if path == located.rel() => return Err(io_message(given, &error)),
                Err(_) => continue,
            };
            for Entry {
                name,
                file_name,
                meta,
            } in listed
            {
                visited += 1;
                // `entries` lists no more than MAX_VISITED in all: only the results bound.
                if found.len() >= max_results {
                    truncated = true;
                    break;
                }
                let child = path.join(&file_name);
                let relative = child
                    .strip_prefix(".")
                    .unwrap_or(&child)
                    .to_string_lossy()
                    .into_owned();
                if exclude
                    .iter()
                    .any(|glob| glob_match(glob, &relative) || glob_match(glob, &name))
                {
                    continue;
                }
                if meta.is_dir() && !meta.is_symlink() {
                    stack.push(child.clone());
                }
                let named = glob_match(pattern, &relative) || glob_match(pattern, &name);
                if !named || !meta.is_file() && content.is_some() {
                    continue;
                }
                if let Some(needle) = content {
                    // Never past what read_file would show, so a search cannot tell what lies
                    // beyond it; a file passed over for its size makes the answer incomplete.
                    if meta.len() > MAX_SEARCHED_BYTES.min(self.max_read_bytes) {
                        truncated = true;
                        continue;
                    }
                    let Ok(bytes) = dir.read(&child) else {
                        continue;
                    };
                    let Ok(text) = std::str::from_utf8(&bytes) else {
                        continue;
                    };
                    if !text.contains(needle) {
                        continue;
                    }
                }
                found.push(
                    located
                        .root
                        .path
                        .join(child.strip_prefix(".").unwrap_or(&child))
                        .display()
                        .to_string(),
                );
            }
            if truncated {
                break;
            }
        }
        found.sort();
        Ok((found, truncated))
    }

    pub(super) fn info(&self, given: &str) -> Result<Value, String> {
        let located = locate(&self.roots, given)?;
        let meta = located
            .root
            .dir
            .symlink_metadata(located.rel())
            .map_err(|e| io_message(given, &e))?;
        Ok(json!({
            "path": located.shown().display().to_string(),
            "type": kind(&meta),
            "size": meta.len(),
            "modified": meta.mtime(),
            "accessed": meta.atime(),
            "changed": meta.ctime(),
            "permissions": format!("{:o}", meta.mode() & 0o7777),
            "read_only_root": located.root.read_only,
        }))
    }
}
