//! Reindexing: walk the configured directories, compare every rules file with what the index
//! remembers, and re-section only what changed.
//!
//! A file is unchanged when its modification time and size are the stored ones; when either
//! differs it is read and hashed, and re-sectioned only if its SHA-256 differs too (or it is
//! now found under another configured directory, or the sectioning code changed:
//! [`PARSER_VERSION`]). Files no longer found lose their rules. A file that cannot be read
//! or parsed is reported with the reason, loses the rules it had, and stops nothing else.
//!
//! Walking: files ending in `.md`, `.markdown`, `.txt` or `.json` (any case), recursively,
//! in name order; names starting with `.` are skipped, symbolic links to files are followed
//! and links to directories are not; at most [`MAX_FILE_BYTES`] per file.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::parse::{self, Kind};
use super::sha256;
use super::store::{FileRules, NewRule, Store, StoredFile};

/// The version of the sectioning rules; stored with each file so a new one re-sections all.
pub const PARSER_VERSION: i64 = 1;
/// Larger files are reported, not indexed.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
const MAX_DEPTH: usize = 32;

/// A file that could not be indexed (or a record in it that was skipped), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub path: String,
    pub reason: String,
}

/// What a reindex did. Paths are absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
    pub problems: Vec<Problem>,
    /// Rules in the index afterwards (imported ones included).
    pub rules: usize,
}

struct Found {
    path: PathBuf,
    root: PathBuf,
    /// Path components below the root.
    relative: Vec<String>,
}

/// What a walk found: the rule files, the problems, and the directories it could not read
/// (whose files already indexed stay: an unmounted or mistyped directory is not an empty one).
#[derive(Default)]
struct Walked {
    found: Vec<Found>,
    problems: Vec<Problem>,
    unreadable: Vec<PathBuf>,
}

fn walk(root: &Path, dir: &Path, relative: &[String], depth: usize, walked: &mut Walked) {
    let problem = |problems: &mut Vec<Problem>, path: &Path, reason: String| {
        problems.push(Problem {
            path: path.display().to_string(),
            reason,
        });
    };
    if depth > MAX_DEPTH {
        // Not read: what it held stays as it was indexed.
        walked.unreadable.push(dir.to_owned());
        return problem(
            &mut walked.problems,
            dir,
            format!("deeper than {MAX_DEPTH} directories; not read"),
        );
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            walked.unreadable.push(dir.to_owned());
            return problem(
                &mut walked.problems,
                dir,
                format!("cannot read the directory: {error}"),
            );
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let mut below = relative.to_vec();
        below.push(name);
        if kind.is_dir() {
            walk(root, &path, &below, depth + 1, walked);
        } else if (kind.is_file() || (kind.is_symlink() && path.is_file()))
            && Kind::of(&path).is_some()
        {
            walked.found.push(Found {
                path,
                root: root.to_path_buf(),
                relative: below,
            });
        }
    }
}

