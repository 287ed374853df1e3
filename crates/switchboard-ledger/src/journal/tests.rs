//! The sharded journal on real files and real threads: many threads recording at once, a
//! SIGKILLed process's shards and retired segments replayed with rotations going on,
//! rotation retiring every shard and the segments removed once on record, journals of the
//! older single-file naming replayed, live processes' files left alone, and `catch_up`
//! reading every file, and a clean close removing the journal only when its rows are on
//! record. The rotation against a slow or failing store: `rotation_tests`.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;
use crate::tests::{acked_until_killed, entry};
use crate::{ChainStore, Filter, Ledger, LedgerEntry, LedgerError, Tuning, store};

/// A ledger at `path` journaling to `shards` shards, rolling them over every `rotate_every`
/// rows.
pub(super) fn sharded(path: &Path, shards: usize, rotate_every: usize) -> Ledger {
    let conn = store::open(path).expect("open");
    Ledger::start(
        Box::new(conn),
        path,
        Tuning {
            shards,
            rotate_every,
        },
    )
    .expect("start")
}

/// `threads` threads, released together, each recording `rows` rows (ids `t * 1_000_000 + n`).
fn record_from_threads(ledger: &Ledger, threads: usize, rows: usize) {
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (ledger, start) = (ledger.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                for n in 0..rows {
                    ledger.record_entry(entry(t * 1_000_000 + n, "npc", "ok"));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
}

/// The call ids on record at `path`, after checking the chain and that none is there twice.
pub(super) fn on_record(path: &Path) -> HashSet<String> {
    let conn = store::open(path).expect("open");
    let report = store::verify(&conn).expect("verify");
    assert!(report.ok, "{report:?}");
    let ids: Vec<String> = store::query(&conn, &Filter::default())
        .expect("query")
        .into_iter()
        .map(|e| e.call_id)
        .collect();
    let unique: HashSet<String> = ids.iter().cloned().collect();
    assert_eq!(unique.len(), ids.len(), "a row is on record twice");
    assert_eq!(report.rows, ids.len());
    unique
}

pub(super) fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

/// The files in `dir` whose name says they are retired journal segments, sorted.
pub(super) fn retired_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(RETIRED))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

fn write_journal(path: &Path, ids: impl Iterator<Item = usize>) {
    let mut lines = Vec::new();
    for i in ids {
        lines.extend(entry(i, "npc", "ok").canonical().into_bytes());
        lines.push(b'\n');
    }
    std::fs::write(path, lines).expect("journal");
}

#[test]
fn threads_recording_at_once_put_every_row_on_record_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("threads.db");
    let ledger = sharded(&path, 4, ROTATE_NEVER);
    record_from_threads(&ledger, 16, 300);
    ledger.flush();
    let stored = on_record(&path);
    assert_eq!(stored.len(), 16 * 300);
    // Each shard's lines are whole rows, and together they are every row once.
    let pid = std::process::id();
    let mut journaled = 0;
    let mut used = 0;
    for k in 0..4 {
        let text = std::fs::read_to_string(shard_of(&path, pid, k)).expect("shard");
        for line in text.lines() {
            let row: LedgerEntry = serde_json::from_str(line).expect("a whole row per line");
            assert!(stored.contains(&row.call_id));
        }
        journaled += text.lines().count();
        used += usize::from(!text.is_empty());
    }
    assert_eq!(journaled, 16 * 300);
    assert!(used >= 2, "16 threads journaled to {used} of 4 shards");
}

/// No rotation in a test that does not want one.
const ROTATE_NEVER: usize = usize::MAX;

