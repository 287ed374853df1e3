//! How a batch leaves out rows already on record, on a real PostgreSQL 15: fresh rows go in
//! without looking their call ids up, and one already on record sends the batch through the
//! lookup ([`Recorded`]).

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
