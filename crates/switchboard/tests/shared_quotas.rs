//! Cost quotas shared on a real PostgreSQL 15 (`switchboard-testkit`), through the library:
//! two replicas' `Limits`, each with its own `SharedSpending` followed by `quotas::follow`.
//! What one spends is counted by the other within a refresh or two and never by itself twice;
//! with the database stopped, each keeps enforcing with its own spending and the other's as
//! last read, and what was spent meanwhile reaches the other once the database is back. A send
//! given up on that the database applied anyway is not counted again when it is repeated. A
//! process restarted under the same replica name counts what its predecessor spent. A prune
//! PostgreSQL does not answer gives up within the exchange's time limit.

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard::quotas::{QuotaStore, REFRESH, follow};
use switchboard_core::limits::{Limits, Quota, Refusal, SharedSpending, Taken, Unsent};
use switchboard_testkit::postgres::{DATABASE, Postgres};

const WINDOW: Duration = Duration::from_secs(3600);

/// A replica named `name`: agent `npc` has a quota of 10 an hour.
fn replica(postgres: &Postgres, name: &str) -> Limits {
    replica_with(QuotaStore::new(&postgres.url(), name.to_owned()).expect("store"))
}

fn replica_with(store: QuotaStore) -> Limits {
    let spending = Arc::new(SharedSpending::new());
    follow(store, &spending);
    let quotas = HashMap::from([("npc".to_owned(), Quota::new(10.0, WINDOW))]);
    Limits::new(HashMap::new(), quotas).with_shared_spending(spending)
}

/// What `replica` holds in PostgreSQL for `npc`.
fn stored_by(postgres: &Postgres, replica: &str) -> String {
    postgres
        .psql(
            DATABASE,
            &format!(
                "SELECT coalesce(sum(cost), 0) FROM quota_spending \
                 WHERE agent = 'npc' AND replica = '{replica}'"
            ),
        )
        .expect("rows")
}

/// What `limits` counts as spent for `npc` now: `None` while the quota has room.
async fn spent(limits: &Limits) -> Option<f64> {
    match limits.admit(&[], Some("npc")).await {
        Ok(_) => None,
        Err(Refusal::Quota(exceeded)) => Some(exceeded.spent),
        Err(other) => panic!("a quota refusal, not {other}"),
    }
}

