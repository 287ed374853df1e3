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

/// A rate too slow for the clock, or a burst whose tolerance would overflow (an embedder's:
/// the config refuses such a rate), is bounded, never a panic.
#[tokio::test(start_paused = true)]
async fn extreme_rates_and_bursts_are_bounded() {
    let slowest = Gcra::interval(MIN_PER_MINUTE);
    assert_eq!(slowest, Duration::from_secs(600_000));
    assert_eq!(Gcra::interval(1e-300), slowest);
    assert_eq!(Gcra::interval(f64::NAN), slowest);
    assert_eq!(Gcra::interval(f64::INFINITY), Duration::ZERO);
    assert_eq!(Gcra::tolerance(Duration::MAX, u32::MAX), Duration::MAX);
    assert_eq!(Gcra::tolerance(slowest, 0), Duration::ZERO);
    let rate = Gcra::per_minute(1e-300, u32::MAX);
    let now = Instant::now();
    assert_eq!(rate.reserve(now, Duration::ZERO), Ok(Duration::ZERO));
    assert_eq!(
        rate.reserve(now, Duration::ZERO),
        Ok(Duration::ZERO),
        "burst"
    );
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

/// A call the tool's limit refuses takes nothing from the gateway's limit before it, so one
/// agent hammering a tight tool leaves the gateway's rate to the others.
#[tokio::test(start_paused = true)]
async fn a_call_a_later_limit_refuses_uses_up_no_earlier_rate() {
    let gateway = LimitSpec {
        per_minute: Some(60.0),
        burst: Some(3),
        ..LimitSpec::default()
    };
    let tool = LimitSpec {
        per_minute: Some(60.0),
        ..LimitSpec::default()
    };
    let tight = Scope::Tool("s:t".into());
    let limits = Limits::new(
        HashMap::from([(Scope::Global, gateway), (tight.clone(), tool)]),
        HashMap::new(),
    );
    let hammered = [Scope::Global, tight];
    limits.admit(&hammered, None).await.expect("the first");
    for _ in 0..10 {
        assert!(matches!(
            limits.admit(&hammered, None).await,
            Err(Refusal::RateLimited { .. })
        ));
    }
    // Two of the gateway's burst of three are left for everyone else.
    let other = [Scope::Global];
    limits.admit(&other, None).await.expect("a second");
    limits.admit(&other, None).await.expect("a third");
    assert!(
        limits.admit(&other, None).await.is_err(),
        "the burst is spent"
    );
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

/// Calls queued for a slow server's only slot hold none of the gateway's permits while they
/// wait, so every other tool keeps the gateway's slots; they get in one after another.
#[tokio::test(start_paused = true)]
async fn calls_queued_for_one_cap_hold_no_permit_of_another() {
    let gateway = LimitSpec {
        max_concurrent: Some(8),
        ..LimitSpec::default()
    };
    let one_at_a_time = LimitSpec {
        max_concurrent: Some(1),
        queue: Some(Duration::from_secs(10)),
        ..LimitSpec::default()
    };
    let slow = Scope::Server("slow".into());
    let limits = Arc::new(Limits::new(
        HashMap::from([(Scope::Global, gateway), (slow.clone(), one_at_a_time)]),
        HashMap::new(),
    ));
    let to_slow = [Scope::Global, slow];
    let running = limits.admit(&to_slow, None).await.expect("runs");
    let queued: Vec<_> = (0..8)
        .map(|_| {
            let limits = limits.clone();
            let scopes = to_slow.clone();
            tokio::spawn(async move { limits.admit(&scopes, None).await.map(drop) })
        })
        .collect();
    // Paused time moves on only once every queued call waits.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let elsewhere = [Scope::Global, Scope::Server("fast".into())];
    let others: Vec<Admission> =
        futures::future::join_all((0..7).map(|_| limits.admit(&elsewhere, None)))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("the queued calls hold none of the gateway's slots");
    drop((running, others));
    for call in queued {
        call.await.expect("the task").expect("admitted in turn");
    }
}

/// A call that got the permit it waited for and then finds another cap full lets go of the
/// first while it waits again, and is refused once the queue time of the cap it waits for,
/// counted from its first try, runs out.
#[tokio::test(start_paused = true)]
async fn a_call_waiting_again_lets_go_of_the_permit_it_waited_for() {
    let cap = |secs| LimitSpec {
        max_concurrent: Some(1),
        queue: Some(Duration::from_secs(secs)),
        ..LimitSpec::default()
    };
    let server = Scope::Server("s".into());
    let limits = Arc::new(Limits::new(
        HashMap::from([(Scope::Global, cap(3)), (server.clone(), cap(10))]),
        HashMap::new(),
    ));
    let start = Instant::now();
    let on_server = limits
        .admit(std::slice::from_ref(&server), None)
        .await
        .expect("a");
    let both = {
        let limits = limits.clone();
        let scopes = [Scope::Global, server.clone()];
        tokio::spawn(async move { limits.admit(&scopes, None).await.map(drop) })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let on_gateway = limits.admit(&[Scope::Global], None).await.expect("c");
    drop(on_server);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let again = limits.admit(&[server], None).await;
    assert!(
        again.is_ok(),
        "the waiting call let go of the server's slot"
    );
    let refused = both.await.expect("the task").expect_err("out of time");
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3),
        "the gateway's queue"
    );
    assert!(refused.to_string().contains("gateway"), "{refused}");
    drop((again, on_gateway));
}

/// A call dropped while it waits (its caller cancelled it) gives back the rate slots it took,
/// whether it waited for its rate's turn or for a cap's permit.
#[tokio::test(start_paused = true)]
async fn a_call_cancelled_while_queued_gives_its_rate_slots_back() {
    let agent = Scope::Agent("npc".into());
    let server = Scope::Server("s".into());
    let rate = LimitSpec {
        per_minute: Some(60.0),
        queue: Some(Duration::from_secs(1)),
        ..LimitSpec::default()
    };
    let cap = LimitSpec {
        max_concurrent: Some(1),
        queue: Some(Duration::from_secs(10)),
        ..LimitSpec::default()
    };
    let limits = Limits::new(
        HashMap::from([(agent.clone(), rate), (server.clone(), cap)]),
        HashMap::new(),
    );
    let (rated, both) = ([agent.clone()], [agent, server.clone()]);
    let start = Instant::now();
    let running = limits.admit(&[server], None).await.expect("runs");
    limits.admit(&rated, None).await.expect("first");
    let cancel = Duration::from_millis(100);
    let waiting_for_the_rate = limits.admit(&rated, None);
    assert!(
        tokio::time::timeout(cancel, waiting_for_the_rate)
            .await
            .is_err()
    );
    limits
        .admit(&rated, None)
        .await
        .expect("the slot the cancelled call took is free again");
    assert_eq!(start.elapsed(), Duration::from_secs(1), "the next slot");

    tokio::time::advance(Duration::from_secs(1)).await;
    let waiting_for_a_permit = limits.admit(&both, None);
    assert!(
        tokio::time::timeout(cancel, waiting_for_a_permit)
            .await
            .is_err()
    );
    drop(running);
    limits
        .admit(&rated, None)
        .await
        .expect("a call that waited for a permit took a slot too");
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(2100),
        "at once: the cancelled call's slot was given back"
    );
}

