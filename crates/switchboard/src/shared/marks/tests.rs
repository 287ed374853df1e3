//! Against a real Redis (switchboard-testkit): two `SharedMarks` are two replicas.

use switchboard_testkit::redis::Redis;
use tokio::time::Instant;

use super::super::limiter::{COMMAND_TIMEOUT, PROBE_EVERY};

use super::*;

const HOUR: Duration = Duration::from_secs(3600);

fn marks(redis: &Redis, policy: WhenUnreachable) -> SharedMarks {
    SharedMarks::connect(&redis.url(), "t", policy).expect("marks")
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
    assert_eq!(b.is_ended("s1", now).await, Ok(false));
    a.end("s1", now + Duration::from_millis(300), now)
        .await
        .expect("ended");
    assert_eq!(b.is_ended("s1", now).await, Ok(true));
    assert_eq!(b.is_ended("s2", now).await, Ok(false));
    // The key goes with the id's own expiry.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(b.is_ended("s1", SystemTime::now()).await, Ok(false));
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
async fn an_unreachable_redis_follows_the_policy() {
    let mut redis = Redis::start();
    let open = marks(&redis, WhenUnreachable::FailOpen);
    let closed = marks(&redis, WhenUnreachable::FailClosed);
    let now = SystemTime::now();
    closed.end("before", now + HOUR, now).await.expect("ended");
    redis.stop();
    let started = Instant::now();
    // fail_closed refuses, naming Redis; nothing it refused is remembered as used.
    let refused = closed.is_ended("s", now).await.expect_err("refused");
    assert!(refused.0.contains("unreachable"), "{refused}");
    assert!(refused.0.contains("fail_closed"), "{refused}");
    assert!(closed.end("s", now + HOUR, now).await.is_err());
    assert!(closed.first_use([1; 16], 60_000, 1).await.is_err());
    // What this replica saw itself still holds without Redis.
    assert_eq!(closed.is_ended("before", now).await, Ok(true));
    // fail_open answers from this replica's memory.
    assert_eq!(open.is_ended("s", now).await, Ok(false));
    open.end("s", now + HOUR, now).await.expect("ended here");
    assert_eq!(open.is_ended("s", now).await, Ok(true));
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