/// Waits until `limits` refuses `npc` counting `want`; how long that took.
async fn refused_with(limits: &Limits, want: f64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        if spent(limits).await == Some(want) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "refused counting {want} within {limit:?}; counts {:?}",
            spent(limits).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_count_each_others_spending_and_catch_up_after_an_outage() {
    let postgres = support::migrated_postgres().await;
    let a = replica(&postgres, "host-a:1");
    let b = replica(&postgres, "host-b:2");

    // A spends 10: it refuses at once, B within two refreshes (and a little).
    a.charge(Some("npc"), 4.0);
    a.charge(Some("npc"), 6.0);
    assert_eq!(
        spent(&a).await,
        Some(10.0),
        "its own spending counts at once"
    );
    let took = refused_with(&b, 10.0, REFRESH * 2 + Duration::from_millis(500)).await;
    eprintln!("the other replica counted the spending after {took:?}");
    // A's own rows are not counted twice by A.
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(spent(&a).await, Some(10.0));

    // The database stopped: both keep enforcing with what they know, at once.
    postgres.stop().expect("stop");
    tokio::time::sleep(REFRESH * 2).await;
    let asked = Instant::now();
    assert_eq!(spent(&b).await, Some(10.0), "the last figures still count");
    assert!(asked.elapsed() < Duration::from_millis(50), "no wait");
    b.charge(Some("npc"), 5.0);
    assert_eq!(spent(&b).await, Some(15.0));
    assert_eq!(
        spent(&a).await,
        Some(10.0),
        "B's spending has not reached A"
    );

    // Back: B's spending of the outage is sent and A counts it.
    postgres.resume().expect("resume");
    refused_with(&a, 15.0, Duration::from_secs(10)).await;
    let stored = postgres
        .psql(
            DATABASE,
            "SELECT replica || '=' || sum(cost) FROM quota_spending GROUP BY replica ORDER BY replica",
        )
        .expect("rows");
    assert_eq!(
        stored.split_whitespace().collect::<Vec<_>>(),
        ["host-a:1=10", "host-b:2=5"],
        "each replica's spending, once"
    );

    // A replica stopping flushes: what it spent a moment ago is in the database at once,
    // not at the next refresh.
    let c = replica(&postgres, "host-c:3");
    tokio::time::sleep(REFRESH).await;
    c.charge(Some("npc"), 1.0);
    let spending = c.shared_spending().expect("shared");
    let asked = Instant::now();
    assert!(spending.flush(Duration::from_secs(2)).await, "flushed");
    eprintln!("a flush took {:?}", asked.elapsed());
    assert_eq!(stored_by(&postgres, "host-c:3").trim(), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_that_timed_out_but_was_applied_is_not_counted_twice() {
    let postgres = support::migrated_postgres().await;
    // Another session inserts, and does not commit, the replica's rows for this minute's
    // bucket and the next two: the replica's exchanges wait for it as they add to them (the
    // statement is in the database, past its parsing), past their time limit, and each
    // attempt given up on stays queued there, to be applied when the session ends.
    let store = QuotaStore::new(&postgres.url(), "host-a:1".to_owned())
        .expect("store")
        .with_exchange_timeout(Duration::from_millis(200));
    let pool = switchboard_ledger::postgres::pool(&postgres.url(), 1).expect("pool");
    let blocker = pool.get().await.expect("a connection");
    blocker
        .batch_execute(&format!(
            "BEGIN; \
             INSERT INTO quota_spending (agent, replica, incarnation, start_ms, expires_ms, cost) \
             SELECT 'npc', 'host-a:1', '{}', (now_ms / 60000 + k) * 60000, now_ms + 7200000, 0 \
             FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms) \
             AS clock, generate_series(0, 2) AS k",
            store.incarnation()
        ))
        .await
        .expect("the rows held");
    let a = replica_with(store);
    a.charge(Some("npc"), 4.0);
    tokio::time::sleep(REFRESH * 3).await;
    assert_eq!(stored_by(&postgres, "host-a:1").trim(), "0", "still held");

    // Committed: the attempts given up on run, then the replica sends once more.
    blocker.batch_execute("COMMIT").await.expect("unlock");
    a.charge(Some("npc"), 1.0);
    let started = Instant::now();
    while stored_by(&postgres, "host-a:1").trim() != "5" {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "stored {} for 5 spent",
            stored_by(&postgres, "host-a:1").trim()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(REFRESH * 3).await;
    assert_eq!(
        stored_by(&postgres, "host-a:1").trim(),
        "5",
        "each send applied once"
    );
    assert_eq!(spent(&a).await, None, "5 of 10: room left");
}

/// Replica names are host and process id, which repeat: a container restarted in place is
/// PID 1 on the same host name again. What its predecessor spent still counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_restarted_under_the_same_name_counts_what_its_predecessor_spent() {
    let postgres = support::migrated_postgres().await;
    let before = replica(&postgres, "pod-0:1");
    before.charge(Some("npc"), 7.0);
    let spending = before.shared_spending().expect("shared");
    assert!(spending.flush(Duration::from_secs(2)).await, "flushed");
    drop(before);
    assert_eq!(stored_by(&postgres, "pod-0:1").trim(), "7");

    let after = replica(&postgres, "pod-0:1");
    after.charge(Some("npc"), 3.0);
    refused_with(&after, 10.0, REFRESH * 2 + Duration::from_millis(500)).await;
    tokio::time::sleep(REFRESH * 2).await;
    assert_eq!(
        spent(&after).await,
        Some(10.0),
        "its own 3 not counted twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_send_number_is_applied_once_per_process_and_a_restart_starts_afresh() {
    let postgres = support::migrated_postgres().await;
    let send = |number, cost| Taken {
        number,
        unsent: vec![Unsent {
            agent: "npc".to_owned(),
            window: WINDOW,
            cost,
        }],
    };
    let first = QuotaStore::new(&postgres.url(), "host-r:1".to_owned()).expect("store");
    first.exchange(&send(5, 1.0)).await.expect("sent");
    first.exchange(&send(5, 1.0)).await.expect("sent again");
    first.exchange(&send(4, 1.0)).await.expect("an older one");
    assert_eq!(
        stored_by(&postgres, "host-r:1").trim(),
        "1",
        "5 once, 4 not after it"
    );
    // The same replica name in a new process: its sends are numbered from 1 again.
    let restarted = QuotaStore::new(&postgres.url(), "host-r:1".to_owned()).expect("store");
    restarted.exchange(&send(1, 2.0)).await.expect("sent");
    restarted.exchange(&send(1, 2.0)).await.expect("sent again");
    assert_eq!(stored_by(&postgres, "host-r:1").trim(), "3");

    // Pruned: spending a minute past its window, and the numbers of a process silent 30 days.
    postgres
        .psql(
            DATABASE,
            "UPDATE quota_spending SET expires_ms = 0; \
             UPDATE quota_sends SET at_ms = at_ms - 2592000000 - 60000 WHERE sent = 5",
        )
        .expect("aged");
    let deleted = first.prune().await.expect("pruned");
    assert!(deleted >= 2, "{deleted} rows");
    assert_eq!(stored_by(&postgres, "host-r:1").trim(), "0");
    let kept = postgres
        .psql(
            DATABASE,
            "SELECT string_agg(sent::text, ',') FROM quota_sends",
        )
        .expect("rows");
    assert_eq!(kept.trim(), "1", "the restarted process's numbers are kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_the_database_does_not_answer_gives_up_within_the_exchange_limit() {
    let postgres = support::migrated_postgres().await;
    // No lock timeout on this replica's sessions: a wait for a lock stands for a connection
    // that went silent.
    let url = format!("{}&options=-c%20lock_timeout%3D0", postgres.url());
    let store = QuotaStore::new(&url, "host-a:1".to_owned())
        .expect("store")
        .with_exchange_timeout(Duration::from_millis(300));
    let pool = switchboard_ledger::postgres::pool(&postgres.url(), 1).expect("pool");
    let blocker = pool.get().await.expect("a connection");
    blocker
        .batch_execute("BEGIN; LOCK TABLE quota_spending IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("the table held");
    let asked = Instant::now();
    let pruned = tokio::time::timeout(Duration::from_secs(5), store.prune())
        .await
        .expect("the prune gave up by itself");
    let error = pruned.expect_err("the table was held").to_string();
    assert!(error.contains("no answer within 300ms"), "{error}");
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    // Once the table is free, the next prune goes through (on a connection of its own).
    blocker.batch_execute("COMMIT").await.expect("unlock");
    store.prune().await.expect("pruned");
}
