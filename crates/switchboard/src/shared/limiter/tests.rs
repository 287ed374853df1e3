//! Against a real Redis (switchboard-testkit): two limiters are two replicas.

use std::time::Instant;

use switchboard_core::limits::LimitSpec;
use switchboard_testkit::redis::Redis;

use super::*;

fn check(scope: Scope, spec: LimitSpec) -> Vec<SharedCheck> {
    vec![SharedCheck { scope, spec }]
}

fn agent(spec: LimitSpec) -> Vec<SharedCheck> {
    check(Scope::Agent("a".into()), spec)
}

const RATE: LimitSpec = LimitSpec {
    per_minute: Some(60.0),
    burst: Some(5),
    max_concurrent: None,
    queue: None,
};

const CAP: LimitSpec = LimitSpec {
    per_minute: None,
    burst: None,
    max_concurrent: Some(2),
    queue: None,
};

async fn verdict(limiter: &RedisLimiter, checks: &[SharedCheck]) -> SharedVerdict {
    limiter.admit(checks).await.expect("redis answers")
}

fn admitted(verdict: &SharedVerdict) -> bool {
    matches!(verdict, SharedVerdict::Admitted { .. })
}

#[tokio::test]
async fn two_replicas_share_one_rate() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let b = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let checks = agent(RATE);
    let mut taken = 0;
    for n in 0..10 {
        let limiter = if n % 2 == 0 { &a } else { &b };
        if admitted(&verdict(limiter, &checks).await) {
            taken += 1;
        }
    }
    assert_eq!(taken, 5, "a burst of 5 across both replicas, not 5 each");
    match verdict(&a, &checks).await {
        SharedVerdict::RateLimited { scope, retry_after } => {
            assert_eq!(scope, 0);
            assert!(
                retry_after > Duration::from_millis(500) && retry_after <= Duration::from_secs(1),
                "{retry_after:?}"
            );
        }
        other => panic!("expected a rate refusal, got {other:?}"),
    }
    // Another deployment has its own keys.
    let other = RedisLimiter::connect(&redis.url(), "other").expect("limiter");
    assert!(admitted(&verdict(&other, &checks).await));
}

#[tokio::test]
async fn a_rate_within_its_queue_time_waits_instead() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let queued = agent(LimitSpec {
        burst: Some(1),
        queue: Some(Duration::from_secs(2)),
        ..RATE
    });
    assert!(admitted(&verdict(&a, &queued).await));
    match verdict(&a, &queued).await {
        SharedVerdict::Admitted { wait, lease } => {
            assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1));
            assert!(lease.is_none(), "a rate holds no lease");
        }
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[tokio::test]
async fn two_replicas_share_one_cap_and_a_released_lease_frees_a_slot() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let b = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let checks = agent(CAP);
    let first = verdict(&a, &checks).await;
    let second = verdict(&b, &checks).await;
    assert!(admitted(&first) && admitted(&second));
    assert!(matches!(
        verdict(&a, &checks).await,
        SharedVerdict::Busy { scope: 0 }
    ));
    drop(first);
    let started = Instant::now();
    loop {
        if admitted(&verdict(&b, &checks).await) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a released lease frees its slot"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn all_or_nothing_a_full_cap_takes_no_rate_slot() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let one = LimitSpec {
        max_concurrent: Some(1),
        ..RATE
    };
    let checks = vec![
        SharedCheck {
            scope: Scope::Global,
            spec: RATE,
        },
        SharedCheck {
            scope: Scope::Tool("fx/echo".into()),
            spec: one,
        },
    ];
    let held = verdict(&a, &checks).await;
    assert!(admitted(&held));
    for _ in 0..3 {
        assert!(matches!(
            verdict(&a, &checks).await,
            SharedVerdict::Busy { scope: 1 }
        ));
    }
    // Busy calls took nothing: of the global burst of 5, 4 are left for the other scope.
    let global = check(Scope::Global, RATE);
    let mut taken = 0;
    for _ in 0..6 {
        if admitted(&verdict(&a, &global).await) {
            taken += 1;
        }
    }
    assert_eq!(taken, 4);
}

