//! Tests of the task store: ownership, bounds, TTLs, questions, closing sessions.

use super::*;
use serde_json::json;
use switchboard_core::clock::SystemClock;

fn store(max: usize) -> TaskStore {
    TaskStore::new(
        TaskSettings {
            max_per_caller: max,
            ..TaskSettings::default()
        },
        Arc::new(SystemClock),
    )
}

fn owner(agent: &str) -> TaskOwner {
    TaskOwner {
        agent: Some(agent.into()),
        ..TaskOwner::default()
    }
}

/// Ends `task` as completed, its result read by its client: it may make room.
fn completed_and_fetched(task: &Task) {
    task.finish(
        Some(TaskEnd::Completed(json!({}))),
        TaskStatus::Completed,
        None,
    );
    task.mark_fetched();
}

#[test]
fn a_task_is_its_owners_alone() {
    let store = store(10);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    assert!(store.get(&owner("a"), &task.id).is_some());
    assert!(store.get(&owner("b"), &task.id).is_none());
    assert!(store.list(&owner("b")).is_empty());
    assert_eq!(store.list(&owner("a")).len(), 1);
}

#[test]
fn a_caller_is_bounded_and_fetched_results_make_room() {
    let store = store(2);
    let first = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    assert_eq!(
        store.create(owner("a"), "t", None, None).err(),
        Some(TaskError::TooMany(2))
    );
    // Another caller is not affected.
    store
        .create(owner("b"), "t", None, None)
        .expect("test value");
    completed_and_fetched(&first);
    store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    assert!(store.get(&owner("a"), &first.id).is_none());
}

#[test]
fn a_terminal_status_sticks() {
    let store = store(2);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    task.finish(None, TaskStatus::Cancelled, None);
    task.finish(
        Some(TaskEnd::Completed(json!({}))),
        TaskStatus::Completed,
        None,
    );
    task.set_status(TaskStatus::Working, None);
    assert_eq!(task.view().status, TaskStatus::Cancelled);
    assert_eq!(task.view().end, None);
}

#[tokio::test]
async fn questions_keep_the_task_waiting_until_all_are_answered() {
    let store = store(2);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    let (first, first_answer) = task.ask(json!({"method": "elicitation/create"}));
    let (second, second_answer) = task.ask(json!({"method": "elicitation/create"}));
    assert_eq!(task.view().status, TaskStatus::InputRequired);
    assert_eq!(task.view().input_requests.len(), 2);
    let mut responses = Map::new();
    responses.insert(first.clone(), json!({"action": "accept"}));
    task.answer(&responses);
    assert_eq!(
        first_answer.await.expect("test value"),
        Ok(json!({"action": "accept"}))
    );
    let view = task.view();
    assert_eq!(view.status, TaskStatus::InputRequired);
    assert_eq!(
        view.input_requests.keys().collect::<Vec<_>>(),
        vec![&second]
    );
    let mut responses = Map::new();
    responses.insert(second, json!({"action": "decline"}));
    task.answer(&responses);
    assert_eq!(
        second_answer.await.expect("test value").expect("an answer")["action"],
        "decline"
    );
    assert_eq!(task.view().status, TaskStatus::Working);
}

#[test]
fn all_callers_together_are_bounded_and_cancelled_tasks_make_room() {
    let store = TaskStore::new(
        TaskSettings {
            max_per_caller: 10,
            max_tasks: 2,
            ..TaskSettings::default()
        },
        Arc::new(SystemClock),
    );
    let first = store.create(owner("a"), "t", None, None).expect("first");
    store.create(owner("b"), "t", None, None).expect("second");
    assert_eq!(
        store.create(owner("c"), "t", None, None).err(),
        Some(TaskError::Full(2))
    );
    assert!(first.finish(None, TaskStatus::Cancelled, None));
    assert!(
        !first.finish(None, TaskStatus::Completed, None),
        "ended once"
    );
    store
        .create(owner("c"), "t", None, None)
        .expect("room made");
    assert!(store.get(&owner("a"), &first.id).is_none());
}

#[test]
fn a_ttl_is_at_least_a_second_and_at_most_the_maximum() {
    let store = store(10);
    let zero = store
        .create(owner("a"), "t", Some(Duration::ZERO), None)
        .expect("task");
    assert_eq!(zero.ttl(), Some(MIN_TTL));
    let huge = store
        .create(owner("a"), "t", Some(Duration::from_secs(1 << 40)), None)
        .expect("task");
    assert_eq!(huge.ttl(), Some(TaskSettings::default().max_ttl));
}