#[test]
fn rotation_retires_every_shard_removes_the_segments_and_keeps_what_came_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rotate.db");
    let ledger = sharded(&path, 4, 1_000);
    // 800 rows from 8 threads: every shard has some, none is retired yet.
    record_from_threads(&ledger, 8, 100);
    ledger.flush();
    let pid = std::process::id();
    let shards: Vec<_> = (0..4).map(|k| shard_of(&path, pid, k)).collect();
    assert_eq!(shards.iter().map(|s| lines_in(s)).sum::<usize>(), 800);
    // 300 more from one thread: the writer passes 1,000 rows and rolls every shard over.
    let recorder = {
        let ledger = ledger.clone();
        std::thread::spawn(move || {
            for n in 0..300 {
                ledger.record_entry(entry(50_000_000 + n, "npc", "ok"));
            }
            SLOT.with(|slot| *slot) % 4
        })
    };
    let its_shard = recorder.join().expect("recorder");
    ledger.flush();
    assert_eq!(on_record(&path).len(), 1_100);
    for (k, shard) in shards.iter().enumerate() {
        let left = lines_in(shard);
        if k == its_shard {
            assert!(left < 300, "shard {k} kept {left} rows past the rotation");
        } else {
            assert_eq!(left, 0, "shard {k} was not rolled over");
        }
    }
    assert_eq!(
        retired_in(dir.path()),
        Vec::<std::path::PathBuf>::new(),
        "the retired segments' rows are on record: they are removed"
    );
}

const CRASH_ENV: &str = "SWITCHBOARD_LEDGER_SHARDS_CRASH_DB";

/// A child recording from 4 threads to 4 shards, rotating every 200 rows, is SIGKILLed: every
/// row it acknowledged is on record after the next open, whichever shard held it and however
/// a rotation raced with its thread.
#[test]
fn acknowledged_rows_survive_a_sigkill_amid_rotations() {
    if let Some(path) = std::env::var_os(CRASH_ENV) {
        let ledger = sharded(Path::new(&path), 4, 200);
        let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (ledger, out) = (ledger.clone(), out.clone());
                std::thread::spawn(move || {
                    for n in 0.. {
                        let row = entry(t * 10_000_000 + n, "npc", "ok");
                        let id = row.call_id.clone();
                        ledger.record_entry(row);
                        let mut out = out.lock().expect("stdout");
                        writeln!(out, "ack {id}").expect("ack");
                        out.flush().expect("flush");
                    }
                })
            })
            .collect();
        for thread in threads {
            let _ = thread.join();
        }
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.db");
    let (acked, child_pid) = acked_until_killed(
        "journal::tests::acknowledged_rows_survive_a_sigkill_amid_rotations",
        CRASH_ENV,
        &path,
        4_000,
        Duration::from_secs(30),
    );
    assert!(acked.len() >= 1_000, "{} acknowledged", acked.len());
    let ledger = Ledger::open(&path).expect("opens and replays the dead child's shards");
    ledger.flush();
    let stored = on_record(&path);
    for id in &acked {
        assert!(stored.contains(id), "acknowledged row {id} was lost");
    }
    for k in 0..4 {
        assert!(
            !shard_of(&path, child_pid, k).exists(),
            "the dead child's shard {k} was not removed"
        );
    }
    let child = format!("crash.db.journal-{child_pid}");
    for file in std::fs::read_dir(dir.path()).expect("dir") {
        let name = file.expect("entry").file_name();
        assert!(
            !name.to_string_lossy().starts_with(&child),
            "the dead child's {name:?} was not removed"
        );
    }
}

