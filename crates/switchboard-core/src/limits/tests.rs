//! Limits on paused time: no sleeps, exact waits.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn limits(scope: Scope, spec: LimitSpec) -> Limits {
    Limits::new(HashMap::from([(scope, spec)]), HashMap::new())
}

#[tokio::test(start_paused = true)]
async fn gcra_spaces_requests_and_allows_a_burst() {
    let rate = Gcra::per_minute(60.0, 3);
    let start = Instant::now();
    for _ in 0..3 {
        assert_eq!(
            rate.reserve(start, Duration::ZERO),
            Ok(Duration::ZERO),
            "the burst"
        );
    }
    assert_eq!(
        rate.reserve(start, Duration::ZERO),
        Err(Duration::from_secs(1))
    );
    assert_eq!(
        rate.reserve(start, Duration::from_secs(5)),
        Ok(Duration::from_secs(1))
    );
    assert_eq!(
        rate.reserve(start, Duration::from_secs(5)),
        Ok(Duration::from_secs(2))
    );
    // After a quiet minute the full burst is back.
    let later = start + Duration::from_secs(60);
    for _ in 0..3 {
        assert_eq!(rate.reserve(later, Duration::ZERO), Ok(Duration::ZERO));
    }
}

#[tokio::test(start_paused = true)]
async fn over_the_rate_a_call_waits_its_queue_time_or_is_refused() {
    let spec = LimitSpec {
        per_minute: Some(60.0),
        queue: Some(Duration::from_millis(1500)),
        ..LimitSpec::default()
    };
    let limits = limits(Scope::Agent("npc".into()), spec);
    let scopes = [Scope::Agent("npc".into())];
    let start = Instant::now();
    limits.admit(&scopes, Some("npc")).await.expect("first");
    limits
        .admit(&scopes, Some("npc"))
        .await
        .expect("second waits 1 s");
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    limits
        .admit(&scopes, Some("npc"))
        .await
        .expect("third waits 1 s more");
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    // Reserve two seconds ahead, then the next would wait 2 s > 1.5 s of queue.
    limits.admit(&scopes, Some("npc")).await.expect("fourth");
    let refused = {
        let limits = &limits;
        let one = limits.admit(&scopes, Some("npc"));
        let two = limits.admit(&scopes, Some("npc"));
        let (a, b) = futures::join!(one, two);
        [a.err(), b.err()].into_iter().flatten().next()
    };
    match refused {
        Some(Refusal::RateLimited { scope, retry_after }) => {
            assert_eq!(scope, "agent npc");
            assert!(retry_after > Duration::from_millis(1500), "{retry_after:?}");
            let text = Refusal::RateLimited { scope, retry_after }.to_string();
            assert!(
                text.starts_with("rate limited (agent npc), retry after "),
                "{text}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn concurrency_caps_hold_permits_for_the_call() {
    let spec = LimitSpec {
        max_concurrent: Some(2),
        queue: Some(Duration::from_secs(1)),
        ..LimitSpec::default()
    };
    let limits = limits(Scope::Server("s".into()), spec);
    let scopes = [Scope::Server("s".into())];
    let first = limits.admit(&scopes, None).await.expect("1");
    let _second = limits.admit(&scopes, None).await.expect("2");
    let start = Instant::now();
    let third = limits.admit(&scopes, None).await;
    assert!(
        matches!(third, Err(Refusal::RateLimited { .. })),
        "{third:?}"
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(1),
        "waited its queue time"
    );
    drop(first);
    limits
        .admit(&scopes, None)
        .await
        .expect("a slot is free again");
}

#[tokio::test(start_paused = true)]
async fn quotas_refuse_until_the_window_frees_budget() {
    let quotas = HashMap::from([("npc".to_owned(), Quota::new(3.0, Duration::from_secs(60)))]);
    let limits = Limits::new(HashMap::new(), quotas);
    let cost = CostModel {
        fixed: 1.0,
        per_second: 0.5,
    };
    assert_eq!(cost.cost(Duration::from_secs(2)), 2.0);
    limits.admit(&[], Some("npc")).await.expect("budget left");
    limits.charge(Some("npc"), 2.0);
    tokio::time::advance(Duration::from_secs(30)).await;
    limits.charge(Some("npc"), 1.0);
    match limits.admit(&[], Some("npc")).await {
        Err(Refusal::Quota(exceeded)) => {
            assert_eq!(exceeded.spent, 3.0);
            assert_eq!(
                exceeded.retry_after,
                Duration::from_secs(30),
                "when the first charge leaves"
            );
        }
        other => panic!("expected a quota refusal, got {other:?}"),
    }
    limits
        .admit(&[], Some("other"))
        .await
        .expect("other agents are not charged");
    tokio::time::advance(Duration::from_secs(30)).await;
    limits
        .admit(&[], Some("npc"))
        .await
        .expect("the window moved on");
}
