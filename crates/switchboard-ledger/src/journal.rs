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
//! Every so many rows the writer rolls the journal over ([`Journals::rotate`]) so it does
//! not grow without end. A caller writes its row and sends it to the writer while holding
//! its shard's lock (shared). The writer first opens a fresh file for each shard
//! (`<shard's name>.fresh-<generation>`, the generation unique in the process), holding no
//! lock. Then it takes every shard's lock (exclusive, in shard order: it is the only one
//! that takes more than one, so no deadlock) and, holding them, only swaps each shard's file
//! handle for its fresh one and receives everything sent so far into memory: no system
//! call, no file or network I/O (2.7 µs at p50 for 64 shards in a debug build, where a
//! rename and an open per shard under the locks took 17 ms). Then it releases the locks —
//! calls journal to the fresh files from here on — and renames each file written so far to
//! a *retired segment* (`<shard's name>.retired-<generation>`) and each fresh one to the
//! shard's name, and only then appends what it received to the store (for PostgreSQL a
//! network transaction that may wait for another replica's row lock on the chain's head,
//! and be tried again with backoff). Once every row received up to the swap is on record it
//! deletes the retired segments. No call waits on the store, nor on the file system.
//!
//! Nothing lost: a row in a retired segment was written under its shard's lock before the
//! swap took that lock, and sent under the same lock, so it was received before the swap
//! (and appended then, or held) or is received with it (its sender released the lock the
//! writer then acquired, which makes the send visible): a thread that has written its line
//! and not yet sent it cannot exist while the writer holds all the locks. So when every row
//! received up to the swap is on record, so is every row of the retired segments, and
//! deleting them loses nothing. A row the store refused for good (SQLite does not retry:
//! "left to the journal") marks every segment retired so far and the next one, which may
//! hold it, to be kept rather than deleted; so does a writer that stops with rows it could
//! not append. Kept segments, like the live shards and a fresh file killed before its
//! rename, are replayed by the next process to open the ledger once this one is gone. A
//! shard whose fresh file cannot be opened is not rotated this time; a file that cannot be
//! renamed to a retired segment is not retired (never deleted by this process); a fresh
//! file takes the shard's name only where that name is free (never replacing a file), and
//! keeps its own otherwise, until a later rotation retires it.
//!
//! Nothing double: replay and catch-up append through [`ChainStore::append`], which leaves
//! out call ids already on record, so a segment replayed after its rows are on record (a
//! process killed between the append and the delete, or a kept segment) adds nothing.
//!
//! # Replay
//!
//! A process is gone when no `/proc/<pid>` exists (or the pid is this process's own: its
//! journals were a gone process's, whose rows this one takes over before opening its own).
//! All of a gone process's files — its shards and retired segments, and a single-file
//! journal of an older Switchboard — are read, their rows appended in the order they
//! started (threads' rows interleave across shards), and only then removed; a live
//! process's files are never touched. Readers ([`catch_up`]) read every file of every
//! process, live ones' retired segments included.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use crate::{BATCH, ChainStore, LedgerEntry, LedgerError};

/// Shards per process at most (one per core up to this).
pub(crate) const MAX_SHARDS: usize = 64;

/// The next thread's slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// The next rotation's generation, process-wide: two ledgers of one process (or one ledger
/// opened twice) never retire a shard under a name already taken.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// What a retired segment's name adds to its shard's: `.retired-<generation>`.
const RETIRED: &str = ".retired-";
/// What the name of a shard's next file, opened ahead of the rotation that swaps it in,
/// adds to the shard's until it takes the shard's name: `.fresh-<generation>`.
const FRESH: &str = ".fresh-";

thread_local! {
    /// This thread's slot, given out round-robin at its first record.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
}

/// This process's journal: its shard files, one lock each.
pub(crate) struct Journals {
    shards: Box<[Shard]>,
    /// Where each shard's file is by name: only the rotating writer (and [`Self::close`])
    /// looks.
    names: Mutex<Vec<Names>>,
    /// The shards' files were removed on a clean close ([`Self::close`]): a row recorded
    /// after it is written to a file opened again under the shard's name, for the next
    /// opener to replay.
    closed: AtomicBool,
}

/// One shard, alone on its cache line (two of them, for CPUs that fetch lines in pairs), so
/// threads on neighbouring shards do not write each other's lock word.
#[repr(align(128))]
struct Shard {
    file: RwLock<ShardFile>,
}

struct ShardFile {
    file: File,
    /// The shard's name, for errors.
    path: PathBuf,
}

/// A shard's name, and the name its file has now: the same but for a moment in a rotation,
/// or after a rename failed (the file then keeps a fresh segment's name, never deleted by
/// this process, until a rotation retires it).
struct Names {
    shard: PathBuf,
    now: PathBuf,
}

/// How many shards a process journals to: one per core it may run on, at most [`MAX_SHARDS`].
pub(crate) fn shard_count() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_SHARDS)
}

/// Opens (creating) a journal file to append to.
fn appending(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .append(true)
        .open(path)
}

