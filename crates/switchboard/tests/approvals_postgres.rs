//! The operator queue on PostgreSQL, two queues standing for two replicas on one database:
//! a time-boxed grant made through one answers (and, revoked, stops answering) calls on the
//! other; a call that timed out or was given up is closed and can no longer be approved;
//! a decision made while the waiting replica's database was restarting still reaches it.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, json};
use switchboard::{AnswerError, PendingApprovals};
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_testkit::postgres::{DATABASE, Postgres};

/// A migrated PostgreSQL and two queues on it.
async fn two_replicas() -> (Postgres, Arc<PendingApprovals>, Arc<PendingApprovals>) {
    let postgres = support::migrated_postgres().await;
    let a = PendingApprovals::on_postgres(&postgres.url()).expect("replica A");
    let b = PendingApprovals::on_postgres(&postgres.url()).expect("replica B");
    (postgres, a, b)
}

fn request(id: &str) -> ApprovalRequest {
    let mut arguments = Map::new();
    arguments.insert("path".into(), json!("/tmp/x"));
    arguments.insert(
        "api_key".into(),
        json!("sk-live-0123456789abcdef0123456789"),
    );
    ApprovalRequest {
        call_id: id.to_owned(),
        agent: Some("qa".to_owned()),
        tool: "t__delete".to_owned(),
        server: "t".to_owned(),
        arguments,
        reason: "this agent's calls need approval".to_owned(),
    }
}

/// Asks on `queue` in a task of its own.
fn ask(
    queue: &Arc<PendingApprovals>,
    id: &str,
    timeout: Duration,
) -> tokio::task::JoinHandle<Decision> {
    let (queue, request) = (queue.clone(), request(id));
    tokio::spawn(async move { queue.ask(request, timeout).await })
}

/// Waits (at most 5 s) until `check` holds.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let started = tokio::time::Instant::now();
    while !check() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: not within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn state(postgres: &Postgres, id: &str) -> String {
    postgres
        .psql(
            DATABASE,
            &format!(
                "SELECT state || ':' || coalesce(decided_by, '') FROM approvals WHERE id = '{id}'"
            ),
        )
        .expect("state")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_made_through_one_replica_answers_calls_on_the_other() {
    let (_postgres, a, b) = two_replicas().await;
    let asked = ask(&a, "c1", Duration::from_secs(30));
    eventually("B lists A's call", || b.list().len() == 1).await;
    let listed = b.list();
    assert_eq!(listed[0].id, "c1");
    assert_eq!(listed[0].arguments["path"], "/tmp/x");
    assert_ne!(
        listed[0].arguments["api_key"], "sk-live-0123456789abcdef0123456789",
        "secrets are redacted in the shared row"
    );
    let grant = b.approve_for("c1", 5, "alice").await.expect("pending");
    let decided = tokio::time::Instant::now();
    assert_eq!((grant.agent.as_deref(), grant.minutes), (Some("qa"), 5));
    let decision = asked.await.expect("join");
    // NOTIFY wakes A: well under the 500 ms poll that would otherwise find it.
    let woke = decided.elapsed();
    eprintln!("decided on B -> answered on A in {woke:?}");
    assert!(woke < Duration::from_millis(400), "{woke:?}");
    match decision {
        Decision::Approved { by, channel } => {
            assert_eq!(by, "alice");
            assert!(channel.contains("5 min"), "{channel}");
        }
        other => panic!("not approved: {other:?}"),
    }
    eventually("A holds B's grant", || {
        a.granted(Some("qa"), "t__delete").is_some()
    })
    .await;
    assert!(a.granted(Some("npc"), "t__delete").is_none());
    assert_eq!(a.grants().len(), 1);
    assert!(a.list().is_empty());

    assert_eq!(b.revoke_grant(Some("qa"), "t__delete").await, Ok(true));
    eventually("A drops the revoked grant", || {
        a.granted(Some("qa"), "t__delete").is_none()
    })
    .await;
    assert_eq!(a.revoke_grant(Some("qa"), "t__delete").await, Ok(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_and_abandoned_calls_are_closed_for_every_replica() {
    let (postgres, a, b) = two_replicas().await;
    let timed_out = ask(&a, "late", Duration::from_millis(300))
        .await
        .expect("join");
    assert!(
        matches!(&timed_out, Decision::Denied { by, .. } if by == "timeout"),
        "{timed_out:?}"
    );
    assert_eq!(state(&postgres, "late"), "expired:timeout");
    match b.answer("late", true, "bob", None).await {
        Err(AnswerError::AlreadyDecided { state, .. }) => assert_eq!(state, "expired"),
        other => panic!("a closed approval was answered: {other:?}"),
    }

    let given_up = ask(&a, "gone", Duration::from_secs(30));
    eventually("B lists the call", || {
        b.list().iter().map(|p| p.id.as_str()).eq(["gone"])
    })
    .await;
    given_up.abort();
    eventually("the abandoned call leaves B's list", || b.list().is_empty()).await;
    assert_eq!(state(&postgres, "gone"), "withdrawn:timeout");
    assert!(b.answer("gone", true, "bob", None).await.is_err());
    assert!(matches!(
        b.answer("never", true, "bob", None).await,
        Err(AnswerError::NotPending(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_while_the_database_restarted_reaches_the_waiting_call() {
    let (postgres, a, b) = two_replicas().await;
    let asked = ask(&a, "c2", Duration::from_secs(30));
    eventually("B lists A's call", || b.list().len() == 1).await;
    // A's LISTEN connection and pooled connections die with the server.
    postgres.stop().expect("stop");
    postgres.resume().expect("resume");
    let mut answered = b.answer("c2", false, "carol", Some("no")).await;
    // B's pool may hand out one connection the restart broke: the store says so, and the
    // operator answers again.
    if let Err(AnswerError::Store(_)) = answered {
        answered = b.answer("c2", false, "carol", Some("no")).await;
    }
    answered.expect("decided");
    let decision = tokio::time::timeout(Duration::from_secs(5), asked)
        .await
        .expect("A hears of the decision after reconnecting")
        .expect("join");
    assert!(
        matches!(&decision, Decision::Denied { by, reason, .. } if by == "carol" && reason == "no"),
        "{decision:?}"
    );
}
