//! The journal: a process's shard files beside the ledger, one JSON line per row, written on
//! the caller's thread before its answer goes back. Opening a ledger replays the journals of
//! processes that are gone; readers catch up with every journal. Both go through
//! [`ChainStore`], so SQLite and PostgreSQL replay alike, and the call ids make replaying
//! idempotent.
//!
//! # Shards
//!
//! One file per process made every core's `write` queue on the kernel's locks of that one
//! file — the open file's position lock (`fdget_pos`, `mutex_spin_on_owner` and `osq_lock`
//! in issue 33's 16-core profile) and its inode's lock under a buffered write — and write
//! one lock's reader count (on 2 cores, `perf` of the ledger bench's threaded loop shows the
//! same `fdget_pos` → `mutex_spin_on_owner` stacks before, none after). A process now
//! journals to several files, one per core the process may run on
//! ([`std::thread::available_parallelism`], at most [`MAX_SHARDS`]): `<base>.journal-<pid>`
//! (shard 0, the name a whole journal had before, so a journal an older Switchboard left is
//! replayed as one) and `<base>.journal-<pid>.<k>` for shard `k ≥ 1`. A thread is given a
//! slot round-robin when it first records (process-wide, so the runtime's workers, which
//! record first, land on distinct shards as long as there are no more of them than shards),
//! and always journals to shard `slot % shards`. Each shard has its own file and its own
//! lock, on a cache line of its own, so two threads on different shards share neither. A row
//! is still one `write` (the file is opened to append, so lines from threads sharing a shard
//! never interleave). What every row still shares is the hand-off to the writer (its
//! channel, the queue-depth gauge, the ring).
//!
//! # Rotation
//!
//! The writer empties the journal once every journaled row is on record and nothing new is
//! journaled meanwhile ([`Journals::rotate`]). A caller writes its row and sends it to the
//! writer while holding its shard's lock (shared); the writer takes every shard's lock
//! (exclusive, in shard order: it is the only one that takes more than one, so no deadlock),
//! then receives everything sent, appends it, and only then truncates every shard. So a row
//! in any shard at that moment was either appended before (received earlier) or is in the
//! channel (its sender finished under the lock the writer now holds, and releasing that lock
//! made the send visible to the writer that acquired it): a thread that has written its line
//! and not yet sent it cannot exist while the writer holds all the locks.
//! Nothing is journaled until they are released. If that append fails, no shard is emptied.
//!
//! # Replay
//!
//! A process is gone when no `/proc/<pid>` exists (or the pid is this process's own: its
//! journals were a gone process's, whose rows this one takes over before opening its own).
//! All of a gone process's shards are read, their rows appended in the order they started
//! (threads' rows interleave across shards), and only then removed; a live process's shards
//! are never touched. Readers ([`catch_up`]) read every shard of every process.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock};

use crate::{BATCH, ChainStore, LedgerEntry, LedgerError};

/// Shards per process at most (one per core up to this).
pub(crate) const MAX_SHARDS: usize = 64;

/// The next thread's slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot, given out round-robin at its first record.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
}

/// This process's journal: its shard files, one lock each.
pub(crate) struct Journals {
    shards: Box<[Shard]>,
}

/// One shard, alone on its cache line (two of them, for CPUs that fetch lines in pairs), so
/// threads on neighbouring shards do not write each other's lock word.
#[repr(align(128))]
struct Shard {
    file: RwLock<ShardFile>,
}

struct ShardFile {
    file: File,
    path: PathBuf,
}

/// How many shards a process journals to: one per core it may run on, at most [`MAX_SHARDS`].
pub(crate) fn shard_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_SHARDS)
}

