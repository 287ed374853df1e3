//! The event bus against a real Redis.

use std::time::Duration;

use switchboard_testkit::redis::Redis;

use super::*;

/// How long a test waits for an event that should come.
const HEARD_WITHIN: Duration = Duration::from_secs(5);

/// Publishes `event` on `from` until `to` hears it (a new subscription takes a moment).
async fn heard(
    from: &EventBus,
    to: &mut broadcast::Receiver<SharedEvent>,
    event: SharedEvent,
) -> bool {
    let started = tokio::time::Instant::now();
    while started.elapsed() < HEARD_WITHIN {
        from.publish(event.clone());
        if let Ok(Ok(got)) = tokio::time::timeout(Duration::from_millis(100), to.recv()).await {
            return got == event;
        }
    }
    false
}

#[tokio::test]
async fn replicas_hear_each_other_never_themselves_and_again_after_an_outage() {
    let mut redis = Redis::start();
    let a = EventBus::connect(&redis.url(), "t").expect("bus");
    let b = EventBus::connect(&redis.url(), "t").expect("bus");
    let other = EventBus::connect(&redis.url(), "other").expect("bus");
    let (mut at_a, mut at_b, mut at_other) = (a.subscribe(), b.subscribe(), other.subscribe());
    assert!(heard(&a, &mut at_b, SharedEvent::ToolsListChanged).await);
    // Long enough for a's own message to have come back, were it handed on.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(at_a.try_recv().is_err(), "a replica never hears itself");
    assert!(
        at_other.try_recv().is_err(),
        "another deployment hears nothing"
    );

    redis.stop();
    a.publish(SharedEvent::ToolsListChanged); // Lost, and publishing does not wait.
    redis.restart();
    assert!(
        heard(&a, &mut at_b, SharedEvent::ToolsListChanged).await,
        "the subscriber came back by itself"
    );
}

#[test]
fn an_event_travels_as_tagged_json_with_its_origin() {
    let envelope = Envelope {
        origin: "r1".into(),
        event: SharedEvent::ToolsListChanged,
    };
    assert_eq!(
        serde_json::to_string(&envelope).expect("json"),
        r#"{"origin":"r1","event":"tools_list_changed"}"#
    );
}

/// Waits until `bus` is subscribed.
async fn subscribed(bus: &EventBus) {
    let started = tokio::time::Instant::now();
    while bus.epoch() == 0 {
        assert!(started.elapsed() < HEARD_WITHIN, "never subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn answer(text: &str) -> RoutedAnswer {
    RoutedAnswer {
        session: "s".into(),
        agent: Some("qa".into()),
        subject: None,
        route: "/mcp".into(),
        answer: text.into(),
    }
}

#[tokio::test]
async fn an_answer_reaches_the_replica_that_asked_or_is_refused_at_once_when_it_is_gone() {
    let redis = Redis::start();
    let a = EventBus::connect(&redis.url(), "t").expect("bus");
    let b = EventBus::connect(&redis.url(), "t").expect("bus");
    subscribed(&a).await;
    subscribed(&b).await;
    let mut at_b = b.arrivals();
    let owner = b.replica().to_owned();
    a.deliver(&owner, answer("one")).await.expect("delivered");
    let got = tokio::time::timeout(HEARD_WITHIN, at_b.recv()).await;
    assert_eq!(got.expect("in time").expect("an answer"), answer("one"));

    // Never a channel a client names, nor a replica that never was.
    let refused = a.deliver("../events", answer("x")).await;
    assert!(
        matches!(refused, Err(Undeliverable::OwnerGone(_))),
        "{refused:?}"
    );
    let refused = a.deliver("0123456789abcdef", answer("x")).await;
    assert!(
        matches!(refused, Err(Undeliverable::OwnerGone(_))),
        "{refused:?}"
    );

    // B goes (its subscription with it): at once, though its heartbeat has not expired yet.
    drop((b, at_b));
    let started = tokio::time::Instant::now();
    loop {
        match a.deliver(&owner, answer("two")).await {
            Err(Undeliverable::OwnerGone(name)) => {
                assert_eq!(name, owner);
                break;
            }
            other => assert!(
                started.elapsed() < Duration::from_secs(1),
                "still delivered a second after B went: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn without_a_heartbeat_a_listening_replica_counts_as_gone_and_an_outage_says_so() {
    let mut redis = Redis::start();
    let a = EventBus::connect(&redis.url(), "t").expect("bus");
    let b = EventBus::connect(&redis.url(), "t").expect("bus");
    subscribed(&a).await;
    subscribed(&b).await;
    let owner = b.replica().to_owned();
    a.deliver(&owner, answer("one")).await.expect("delivered");
    // A machine that went silent keeps its subscription open in Redis for a while; its
    // heartbeat expiring is what tells the others. Here it is removed (again, should B's
    // renewal, once a second, come in between).
    let gone = Err(Undeliverable::OwnerGone(owner.clone()));
    let mut refused = Ok(());
    for _ in 0..5 {
        redis.cli(&["DEL", &format!("switchboard:{{t}}:alive:{owner}")]);
        refused = a.deliver(&owner, answer("two")).await;
        if refused == gone {
            break;
        }
    }
    assert_eq!(refused, gone);

    redis.stop();
    let started = tokio::time::Instant::now();
    let refused = a.deliver(&owner, answer("three")).await;
    assert!(
        matches!(&refused, Err(Undeliverable::Unreachable { why, .. }) if why.contains("redis")),
        "{refused:?}"
    );
    assert!(started.elapsed() <= COMMAND_TIMEOUT + Duration::from_millis(200));
}
