//! Against a real Redis (switchboard-testkit): two `RedisResults` are two replicas.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, json};
use switchboard_core::pipeline::CACHE_META_KEY;
use switchboard_testkit::redis::Redis;

use super::*;
use crate::latency::cache::{Reuse, cache_key};

const TTL: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(2);

fn reuse(wait: Duration) -> Reuse {
    Reuse { ttl: TTL, wait }
}

fn replicas(redis: &Redis) -> (RedisResults, RedisResults) {
    let replica = || RedisResults::connect(&redis.url(), "t").expect("results");
    (replica(), replica())
}

fn key(agent: &str) -> String {
    let arguments: Map<String, serde_json::Value> = json!({"symbol": "SB"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    cache_key(Some(agent), None, "lab:cached_quote", &arguments)
}

/// A call that takes `took`, counted in `runs`, answering `text` (an error when it starts
/// with "error").
fn call<'a>(runs: &'a AtomicUsize, took: Duration, text: &'a str) -> BoxFuture<'a, Answer> {
    Box::pin(async move {
        runs.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(took).await;
        Ok(if text.starts_with("error") {
            ToolOutcome::error(text)
        } else {
            ToolOutcome::text(text)
        })
    })
}

fn shared_hit(answer: &Answer) -> bool {
    answer
        .as_ref()
        .ok()
        .and_then(|outcome| outcome.meta.as_ref())
        .and_then(|meta| meta.get(CACHE_META_KEY))
        .is_some_and(|mark| mark["shared"] == true)
}

#[tokio::test]
async fn replicas_asked_at_once_run_the_call_once_and_agents_never_share() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis);
    let runs = AtomicUsize::new(0);
    let slow = Duration::from_millis(300);
    let qa = key("qa");
    let (first, second) = tokio::join!(
        a.get_or_run(&qa, reuse(WAIT), call(&runs, slow, "quote")),
        b.get_or_run(&qa, reuse(WAIT), call(&runs, slow, "quote")),
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "coalesced across replicas");
    assert_eq!(first.expect("answer").text_content(), "quote");
    assert_eq!(second.expect("answer").text_content(), "quote");
    // Later, from either replica: the kept answer, marked as shared.
    let later = b
        .get_or_run(&qa, reuse(WAIT), call(&runs, slow, "other"))
        .await;
    assert!(shared_hit(&later), "{later:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Another agent's identical call runs for itself.
    let dev = b
        .get_or_run(&key("dev"), reuse(WAIT), call(&runs, slow, "dev's"))
        .await;
    assert_eq!(dev.expect("answer").text_content(), "dev's");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn errors_and_large_answers_are_not_shared() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis);
    let runs = AtomicUsize::new(0);
    let quick = Duration::ZERO;
    for replica in [&a, &b] {
        let answer = replica
            .get_or_run(&key("qa"), reuse(WAIT), call(&runs, quick, "error: nope"))
            .await;
        assert!(answer.expect("answer").is_error);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2, "an error is never reused");
    let large = "x".repeat(MAX_VALUE_BYTES);
    for replica in [&a, &b] {
        replica
            .get_or_run(&key("big"), reuse(WAIT), call(&runs, quick, &large))
            .await
            .expect("answer");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4, "too large to share");
}

#[tokio::test]
async fn a_holder_that_does_not_deliver_in_time_leaves_the_others_to_run() {
    let redis = Redis::start();
    let (a, b) = replicas(&redis);
    let runs = AtomicUsize::new(0);
    let qa = key("qa");
    let short = Duration::from_millis(200);
    let started = Instant::now();
    let (slow, fallback) = tokio::join!(
        a.get_or_run(
            &qa,
            reuse(short),
            call(&runs, Duration::from_secs(1), "slow")
        ),
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            b.get_or_run(&qa, reuse(short), call(&runs, Duration::ZERO, "fallback"))
                .await
        },
    );
    assert_eq!(fallback.expect("answer").text_content(), "fallback");
    assert_eq!(slow.expect("answer").text_content(), "slow");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() < Duration::from_secs(2));

    // A holder cancelled mid-call releases its lock: a waiter runs at once, not at the end
    // of its wait.
    let other = key("cancel");
    let cancelled = tokio::time::timeout(
        Duration::from_millis(100),
        a.get_or_run(
            &other,
            reuse(WAIT),
            call(&runs, Duration::from_secs(5), "never"),
        ),
    )
    .await;
    assert!(cancelled.is_err());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let answer = b
        .get_or_run(&other, reuse(WAIT), call(&runs, Duration::ZERO, "ran"))
        .await;
    assert_eq!(answer.expect("answer").text_content(), "ran");
    assert!(started.elapsed() < WAIT / 2, "{:?}", started.elapsed());
}

#[tokio::test]
async fn an_unreachable_redis_only_makes_calls_run_here() {
    let mut redis = Redis::start();
    let (a, _) = replicas(&redis);
    redis.stop();
    let runs = AtomicUsize::new(0);
    for _ in 0..2 {
        let answer = a
            .get_or_run(&key("qa"), reuse(WAIT), call(&runs, Duration::ZERO, "here"))
            .await;
        assert_eq!(answer.expect("answer").text_content(), "here");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