impl Journals {
    /// Opens (creating) this process's `count` shard files beside `base`.
    pub(crate) fn open(base: &Path, count: usize) -> Result<Self, LedgerError> {
        let pid = std::process::id();
        let shards = (0..count.max(1))
            .map(|k| {
                let path = shard_of(base, pid, k);
                let file = OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .append(true)
                    .open(&path)
                    .map_err(|e| LedgerError::Journal {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                Ok(Shard {
                    file: RwLock::new(ShardFile { file, path }),
                })
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        Ok(Self {
            shards: shards.into_boxed_slice(),
        })
    }

    /// Writes `line` (newline included) to this thread's shard in one `write`, then hands it
    /// to `hand_off` still holding the shard's lock: a rotation cannot come between the two.
    pub(crate) fn record<T>(&self, line: String, hand_off: impl FnOnce(String) -> T) -> T {
        let shard = &self.shards[SLOT.with(|slot| *slot) % self.shards.len()];
        let shard = shard.file.read().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = (&shard.file).write_all(line.as_bytes()) {
            tracing::error!(
                "ledger: cannot write the journal {}: {error}",
                shard.path.display()
            );
        }
        hand_off(line)
    }

    /// Takes every shard's lock, runs `catch_up` (which receives and appends everything sent
    /// so far), and if it says every journaled row is on record, empties every shard. Nothing
    /// is journaled meanwhile.
    pub(crate) fn rotate(&self, catch_up: impl FnOnce() -> bool) {
        let mut held: Vec<_> = self
            .shards
            .iter()
            .map(|shard| shard.file.write().unwrap_or_else(PoisonError::into_inner))
            .collect();
        if !catch_up() {
            return;
        }
        for shard in &mut held {
            let emptied = shard.file.set_len(0).and_then(|()| shard.file.rewind());
            if let Err(error) = emptied {
                tracing::warn!("ledger: cannot empty {}: {error}", shard.path.display());
            }
        }
    }
}

/// Shard `k` of a process's journal: `<base>.journal-<pid>` (shard 0, the name a whole
/// journal had before shards), then `.<k>` for `k ≥ 1`.
pub(crate) fn shard_of(path: &Path, pid: u32, k: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".journal-{pid}"));
    if k > 0 {
        name.push(format!(".{k}"));
    }
    PathBuf::from(name)
}

/// The pid a journal file's name says wrote it: `<stem><pid>` or `<stem><pid>.<k>`.
fn writer_pid(name: &str, stem: &str) -> Option<u32> {
    let rest = name.strip_prefix(stem)?;
    match rest.split_once('.') {
        Some((pid, shard)) => {
            shard.parse::<usize>().ok()?;
            pid.parse().ok()
        }
        None => rest.parse().ok(),
    }
}

/// The ledger's directory and the start of its journals' names (`<file>.journal-`).
fn journal_dir(path: &Path) -> Option<(&Path, String)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let stem = format!("{}.journal-", path.file_name()?.to_string_lossy());
    Some((dir, stem))
}

/// Every journal file of this ledger with the pid that wrote it.
fn journals_by_pid(path: &Path) -> BTreeMap<u32, Vec<PathBuf>> {
    let mut found: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    let Some((dir, stem)) = journal_dir(path) else {
        return found;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = writer_pid(&name, &stem) {
            found.entry(pid).or_default().push(entry.path());
        }
    }
    for shards in found.values_mut() {
        shards.sort();
    }
    found
}

/// Journals left by processes that are gone (and this process's own), each process's shards
/// together, to replay.
fn orphaned_journals(path: &Path) -> Vec<Vec<PathBuf>> {
    journals_by_pid(path)
        .into_iter()
        .filter(|(pid, _)| {
            let alive = *pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists();
            !alive
        })
        .map(|(_, shards)| shards)
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

/// One process's rows from all its shards, in the order they started.
fn read_shards(shards: &[PathBuf]) -> Vec<LedgerEntry> {
    let mut entries: Vec<LedgerEntry> = shards.iter().flat_map(|s| read_journal(s)).collect();
    entries.sort_by_key(|entry| entry.started_ms);
    entries
}

/// Inserts every journal's rows that are not in the database yet (idempotent; journals are
/// left as they are, so running gateways can keep appending). Readers such as `audit` call
/// it so they see every answered call even after a crash.
pub fn catch_up(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for shards in journals_by_pid(path).values() {
        inserted += append_entries(store, &read_shards(shards))?;
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
/// removes them: a process's shards only once all of its rows are on record.
pub(crate) fn replay(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for shards in orphaned_journals(path) {
        inserted += append_entries(store, &read_shards(&shards))?;
        for journal in shards {
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
    }
    Ok(inserted)
}

#[cfg(test)]
mod tests;