#[test]
fn gone_processes_shards_and_old_journals_are_replayed_and_live_ones_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("replay.db");
    // A gone process's three shards, rows interleaved between them as threads write them.
    let gone = u32::MAX - 1;
    for k in 0..3 {
        write_journal(&shard_of(&path, gone, k), (k..60).step_by(3));
    }
    // And two retired segments of its, a rotation's whose rows never reached the store.
    let gone_retired = [
        retired_of(&shard_of(&path, gone, 0), 7),
        retired_of(&shard_of(&path, gone, 2), 7),
    ];
    write_journal(&gone_retired[0], 60..63);
    write_journal(&gone_retired[1], 63..66);
    // And the next file of its shard 1, killed amid a rotation before it took the name.
    let gone_fresh = segment_of(&shard_of(&path, gone, 1), FRESH, 7);
    write_journal(&gone_fresh, 66..68);
    // A journal of the single-file naming, left by an older Switchboard that crashed.
    let old = u32::MAX - 2;
    let old_journal = dir.path().join(format!("replay.db.journal-{old}"));
    write_journal(&old_journal, 100..110);
    // A live process's shards (pid 1 always runs): never replayed nor removed by an opener.
    let live = [
        shard_of(&path, 1, 0),
        shard_of(&path, 1, 1),
        retired_of(&shard_of(&path, 1, 1), 3),
    ];
    write_journal(&live[0], 200..205);
    write_journal(&live[1], 205..210);
    write_journal(&live[2], 210..215);
    // Files that only look like journals.
    std::fs::write(dir.path().join("replay.db.journal-12x"), "not a journal").expect("decoy");

    let ledger = Ledger::open(&path).expect("open");
    ledger.flush();
    drop(ledger);
    let conn = store::open(&path).expect("open");
    let mut rows = store::query(&conn, &Filter::default()).expect("query");
    rows.reverse();
    assert_eq!(
        rows.len(),
        78,
        "68 rows of the gone process (shards and segments), 10 of the old journal"
    );
    let gone_rows: Vec<i64> = rows
        .iter()
        .filter(|r| r.started_ms < 1_000_068)
        .map(|r| r.started_ms)
        .collect();
    assert!(
        gone_rows.windows(2).all(|w| w[0] < w[1]),
        "the shards' rows are appended in the order they started"
    );
    for k in 0..3 {
        assert!(!shard_of(&path, gone, k).exists(), "shard {k} not removed");
    }
    for segment in gone_retired.iter().chain([&gone_fresh]) {
        assert!(!segment.exists(), "{} not removed", segment.display());
    }
    assert!(!old_journal.exists(), "the old journal was not removed");
    for shard in &live {
        assert_eq!(lines_in(shard), 5, "a live process's shard was touched");
    }
    assert!(dir.path().join("replay.db.journal-12x").exists());

    // Readers catch up with every file of every journal, the live process's retired
    // segment included.
    let mut conn = conn;
    assert_eq!(catch_up(&mut conn, &path).expect("catch up"), 15);
    assert_eq!(on_record(&path).len(), 93);
    assert_eq!(catch_up(&mut conn, &path).expect("again"), 0, "idempotent");
}

#[test]
fn shard_names_parse_back_to_their_process() {
    let stem = "ledger.db.journal-";
    assert_eq!(writer_pid("ledger.db.journal-42", stem), Some(42));
    assert_eq!(writer_pid("ledger.db.journal-42.7", stem), Some(42));
    assert_eq!(writer_pid("ledger.db.journal-42.retired-9", stem), Some(42));
    assert_eq!(
        writer_pid("ledger.db.journal-42.7.retired-19", stem),
        Some(42)
    );
    for not_one in [
        "ledger.db.journal-",
        "ledger.db.journal-42.",
        "ledger.db.journal-42.x",
        "ledger.db.journal-x.1",
        "ledger.db.journal-42.retired-",
        "ledger.db.journal-42.7.retired-x",
        "ledger.db.journal-42.x.retired-1",
        "ledger.db.journal-.retired-1",
        "ledger.db.journal-42.fresh-",
        "ledger.db.journal-42.fresh-1.retired-2",
        "ledger.db-wal",
    ] {
        assert_eq!(writer_pid(not_one, stem), None, "{not_one}");
    }
    let base = Path::new("/var/lib/sb/ledger.db");
    assert_eq!(
        shard_of(base, 42, 0),
        Path::new("/var/lib/sb/ledger.db.journal-42")
    );
    assert_eq!(
        shard_of(base, 42, 3),
        Path::new("/var/lib/sb/ledger.db.journal-42.3")
    );
    assert_eq!(
        retired_of(&shard_of(base, 42, 3), 5),
        Path::new("/var/lib/sb/ledger.db.journal-42.3.retired-5")
    );
}