#[test]
fn a_closed_session_takes_its_tasks_along() {
    let store = store(10);
    let mine = TaskOwner {
        session: Some("s1".into()),
        ..owner("a")
    };
    let task = store.create(mine.clone(), "t", None, None).expect("task");
    store
        .create(owner("a"), "t", None, None)
        .expect("the agent's own");
    store.close_session("s1");
    assert!(store.get(&mine, &task.id).is_none());
    assert!(task.cancel.is_cancelled());
    assert_eq!(task.view().status, TaskStatus::Cancelled);
    assert_eq!(store.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn expired_tasks_are_dropped_and_cancelled() {
    let store = store(10);
    let task = store
        .create(owner("a"), "t", Some(Duration::from_secs(5)), None)
        .expect("test value");
    tokio::time::advance(Duration::from_secs(6)).await;
    assert!(store.get(&owner("a"), &task.id).is_none());
    assert!(task.cancel.is_cancelled());
    assert_eq!(task.view().status, TaskStatus::Cancelled, "waiters wake");
    assert!(store.is_empty());
}

/// A task mirrored while the mirror is behind: a burst of progress messages leaves one
/// change waiting (the latest), not one per message.
#[test]
fn a_burst_of_changes_waits_for_the_mirror_as_its_latest_change_only() {
    let store = store(10);
    let (mirror, mut waiting) = tokio::sync::mpsc::unbounded_channel();
    store.mirror_to(mirror);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    for step in 0..1_000 {
        task.note_progress(format!("step {step}"));
    }
    let pending = waiting.try_recv().expect("the mirror is told");
    assert!(waiting.try_recv().is_err(), "told once for the burst");
    let latest = pending.take().expect("a change waits");
    assert_eq!(latest.view.status_message.as_deref(), Some("step 999"));
    assert!(pending.take().is_none());
    // The next change tells the mirror again.
    task.note_progress("after".to_owned());
    let pending = waiting.try_recv().expect("told again");
    let latest = pending.take().expect("a change waits");
    assert_eq!(latest.view.status_message.as_deref(), Some("after"));
}

/// A change folded into one waiting keeps the waiting one's acks: whoever waits for the
/// first write is told when the latest is written.
#[tokio::test]
async fn a_folded_change_keeps_the_acks_of_the_one_it_replaced() {
    let store = store(10);
    let (mirror, mut waiting) = tokio::sync::mpsc::unbounded_channel();
    store.mirror_to(mirror);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    let mirrored = task.clone();
    let waiter = tokio::spawn(async move { mirrored.mirror_now().await });
    tokio::task::yield_now().await;
    task.note_progress("later".to_owned());
    let pending: Arc<PendingChange> = waiting.recv().await.expect("told");
    let change = pending.take().expect("a change waits");
    assert_eq!(change.view.status_message.as_deref(), Some("later"));
    assert_eq!(change.acks.len(), 1);
    for ack in change.acks {
        let _ = ack.send(Ok(()));
    }
    assert_eq!(waiter.await.expect("joined"), Ok(()));
}

/// A mirror that does not write (Redis stalled, or busy with other tasks' writes) keeps no
/// new task waiting past the command bound.
#[tokio::test]
async fn mirroring_now_gives_up_after_the_command_timeout() {
    let store = store(10);
    let (mirror, _never_written) = tokio::sync::mpsc::unbounded_channel();
    store.mirror_to(mirror);
    let task = store
        .create(owner("a"), "t", None, None)
        .expect("test value");
    let started = Instant::now();
    let bounded = tokio::time::timeout(COMMAND_TIMEOUT * 4, task.mirror_now()).await;
    let error = bounded
        .expect("returns within the bound")
        .expect_err("not written");
    assert!(
        matches!(&error, TaskError::Unavailable(why) if why.contains("not written within")),
        "{error:?}"
    );
    // Not before the bound; the upper one is the timeout above (a loaded machine is slow).
    assert!(started.elapsed() >= COMMAND_TIMEOUT);
}

/// One agent opening session after session cannot fill the store and deny every other agent:
/// it is held to its own bound, named in the refusal, and its fetched tasks make room first.
#[test]
fn one_agent_across_many_sessions_cannot_starve_the_others() {
    let bounded = |max_per_caller, max_per_agent| {
        TaskStore::new(
            TaskSettings {
                max_per_caller,
                max_per_agent,
                max_tasks: 5,
                ..TaskSettings::default()
            },
            Arc::new(SystemClock),
        )
    };
    let store = bounded(2, 3);
    let session = |agent: &str, n: usize| TaskOwner {
        agent: Some(agent.into()),
        session: Some(format!("session-{n}")),
        subject: None,
    };
    let first = store
        .create(session("greedy", 0), "t", None, None)
        .expect("first");
    for n in 1..3 {
        store
            .create(session("greedy", n), "t", None, None)
            .expect("within the agent's bound");
    }
    let refused = store.create(session("greedy", 3), "t", None, None).err();
    assert_eq!(
        refused,
        Some(TaskError::AgentFull {
            agent: "greedy".into(),
            limit: 3
        })
    );
    let message = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("max_per_agent"), "{message}");
    // Every other agent still gets its tasks.
    store
        .create(session("other", 0), "t", None, None)
        .expect("another agent");
    store
        .create(session("third", 0), "t", None, None)
        .expect("a third agent");
    assert_eq!(store.len(), 5);
    // The agent's fetched task makes room for its next one.
    completed_and_fetched(&first);
    store
        .create(session("greedy", 4), "t", None, None)
        .expect("room made");
    assert!(store.get(&session("greedy", 0), &first.id).is_none());
    // Anonymous callers have no agent to be bounded as.
    let anonymous = |n: usize| TaskOwner {
        session: Some(format!("anonymous-{n}")),
        ..TaskOwner::default()
    };
    let roomy = bounded(1, 1);
    for n in 0..3 {
        roomy
            .create(anonymous(n), "t", None, None)
            .expect("anonymous");
    }
}
