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
    first.finish(
        Some(TaskEnd::Completed(json!({}))),
        TaskStatus::Completed,
        None,
    );
    first.mark_fetched();
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
