//! Against a real Redis (switchboard-testkit): two `SharedTasks`, each on its own bus, are
//! two replicas.

use switchboard_testkit::redis::Redis;

use super::*;

fn replica(redis: &Redis) -> SharedTasks {
    let bus = EventBus::connect(&redis.url(), "t").expect("bus");
    SharedTasks::connect(&redis.url(), "t", WhenUnreachable::FailClosed, bus).expect("tasks")
}

fn owner(agent: &str) -> TaskOwner {
    TaskOwner {
        agent: Some(agent.to_owned()),
        session: Some("s".to_owned()),
        subject: None,
    }
}

fn working(id: &str) -> TaskView {
    let now = SystemTime::now();
    TaskView {
        id: id.to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at: now,
        updated_at: now,
        ttl: Some(Duration::from_secs(60)),
        poll_interval: Duration::from_millis(500),
        end: None,
        input_requests: Map::new(),
    }
}

/// Waits until `replica`'s bus is subscribed and its heartbeat is set: it counts as alive.
async fn alive(replica: &SharedTasks) {
    for _ in 0..100 {
        if replica.bus().epoch() != 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the bus never subscribed");
}

#[tokio::test]
async fn a_task_written_by_its_owner_is_read_listed_and_ended_on_another_replica_only_for_its_caller()
 {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    let first = working("t1");
    a.write(&alice, "slow", &first).await.expect("written");
    let mut second = working("t2");
    second.created_at += Duration::from_millis(5);
    a.write(&alice, "slow", &second).await.expect("written");

    let found = b.get(&alice, "t1").await.expect("read").expect("found");
    assert_eq!(found.view.status, TaskStatus::Working);
    assert_eq!(found.replica, a.replica());
    assert_eq!(b.get(&owner("bob"), "t1").await.expect("read"), None);
    let listed: Vec<String> = b
        .list(&alice)
        .await
        .expect("list")
        .into_iter()
        .map(|view| view.id)
        .collect();
    assert_eq!(listed, ["t2", "t1"]);
    assert!(b.list(&owner("bob")).await.expect("list").is_empty());

    let mut done = first.clone();
    done.status = TaskStatus::Completed;
    done.end = Some(TaskEnd::Completed(serde_json::json!({"content": []})));
    a.write(&alice, "slow", &done).await.expect("written");
    let found = b.get(&alice, "t1").await.expect("read").expect("found");
    assert_eq!(found.view.status, TaskStatus::Completed);
    assert_eq!(found.view.end, done.end);
    // Never out of a terminal status.
    assert_eq!(
        a.write(&alice, "slow", &first).await,
        Err(WriteError::Ended)
    );
}

#[tokio::test]
async fn a_result_over_what_replicas_share_is_read_elsewhere_as_an_error_naming_its_replica() {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    let mut done = working("big");
    done.status = TaskStatus::Completed;
    let text = "x".repeat(MAX_SHARED_RECORD + 1);
    done.end = Some(TaskEnd::Completed(
        serde_json::json!({"content": [{"type": "text", "text": text}]}),
    ));
    a.write(&alice, "slow", &done)
        .await
        .expect("written, not retried for ever");
    let found = b.get(&alice, "big").await.expect("read").expect("found");
    assert_eq!(found.view.status, TaskStatus::Completed);
    let Some(TaskEnd::Completed(result)) = found.view.end else {
        panic!("{:?}", found.view.end);
    };
    assert_eq!(result["isError"], true);
    let said = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        said.contains(a.replica()) && said.contains("larger than"),
        "{said}"
    );
}