fn open_to_append(path: &Path) -> Result<File, LedgerError> {
    appending(path).map_err(|e| LedgerError::Journal {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

impl Journals {
    /// Opens (creating) this process's `count` shard files beside `base`.
    pub(crate) fn open(base: &Path, count: usize) -> Result<Self, LedgerError> {
        let pid = std::process::id();
        let mut names = Vec::new();
        let shards = (0..count.max(1))
            .map(|k| {
                let path = shard_of(base, pid, k);
                let file = open_to_append(&path)?;
                names.push(Names {
                    shard: path.clone(),
                    now: path.clone(),
                });
                Ok(Shard {
                    file: RwLock::new(ShardFile { file, path }),
                })
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        Ok(Self {
            shards: shards.into_boxed_slice(),
            names: Mutex::new(names),
            closed: AtomicBool::new(false),
        })
    }

    /// Writes `line` (newline included) to this thread's shard in one `write`, then hands it
    /// to `hand_off` still holding the shard's lock: a rotation cannot come between the two.
    pub(crate) fn record<T>(&self, line: String, hand_off: impl FnOnce(String) -> T) -> T {
        let shard = &self.shards[SLOT.with(|slot| *slot) % self.shards.len()];
        let shard = shard.file.read().unwrap_or_else(PoisonError::into_inner);
        let written = if self.closed.load(Ordering::SeqCst) {
            appending(&shard.path).and_then(|mut file| file.write_all(line.as_bytes()))
        } else {
            (&shard.file).write_all(line.as_bytes())
        };
        if let Err(error) = written {
            tracing::error!(
                "ledger: cannot write the journal {}: {error}",
                shard.path.display()
            );
        }
        hand_off(line)
    }

    /// Removes this process's shard files on a clean stop, if `on_record` — asked holding
    /// every shard's lock, so no row is between its journal line and its hand-off to the
    /// writer — says every row journaled is on record; whether they were removed. A row
    /// recorded after that opens its shard's file again ([`Self::record`]).
    pub(crate) fn close(&self, on_record: impl FnOnce() -> bool) -> bool {
        // In the rotation's order: the names, then every shard's lock.
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let _held: Vec<_> = self
            .shards
            .iter()
            .map(|shard| shard.file.write().unwrap_or_else(PoisonError::into_inner))
            .collect();
        if !on_record() {
            return false;
        }
        let files: Vec<PathBuf> = names.iter().map(|names| names.now.clone()).collect();
        self.closed.store(true, Ordering::SeqCst);
        remove_segments(&files);
        true
    }

    /// Rolls every shard over. First, no lock held, opens a fresh file per shard; then,
    /// holding every shard's lock, swaps each shard's file for its fresh one and runs
    /// `receive` (which receives everything sent so far, into memory), and releases the
    /// locks; then renames each file written so far to a retired segment and gives the fresh
    /// one the shard's name. Returns the retired segments, each of whose rows was received
    /// before or by `receive` (module doc): the caller deletes them ([`remove_segments`])
    /// once those rows are on record.
    /// After a clean close ([`Self::close`]) nothing is rotated: rows recorded then are
    /// appended by the shard's name, and stay there for the next opener.
    pub(crate) fn rotate(&self, receive: impl FnOnce()) -> Vec<PathBuf> {
        let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        // `close` sets the flag holding the names' lock: read under it, it cannot change.
        if self.closed.load(Ordering::SeqCst) {
            return Vec::new();
        }
        let mut fresh: Vec<Option<(File, PathBuf)>> = names
            .iter()
            .map(|names| {
                let path = segment_of(&names.shard, FRESH, generation);
                match open_to_append(&path) {
                    Ok(file) => Some((file, path)),
                    Err(error) => {
                        tracing::warn!("{error}; the shard is rotated the next time");
                        None
                    }
                }
            })
            .collect();
        {
            let mut held: Vec<_> = self
                .shards
                .iter()
                .map(|shard| shard.file.write().unwrap_or_else(PoisonError::into_inner))
                .collect();
            for (shard, fresh) in held.iter_mut().zip(&mut fresh) {
                if let Some((file, _)) = fresh {
                    std::mem::swap(&mut shard.file, file);
                }
            }
            receive();
        }
        // `fresh` now holds the files written so far, which nothing writes to any more.
        names
            .iter_mut()
            .zip(fresh)
            .filter_map(|(names, swapped)| {
                let (_, fresh) = swapped?;
                names.retire(fresh, generation)
            })
            .collect()
    }
}

impl Names {
    /// Renames the file written so far to the retired segment of `generation` and gives the
    /// one swapped in (at `fresh`) the shard's name; returns the segment. A file that cannot
    /// be renamed is not retired (never deleted by this process: the next opener replays
    /// it); a fresh file that cannot take the shard's name (still another file's) keeps its
    /// own until a later rotation retires it.
    fn retire(&mut self, fresh: PathBuf, generation: u64) -> Option<PathBuf> {
        let segment = segment_of(&self.shard, RETIRED, generation);
        let at_shard_name = self.now == self.shard;
        let retired = match std::fs::rename(&self.now, &segment) {
            Ok(()) => Some(segment),
            Err(error) => {
                tracing::warn!(
                    "ledger: cannot retire the journal {} as {}: {error}; it stays for the \
                     next opener to replay",
                    self.now.display(),
                    segment.display()
                );
                None
            }
        };
        // The shard's name is free if the file that had it was just renamed, or if it is
        // gone (only this process makes its pid's files).
        let free = (retired.is_some() && at_shard_name) || !self.shard.exists();
        self.now = if !free {
            fresh
        } else if let Err(error) = std::fs::rename(&fresh, &self.shard) {
            tracing::warn!(
                "ledger: cannot rename the journal {} to {}: {error}",
                fresh.display(),
                self.shard.display()
            );
            fresh
        } else {
            self.shard.clone()
        };
        retired
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

/// A segment of a shard's: `<shard><kind><generation>`, `kind` [`RETIRED`] or [`FRESH`].
fn segment_of(shard: &Path, kind: &str, generation: u64) -> PathBuf {
    let mut name = shard.as_os_str().to_owned();
    name.push(format!("{kind}{generation}"));
    PathBuf::from(name)
}

/// The segment a shard's file is retired as by the rotation of `generation`:
/// `<shard>.retired-<generation>`.
#[cfg(test)]
pub(crate) fn retired_of(shard: &Path, generation: u64) -> PathBuf {
    segment_of(shard, RETIRED, generation)
}

/// Deletes retired segments whose rows are all on record (a segment already gone is fine:
/// a process that took over this pid's files replayed and removed it).
pub(crate) fn remove_segments(segments: &[PathBuf]) {
    for segment in segments {
        match std::fs::remove_file(segment) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    "ledger: cannot remove the retired journal segment {}: {e}; the next \
                     opener replays it (nothing is doubled)",
                    segment.display()
                );
            }
            _ => {}
        }
    }
}

/// The pid a journal file's name says wrote it: `<stem><pid>` or `<stem><pid>.<k>` (a
/// shard), either followed by `.retired-<generation>` (a retired segment) or
/// `.fresh-<generation>` (a shard's next file, not renamed yet).
fn writer_pid(name: &str, stem: &str) -> Option<u32> {
    let rest = name.strip_prefix(stem)?;
    let segment = rest.split_once(RETIRED).or_else(|| rest.split_once(FRESH));
    let shard = match segment {
        Some((shard, generation)) => {
            generation.parse::<u64>().ok()?;
            shard
        }
        None => rest,
    };
    match shard.split_once('.') {
        Some((pid, k)) => {
            k.parse::<usize>().ok()?;
            pid.parse().ok()
        }
        None => shard.parse().ok(),
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

/// Every journal file of this ledger (shards and retired segments) with the pid that wrote it.
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
    for files in found.values_mut() {
        files.sort();
    }
    found
}

/// Journals left by processes that are gone (and this process's own), each process's files
/// (shards and retired segments) together, to replay.
fn orphaned_journals(path: &Path) -> Vec<Vec<PathBuf>> {
    journals_by_pid(path)
        .into_iter()
        .filter(|(pid, _)| {
            let alive = *pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists();
            !alive
        })
        .map(|(_, files)| files)
        .collect()
}

fn read_journal(journal: &Path) -> Vec<LedgerEntry> {
    let Ok(bytes) = std::fs::read(journal) else {
        return Vec::new();
    };
    // Line by line, as bytes: a torn line (a write cut short — the process died, the disk
    // filled) is skipped, its call never answered, and spoils no line after it; a row
    // written straight after a torn one, on the same line, is still read.
    bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| {
            serde_json::from_slice(line).ok().or_else(|| {
                let start = find_last(line, ROW_START)?;
                serde_json::from_slice(&line[start..]).ok()
            })
        })
        .collect()
}

/// How every journal line starts: a row's first field.
const ROW_START: &[u8] = b"{\"call_id\":";

/// Where `needle` last starts in `haystack`, past its first byte (a whole line that does not
/// parse is not tried again).
fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    (1..haystack.len().saturating_sub(needle.len()) + 1)
        .rev()
        .find(|&start| haystack[start..].starts_with(needle))
}

/// One process's rows from all its files, in the order they started.
fn read_files(files: &[PathBuf]) -> Vec<LedgerEntry> {
    let mut entries: Vec<LedgerEntry> = files.iter().flat_map(|f| read_journal(f)).collect();
    entries.sort_by_key(|entry| entry.started_ms);
    entries
}

/// Inserts every journal's rows that are not in the database yet (idempotent; journals are
/// left as they are, so running gateways can keep appending). Readers such as `audit` call
/// it so they see every answered call even after a crash.
pub fn catch_up(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for files in journals_by_pid(path).values() {
        inserted += append_entries(store, &read_files(files))?;
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
/// removes them: a process's files (shards and retired segments) only once all of its rows
/// are on record.
pub(crate) fn replay(store: &mut dyn ChainStore, path: &Path) -> Result<usize, LedgerError> {
    let mut inserted = 0;
    for files in orphaned_journals(path) {
        inserted += append_entries(store, &read_files(&files))?;
        for journal in files {
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
mod rotation_tests;
#[cfg(test)]
mod tests;