/// A reload that keeps a scope's limits keeps its limiter: a call admitted before still holds
/// its permit and a burst spent stays spent; a scope whose limits changed starts afresh.
#[tokio::test(start_paused = true)]
async fn a_reload_keeps_the_limiters_whose_limits_did_not_change() {
    let server = Scope::Server("slow".into());
    let agent = Scope::Agent("npc".into());
    let rate = LimitSpec {
        per_minute: Some(60.0),
        burst: Some(2),
        ..LimitSpec::default()
    };
    let specs = HashMap::from([
        (
            server.clone(),
            LimitSpec {
                max_concurrent: Some(1),
                ..LimitSpec::default()
            },
        ),
        (agent.clone(), rate),
    ]);
    let before = Limits::new(specs.clone(), HashMap::new());
    let running = before
        .admit(std::slice::from_ref(&server), None)
        .await
        .expect("runs");
    for _ in 0..2 {
        before
            .admit(std::slice::from_ref(&agent), None)
            .await
            .expect("burst");
    }

    let mut after = Limits::new(specs, HashMap::new());
    after.keep_state_of(&before);
    assert!(
        after
            .admit(std::slice::from_ref(&server), None)
            .await
            .is_err(),
        "max_concurrent = 1 holds across the reload"
    );
    assert!(
        after
            .admit(std::slice::from_ref(&agent), None)
            .await
            .is_err(),
        "the burst stays spent"
    );
    drop(running);
    after
        .admit(&[server], None)
        .await
        .expect("the call admitted before the reload gave its permit back here");

    let raised = LimitSpec {
        burst: Some(3),
        ..rate
    };
    let mut changed = Limits::new(HashMap::from([(agent.clone(), raised)]), HashMap::new());
    changed.keep_state_of(&after);
    changed
        .admit(&[agent], None)
        .await
        .expect("a changed limit starts afresh");
}