/// The race the rotation must win: a thread has written its line and not yet handed the row
/// to the writer when a rotation begins. The rotation waits for the hand-off, so it receives
/// the row before it retires the shards; it never retires a line it has not received. The
/// line is in the retired segments, the fresh shards are empty.
#[test]
fn a_rotation_waits_for_a_row_written_and_not_yet_handed_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("race.db");
    let journals = Arc::new(Journals::open(&base, 2).expect("open"));
    let (to_writer, writer_side) = std::sync::mpsc::channel::<String>();
    let (written, wait_written) = std::sync::mpsc::channel::<()>();
    let caller = {
        let journals = journals.clone();
        std::thread::spawn(move || {
            let line = format!("{}\n", entry(1, "npc", "ok").canonical());
            journals.record(line, |line| {
                written.send(()).expect("written");
                // Long enough for a rotation that did not wait to have retired the shards.
                std::thread::sleep(Duration::from_millis(300));
                to_writer.send(line).expect("hand off");
            });
        })
    };
    wait_written.recv().expect("the caller wrote its line");
    let mut received = Vec::new();
    let mut retired = journals.rotate(|| received.extend(writer_side.try_iter()));
    retired.sort();
    caller.join().expect("caller");
    assert_eq!(
        received.len(),
        1,
        "the rotation retired the journal before the row written to it was handed off"
    );
    assert_eq!(retired, retired_in(dir.path()), "every shard is retired");
    assert_eq!(retired.len(), 2);
    assert_eq!(retired.iter().map(|s| lines_in(s)).sum::<usize>(), 1);
    let pid = std::process::id();
    for k in 0..2 {
        assert_eq!(lines_in(&shard_of(&base, pid, k)), 0, "shard {k} not fresh");
    }
    // The fresh shards take the next rows; the next rotation retires them under new names.
    journals.record(format!("{}\n", entry(2, "npc", "ok").canonical()), drop);
    let next = journals.rotate(|| ());
    assert_eq!(next.len(), 2);
    assert!(next.iter().all(|s| !retired.contains(s)), "{next:?}");
    assert_eq!(next.iter().map(|s| lines_in(s)).sum::<usize>(), 1);
    remove_segments(&retired);
    remove_segments(&next);
    assert!(retired_in(dir.path()).is_empty());
}

/// A shard whose file was removed from under it: the rotation retires nothing of it, its
/// fresh file takes the shard's name all the same, and the next rotation retires that.
#[test]
fn a_shard_whose_file_went_missing_gets_its_name_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("gone.db");
    let journals = Journals::open(&base, 1).expect("open");
    let shard = shard_of(&base, std::process::id(), 0);
    std::fs::remove_file(&shard).expect("remove the shard's file");
    assert!(journals.rotate(|| ()).is_empty(), "nothing to retire");
    journals.record(format!("{}\n", entry(1, "npc", "ok").canonical()), drop);
    assert_eq!(lines_in(&shard), 1, "the fresh file has the shard's name");
    let retired = journals.rotate(|| ());
    assert_eq!(retired.len(), 1);
    assert_eq!(lines_in(&retired[0]), 1);
    assert_eq!(lines_in(&shard), 0);
}