#[test]
fn a_dead_replicas_leases_expire() {
    let redis = Redis::start();
    let lease = Duration::from_millis(300);
    let checks = agent(LimitSpec {
        max_concurrent: Some(1),
        ..CAP
    });
    // The replica that dies: its runtime (and the task renewing its lease) ends with it,
    // and its lease is never released.
    let dying = tokio::runtime::Runtime::new().expect("runtime");
    dying.block_on(async {
        let limiter = RedisLimiter::with_lease(&redis.url(), "t", lease).expect("limiter");
        let held = verdict(&limiter, &checks).await;
        assert!(admitted(&held));
        std::mem::forget(held);
    });
    drop(dying);
    let alive = tokio::runtime::Runtime::new().expect("runtime");
    alive.block_on(async {
        let limiter = RedisLimiter::with_lease(&redis.url(), "t", lease).expect("limiter");
        assert!(matches!(
            verdict(&limiter, &checks).await,
            SharedVerdict::Busy { .. }
        ));
        let started = Instant::now();
        while !admitted(&verdict(&limiter, &checks).await) {
            assert!(started.elapsed() < lease * 3, "the dead lease expires");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(started.elapsed() >= lease / 2, "not before its time");
    });
}

#[tokio::test]
async fn a_lease_is_renewed_while_its_call_runs() {
    let redis = Redis::start();
    let lease = Duration::from_millis(300);
    let limiter = RedisLimiter::with_lease(&redis.url(), "t", lease).expect("limiter");
    let checks = agent(LimitSpec {
        max_concurrent: Some(1),
        ..CAP
    });
    let held = verdict(&limiter, &checks).await;
    assert!(admitted(&held));
    tokio::time::sleep(lease * 3).await;
    assert!(
        matches!(verdict(&limiter, &checks).await, SharedVerdict::Busy { .. }),
        "still held after three lease lengths"
    );
    drop(held);
}

/// A Redis restart or failover loses every lease; the replica's next renewal puts back those
/// of the calls still running, so a cap never admits past itself afterwards.
#[tokio::test]
async fn a_lease_lost_with_its_key_is_put_back_by_the_renewal() {
    let redis = Redis::start();
    // Long enough that a late renewal on a loaded machine cannot let it lapse.
    let lease = Duration::from_secs(3);
    let a = RedisLimiter::with_lease(&redis.url(), "t", lease).expect("limiter");
    let b = RedisLimiter::with_lease(&redis.url(), "t", lease).expect("limiter");
    let checks = agent(LimitSpec {
        max_concurrent: Some(1),
        ..CAP
    });
    let held = verdict(&a, &checks).await;
    assert!(admitted(&held));
    redis.cli(&["FLUSHALL"]);
    // The next renewal (every lease/3) puts it back.
    let lost = format!("{}lease:agent:a", a.inner.prefix);
    let mut back = false;
    for _ in 0..50 {
        if redis.cli(&["ZCARD", &lost]).trim() == "1" {
            back = true;
            break;
        }
        tokio::time::sleep(lease / 20).await;
    }
    assert!(back, "the lease is back");
    assert!(
        matches!(verdict(&b, &checks).await, SharedVerdict::Busy { .. }),
        "the running call still counts against the cap"
    );
    drop(held);
}

/// A renewal that lands after its call's release (a script loaded again after a Redis
/// restart runs after the release) is undone: no lease outlives its call.
#[tokio::test]
async fn a_lease_renewed_after_its_release_is_removed_again() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let checks = agent(LimitSpec {
        max_concurrent: Some(1),
        ..CAP
    });
    let held = verdict(&a, &checks).await;
    let renewed: Vec<(String, String)> = lock(&a.inner.held)
        .iter()
        .flat_map(|(member, keys)| keys.iter().map(|key| (key.clone(), member.clone())))
        .collect();
    drop(held);
    let (key, member) = renewed.first().cloned().expect("one lease");
    let started = Instant::now();
    while redis.cli(&["ZCARD", &key]).trim() != "0" {
        assert!(started.elapsed() < Duration::from_secs(2), "released");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The late renewal.
    redis.cli(&["ZADD", &key, "99999999999999999", &member]);
    release_again_if_dropped(&a.inner, renewed).await;
    assert_eq!(redis.cli(&["ZCARD", &key]).trim(), "0");
}

#[tokio::test]
async fn an_outage_is_reported_at_once_and_redis_coming_back_is_noticed() {
    let mut redis = Redis::start();
    let limiter = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let checks = agent(RATE);
    assert!(admitted(&verdict(&limiter, &checks).await));
    assert!(limiter.health().reachable);
    redis.stop();
    let started = Instant::now();
    let SharedUnavailable(why) = limiter.admit(&checks).await.expect_err("down");
    assert!(why.starts_with("redis at unix:///"), "{why}");
    assert!(started.elapsed() <= COMMAND_TIMEOUT + Duration::from_millis(200));
    // Now marked down: no call waits on Redis at all.
    let started = Instant::now();
    assert!(limiter.admit(&checks).await.is_err());
    assert!(started.elapsed() < Duration::from_millis(50));
    let health = limiter.health();
    assert!(!health.reachable && health.error.is_some(), "{health:?}");
    redis.restart();
    let started = Instant::now();
    while !limiter.health().reachable {
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the probe notices"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The restarted Redis has no scripts: EVALSHA falls back to loading it.
    assert!(admitted(&verdict(&limiter, &checks).await));
}

#[test]
fn a_password_never_reaches_a_message() {
    assert_eq!(
        redacted("redis://user:secret@host:6379/0"),
        "redis://***@host:6379/0"
    );
    assert_eq!(redacted("unix:///run/r.sock"), "unix:///run/r.sock");
    assert!(matches!(
        RedisLimiter::connect("redis://:pw@[bad", "t"),
        Err(SharedError::BadUrl { url, .. }) if !url.contains("pw")
    ));
}

#[tokio::test]
async fn an_outage_shows_in_health_without_a_call() {
    let mut redis = Redis::start();
    let limiter = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    assert!(admitted(&verdict(&limiter, &agent(RATE)).await));
    redis.stop();
    let started = Instant::now();
    while limiter.health().reachable {
        assert!(
            started.elapsed() < HEALTH_EVERY * 3,
            "the health PING notices within a few seconds"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    assert!(limiter.admit(&agent(RATE)).await.is_err());
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "no call pays for finding it down"
    );
}

/// Script calls the server ran (`INFO commandstats`: EVALSHA, and EVAL after a NOSCRIPT).
fn script_calls(redis: &Redis) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    ["cmdstat_evalsha:calls=", "cmdstat_eval:calls="]
        .iter()
        .filter_map(|prefix| {
            stats
                .lines()
                .find_map(|line| line.strip_prefix(prefix))
                .and_then(|rest| rest.split(',').next())
                .and_then(|calls| calls.parse::<u64>().ok())
        })
        .sum()
}

/// A busy rate far from its limit: two replicas admit 2,000 calls in a few dozen round trips
/// (units taken ahead), and all of them, since the limit allows them.
#[tokio::test]
async fn a_busy_rate_takes_units_ahead_in_few_round_trips() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let b = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let checks = agent(LimitSpec {
        per_minute: Some(6_000_000.0),
        burst: Some(1_000),
        max_concurrent: None,
        queue: None,
    });
    let before = script_calls(&redis);
    let mut taken = 0;
    for n in 0..2_000 {
        let limiter = if n % 2 == 0 { &a } else { &b };
        if admitted(&verdict(limiter, &checks).await) {
            taken += 1;
        }
    }
    let trips = script_calls(&redis) - before;
    assert_eq!(taken, 2_000);
    assert!(trips < 200, "{trips} round trips for 2,000 calls");
    // Over a million a second the rate's interval is below the script's microsecond: units
    // are taken ahead all the same (a deployment of its own: a fresh rate).
    let a = RedisLimiter::connect(&redis.url(), "fast").expect("limiter");
    let checks = agent(LimitSpec {
        per_minute: Some(1e9),
        burst: Some(1_000),
        max_concurrent: None,
        queue: None,
    });
    let before = script_calls(&redis);
    for _ in 0..1_000 {
        assert!(admitted(&verdict(&a, &checks).await));
    }
    let trips = script_calls(&redis) - before;
    assert!(trips < 100, "{trips} round trips for 1,000 calls");
}

/// Taking ahead never admits past the limit: two replicas racing a rate of 1,000 a second
/// with a burst of 50 (20 units ahead at most) admit no more than the burst and the rate's
/// refill over the time they ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_taken_ahead_never_pass_the_limit() {
    let redis = Redis::start();
    let spec = LimitSpec {
        per_minute: Some(60_000.0),
        burst: Some(50),
        max_concurrent: None,
        queue: None,
    };
    let started = Instant::now();
    let mut replicas = tokio::task::JoinSet::new();
    for _ in 0..2 {
        let limiter = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
        replicas.spawn(async move {
            let checks = agent(spec);
            let mut taken = 0_u64;
            for _ in 0..1_500 {
                if admitted(&verdict(&limiter, &checks).await) {
                    taken += 1;
                }
            }
            taken
        });
    }
    let mut taken = 0;
    while let Some(count) = replicas.join_next().await {
        taken += count.expect("a replica");
    }
    let elapsed = started.elapsed();
    let ceiling = 50 + (elapsed.as_secs_f64() * 1_000.0).ceil() as u64;
    assert!(
        taken <= ceiling,
        "{taken} admitted in {elapsed:?}: at most {ceiling}"
    );
    assert!(taken >= 50, "{taken} admitted: at least the burst");
}

/// A rate too slow for a `Duration` and a burst whose tolerance would overflow one (an
/// embedder's: the config refuses such a rate) are bounded like the embedded limiter's, not
/// a panic on the call's path.
#[tokio::test]
async fn extreme_rates_and_bursts_are_bounded() {
    let redis = Redis::start();
    let a = RedisLimiter::connect(&redis.url(), "t").expect("limiter");
    let extreme = agent(LimitSpec {
        per_minute: Some(1e-300),
        burst: Some(u32::MAX),
        ..RATE
    });
    for _ in 0..3 {
        assert!(admitted(&verdict(&a, &extreme).await), "within the burst");
    }
}
