//! Against a real PostgreSQL (switchboard-testkit): each `SharedOperations` is a replica of
//! its own name. A heartbeat's age is set in `manager_replicas` on PostgreSQL's clock rather
//! than waited for.

use switchboard_testkit::postgres::{DATABASE, Postgres};

use super::*;
use crate::manager::operation::{Request, State, Work};
use crate::manager::store::Retention;

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
    // Made now: older rows than the retention's would be pruned by a replica as it starts.
    let mut operation = Operation::queued(id.to_owned(), request, crate::manager::now_ms());
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

/// As if `store` had reached PostgreSQL throughout the last lease (it may judge others).
fn connected_for_a_lease(store: &SharedOperations) {
    let since = std::time::Instant::now()
        .checked_sub(LEASE)
        .expect("the clock is past a lease");
    crate::manager::lock(&store.continuity).connected_since(since);
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
        let operation = operation(id, owner, state);
        let body = serde_json::to_string(&operation).expect("json");
        sql(
            &postgres,
            &format!(
                "INSERT INTO manager_operations (id, created_ms, state, body, replica) \
                 VALUES ('{id}', {}, '{}', '{body}', '{owner}')",
                operation.created_ms,
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
    connected_for_a_lease(&watcher);
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
        agent: None,
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

/// Operation `id` of `agent`, queued by `replica`.
fn asked_by(id: &str, replica: &str, agent: &str) -> Operation {
    let mut operation = operation(id, replica, State::Queued);
    operation.request.agent = Some(agent.to_owned());
    operation
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_admitting_one_agent_at_once_never_pass_its_limit_together() {
    let postgres = server();
    migrated(&postgres).await;
    let a = replica(&postgres, "a");
    let b = replica(&postgres, "b");
    let limit = 4;
    for id in ["01A0", "01A1"] {
        assert_eq!(
            a.admit(&asked_by(id, "a", "npc"), Some("npc"), limit, None)
                .await
                .expect("admit"),
            None
        );
    }
    // Twenty at once, half through each replica, for the last two slots.
    let started = std::time::Instant::now();
    let attempts = (0..20).map(|n| {
        let (store, name) = if n % 2 == 0 { (&a, "a") } else { (&b, "b") };
        let operation = asked_by(&format!("01B{n:02}"), name, "npc");
        async move { store.admit(&operation, Some("npc"), limit, None).await }
    });
    let outcomes = futures::future::join_all(attempts).await;
    let took = started.elapsed();
    let admitted = outcomes.iter().filter(|o| matches!(o, Ok(None))).count();
    let refused: Vec<Refusal> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().ok().cloned().flatten())
        .collect();
    assert_eq!(admitted, 2, "{outcomes:?}");
    assert_eq!(
        refused,
        vec![Refusal::TooMany(4); 18],
        "each refusal counts all four"
    );
    eprintln!("20 concurrent admissions through two replicas took {took:?}");
    assert_eq!(
        sql(
            &postgres,
            "SELECT count(*) FROM manager_operations WHERE agent = 'npc'"
        ),
        "4"
    );
    // Another agent has its own slots; one of npc's ending frees one, on either replica.
    assert_eq!(
        b.admit(&asked_by("01C0", "b", "other"), Some("other"), limit, None)
            .await
            .expect("admit"),
        None
    );
    let mut done = asked_by("01A0", "a", "npc");
    done.state = State::Completed;
    a.save(&done).expect("save");
    assert!(a.flush(Duration::from_secs(10)).await);
    assert_eq!(
        b.admit(&asked_by("01C1", "b", "npc"), Some("npc"), limit, None)
            .await
            .expect("admit"),
        None
    );
    assert_eq!(
        b.admit(&asked_by("01C2", "b", "npc"), Some("npc"), limit, None)
            .await
            .expect("admit"),
        Some(Refusal::TooMany(4))
    );
    // What a replica admitted is in its mirror at once, and the other's quick count
    // catches up within a poll.
    assert!(b.get("01C1").expect("get").is_some());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while a.open_of("npc") != 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}",
            a.open_of("npc")
        );
        tokio::time::sleep(POLL / 5).await;
    }
    // With PostgreSQL away the count cannot be taken: refused, saying so; back, admitted.
    postgres.stop().expect("stop");
    let error = b
        .admit(&asked_by("01D0", "b", "other"), Some("other"), limit, None)
        .await
        .expect_err("no count without PostgreSQL");
    assert!(
        error
            .to_string()
            .starts_with("the operations database on PostgreSQL ([storage] url): "),
        "{error}"
    );
    postgres.resume().expect("resume");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while b
        .admit(&asked_by("01D0", "b", "other"), Some("other"), limit, None)
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not admitted once back"
        );
        tokio::time::sleep(POLL / 5).await;
    }
    assert!(a.close(Duration::from_secs(10)).await);
    assert!(b.close(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_operations_past_their_retention_are_pruned_and_open_ones_never() {
    let postgres = server();
    migrated(&postgres).await;
    let now = crate::manager::now_ms();
    let day = 24 * 3600 * 1000;
    // Rows as the replicas left them: a month-old finished one (pruned by a replica as it
    // starts), an older one still open (never), and five recent finished ones.
    let rows = [
        ("01OLD", "gone", State::Completed, now - 31 * day),
        ("01OPEN", "pruner", State::InProgress, now - 40 * day),
        ("01R1", "gone", State::Failed, now - 5 * day),
        ("01R2", "gone", State::Cancelled, now - 4 * day),
        ("01R3", "gone", State::Completed, now - 3 * day),
        ("01R4", "gone", State::Completed, now - 2 * day),
        ("01R5", "gone", State::Completed, now - day),
    ];
    for (id, owner, state, created) in rows {
        let mut operation = operation(id, owner, state);
        operation.created_ms = created;
        let body = serde_json::to_string(&operation).expect("json");
        sql(
            &postgres,
            &format!(
                "INSERT INTO manager_operations (id, created_ms, state, body, replica) \
                 VALUES ('{id}', {created}, '{}', '{body}', '{owner}')",
                state.as_str()
            ),
        );
    }
    let ids = || {
        sql(
            &postgres,
            "SELECT string_agg(id, ' ' ORDER BY id) FROM manager_operations",
        )
    };
    // The replica's follower prunes as it starts (30 days, 2,000 at most).
    let pruner = replica(&postgres, "pruner");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while ids() != "01OPEN 01R1 01R2 01R3 01R4 01R5" {
        assert!(tokio::time::Instant::now() < deadline, "{}", ids());
        tokio::time::sleep(POLL / 5).await;
    }
    assert!(pruner.get("01OLD").expect("get").is_none(), "nor mirrored");
    // At most three finished: the newest three stay, the open one too however old.
    let kept = Retention {
        days: 30,
        finished: 3,
    };
    assert_eq!(pruner.prune(kept, now).await.expect("prune"), 2);
    assert_eq!(ids(), "01OPEN 01R3 01R4 01R5");
    assert_eq!(pruner.prune(kept, now).await.expect("prune"), 0);
    let listed: Vec<String> = pruner
        .recent(10)
        .expect("recent")
        .into_iter()
        .map(|o| o.id)
        .collect();
    assert_eq!(listed, ["01R5", "01R4", "01R3", "01OPEN"]);
    assert!(pruner.close(Duration::from_secs(10)).await);
}

/// An install of the registry's `name` (as `server` when given), queued by `replica` for
/// `agent` (an operator's when none).
fn install(
    id: &str,
    replica: &str,
    agent: Option<&str>,
    name: &str,
    server: Option<&str>,
) -> Operation {
    let request = Request::new(Work::Install {
        name: name.to_owned(),
        version: None,
        server: server.map(str::to_owned),
        values: std::collections::BTreeMap::new(),
        activation: crate::manager::Activation::Policy,
    });
    let mut operation = Operation::queued(id.to_owned(), request, crate::manager::now_ms());
    operation.replica = Some(replica.to_owned());
    operation.request.agent = agent.map(str::to_owned);
    operation
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_adding_one_new_server_at_once_admit_one_operation() {
    let postgres = server();
    migrated(&postgres).await;
    let a = replica(&postgres, "a");
    let b = replica(&postgres, "b");
    let limit = 4;
    // Twenty at once, half through each replica, all adding `echo`: an operator's, two
    // agents', the id named or derived from the registry name; and one adding `other`.
    let attempts = (0..21).map(|n| {
        let (store, name) = if n % 2 == 0 { (&a, "a") } else { (&b, "b") };
        let agent = [None, Some("npc"), Some("pc")][n % 3];
        let (registry, server) = match n {
            20 => ("io.example/other", None),
            n if n % 4 < 2 => ("io.example/Echo", None),
            _ => ("io.example/anything", Some("echo")),
        };
        let operation = install(&format!("01E{n:02}"), name, agent, registry, server);
        let adds = operation.request.work.adds();
        async move {
            let admitted = store.admit(&operation, agent, limit, adds.as_deref()).await;
            (operation.id, name, admitted)
        }
    });
    let outcomes = futures::future::join_all(attempts).await;
    let admitted: Vec<(&str, &str)> = outcomes
        .iter()
        .filter(|(id, _, o)| matches!(o, Ok(None)) && id != "01E20")
        .map(|(id, name, _)| (id.as_str(), *name))
        .collect();
    let [(first, first_on)] = admitted[..] else {
        panic!("not one admitted: {outcomes:?}");
    };
    for (id, _, outcome) in &outcomes {
        let expected = match id.as_str() {
            "01E20" => None,
            id if id == first => None,
            _ => Some(Refusal::Adding {
                server: "echo".to_owned(),
                id: first.to_owned(),
                replica: first_on.to_owned(),
            }),
        };
        assert_eq!(outcome.as_ref().ok(), Some(&expected), "{id}");
    }
    let open_adding = |server: &str| {
        sql(
            &postgres,
            &format!(
                "SELECT count(*) FROM manager_operations WHERE adds = '{server}' \
                 AND state IN ('queued', 'in_progress')"
            ),
        )
    };
    assert_eq!(
        (open_adding("echo"), open_adding("other")),
        ("1".into(), "1".into())
    );

    // Once the first ends (written behind by its replica), either replica admits another.
    let owner = if first_on == "a" { &a } else { &b };
    let mut done = owner.get(first).expect("get").expect("mirrored");
    done.state = State::Failed;
    owner.save(&done).expect("save");
    assert!(owner.flush(Duration::from_secs(10)).await);
    let again = install("01F0", "b", Some("npc"), "io.example/echo", None);
    let adds = again.request.work.adds();
    assert_eq!(
        b.admit(&again, Some("npc"), limit, adds.as_deref())
            .await
            .expect("admit"),
        None
    );
    // A later write of it keeps what it adds (the write-behind's upsert leaves `adds`).
    let mut running = again.clone();
    running.state = State::InProgress;
    b.save(&running).expect("save");
    assert!(b.flush(Duration::from_secs(10)).await);
    assert_eq!(open_adding("echo"), "1");
    assert!(a.close(Duration::from_secs(10)).await);
    assert!(b.close(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_replica_fails_what_its_predecessor_left_open_as_it_starts() {
    let postgres = server();
    migrated(&postgres).await;
    // Process 1 of host `box` crashed a moment ago (its heartbeat is still fresh) with an
    // operation in progress; process 12 of the same host is alive.
    for (id, owner) in [("01P", "box:1#0000aaaa"), ("01Q", "box:12#0000cccc")] {
        let operation = operation(id, owner, State::InProgress);
        let body = serde_json::to_string(&operation).expect("json");
        sql(
            &postgres,
            &format!(
                "INSERT INTO manager_operations (id, created_ms, state, body, replica) \
                 VALUES ('{id}', {}, 'in_progress', '{body}', '{owner}'); \
                 INSERT INTO manager_replicas (replica, heartbeat_at) \
                 VALUES ('{owner}', now() + interval '60 seconds')",
                operation.created_ms
            ),
        );
    }
    // Restarted as process 1 again, as in a container: a name of its own all the same.
    let named = incarnation_of("box:1");
    assert!(named.starts_with("box:1#") && named != "box:1#0000aaaa");
    let restarted = replica(&postgres, &named);
    restarted.synced(Duration::from_secs(10)).await;
    let states = sql(
        &postgres,
        "SELECT string_agg(id || '=' || state || '/' || coalesce(reaped_by, '-'), ' ' \
         ORDER BY id) FROM manager_operations",
    );
    assert_eq!(states, format!("01P=failed/{named} 01Q=in_progress/-"));
    let body = sql(
        &postgres,
        "SELECT body FROM manager_operations WHERE id = '01P'",
    );
    let failed: Operation = serde_json::from_str(&body).expect("body");
    assert_eq!(
        failed.error.expect("a reason"),
        format!(
            "replica box:1#0000aaaa stopped while this operation was in progress; marked failed \
             by its restart, replica {named}"
        )
    );
    assert!(restarted.close(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_back_from_an_outage_fails_no_stale_heartbeats_until_connected_a_lease() {
    let postgres = server();
    migrated(&postgres).await;
    // `other` is running its operation; its heartbeat is stale only because PostgreSQL was
    // away (for everyone) longer than the lease.
    let operation = operation("01S", "other", State::InProgress);
    let body = serde_json::to_string(&operation).expect("json");
    sql(
        &postgres,
        &format!(
            "INSERT INTO manager_operations (id, created_ms, state, body, replica) \
             VALUES ('01S', {}, 'in_progress', '{body}', 'other'); \
             INSERT INTO manager_replicas (replica, heartbeat_at) \
             VALUES ('other', now() - interval '{} seconds')",
            operation.created_ms,
            LEASE.as_secs() + 20
        ),
    );
    let first_back = replica(&postgres, "first_back");
    first_back.synced(Duration::from_secs(10)).await;
    for _ in 0..3 {
        assert_eq!(first_back.beat_and_reap().await.expect("beat"), 0);
    }
    let state = || {
        sql(
            &postgres,
            "SELECT state FROM manager_operations WHERE id = '01S'",
        )
    };
    assert_eq!(state(), "in_progress", "judged before a lease connected");
    // A lease later `other` has not beaten again: it is gone.
    connected_for_a_lease(&first_back);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while state() != "failed" && tokio::time::Instant::now() < deadline {
        first_back.beat_and_reap().await.expect("beat");
        tokio::time::sleep(POLL / 5).await;
    }
    assert_eq!(state(), "failed");
    assert!(first_back.close(Duration::from_secs(10)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_that_reads_its_operation_was_failed_by_another_replica_cancels_it() {
    let postgres = server();
    migrated(&postgres).await;
    let owner = replica(&postgres, "owner");
    owner.synced(Duration::from_secs(10)).await;
    owner
        .save(&operation("01R", "owner", State::InProgress))
        .expect("save");
    assert!(owner.flush(Duration::from_secs(10)).await, "written");
    // Another replica took the owner's heartbeat for lapsed.
    sql(
        &postgres,
        "UPDATE manager_operations SET state = 'failed', reaped_by = 'judge', \
         updated_at = now(), seq = nextval('manager_operations_seq') WHERE id = '01R'",
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut asked = Vec::new();
    while asked.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(POLL / 5).await;
        asked = owner.cancel_requests();
    }
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "01R");
    assert!(
        asked[0].1.starts_with("replica judge marked it failed"),
        "{asked:?}"
    );
    assert!(owner.close(Duration::from_secs(10)).await);
}