fn mtime_ns(metadata: &std::fs::Metadata) -> i64 {
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The rules of a changed file: its system, ids and attribution.
fn section(found: &Found, path: &str, bytes: &[u8]) -> Result<(FileRules, Vec<String>), String> {
    let kind = Kind::of(&found.path).ok_or("not a rules file")?;
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    let stem = found
        .path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let parsed = parse::parse(kind, text, &stem)?;
    let first_dir = (found.relative.len() > 1).then(|| found.relative[0].clone());
    let system = parsed
        .system
        .clone()
        .or_else(|| first_dir.as_deref().and_then(parse::clean_system))
        .unwrap_or_else(|| "general".to_owned());
    // The id's path is relative to the system's directory when the file is in one.
    let in_system_dir = first_dir.as_deref() == Some(system.as_str());
    let id_path = found.relative[usize::from(in_system_dir)..].join("/");
    let source_file = found.relative.join("/");
    let rules = parsed
        .sections
        .into_iter()
        .map(|s| NewRule {
            id: match &s.fragment {
                Some(fragment) => format!("{system}/{id_path}#{fragment}"),
                None => format!("{system}/{id_path}"),
            },
            system: system.clone(),
            title: s.title,
            headings: s.headings,
            body: s.body,
            source_file: source_file.clone(),
        })
        .collect();
    let file = FileRules {
        path: path.to_owned(),
        root: found.root.display().to_string(),
        relative: source_file,
        mtime_ns: 0,
        size: 0,
        sha256: String::new(),
        parser: PARSER_VERSION,
        attribution: parsed.attribution,
        rules,
    };
    Ok((file, parsed.warnings))
}

/// Brings the index up to date with the files under `dirs`.
pub fn reindex(store: &Store, dirs: &[PathBuf]) -> Result<ReindexReport, String> {
    let mut report = ReindexReport::default();
    let mut walked = Walked::default();
    for dir in dirs {
        let root = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
        if !root.is_dir() {
            walked.problems.push(Problem {
                path: root.display().to_string(),
                reason: "not a directory (or not readable); its rules already indexed are kept"
                    .to_owned(),
            });
            walked.unreadable.push(root);
            continue;
        }
        walk(&root, &root, &[], 0, &mut walked);
    }
    let Walked {
        found,
        problems,
        unreadable,
    } = walked;
    report.problems = problems;
    let stored: HashMap<String, StoredFile> = store.files()?;
    let mut seen = HashSet::new();
    let (mut sectioned, mut touched, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    for file in &found {
        let path = file.path.display().to_string();
        if !seen.insert(path.clone()) {
            continue; // reached through two configured directories: the first one wins
        }
        let before = stored.get(&path);
        let root = file.root.display().to_string();
        let mut fail = |reason: String| {
            report.problems.push(Problem {
                path: path.clone(),
                reason,
            });
            if before.is_some() {
                dropped.push(path.clone());
            }
        };
        let metadata = match std::fs::metadata(&file.path) {
            Ok(metadata) => metadata,
            Err(error) => {
                fail(format!("cannot read: {error}"));
                continue;
            }
        };
        if metadata.len() > MAX_FILE_BYTES {
            fail(format!("larger than {MAX_FILE_BYTES} bytes; not indexed"));
            continue;
        }
        let (mtime, size) = (mtime_ns(&metadata), metadata.len() as i64);
        let same_place = before.is_some_and(|b| b.root == root && b.parser == PARSER_VERSION);
        if same_place && before.is_some_and(|b| b.mtime_ns == mtime && b.size == size) {
            report.unchanged += 1;
            continue;
        }
        let bytes = match std::fs::read(&file.path) {
            Ok(bytes) => bytes,
            Err(error) => {
                fail(format!("cannot read: {error}"));
                continue;
            }
        };
        let digest = sha256::hex_digest(&bytes);
        if same_place && before.is_some_and(|b| b.sha256 == digest) {
            report.unchanged += 1;
            touched.push((path, mtime, size));
            continue;
        }
        match section(file, &path, &bytes) {
            Ok((mut rules, warnings)) => {
                (rules.mtime_ns, rules.size, rules.sha256) = (mtime, size, digest);
                report
                    .problems
                    .extend(warnings.into_iter().map(|reason| Problem {
                        path: path.clone(),
                        reason,
                    }));
                if before.is_some() {
                    report.changed.push(path);
                } else {
                    report.added.push(path);
                }
                sectioned.push(rules);
            }
            Err(reason) => fail(reason),
        }
    }
    let mut gone: Vec<String> = stored
        .keys()
        .filter(|p| !seen.contains(*p))
        .filter(|p| !unreadable.iter().any(|dir| Path::new(p).starts_with(dir)))
        .cloned()
        .collect();
    gone.sort();
    report.removed = gone.clone();
    gone.extend(dropped);
    report.rules = store.apply(&sectioned, &touched, &gone)?;
    Ok(report)
}