#[tokio::test]
async fn a_task_whose_replica_is_gone_is_failed_for_every_replica_at_once() {
    let redis = Redis::start();
    let (a, b, c) = (replica(&redis), replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    a.write(&alice, "slow", &working("t1"))
        .await
        .expect("written");
    let gone = a.replica().to_owned();
    drop(a); // Its subscription goes at once; its heartbeat key lives on for seconds.
    let mut found = None;
    for _ in 0..50 {
        let read = b.get(&alice, "t1").await.expect("read").expect("found");
        if read.view.status == TaskStatus::Failed {
            found = Some(read);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let found = found.expect("the task failed within a second");
    let why = format!("the replica that ran this task ({gone}) is gone");
    assert_eq!(found.view.status_message.as_deref(), Some(why.as_str()));
    let seen = c.get(&alice, "t1").await.expect("read").expect("found");
    assert_eq!(seen.view.status, TaskStatus::Failed, "every replica agrees");
    let cancelled = c
        .cancel(&alice, "t1")
        .await
        .expect("cancel")
        .expect("found");
    assert!(!cancelled.asked, "nobody to ask");
}

#[tokio::test]
async fn a_running_task_is_not_failed_while_its_owner_subscribes_again_after_a_redis_restart() {
    let mut redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    let before = a.bus().epoch();
    // Redis restarts empty (nothing persisted); the owner's next change reaches it before
    // the owner's subscriber has noticed and subscribed again (it waits 250 ms between
    // tries) — the record is there, its owner has no subscription yet.
    redis.restart();
    let mut step = working("t1");
    step.status_message = Some("step 2".to_owned());
    let started = std::time::Instant::now();
    while a.write(&alice, "slow", &step).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(5), "never written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Read on the other replica until the owner has subscribed again and a grace has passed
    // since: never failed, and some reads fell in the window.
    let mut unsubscribed_reads = 0;
    let mut resubscribed: Option<std::time::Instant> = None;
    loop {
        let unsubscribed = a.bus().epoch() == 0;
        let found = b.get(&alice, "t1").await.expect("read").expect("found");
        assert_eq!(
            (found.view.status, found.view.status_message.as_deref()),
            (TaskStatus::Working, Some("step 2")),
            "{:?} after the restart",
            started.elapsed()
        );
        if unsubscribed {
            unsubscribed_reads += 1;
        } else if a.bus().epoch() > before {
            let since = *resubscribed.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > RESUBSCRIBE_GRACE * 2 {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never resubscribed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(unsubscribed_reads > 0, "no read fell in the window");
    // The owner hears commands again.
    let found = b.cancel(&alice, "t1").await.expect("cancel");
    assert!(
        found.is_some_and(|found| found.asked),
        "the cancel reached it"
    );
}

/// The owner's heartbeat key, as a test deletes it behind the replicas' backs.
fn heartbeat_key(replica: &SharedTasks) -> String {
    format!("{}alive:{}", replica.prefix, replica.replica())
}

/// A Redis failover or restart with persistence can keep the records and lose the
/// heartbeats of replicas that live: the owner's next beat comes before its tasks fail.
#[tokio::test]
async fn a_running_task_is_not_failed_while_its_owners_lost_heartbeat_comes_back() {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    a.write(&alice, "slow", &working("t1"))
        .await
        .expect("written");
    let heartbeat = heartbeat_key(&a);
    redis.cli(&["DEL", &heartbeat]);
    let started = std::time::Instant::now();
    let mut unbeaten_reads = 0;
    while started.elapsed() < UNBEATEN_GRACE * 2 {
        let unbeaten = redis.cli(&["EXISTS", &heartbeat]).trim() == "0";
        let found = b.get(&alice, "t1").await.expect("read").expect("found");
        assert_eq!(
            found.view.status,
            TaskStatus::Working,
            "{:?} after the heartbeat was lost",
            started.elapsed()
        );
        if unbeaten {
            unbeaten_reads += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(unbeaten_reads > 0, "no read fell before the next beat");
    let found = b.cancel(&alice, "t1").await.expect("cancel");
    assert!(
        found.is_some_and(|found| found.asked),
        "the cancel reached it"
    );
}

/// An owner with no heartbeat that never beats again has its tasks failed, after the grace.
#[tokio::test]
async fn a_task_whose_owner_has_no_heartbeat_is_failed_after_the_grace() {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let alice = owner("alice");
    a.write(&alice, "slow", &working("t1"))
        .await
        .expect("written");
    let heartbeat = heartbeat_key(&a);
    drop(a);
    redis.cli(&["DEL", &heartbeat]);
    let started = std::time::Instant::now();
    loop {
        let found = b.get(&alice, "t1").await.expect("read").expect("found");
        if found.view.status == TaskStatus::Failed {
            break;
        }
        assert!(found.unheard, "a waiter is told to read again soon");
        assert!(
            started.elapsed() < UNBEATEN_GRACE + Duration::from_secs(1),
            "never failed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        started.elapsed() >= UNBEATEN_GRACE - Duration::from_millis(50),
        "failed after {:?}, within the grace",
        started.elapsed()
    );
}

/// The next command a replica hears, within 2 s.
async fn next(commands: &mut tokio::sync::broadcast::Receiver<TaskCommand>) -> TaskCommand {
    tokio::time::timeout(Duration::from_secs(2), commands.recv())
        .await
        .expect("heard in time")
        .expect("a command")
}

#[tokio::test]
async fn a_cancel_and_a_fetched_result_reach_the_replica_that_runs_the_task() {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let mut commands = a.bus().task_commands();
    let alice = owner("alice");
    a.write(&alice, "slow", &working("t1"))
        .await
        .expect("written");
    assert_eq!(b.cancel(&owner("bob"), "t1").await.expect("cancel"), None);
    let asked = b
        .cancel(&alice, "t1")
        .await
        .expect("cancel")
        .expect("found");
    assert!(asked.asked);
    let command = next(&mut commands).await;
    assert_eq!(
        command,
        TaskCommand::Cancel {
            task: "t1".to_owned(),
            owner: owner_digest(&alice)
        }
    );
    b.tell_fetched(&asked.replica, &alice, "t1");
    let command = next(&mut commands).await;
    assert_eq!(
        command,
        TaskCommand::Fetched {
            task: "t1".to_owned(),
            owner: owner_digest(&alice)
        }
    );
}

#[tokio::test]
async fn the_operator_sees_every_callers_tasks_and_its_cancel_reaches_the_owner() {
    let redis = Redis::start();
    let (a, b) = (replica(&redis), replica(&redis));
    alive(&a).await;
    let mut commands = a.bus().task_commands();
    let (alice, bob) = (owner("alice"), owner("bob"));
    a.write(&alice, "slow", &working("t1"))
        .await
        .expect("written");
    let mut later = working("t2");
    later.created_at += Duration::from_millis(5);
    a.write(&bob, "other", &later).await.expect("written");

    let all = b.all(10).await.expect("all");
    let seen: Vec<(&str, Option<&str>, &str, Option<&str>)> = all
        .iter()
        .map(|task| {
            (
                task.view.id.as_str(),
                task.owner.agent.as_deref(),
                task.tool.as_str(),
                task.replica.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("t2", Some("bob"), "other", Some(a.replica())),
            ("t1", Some("alice"), "slow", Some(a.replica())),
        ]
    );
    assert_eq!(
        b.all(1).await.expect("all").len(),
        1,
        "at most as many as asked"
    );

    assert_eq!(
        b.cancel_as_operator("t9", "ops").await.expect("cancel"),
        None
    );
    let (digest, found) = b
        .cancel_as_operator("t1", "ops")
        .await
        .expect("cancel")
        .expect("found");
    assert!(found.asked);
    assert_eq!(digest, owner_digest(&alice));
    assert_eq!(
        next(&mut commands).await,
        TaskCommand::OperatorCancel {
            task: "t1".to_owned(),
            owner: owner_digest(&alice),
            by: "ops".to_owned(),
        }
    );
}
