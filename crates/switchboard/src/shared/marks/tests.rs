//! Against a real Redis (switchboard-testkit): two `SharedMarks` are two replicas.

use switchboard_testkit::redis::Redis;
use tokio::time::Instant;

use super::super::limiter::{COMMAND_TIMEOUT, PROBE_EVERY};

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

fn marks(redis: &Redis, policy: WhenUnreachable) -> SharedMarks {
    SharedMarks::connect(&redis.url(), "t", policy, None).expect("marks")
}

/// Two replicas' marks on `redis`, refusing while it is down.
fn two_replicas(redis: &Redis) -> (SharedMarks, SharedMarks) {
    let closed = || marks(redis, WhenUnreachable::FailClosed);
    (closed(), closed())
}

#[tokio::test]
async fn an_ended_session_is_ended_for_every_replica_until_its_expiry() {
    let redis = Redis::start();
    let (a, b) = two_replicas(&redis);
    let now = SystemTime::now();
    assert_eq!(b.is_ended("s1", now + HOUR, now).await, Ok(false));
    a.end("s1", now + Duration::from_millis(300), now)
        .await
        .expect("ended");
    assert_eq!(b.is_ended("s1", now + HOUR, now).await, Ok(true));
    assert_eq!(b.is_ended("s2", now + HOUR, now).await, Ok(false));
    // The key goes with the id's own expiry.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        b.is_ended("s1", now + HOUR, SystemTime::now()).await,
        Ok(false)
    );
}

#[tokio::test]
async fn a_nonce_is_used_once_across_replicas() {
    let redis = Redis::start();
    let (a, b) = two_replicas(&redis);
    let now = 1_000;
    let expires = now + 60_000;
    assert_eq!(a.first_use([7; 16], expires, now).await, Ok(true));
    assert_eq!(b.first_use([7; 16], expires, now).await, Ok(false));
    assert_eq!(a.first_use([7; 16], expires, now).await, Ok(false));
    assert_eq!(b.first_use([8; 16], expires, now).await, Ok(true));
}

#[tokio::test]
async fn a_nonce_whose_use_was_written_but_not_answered_is_used_by_the_retry_only() {
    let redis = Redis::start();
    let (a, b) = two_replicas(&redis);
    let (now, expires) = (1_000, 61_000);
    let nonce = [9; 16];
    // a's SET went through, and its answer was lost: the request was refused.
    let client = redis::Client::open(redis.url()).expect("client");
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .expect("connection");
    let _: () = redis::cmd("SET")
        .arg(format!("{}nonce:{}", a.prefix, hex(&nonce)))
        .arg(&a.writer)
        .query_async(&mut connection)
        .await
        .expect("SET");
    // The client's retry, on a, is that use; any later one, anywhere, is a replay.
    assert_eq!(b.first_use(nonce, expires, now).await, Ok(false));
    assert_eq!(a.first_use(nonce, expires, now).await, Ok(true));
    assert_eq!(a.first_use(nonce, expires, now).await, Ok(false));
    // Two requests with one nonce at once on one replica: one is the first use.
    let fresh = [10; 16];
    let (x, y) = tokio::join!(
        a.first_use(fresh, expires, now),
        a.first_use(fresh, expires, now)
    );
    assert_eq!(
        [x, y].iter().filter(|used| **used == Ok(true)).count(),
        1,
        "a nonce used twice at once"
    );
}

#[tokio::test]
async fn an_unreachable_redis_follows_the_policy() {
    let mut redis = Redis::start();
    let open = marks(&redis, WhenUnreachable::FailOpen);
    let closed = marks(&redis, WhenUnreachable::FailClosed);
    let now = SystemTime::now();
    closed.end("before", now + HOUR, now).await.expect("ended");
    redis.stop();
    let started = Instant::now();
    // fail_closed refuses, naming Redis; nothing it refused is remembered as used.
    let refused = closed
        .is_ended("s", now + HOUR, now)
        .await
        .expect_err("refused");
    assert!(refused.0.contains("unreachable"), "{refused}");
    assert!(refused.0.contains("fail_closed"), "{refused}");
    assert!(closed.end("s", now + HOUR, now).await.is_err());
    assert!(closed.first_use([1; 16], 60_000, 1).await.is_err());
    // What this replica saw itself still holds without Redis.
    assert_eq!(closed.is_ended("before", now + HOUR, now).await, Ok(true));
    // fail_open answers from this replica's memory.
    assert_eq!(open.is_ended("s", now + HOUR, now).await, Ok(false));
    open.end("s", now + HOUR, now).await.expect("ended here");
    assert_eq!(open.is_ended("s", now + HOUR, now).await, Ok(true));
    assert_eq!(open.first_use([2; 16], 60_000, 1).await, Ok(true));
    assert_eq!(open.first_use([2; 16], 60_000, 1).await, Ok(false));
    assert!(
        started.elapsed() < COMMAND_TIMEOUT * 4,
        "an outage costs at most a bounded wait: {:?}",
        started.elapsed()
    );
    // Back: shared again (a restarted Redis starts empty).
    redis.restart();
    tokio::time::sleep(PROBE_EVERY * 2).await;
    assert_eq!(closed.first_use([1; 16], 60_000, 1).await, Ok(true));
    assert_eq!(open.first_use([1; 16], 60_000, 1).await, Ok(false));
}

