//! Agents' tokens on a real PostgreSQL 15 (`switchboard-testkit`), through the library: a
//! replica's `LiveTokens` follows the table (a revocation written without a notification is
//! still seen, by the poll), tokens of agents the config does not define are ignored, and
//! when the database goes away the stored tokens are refused within `STALE_AFTER` of the
//! last read — the config's own tokens stay accepted — and accepted again once it is back. A
//! read PostgreSQL does not answer gives up within `READ_TIMEOUT`.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use switchboard::tokens::shared::{POLL, READ_TIMEOUT, STALE_AFTER};
use switchboard::tokens::{LiveTokens, SharedTokens, new_token};
use switchboard_mcp::front::http::Authenticator;
use switchboard_testkit::postgres::DATABASE;

/// How long after `since` `live` first answers `want` for `token` (None: not within `limit`).
async fn answered(
    live: &LiveTokens,
    token: &str,
    want: Option<&str>,
    since: Instant,
    limit: Duration,
) -> Option<Duration> {
    loop {
        if live.agent_for(token).as_deref() == want {
            return Some(since.elapsed());
        }
        if since.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_tokens_are_followed_and_refused_within_the_bound_when_the_database_is_gone() {
    let postgres = support::migrated_postgres().await;
    let store = SharedTokens::new(&postgres.url()).expect("store");
    let (first, first_stored) = new_token("qa");
    let (ghost, ghost_stored) = new_token("ghost");
    let (fixed, fixed_stored) = new_token("qa");
    assert_eq!(
        store
            .insert(&[first_stored.clone(), ghost_stored])
            .await
            .expect("insert"),
        2
    );
    let live = LiveTokens::shared(
        vec![fixed_stored],
        SharedTokens::new(&postgres.url()).expect("store"),
        BTreeSet::from(["qa".to_owned()]),
    )
    .await
    .expect("live");
    assert_eq!(live.agent_for(&first).as_deref(), Some("qa"));
    assert_eq!(live.agent_for(&fixed).as_deref(), Some("qa"));
    assert_eq!(live.agent_for(&ghost), None, "not an agent of the config");

    // A revocation that sends no notification is still seen, by the poll.
    postgres
        .psql(
            DATABASE,
            &format!(
                "UPDATE agent_tokens SET revoked_at = now() WHERE id = '{}'",
                first_stored.id()
            ),
        )
        .expect("revoke quietly");
    let took = answered(&live, &first, None, Instant::now(), Duration::from_secs(3))
        .await
        .expect("the poll sees the revocation");
    assert!(took <= POLL * 2, "seen after {took:?}");

    // A token made through the store (notified) is accepted at once.
    let (second, second_stored) = new_token("qa");
    store.insert(&[second_stored]).await.expect("insert");
    answered(
        &live,
        &second,
        Some("qa"),
        Instant::now(),
        Duration::from_secs(1),
    )
    .await
    .expect("the new token is accepted");

    // The database goes away: the stored token is refused within the bound, the config's
    // own token stays accepted.
    postgres.stop().expect("stop");
    let stopped = Instant::now();
    let took = answered(
        &live,
        &second,
        None,
        stopped,
        STALE_AFTER + Duration::from_secs(2),
    )
    .await
    .expect("refused once the last read is stale");
    assert!(
        took <= STALE_AFTER + Duration::from_millis(100),
        "a stored token was trusted {took:?} after the database went away"
    );
    assert_eq!(live.agent_for(&fixed).as_deref(), Some("qa"));

    // Back: the stored token is accepted again, without a restart.
    postgres.resume().expect("resume");
    answered(
        &live,
        &second,
        Some("qa"),
        Instant::now(),
        Duration::from_secs(10),
    )
    .await
    .expect("accepted again once the database is back");
    assert_eq!(live.agent_for(&first), None, "still revoked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_the_database_does_not_answer_gives_up_within_the_read_timeout() {
    let postgres = support::migrated_postgres().await;
    // No lock timeout on this replica's sessions: a wait for a lock stands for a connection
    // that went silent.
    let url = format!("{}&options=-c%20lock_timeout%3D0", postgres.url());
    let store = SharedTokens::new(&url).expect("store");
    let pool = switchboard_ledger::postgres::pool(&postgres.url(), 1).expect("pool");
    let blocker = pool.get().await.expect("a connection");
    blocker
        .batch_execute("BEGIN; LOCK TABLE agent_tokens IN ACCESS EXCLUSIVE MODE")
        .await
        .expect("the table held");
    let asked = Instant::now();
    let read = tokio::time::timeout(READ_TIMEOUT * 3, store.live())
        .await
        .expect("the read gave up by itself");
    let error = read.expect_err("the table was held").to_string();
    assert!(error.contains("no answer within"), "{error}");
    assert!(asked.elapsed() < READ_TIMEOUT * 2, "{:?}", asked.elapsed());
    // Once the table is free, the next read goes through (on a connection of its own).
    blocker.batch_execute("COMMIT").await.expect("unlock");
    assert!(store.live().await.expect("read").is_empty());
}