/// A write cut short in the middle of a journal (the disk filled, then had room again) tears
/// one line: that row is lost — its call never answered — and no other. A row written
/// straight after it, on the same line, and every line after, are read.
#[test]
fn a_torn_line_in_the_middle_spoils_no_other_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("ledger.db.journal-1");
    let line = |i: usize| entry(i, "npc", "ok").canonical();
    let torn = line(1);
    // Cut inside a multi-byte character: the rest of the file is no longer UTF-8 as a whole.
    let cut = format!("{}é", &torn[..torn.len() / 2]);
    let cut = &cut.as_bytes()[..cut.len() - 1];
    let mut bytes = Vec::new();
    bytes.extend(line(0).as_bytes());
    bytes.push(b'\n');
    bytes.extend(cut);
    bytes.extend(line(2).as_bytes());
    bytes.push(b'\n');
    bytes.extend(line(3).as_bytes());
    bytes.push(b'\n');
    std::fs::write(&journal, bytes).expect("write");
    let read: Vec<String> = read_journal(&journal)
        .into_iter()
        .map(|entry| entry.call_id)
        .collect();
    let expected: Vec<String> = [0, 2, 3]
        .into_iter()
        .map(|i| entry(i, "npc", "ok").call_id)
        .collect();
    assert_eq!(read, expected);
}

/// This process's shard files of the ledger at `path` that exist.
fn own_shards(path: &Path, shards: usize) -> Vec<std::path::PathBuf> {
    (0..shards)
        .map(|k| shard_of(path, std::process::id(), k))
        .filter(|shard| shard.exists())
        .collect()
}

#[test]
fn a_clean_close_removes_the_journal_once_its_rows_are_on_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("close.db");
    let ledger = sharded(&path, 4, 1_000);
    record_from_threads(&ledger, 4, 25);
    assert_eq!(own_shards(&path, 4).len(), 4);

    assert!(ledger.close_within(Duration::from_secs(20)));
    assert_eq!(on_record(&path).len(), 100);
    assert_eq!(own_shards(&path, 4), Vec::<std::path::PathBuf>::new());

    // A row recorded after the close is journaled again, for the next opener.
    ledger.record_entry(entry(7_000_000, "npc", "ok"));
    let reopened = own_shards(&path, 4);
    assert_eq!(reopened.len(), 1, "{reopened:?}");
    assert_eq!(lines_in(&reopened[0]), 1);
    ledger.flush();
    assert_eq!(on_record(&path).len(), 101);
}

/// After a clean close nothing rotates: every row recorded after it keeps its journal line
/// for the next opener (a rotation would retire the files those rows are appended to by
/// name, racing the appends).
#[test]
fn rows_recorded_after_a_clean_close_are_not_rotated_away() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("late.db");
    let ledger = sharded(&path, 2, 5);
    assert!(ledger.close_within(Duration::from_secs(20)));
    for n in 0..20 {
        ledger.record_entry(entry(8_000_000 + n, "npc", "ok"));
        ledger.flush();
    }
    assert_eq!(on_record(&path).len(), 20);
    let kept = own_shards(&path, 2);
    assert_eq!(
        kept.iter().map(|s| lines_in(s)).sum::<usize>(),
        20,
        "{kept:?}"
    );
}

/// A store that refuses every append for good (as SQLite does: no retry).
struct Refusing;

impl ChainStore for Refusing {
    fn append(&mut self, _rows: &[(&LedgerEntry, &str)]) -> Result<usize, LedgerError> {
        Err(LedgerError::Database("refused for the test".to_owned()))
    }
}

#[test]
fn a_clean_close_keeps_a_journal_whose_rows_a_store_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("refused.db");
    let ledger = Ledger::start(
        Box::new(Refusing),
        &path,
        Tuning {
            shards: 2,
            rotate_every: 1_000,
        },
    )
    .expect("start");
    ledger.record_entry(entry(1, "npc", "ok"));
    assert!(
        !ledger.close_within(Duration::from_secs(20)),
        "a close that kept the journal says not everything got there"
    );
    let kept = own_shards(&path, 2);
    assert_eq!(
        kept.iter().map(|s| lines_in(s)).sum::<usize>(),
        1,
        "{kept:?}"
    );
}
