//! How a batch leaves out rows already on record, on a real PostgreSQL 15: fresh rows go in
//! without looking their call ids up, and one already on record sends the batch through the
//! lookup ([`Recorded`]); and how a writer behind a head another session holds fails within
//! the lock timeout instead of waiting for it.

use super::tests::{count, entry, fixture, runtime, verify_now};
use super::*;

#[test]
fn fresh_rows_go_in_without_a_lookup_and_one_already_on_record_sends_the_batch_through_one() {
    let (postgres, pool, _dir) = fixture();
    let mut store = PostgresStore::open(&postgres.url()).expect("store");
    // Just opened: ids are looked up (a replay comes first).
    assert_eq!(store.next, Recorded::Maybe);
    let first: Vec<LedgerEntry> = (0..100).map(|i| entry(i, "a")).collect();
    assert_eq!(
        crate::journal::append_entries(&mut store, &first).expect("append"),
        100
    );
    // All of it was new: the next batch goes in as fresh rows.
    assert_eq!(store.next, Recorded::Unlikely);
    // A fresh-looking batch of which ten are on record (a commit whose answer was lost):
    // the constraint refuses it, and it goes in again with the lookup, the ten left out.
    let overlapping: Vec<LedgerEntry> = (90..150).map(|i| entry(i, "a")).collect();
    assert_eq!(
        crate::journal::append_entries(&mut store, &overlapping).expect("append"),
        50
    );
    assert_eq!(store.next, Recorded::Maybe);
    assert_eq!(count(&postgres), 150);
    let report = verify_now(&pool);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 150);
    // The same straight through `append`: a batch entirely on record adds nothing.
    let rows: Vec<(LedgerEntry, String)> = (0..20)
        .map(|i| entry(i, "a"))
        .map(|e| {
            let canonical = e.canonical();
            (e, canonical)
        })
        .collect();
    let borrowed: Vec<(&LedgerEntry, &str)> = rows.iter().map(|(e, c)| (e, c.as_str())).collect();
    let added = runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        append(&mut client, &borrowed, "test", Recorded::Unlikely).await
    });
    assert_eq!(added.expect("append"), 0);
    assert!(verify_now(&pool).ok);
}

#[test]
fn a_writer_behind_a_head_held_by_a_frozen_session_fails_within_the_lock_timeout() {
    let (_postgres, pool, _dir) = fixture();
    let rows: Vec<(LedgerEntry, String)> = (0..3)
        .map(|i| entry(i, "a"))
        .map(|e| {
            let canonical = e.canonical();
            (e, canonical)
        })
        .collect();
    let borrowed: Vec<(&LedgerEntry, &str)> = rows.iter().map(|(e, c)| (e, c.as_str())).collect();
    runtime().block_on(async {
        // Another replica, frozen with the head locked in an open transaction.
        let mut frozen = connect(&pool).await.expect("connect");
        let held = frozen.transaction().await.expect("begin");
        held.execute(
            "SELECT seq FROM ledger_head WHERE chain = $1 FOR UPDATE",
            &[&CHAIN],
        )
        .await
        .expect("lock the head");
        let mut writer = connect(&pool).await.expect("connect");
        let started = std::time::Instant::now();
        let appended = tokio::time::timeout(
            Duration::from_secs(20),
            append(&mut writer, &borrowed, "test", Recorded::Unlikely),
        )
        .await
        .expect("the append gave up by itself");
        let error = appended.expect_err("the head was held").to_string();
        assert!(error.contains("lock timeout"), "{error}");
        assert!(started.elapsed() >= Duration::from_secs(9), "{error}");
        // Every pooled session has the bounds, the URL's own options aside.
        let shown = writer
            .query_one(
                "SELECT current_setting('statement_timeout'), \
                 current_setting('idle_in_transaction_session_timeout')",
                &[],
            )
            .await
            .expect("show");
        assert_eq!(
            (shown.get::<_, String>(0), shown.get::<_, String>(1)),
            ("30s".to_owned(), "30s".to_owned())
        );
    });
}

#[test]
fn the_urls_own_options_keep_their_timeouts() {
    let (postgres, _pool, _dir) = fixture();
    let url = format!(
        "{}&options=-c%20lock_timeout%3D2s%20-c%20search_path%3Dpublic",
        postgres.url()
    );
    let pool = pool(&url, 1).expect("pool");
    let shown = runtime().block_on(async {
        let client = connect(&pool).await.expect("connect");
        client
            .query_one(
                "SELECT current_setting('lock_timeout'), current_setting('statement_timeout')",
                &[],
            )
            .await
            .expect("show")
    });
    assert_eq!(
        (shown.get::<_, String>(0), shown.get::<_, String>(1)),
        ("2s".to_owned(), "30s".to_owned())
    );
}