/// The fail-open fallback's limiters are kept as well.
#[tokio::test(start_paused = true)]
async fn a_reload_keeps_the_fail_open_limiters() {
    let capped = LimitSpec {
        max_concurrent: Some(1),
        ..LimitSpec::default()
    };
    let scopes = [Scope::Agent("a".into())];
    let before = agent_limits(capped, FakeStore::new(vec![]), WhenUnreachable::FailOpen);
    let _running = before.admit(&scopes, None).await.expect("runs");
    let mut after = agent_limits(capped, FakeStore::new(vec![]), WhenUnreachable::FailOpen);
    after.keep_state_of(&before);
    assert!(
        after.admit(&scopes, None).await.is_err(),
        "the replica's share of the cap holds across the reload"
    );
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

/// Lowering a runaway agent's budget keeps what it spent: the new budget counts it (and what
/// calls admitted before the reload charge after it), under the new window.
#[tokio::test(start_paused = true)]
async fn a_changed_quota_counts_what_was_spent_under_the_old_one() {
    let quota = |cost, window| HashMap::from([("npc".to_owned(), Quota::new(cost, window))]);
    let hour = Duration::from_secs(3600);
    let before = Limits::new(HashMap::new(), quota(100.0, hour));
    before.charge(Some("npc"), 80.0);

    let mut lowered = Limits::new(HashMap::new(), quota(50.0, hour));
    lowered.keep_state_of(&before);
    // A call admitted before the reload is charged to the limits it started under.
    before.charge(Some("npc"), 5.0);
    match lowered.admit(&[], Some("npc")).await {
        Err(Refusal::Quota(exceeded)) => {
            assert_eq!((exceeded.spent, exceeded.limit), (85.0, 50.0));
        }
        other => panic!("the lowered budget counts what was spent, got {other:?}"),
    }

    let ten_minutes = Duration::from_secs(600);
    let mut shorter = Limits::new(HashMap::new(), quota(50.0, ten_minutes));
    shorter.keep_state_of(&lowered);
    assert!(
        shorter.admit(&[], Some("npc")).await.is_err(),
        "still spent"
    );
    tokio::time::advance(ten_minutes).await;
    shorter
        .admit(&[], Some("npc"))
        .await
        .expect("the spending left the new, shorter window");
}

#[tokio::test(start_paused = true)]
async fn shared_quotas_count_the_other_replicas_spending_until_it_leaves() {
    let window = Duration::from_secs(60);
    let quotas = HashMap::from([("npc".to_owned(), Quota::new(3.0, window))]);
    let spending = Arc::new(SharedSpending::new());
    let limits = Limits::new(HashMap::new(), quotas).with_shared_spending(spending.clone());
    assert!(
        spending.is_wanted(),
        "an agent has a quota: exchanges are needed"
    );
    let none = Limits::new(HashMap::new(), HashMap::new()).with_shared_spending(spending.clone());
    assert!(!spending.is_wanted(), "no quota: nothing to exchange");
    drop(none);
    let limits = limits.with_shared_spending(spending.clone());
    let now = Instant::now();
    spending.replace_others(HashMap::from([(
        "npc".to_owned(),
        vec![Spent {
            leaves: now + Duration::from_secs(20),
            cost: 2.0,
        }],
    )]));
    limits.admit(&[], Some("npc")).await.expect("2 of 3 spent");
    limits.charge(Some("npc"), 1.0);
    match limits.admit(&[], Some("npc")).await {
        Err(Refusal::Quota(exceeded)) => {
            assert_eq!(exceeded.spent, 3.0, "own 1 + elsewhere 2");
            assert_eq!(
                exceeded.retry_after,
                Duration::from_secs(20),
                "when the other replica's spending leaves the window"
            );
        }
        other => panic!("expected a quota refusal, got {other:?}"),
    }
    let unsent = spending.take_unsent().unsent;
    assert_eq!(
        unsent,
        vec![Unsent {
            agent: "npc".to_owned(),
            window,
            cost: 1.0
        }],
        "own spending is noted to be sent"
    );
    tokio::time::advance(Duration::from_secs(20)).await;
    limits
        .admit(&[], Some("npc"))
        .await
        .expect("the other replica's spending left the window");

    // A reload keeps what was spent here, with the same quota or a changed one, and the
    // other replicas' spending.
    let same = HashMap::from([("npc".to_owned(), Quota::new(3.0, window))]);
    let mut reloaded = Limits::new(HashMap::new(), same).with_shared_spending(spending.clone());
    reloaded.keep_state_of(&limits);
    reloaded.charge(Some("npc"), 2.0);
    assert!(
        reloaded.admit(&[], Some("npc")).await.is_err(),
        "1 + 2 kept"
    );
    let changed = HashMap::from([("npc".to_owned(), Quota::new(4.0, window))]);
    let mut raised = Limits::new(HashMap::new(), changed).with_shared_spending(spending.clone());
    raised.keep_state_of(&reloaded);
    assert!(raised.admit(&[], Some("npc")).await.is_ok(), "3 of 4");
    spending.replace_others(HashMap::from([(
        "npc".to_owned(),
        vec![Spent {
            leaves: Instant::now() + window,
            cost: 1.0,
        }],
    )]));
    assert!(
        raised.admit(&[], Some("npc")).await.is_err(),
        "3 here and 1 elsewhere of 4"
    );
    let unsent = spending.take_unsent().unsent;
    assert_eq!(unsent[0].cost, 2.0, "what was charged since, sent once");
}

/// A shared store that is down, or answers from a script of verdicts.
struct FakeStore {
    answers: Mutex<Vec<Result<SharedVerdict, SharedUnavailable>>>,
    asked: Mutex<Vec<Vec<SharedCheck>>>,
}

impl FakeStore {
    fn new(answers: Vec<Result<SharedVerdict, SharedUnavailable>>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers),
            asked: Mutex::default(),
        })
    }
}