/// Two replicas' marks that announce and hear ends on their own buses.
async fn two_on_buses(redis: &Redis) -> ((SharedMarks, EventBus), (SharedMarks, EventBus)) {
    let replica = || {
        let bus = EventBus::connect(&redis.url(), "t").expect("bus");
        let marks = SharedMarks::connect(
            &redis.url(),
            "t",
            WhenUnreachable::FailClosed,
            Some(bus.clone()),
        )
        .expect("marks");
        (marks, bus)
    };
    let (a, b) = (replica(), replica());
    subscribed(&a.1).await;
    subscribed(&b.1).await;
    (a, b)
}

/// Waits until `bus` is subscribed; its epoch.
async fn subscribed(bus: &EventBus) -> u64 {
    let started = Instant::now();
    while bus.epoch() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never subscribed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    bus.epoch()
}

/// How many `PTTL` commands the server ran (`INFO commandstats`).
fn questions(redis: &Redis) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_pttl:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}

/// Polls `b` about `id` until it says ended, for at most a second: how long it took.
async fn ended_within_a_second(b: &SharedMarks, id: &str) -> Duration {
    let started = Instant::now();
    loop {
        let now = SystemTime::now();
        if b.is_ended(id, now + HOUR, now).await == Ok(true) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{id} is still served a second after it ended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn with_a_bus_a_known_session_costs_no_round_trip_and_an_end_is_heard() {
    let redis = Redis::start();
    let ((a, _bus_a), (b, _bus_b)) = two_on_buses(&redis).await;
    let now = SystemTime::now();
    assert_eq!(b.is_ended("s1", now + HOUR, now).await, Ok(false));
    let asked = questions(&redis);
    assert!(asked >= 1, "the first request of a session asks Redis");
    for _ in 0..20 {
        assert_eq!(b.is_ended("s1", now + HOUR, now).await, Ok(false));
    }
    // A DELETE on A: B hears it on the bus, without asking.
    a.end("s1", now + HOUR, now).await.expect("ended");
    ended_within_a_second(&b, "s1").await;
    assert_eq!(
        questions(&redis),
        asked,
        "no request after the first asked Redis"
    );
    // A session B never saw is asked about once, and found ended.
    a.end("s2", now + HOUR, now).await.expect("ended");
    assert_eq!(b.is_ended("s2", now + HOUR, now).await, Ok(true));
}

#[tokio::test]
async fn after_a_lost_subscription_a_known_session_is_asked_again() {
    let redis = Redis::start();
    let ((_a, _bus_a), (b, bus_b)) = two_on_buses(&redis).await;
    let now = SystemTime::now();
    assert_eq!(b.is_ended("s3", now + HOUR, now).await, Ok(false));
    let before = bus_b.epoch();
    // The subscriptions are cut and the session ended with nobody hearing it (as an end
    // published while B was not subscribed would be).
    redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    let key = format!("switchboard:{{t}}:ended:{}", hex(&digest("s3")));
    redis.cli(&["SET", &key, "1", "PX", "60000"]);
    ended_within_a_second(&b, "s3").await;
    let after = subscribed(&bus_b).await;
    assert_ne!(after, before, "the subscription came back in a new epoch");
    // What B asked before the cut counts no longer; what it asks now holds again.
    assert_eq!(b.is_ended("s4", now + HOUR, now).await, Ok(false));
    let asked = questions(&redis);
    assert_eq!(b.is_ended("s4", now + HOUR, now).await, Ok(false));
    assert_eq!(questions(&redis), asked);
}

#[test]
fn sweeping_costs_a_constant_per_insert_and_keeps_what_is_live() {
    let mut map: HashMap<usize, bool> = (0..SWEEP_ABOVE).map(|n| (n, n % 2 == 0)).collect();
    let mut at = 0;
    sweep(&mut map, &mut at, |_, live| *live);
    assert_eq!((map.len(), at), (SWEEP_ABOVE / 2, SWEEP_ABOVE));
    map.extend((SWEEP_ABOVE..3 * SWEEP_ABOVE).map(|n| (n, true)));
    sweep(&mut map, &mut at, |_, live| *live);
    assert_eq!(
        at,
        5 * SWEEP_ABOVE,
        "all live: the next sweep waits for twice as many"
    );
}
