//! Against a real Redis (switchboard-testkit): two `SharedSessions`, each on its own bus, are
//! two replicas.

use switchboard_testkit::redis::Redis;
use tokio::time::Instant;

use super::super::events::SharedEvent;
use super::super::limiter::COMMAND_TIMEOUT;
use super::*;

fn replica(redis: &Redis, policy: WhenUnreachable) -> SharedSessions {
    let bus = EventBus::connect(&redis.url(), "t").expect("bus");
    SharedSessions::connect(&redis.url(), "t", policy, Some(bus)).expect("sessions")
}

async fn subscribed(replica: &SharedSessions) {
    for _ in 0..100 {
        if replica.epoch() != 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the bus never subscribed");
}

fn categories(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn a_change_on_one_replica_is_read_and_heard_on_the_other() {
    let redis = Redis::start();
    let a = replica(&redis, WhenUnreachable::FailClosed);
    let b = replica(&redis, WhenUnreachable::FailClosed);
    subscribed(&b).await;
    let mut heard = b.bus().expect("a bus").subscribe();
    let session = session_digest("session:s1");

    assert_eq!(b.read(&session).await, Ok(SessionRecord::default()));
    let loaded = a
        .change(&session, SessionChange::Load("games"), None)
        .await
        .expect("changed");
    assert!(loaded.changed);
    assert_eq!(loaded.record.categories, categories(&["games"]));
    let again = a
        .change(&session, SessionChange::Load("games"), None)
        .await
        .expect("answered");
    assert!(!again.changed, "loading twice changes nothing");
    assert_eq!(again.record.version, loaded.record.version);

    // B reads what A changed, and hears it as it happens, with the whole state.
    assert_eq!(b.read(&session).await, Ok(loaded.record.clone()));
    let event = tokio::time::timeout(Duration::from_secs(1), heard.recv())
        .await
        .expect("heard within a second")
        .expect("an event");
    assert_eq!(
        event,
        SharedEvent::SessionChanged {
            session: hex(&session),
            version: loaded.record.version,
            categories: vec!["games".to_owned()],
            resources: Vec::new(),
            read_more: false,
            tier: None,
        }
    );

    // Unloading a parent unloads what is below it, not its namesakes.
    for category in ["games/dice", "gamesx", "files"] {
        b.change(&session, SessionChange::Load(category), None)
            .await
            .expect("loaded");
    }
    let unloaded = b
        .change(&session, SessionChange::Unload("games"), None)
        .await
        .expect("unloaded");
    assert_eq!(unloaded.record.categories, categories(&["files", "gamesx"]));
    let listed = b
        .change(&session, SessionChange::ReadMoreListed, None)
        .await
        .expect("listed");
    let tiered = a
        .change(&session, SessionChange::Tier(Some("fast")), None)
        .await
        .expect("tiered");
    assert!(tiered.record.read_more);
    assert_eq!(tiered.record.tier.as_deref(), Some("fast"));
    assert!(tiered.record.version > listed.record.version);
    let cleared = b
        .change(&session, SessionChange::Tier(None), None)
        .await
        .expect("cleared");
    assert_eq!(cleared.record.tier, None);
    // The event carries quoted names as they are.
    let odd = a
        .change(&session, SessionChange::Load("a \"b\"/c"), None)
        .await
        .expect("loaded");
    let mut last = None;
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(300), heard.recv()).await {
        last = Some(event);
    }
    let Some(SharedEvent::SessionChanged {
        categories,
        version,
        ..
    }) = last
    else {
        panic!("the last change was heard: {last:?}");
    };
    assert_eq!(version, odd.record.version);
    assert!(
        categories.contains(&"a \"b\"/c".to_owned()),
        "{categories:?}"
    );

    // A subscription taken through B is A's to read, and goes when unsubscribed.
    let uri = "file:///notes/a \"b\".md";
    b.change(&session, SessionChange::Subscribe(uri), None)
        .await
        .expect("subscribed");
    let read = a.read(&session).await.expect("read");
    assert!(read.resources.contains(uri), "{read:?}");
    let unsubscribed = a
        .change(&session, SessionChange::Unsubscribe(uri), None)
        .await
        .expect("unsubscribed");
    assert!(unsubscribed.changed && unsubscribed.record.resources.is_empty());

    // Another session's state is its own; a forgotten one is gone.
    let other = session_digest("session:s2");
    assert_eq!(b.read(&other).await, Ok(SessionRecord::default()));
    a.forget(&session).await.expect("forgotten");
    assert_eq!(b.read(&session).await, Ok(SessionRecord::default()));
}

/// A Redis restart or failover loses a session's hash while replicas hold the session: a
/// change carrying the replica's copy writes it back first, so the change does not stand for
/// the whole state; a restore writes it back alone, and only where Redis has nothing.
#[tokio::test]
async fn a_change_after_redis_lost_the_session_keeps_what_the_replica_held() {
    let redis = Redis::start();
    let a = replica(&redis, WhenUnreachable::FailClosed);
    let b = replica(&redis, WhenUnreachable::FailClosed);
    subscribed(&b).await;
    let session = session_digest("session:s1");
    let uri = "file:///notes.md";
    for change in [
        SessionChange::Load("games"),
        SessionChange::Tier(Some("fast")),
        SessionChange::Subscribe(uri),
    ] {
        a.change(&session, change, None).await.expect("changed");
    }
    let held = a.read(&session).await.expect("read");
    redis.cli(&["FLUSHALL"]);
    let mut heard = b.bus().expect("a bus").subscribe();

    let after = a
        .change(&session, SessionChange::Load("files"), Some(&held))
        .await
        .expect("changed");
    assert!(after.changed);
    let whole = SessionRecord {
        version: after.record.version,
        categories: categories(&["files", "games"]),
        read_more: false,
        tier: Some("fast".to_owned()),
        resources: categories(&[uri]),
    };
    assert_eq!(after.record, whole, "the held state and the change");
    assert!(after.record.version > held.version, "newer than any copy");
    assert_eq!(b.read(&session).await, Ok(whole.clone()));
    let event = tokio::time::timeout(Duration::from_secs(1), heard.recv())
        .await
        .expect("heard within a second")
        .expect("an event");
    assert!(
        matches!(&event, SharedEvent::SessionChanged { categories, tier, .. }
            if categories.len() == 2 && tier.as_deref() == Some("fast")),
        "the whole state is announced: {event:?}"
    );

    redis.cli(&["FLUSHALL"]);
    let restored = b.restore(&session, &whole).await.expect("restored");
    assert!(restored.version > whole.version);
    assert_eq!(
        SessionRecord {
            version: whole.version,
            ..restored.clone()
        },
        whole
    );
    // Where Redis holds the session's state, an older copy writes nothing back.
    assert_eq!(a.restore(&session, &held).await, Ok(restored.clone()));
    let unloaded = a
        .change(&session, SessionChange::Unload("files"), Some(&held))
        .await
        .expect("changed");
    assert_eq!(unloaded.record.categories, categories(&["games"]));
}

#[tokio::test]
async fn a_rest_is_read_on_another_replica_by_its_agent_only_and_within_its_bound() {
    let redis = Redis::start();
    let a = replica(&redis, WhenUnreachable::FailClosed);
    let b = replica(&redis, WhenUnreachable::FailClosed);
    assert_eq!(a.keep_rest(Some("npc"), "c1", "the rest").await, Ok(true));
    let (text, left) = b
        .rest(Some("npc"), "c1")
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(text, "the rest");
    assert!(left <= REST_LIFE && left > REST_LIFE - Duration::from_secs(5));
    assert_eq!(b.rest(Some("other"), "c1").await, Ok(None));
    assert_eq!(b.rest(None, "c1").await, Ok(None));
    assert_eq!(b.rest(Some("npc"), "c2").await, Ok(None));
    let huge = "x".repeat(MAX_SHARED_REST + 1);
    assert_eq!(a.keep_rest(Some("npc"), "c3", &huge).await, Ok(false));
    assert_eq!(b.rest(Some("npc"), "c3").await, Ok(None));
}

#[tokio::test]
async fn an_unreachable_redis_is_said_within_a_bounded_time_and_the_policy_words_it() {
    let mut redis = Redis::start();
    let open = replica(&redis, WhenUnreachable::FailOpen);
    let closed = replica(&redis, WhenUnreachable::FailClosed);
    let session = session_digest("agent:npc");
    closed
        .change(&session, SessionChange::Load("games"), None)
        .await
        .expect("loaded");
    redis.stop();
    for replica in [&open, &closed] {
        let started = Instant::now();
        let why = replica
            .change(&session, SessionChange::Load("files"), None)
            .await
            .expect_err("Redis is down");
        assert!(why.contains("redis at"), "{why}");
        assert!(started.elapsed() < COMMAND_TIMEOUT + Duration::from_millis(300));
        assert!(replica.rest(None, "c").await.is_err());
    }
    assert_eq!(open.refusal("redis at x: down"), None);
    let refusal = closed.refusal("redis at x: down").expect("refused");
    assert!(
        refusal.contains("redis at x: down") && refusal.contains("fail_closed"),
        "{refusal}"
    );
    redis.restart();
    let started = Instant::now();
    let record = loop {
        if let Ok(record) = closed.read(&session).await {
            break record;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "Redis is back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // A restarted Redis starts empty (no persistence in the fixture).
    assert_eq!(record, SessionRecord::default());
}