impl SharedLimiter for FakeStore {
    fn admit<'a>(
        &'a self,
        checks: &'a [SharedCheck],
    ) -> futures::future::BoxFuture<'a, Result<SharedVerdict, SharedUnavailable>> {
        self.asked.lock().expect("asked").push(checks.to_vec());
        let mut answers = self.answers.lock().expect("answers");
        let answer = if answers.is_empty() {
            Err(SharedUnavailable(
                "redis at unix:///x: connection refused".to_owned(),
            ))
        } else {
            answers.remove(0)
        };
        Box::pin(async move { answer })
    }

    fn health(&self) -> SharedHealth {
        SharedHealth {
            backend: "fake",
            target: String::new(),
            reachable: false,
            error: None,
        }
    }
}

fn agent_limits(spec: LimitSpec, store: Arc<FakeStore>, policy: WhenUnreachable) -> Limits {
    limits(Scope::Agent("a".into()), spec).with_shared(store, policy, 3)
}

const SIXTY: LimitSpec = LimitSpec {
    per_minute: Some(60.0),
    burst: Some(60),
    max_concurrent: None,
    queue: None,
};

#[tokio::test(start_paused = true)]
async fn fail_open_limits_each_replica_at_its_share() {
    let limits = agent_limits(SIXTY, FakeStore::new(vec![]), WhenUnreachable::FailOpen);
    let scopes = [Scope::Global, Scope::Agent("a".into())];
    for n in 0..20 {
        assert!(
            limits.admit(&scopes, None).await.is_ok(),
            "call {n} of 60/3"
        );
    }
    let refused = limits.admit(&scopes, None).await.expect_err("the 21st");
    assert!(
        refused.to_string().contains("rate limited (agent a)"),
        "{refused}"
    );
}

