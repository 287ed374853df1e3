//! The rotation against a store that is slow or fails, on real files and real threads:
//! calls are not held up while the rotation's append waits on the store (a slow one, and a
//! real PostgreSQL whose chain head another connection holds locked), the retired segments
//! wait for held rows of a store that retries and are removed once those are on record, and
//! segments whose rows a store refused for good are kept and replayed by the next opener.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use super::tests::{lines_in, on_record, retired_in};
use crate::postgres::Pool;
use crate::tests::entry;
use crate::{ChainStore, Ledger, LedgerEntry, LedgerError, Tuning, store};

/// Rows between rotations in these tests.
const EVERY: usize = 5;
/// Rows recorded while the rotation is due, which it receives.
const AT_ROTATION: usize = 3;
/// How long any of these tests waits for the writer to get somewhere.
const PATIENCE: Duration = Duration::from_secs(20);

type Rows<'a> = [(&'a LedgerEntry, &'a str)];

/// What a [`Scripted`] store does before each append after the one that made the rotation
/// due (the rotation's own append comes first): `Err` fails the append.
type Then = Box<dyn FnMut(&Rows<'_>) -> Result<(), LedgerError> + Send>;

/// A store behind a script. The append that brings the rows seen to [`EVERY`] (so the
/// writer rotates right after it), once through, tells the test and waits for its go, so the
/// test can record rows the rotation will receive; every later append runs `then` first.
struct Scripted {
    inner: Box<dyn ChainStore>,
    retries: bool,
    seen: usize,
    due: Sender<()>,
    go: Gate,
    then: Then,
}

impl ChainStore for Scripted {
    fn append(&mut self, rows: &Rows<'_>) -> Result<usize, LedgerError> {
        if self.seen >= EVERY {
            (self.then)(rows)?;
        }
        let appended = self.inner.append(rows)?;
        let before = self.seen;
        self.seen += rows.len();
        if before < EVERY && self.seen >= EVERY {
            let _ = self.due.send(());
            assert!(self.go.wait(PATIENCE), "the test's go never came");
        }
        Ok(appended)
    }

    fn retries(&self) -> bool {
        self.retries
    }
}

/// A ledger at `path` on two shards, rotating every [`EVERY`] rows, over a [`Scripted`]
/// SQLite store: the ledger, the rotation's "due" and the test's "go".
fn scripted(path: &Path, retries: bool, then: Then) -> (Ledger, Receiver<()>, Gate) {
    let conn = store::open(path).expect("open");
    scripted_over(Box::new(conn), retries, path, then)
}

/// [`scripted`] over any store, journaling at `path`.
fn scripted_over(
    inner: Box<dyn ChainStore>,
    retries: bool,
    path: &Path,
    then: Then,
) -> (Ledger, Receiver<()>, Gate) {
    let (due, wait_due) = channel();
    let go = Gate::default();
    let store = Scripted {
        inner,
        retries,
        seen: 0,
        due,
        go: go.clone(),
        then,
    };
    let tuning = Tuning {
        shards: 2,
        rotate_every: EVERY,
    };
    let ledger = Ledger::start(Box::new(store), path, tuning).expect("start");
    (ledger, wait_due, go)
}

fn record(ledger: &Ledger, ids: std::ops::Range<usize>) {
    for i in ids {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
}

/// A gate the writer's thread waits at, opened by the test: polled, since a blocking
/// channel receive parks the thread and so would swallow the ledger's ring (an unpark) of
/// the writer.
#[derive(Clone, Default)]
struct Gate(Arc<AtomicBool>);

impl Gate {
    fn open(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits until the gate is open, `patience` at most: whether it opened.
    fn wait(&self, patience: Duration) -> bool {
        let started = Instant::now();
        while !self.0.load(std::sync::atomic::Ordering::SeqCst) {
            if started.elapsed() > patience {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

/// Waits for the writer to tell `what`.
fn awaited(signal: &Receiver<()>, what: &str) {
    if signal.recv_timeout(PATIENCE).is_err() {
        panic!("waited {PATIENCE:?} in vain: {what}");
    }
}

/// Records a row (id 100), which must take far less than the rotation's append.
fn records_at_once(ledger: &Ledger, meanwhile: &str) {
    let started = Instant::now();
    ledger.record_entry(entry(100, "npc", "ok"));
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(50),
        "a call took {took:?} to record while {meanwhile}"
    );
}

/// Records rows `0..EVERY` and waits until the rotation is due, runs `meanwhile`, records
/// [`AT_ROTATION`] more (the rotation receives them), and lets the writer on.
fn up_to_the_rotation(ledger: &Ledger, due: &Receiver<()>, go: &Gate, meanwhile: impl FnOnce()) {
    record(ledger, 0..EVERY);
    awaited(due, "the rotation comes due");
    meanwhile();
    record(ledger, EVERY..EVERY + AT_ROTATION);
    go.open();
}

/// While the rotation's append is slow — it lasts until the test's call has recorded, at
/// most [`SLOW`] — a call records in far less: the shards' locks are not held over the
/// append. Before segment rollover, the call waited the append out.
#[test]
fn a_slow_append_at_rotation_does_not_hold_up_calls() {
    const SLOW: Duration = Duration::from_secs(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("slow.db");
    let (slow, in_slow) = channel();
    let release = Gate::default();
    let released = release.clone();
    let mut first = true;
    let then: Then = Box::new(move |_| {
        if std::mem::take(&mut first) {
            let _ = slow.send(());
            // Slow until the test has recorded its call, or gave up.
            released.wait(SLOW);
        }
        Ok(())
    });
    let (ledger, due, go) = scripted(&path, false, then);
    up_to_the_rotation(&ledger, &due, &go, || ());
    awaited(&in_slow, "the rotation's append began");
    records_at_once(&ledger, "the rotation's append was under way");
    assert_eq!(retired_in(dir.path()).len(), 2, "both shards were retired");
    release.open();
    ledger.flush();
    assert_eq!(on_record(&path).len(), EVERY + AT_ROTATION + 1);
    assert!(
        retired_in(dir.path()).is_empty(),
        "the retired segments' rows are on record: they are removed"
    );
    let pid = std::process::id();
    let fresh: usize = (0..2)
        .map(|k| lines_in(&super::shard_of(&path, pid, k)))
        .sum();
    assert_eq!(fresh, 1, "the fresh shards hold the row recorded since");
}

/// What a rotation receives is appended a batch at a time like any rows, never as one
/// transaction: on PostgreSQL that held the chain's head for as long as a backlog of a
/// hundred thousand rows took (seconds on 16 cores), and every other replica's writer waited.
#[test]
fn a_backlog_received_at_rotation_is_appended_a_batch_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("backlog.db");
    let largest = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let then: Then = {
        let largest = largest.clone();
        Box::new(move |rows| {
            largest.fetch_max(rows.len(), std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
    };
    let (ledger, due, go) = scripted(&path, false, then);
    let backlog = 2 * crate::BATCH + 10;
    up_to_the_rotation(&ledger, &due, &go, || {
        record(&ledger, 1_000..1_000 + backlog);
    });
    ledger.flush();
    assert_eq!(on_record(&path).len(), EVERY + backlog + AT_ROTATION);
    let largest = largest.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        largest <= crate::BATCH,
        "an append of {largest} rows (a batch is {})",
        crate::BATCH
    );
    assert!(
        retired_in(dir.path()).is_empty(),
        "removed once the backlog is on record"
    );
}

/// A store that retries (PostgreSQL) and is away when the rotation appends: the rows are
/// held, the retired segments stay while they are, and go once they are on record.
#[test]
fn retired_segments_wait_for_held_rows_and_go_once_they_are_on_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("held.db");
    let away = Arc::new(AtomicBool::new(true));
    let (failed, on_failure) = channel();
    let then: Then = {
        let away = away.clone();
        Box::new(move |_| {
            if away.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = failed.send(());
                return Err(LedgerError::Postgres("connection refused".to_owned()));
            }
            Ok(())
        })
    };
    let (ledger, due, go) = scripted(&path, true, then);
    up_to_the_rotation(&ledger, &due, &go, || ());
    awaited(&on_failure, "the rotation's append failed");
    awaited(&on_failure, "and was tried again");
    let retired = retired_in(dir.path());
    assert_eq!(retired.len(), 2, "kept while their rows are held");
    assert_eq!(
        retired.iter().map(|s| lines_in(s)).sum::<usize>(),
        EVERY + AT_ROTATION
    );
    assert_eq!(on_record(&path).len(), EVERY);
    away.store(false, std::sync::atomic::Ordering::SeqCst);
    ledger.flush();
    assert_eq!(on_record(&path).len(), EVERY + AT_ROTATION);
    assert!(retired_in(dir.path()).is_empty(), "removed once on record");
}

/// A store that does not retry (SQLite) refuses the rotation's rows for good: the retired
/// segments that hold them are kept, and the next opener replays them, each row once.
#[test]
fn segments_whose_rows_were_refused_are_kept_and_replayed_by_the_next_opener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("refused.db");
    let then: Then = Box::new(|_| Err(LedgerError::Database("disk I/O error".to_owned())));
    let (ledger, due, go) = scripted(&path, false, then);
    up_to_the_rotation(&ledger, &due, &go, || ());
    ledger.flush();
    assert_eq!(on_record(&path).len(), EVERY);
    let kept = retired_in(dir.path());
    assert_eq!(kept.len(), 2, "the segments holding refused rows are kept");
    assert_eq!(
        kept.iter().map(|s| lines_in(s)).sum::<usize>(),
        EVERY + AT_ROTATION
    );
    // Later rows are refused too, and stay in the shards.
    record(&ledger, 200..200 + EVERY);
    ledger.flush();
    drop(ledger);

    let reopened = Ledger::open(&path).expect("opens and replays the kept segments");
    reopened.flush();
    let stored = on_record(&path);
    assert_eq!(
        stored.len(),
        2 * EVERY + AT_ROTATION,
        "every row on record once"
    );
    assert!(retired_in(dir.path()).is_empty(), "replayed and removed");
}

/// On a real PostgreSQL, another connection (another replica's writer) holds the chain
/// head's row lock when the rotation appends: the append waits for it, and calls record
/// meanwhile in far less. Before segment rollover they waited for the other transaction.
#[test]
fn a_rotation_waiting_on_postgres_for_the_heads_row_lock_holds_no_call_up() {
    use switchboard_testkit::postgres::{DATABASE, Postgres};
    const HOLD: Duration = Duration::from_millis(600);
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let url = postgres.url();
    in_postgres(&url, |mut client| async move {
        crate::postgres::migrate::migrate(&mut client)
            .await
            .expect("migrate");
    })
    .join()
    .expect("migrated");

    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("postgres-ledger");
    let store = crate::PostgresStore::open(&url).expect("open");
    let (appending, in_append) = channel();
    let then: Then = Box::new(move |_| {
        let _ = appending.send(());
        Ok(())
    });
    let (ledger, due, go) = scripted_over(Box::new(store), true, &base, then);
    let (locked, wait_locked) = channel();
    let mut holder = None;
    up_to_the_rotation(&ledger, &due, &go, || {
        holder = Some(in_postgres(&url, |mut client| async move {
            let transaction = client.transaction().await.expect("begin");
            transaction
                .query(
                    "SELECT seq FROM ledger_head WHERE chain = 'main' FOR UPDATE",
                    &[],
                )
                .await
                .expect("lock the head");
            locked.send(()).expect("locked");
            tokio::time::sleep(HOLD).await;
            transaction.commit().await.expect("commit");
        }));
        awaited(&wait_locked, "the other connection holds the head's lock");
    });
    let holder = holder.expect("the lock's holder");
    awaited(&in_append, "the rotation's append began");
    // Long enough for the append to be waiting on the lock.
    std::thread::sleep(Duration::from_millis(100));
    records_at_once(&ledger, "the rotation's append waited for the lock");
    assert!(
        !holder.is_finished(),
        "the lock was let go too soon to tell"
    );
    holder.join().expect("the lock let go");
    ledger.flush();
    let rows: usize = postgres
        .psql(DATABASE, "SELECT count(*) FROM mcp_tool_invocations")
        .expect("count")
        .parse()
        .expect("a number");
    assert_eq!(rows, EVERY + AT_ROTATION + 1, "every row on record once");
    assert!(
        retired_in(dir.path()).is_empty(),
        "the retired segments' rows are on record: they are removed"
    );
}

/// Runs `work` with a connection to `url`, on a thread and runtime of its own.
fn in_postgres<F>(
    url: &str,
    work: impl FnOnce(crate::postgres::Pooled) -> F + Send + 'static,
) -> std::thread::JoinHandle<()>
where
    F: std::future::Future<Output = ()>,
{
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let pool: Pool = crate::postgres::pool(&url, 1).expect("pool");
            let client = crate::postgres::connect(&pool).await.expect("connect");
            work(client).await;
        });
    })
}
