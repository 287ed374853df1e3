//! Writers on one SQLite file from several connections at once (regression: memory's
//! add_observations failed with "database is locked" 219 times in 1,500 against sessions'
//! append_turn on the same file, and two or three processes opening a fresh file failed with
//! "table entities already exists").

use std::path::Path;
use std::sync::{Arc, Barrier};

use crate::memory::store::Store;
use crate::sessions::store::TurnStore;

/// Runs `open` on `count` threads released together; every result.
fn open_together<T: Send + 'static>(
    count: usize,
    open: impl Fn() -> Result<T, String> + Send + Sync + 'static,
) -> Vec<Result<T, String>> {
    let barrier = Arc::new(Barrier::new(count));
    let open = Arc::new(open);
    let threads: Vec<_> = (0..count)
        .map(|_| {
            let (barrier, open) = (barrier.clone(), open.clone());
            std::thread::spawn(move || {
                barrier.wait();
                open()
            })
        })
        .collect();
    threads
        .into_iter()
        .map(|thread| thread.join().expect("thread"))
        .collect()
}

#[test]
fn connections_opening_a_fresh_file_together_migrate_it_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    for round in 0..8 {
        let memory = dir.path().join(format!("memory-{round}.db"));
        let rules = dir.path().join(format!("rules-{round}.db"));
        for opened in open_together(4, move || Store::open(&memory)) {
            opened.unwrap_or_else(|error| panic!("memory, round {round}: {error}"));
        }
        for opened in open_together(4, move || crate::rules::store::Store::open(&rules)) {
            opened.unwrap_or_else(|error| panic!("rules, round {round}: {error}"));
        }
    }
}

#[test]
fn memory_and_sessions_write_the_same_file_without_locking_each_other_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("memory.db");
    let memory = Store::open(&path).expect("memory");
    memory
        .create_entities(&[("Mira".to_owned(), "npc".to_owned(), Vec::new())])
        .expect("entity");
    let sessions = TurnStore::open(&path).expect("sessions");
    const CALLS: usize = 300;
    let turns = std::thread::spawn(move || {
        (0..CALLS)
            .filter_map(|i| sessions.append("s1", "gm", &format!("turn {i}")).err())
            .collect::<Vec<_>>()
    });
    let failed: Vec<String> = (0..CALLS)
        .filter_map(|i| {
            memory
                .add_observations("Mira", &[format!("seen {i}")], None)
                .err()
        })
        .collect();
    let turn_failures = turns.join().expect("sessions thread");
    assert!(
        failed.is_empty(),
        "{} memory writes failed: {:?}",
        failed.len(),
        failed.first()
    );
    assert!(
        turn_failures.is_empty(),
        "{} turns failed: {:?}",
        turn_failures.len(),
        turn_failures.first()
    );
    let count = |path: &Path, sql: &str| -> i64 {
        let conn = rusqlite::Connection::open(path).expect("open");
        conn.query_row(sql, [], |row| row.get(0)).expect("count")
    };
    assert_eq!(count(&path, "SELECT COUNT(*) FROM facts") as usize, CALLS);
    assert_eq!(
        count(&path, "SELECT COUNT(*) FROM session_turns") as usize,
        CALLS
    );
}
