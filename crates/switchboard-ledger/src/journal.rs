//! The journal: one file per process beside the ledger (`<base>.journal-<pid>`), one JSON
//! line per row, written on the caller's thread before its answer goes back. Opening a
//! ledger replays the journals of processes that are gone; readers catch up with every
//! journal. Both go through [`ChainStore`], so SQLite and PostgreSQL replay alike, and the
//! call ids make replaying idempotent.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::{BATCH, ChainStore, LedgerEntry, LedgerError};

/// This process's journal: one per process, so gateways sharing a ledger never touch each
/// other's journal.
pub(crate) fn journal_path(path: &Path) -> PathBuf {
    journal_of(path, std::process::id())
}

pub(crate) fn journal_of(path: &Path, pid: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".journal-{pid}"));
    PathBuf::from(name)
}

/// Journals left by processes that are gone (and this process's own), to replay.
fn orphaned_journals(path: &Path) -> Vec<PathBuf> {
    let Some(dir) = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    }) else {
        return Vec::new();
    };
    let Some(stem) = path
        .file_name()
        .map(|n| format!("{}.journal-", n.to_string_lossy()))
    else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid: u32 = name.strip_prefix(&stem)?.parse().ok()?;
            let alive = pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists();
            (!alive).then(|| entry.path())
        })
        .collect()
}

fn read_journal(journal: &Path) -> Vec<LedgerEntry> {
    let Ok(file) = File::open(journal) else {
        return Vec::new();
    };
    // A torn last line (the process died mid-write) is skipped: its call never answered.
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

/// Every journal of this ledger, running processes' included.
fn all_journals(path: &Path) -> Vec<PathBuf> {
    let dir = path.parent().map_or(Path::new("."), |d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    });
    let stem = path
        .file_name()
        .map(|n| format!("{}.journal-", n.to_string_lossy()))
        .unwrap_or_default();
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with(&stem))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Inserts every journal's rows that are not in the database yet (idempotent; journals are
/// left as they are, so running gateways can keep appending). Readers such as `audit` call
/// it so they see every answered call even after a crash.
pub fn catch_up(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for journal in all_journals(path) {
        inserted += append_entries(store, &read_journal(&journal))?;
    }
    Ok(inserted)
}

/// Appends entries read back from a journal, [`BATCH`] per transaction.
pub(crate) fn append_entries(
    store: &mut dyn ChainStore,
    entries: &[LedgerEntry],
) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for chunk in entries.chunks(BATCH) {
        let canonical: Vec<String> = chunk.iter().map(LedgerEntry::canonical).collect();
        let rows: Vec<(&LedgerEntry, &str)> = chunk
            .iter()
            .zip(&canonical)
            .map(|(e, c)| (e, c.as_str()))
            .collect();
        inserted += store.append(&rows)?;
    }
    Ok(inserted)
}

/// Replays the journals of processes that are gone into the database (idempotent), then
/// removes them.
pub(crate) fn replay(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for journal in orphaned_journals(path) {
        inserted += append_entries(store, &read_journal(&journal))?;
        match std::fs::remove_file(&journal) {
            // Another process opening the same ledger replayed and removed it first; the
            // insert is idempotent, so nothing is lost or doubled.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            result => result.map_err(|e| LedgerError::Journal {
                path: journal.display().to_string(),
                reason: e.to_string(),
            })?,
        }
    }
    Ok(inserted)
}
