//! Against a real PostgreSQL (switchboard-testkit): each `SharedOperations` is a replica of
//! its own name. A heartbeat's age is set in `manager_replicas` on PostgreSQL's clock rather
//! than waited for.

use switchboard_testkit::postgres::{DATABASE, Postgres};

use super::*;
use crate::manager::operation::{Request, State, Work};

fn server() -> Postgres {
    Postgres::start().unwrap_or_else(|error| panic!("{error}"))
}

async fn migrated(postgres: &Postgres) {
    switchboard_ledger::postgres::migrate::migrate_url(&postgres.url())
        .await
        .expect("migrate");
}

fn replica(postgres: &Postgres, name: &str) -> Arc<SharedOperations> {
    SharedOperations::start_as(&postgres.url(), name.to_owned()).expect("store")
}

/// An operation of `replica`, in `state`.
fn operation(id: &str, replica: &str, state: State) -> Operation {
    let request = Request::new(Work::Test {
        server: "s".to_owned(),
    });
    let mut operation = Operation::queued(id.to_owned(), request, 1);
    operation.state = state;
    operation.replica = Some(replica.to_owned());
    operation
}

/// Saves `operations` as replica `name`, then stops it (its heartbeat goes with it).
async fn saved_by(postgres: &Postgres, name: &str, operations: &[Operation]) {
    let store = replica(postgres, name);
    for operation in operations {
        store.save(operation).expect("save");
    }
    assert!(store.close(Duration::from_secs(10)).await, "written");
}

fn sql(postgres: &Postgres, query: &str) -> String {
    postgres.psql(DATABASE, query).expect("psql")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_replicas_past_the_lease_have_their_open_operations_failed_and_once() {
    let postgres = server();
    migrated(&postgres).await;
    // Rows as their replicas left them (written here: a live store would fail the others'
    // at once, as a replica does when another stops cleanly).
    for (id, owner, state) in [
        ("01A", "dead", State::InProgress),
        ("01B", "dead", State::Completed),
        ("01C", "gone", State::Queued),
        ("01D", "slow", State::InProgress),
    ] {
        let body = serde_json::to_string(&operation(id, owner, state)).expect("json");
        sql(
            &postgres,
            &format!(
                "INSERT INTO manager_operations (id, created_ms, state, body, replica) \
                 VALUES ('{id}', 1, '{}', '{body}', '{owner}')",
                state.as_str()
            ),
        );
    }
    // `dead` beat last just past the lease; `slow` is alive (its beat is set ahead, as if it
    // kept beating however long this test is starved of CPU); `gone` has no heartbeat.
    let lease = LEASE.as_secs();
    sql(
        &postgres,
        &format!(
            "INSERT INTO manager_replicas (replica, heartbeat_at) VALUES \
             ('dead', now() - interval '{} seconds'), ('slow', now() + interval '{} seconds'), \
             ('long_gone', now() - interval '2 hours') \
             ON CONFLICT (replica) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
            lease + 1,
            60
        ),
    );

    // The watcher's own follower reaps too: a call that finds the rows locked by it skips
    // them, so the outcome is read once both are done (they commit within moments).
    let watcher = replica(&postgres, "watcher");
    let expected = "01A=failed/watcher 01B=completed/- 01C=failed/watcher 01D=in_progress/-";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut states;
    loop {
        watcher.beat_and_reap().await.expect("reap");
        states = sql(
            &postgres,
            "SELECT string_agg(id || '=' || state || '/' || coalesce(reaped_by, '-'), ' ' \
             ORDER BY id) FROM manager_operations",
        );
        if states == expected || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(POLL / 5).await;
    }
    assert_eq!(states, expected);
    assert_eq!(
        sql(
            &postgres,
            "SELECT count(*) FROM manager_replicas WHERE replica = 'long_gone'"
        ),
        "0",
        "a heartbeat hours old is forgotten"
    );
    let body = sql(
        &postgres,
        "SELECT body FROM manager_operations WHERE id = '01A'",
    );
    let failed: Operation = serde_json::from_str(&body).expect("body");
    let error = failed.error.expect("a reason");
    assert_eq!(
        error,
        format!(
            "replica dead stopped answering while this operation was in progress (no heartbeat for {lease} s); marked failed by replica watcher"
        )
    );
    assert_eq!(
        failed.steps.iter().filter(|s| s.message == error).count(),
        1,
        "failed once: {:?}",
        failed.steps
    );

    // The dead replica's late write does not bring its operation back.
    let mut late = operation("01A", "dead", State::Completed);
    late.progress = 100;
    saved_by(&postgres, "dead", &[late]).await;
    assert_eq!(
        sql(
            &postgres,
            "SELECT state FROM manager_operations WHERE id = '01A'"
        ),
        "failed"
    );
    assert!(watcher.close(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_one_replica_saves_another_reads_within_a_poll() {
    let postgres = server();
    migrated(&postgres).await;
    let a = replica(&postgres, "a");
    let b = replica(&postgres, "b");
    b.synced(Duration::from_secs(10)).await;
    let mut running = operation("01A", "a", State::InProgress);
    a.save(&running).expect("save");
    running.progress = 40;
    running.message = "halfway".to_owned();
    a.save(&running).expect("save");
    a.record_install(&Installed {
        server: "s".to_owned(),
        name: "io.example/s".to_owned(),
        version: "1.0.0".to_owned(),
        dir: "/srv/switchboard/s".into(),
        operation: "01A".to_owned(),
        installed_ms: 5,
        secrets: Vec::new(),
        replica: Some("a".to_owned()),
    })
    .expect("record");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let seen = b.get("01A").expect("get");
        let installed = b.install_of("s").expect("install");
        if seen.as_ref().is_some_and(|o| o.progress == 40) && installed.is_some() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not seen on b: {seen:?} {installed:?}"
        );
        tokio::time::sleep(POLL / 5).await;
    }
    assert_eq!(
        b.recent(10).expect("recent")[0].message,
        "halfway",
        "the newest state"
    );
    assert!(a.close(Duration::from_secs(10)).await);
    assert!(b.close(Duration::from_secs(10)).await);
}