#[tokio::test(start_paused = true)]
async fn fail_closed_refuses_saying_the_shared_limiter_is_unreachable() {
    let limits = agent_limits(SIXTY, FakeStore::new(vec![]), WhenUnreachable::FailClosed);
    let refused = limits
        .admit(&[Scope::Agent("a".into())], None)
        .await
        .expect_err("refused");
    let text = refused.to_string();
    assert!(
        text.contains("the shared limiter is unreachable (redis at unix:///x: connection refused)"),
        "{text}"
    );
    // A scope without limits never asks the store.
    assert!(limits.admit(&[Scope::Global], None).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn the_store_sees_only_limited_scopes_and_its_answers_are_kept() {
    let store = FakeStore::new(vec![
        Ok(SharedVerdict::Admitted {
            wait: Duration::from_secs(2),
            lease: None,
        }),
        Ok(SharedVerdict::RateLimited {
            scope: 0,
            retry_after: Duration::from_millis(1500),
        }),
    ]);
    let limits = agent_limits(SIXTY, store.clone(), WhenUnreachable::FailClosed);
    let scopes = [Scope::Global, Scope::Agent("a".into())];
    let start = Instant::now();
    assert!(limits.admit(&scopes, None).await.is_ok());
    assert_eq!(start.elapsed(), Duration::from_secs(2), "the store's wait");
    let refused = limits.admit(&scopes, None).await.expect_err("limited");
    assert_eq!(
        refused,
        Refusal::RateLimited {
            scope: "agent a".into(),
            retry_after: Duration::from_millis(1500)
        }
    );
    let asked = store.asked.lock().expect("asked");
    assert_eq!(asked[0].len(), 1, "only the agent is limited");
    assert_eq!(asked[0][0].spec, SIXTY);
}

#[tokio::test(start_paused = true)]
async fn a_full_shared_cap_is_asked_again_within_the_queue_time() {
    let capped = LimitSpec {
        max_concurrent: Some(2),
        queue: Some(Duration::from_millis(120)),
        ..LimitSpec::default()
    };
    let busy = || Ok(SharedVerdict::Busy { scope: 0 });
    let admitted = Ok(SharedVerdict::Admitted {
        wait: Duration::ZERO,
        lease: None,
    });
    let store = FakeStore::new(vec![busy(), busy(), admitted, busy(), busy(), busy()]);
    let limits = agent_limits(capped, store, WhenUnreachable::FailClosed);
    let scopes = [Scope::Agent("a".into())];
    let start = Instant::now();
    assert!(
        limits.admit(&scopes, None).await.is_ok(),
        "a slot freed in time"
    );
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    let refused = limits.admit(&scopes, None).await.expect_err("still full");
    assert!(
        refused.to_string().contains("2 calls in flight"),
        "{refused}"
    );
}

#[test]
fn a_replica_alone_takes_its_share_rounded_up() {
    let spec = LimitSpec {
        per_minute: Some(60.0),
        burst: Some(10),
        max_concurrent: Some(4),
        queue: Some(Duration::from_secs(1)),
    };
    let share = shared::scaled(spec, 3);
    assert_eq!(share.per_minute, Some(20.0));
    assert_eq!(share.burst, Some(4));
    assert_eq!(share.max_concurrent, Some(2));
    assert_eq!(share.queue, Some(Duration::from_secs(1)));
    assert_eq!(shared::scaled(spec, 0), spec, "zero replicas count as one");
}
