//! Tests of the retry policy and runner (paused time, seeded randomness).

use std::cell::Cell;

use rand::SeedableRng;
use rand::rngs::StdRng;
use switchboard_core::clock::SystemClock;

use super::*;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

#[test]
fn decisions_follow_the_rules() {
    let policy = RetryPolicy::default();
    let mut rng = StdRng::seed_from_u64(7);
    let budget = ExtraRequestBudget::new(0.1, 5.0, 10.0);
    let mut decide = |attempts, failure, idempotent, remaining| {
        policy.decide(attempts, failure, idempotent, remaining, &budget, &mut rng)
    };
    use RetryDecision::Stop;
    assert_eq!(
        decide(1, Failure::Transport, false, ms(5_000)),
        Stop(StopReason::NotIdempotent)
    );
    assert_eq!(
        decide(1, Failure::Tool, true, ms(5_000)),
        Stop(StopReason::NotRetryable)
    );
    assert_eq!(
        decide(3, Failure::Timeout, true, ms(5_000)),
        Stop(StopReason::AttemptsExhausted)
    );
    assert_eq!(
        decide(1, Failure::Transport, true, ms(5)),
        Stop(StopReason::NoTimeLeft)
    );
    assert!(matches!(
        decide(1, Failure::Transport, true, ms(5_000)),
        RetryDecision::RetryAfter(_)
    ));

    let empty = ExtraRequestBudget::new(0.1, 0.0, 10.0);
    assert_eq!(
        policy.decide(1, Failure::Timeout, true, ms(5_000), &empty, &mut rng),
        Stop(StopReason::BudgetExhausted)
    );
}

#[test]
fn backoff_doubles_with_equal_jitter_and_is_capped() {
    let policy = RetryPolicy::default();
    let mut rng = StdRng::seed_from_u64(1);
    for retry in 1..=8 {
        let full = ms(25).saturating_mul(1 << (retry - 1)).min(ms(1_000));
        for _ in 0..50 {
            let pause = policy.backoff(retry, &mut rng);
            assert!(pause >= full / 2 && pause <= full, "{retry}: {pause:?}");
        }
    }
    // The jitter is real: pauses differ.
    let pauses: Vec<_> = (0..10).map(|_| policy.backoff(3, &mut rng)).collect();
    assert!(pauses.windows(2).any(|pair| pair[0] != pair[1]));
}

async fn run_failing(
    idempotent: bool,
    budget: &ExtraRequestBudget,
) -> (RetryReport<(), Failure>, u32) {
    let calls = Cell::new(0u32);
    let mut rng = StdRng::seed_from_u64(3);
    let clock = SystemClock;
    let policy = RetryPolicy::default();
    let context = RetryContext {
        policy: &policy,
        idempotent,
        deadline: clock.now() + ms(10_000),
        budget,
        rng: &mut rng,
        clock: &clock,
    };
    let report = call_with_retries(
        context,
        |failure: &Failure| *failure,
        || {
            calls.set(calls.get() + 1);
            async { Err::<(), _>(Failure::Transport) }
        },
    )
    .await;
    (report, calls.get())
}

#[tokio::test(start_paused = true)]
async fn never_repeats_a_non_idempotent_tool() {
    let budget = ExtraRequestBudget::new(0.1, 10.0, 10.0);
    let (report, calls) = run_failing(false, &budget).await;
    assert_eq!(calls, 1);
    assert_eq!(report.attempts, 1);
    assert_eq!(
        report.result,
        Err(RetryError::Failed {
            error: Failure::Transport,
            stop: StopReason::NotIdempotent
        })
    );

    let (report, calls) = run_failing(true, &budget).await;
    assert_eq!(calls, 3);
    assert!(matches!(
        report.result,
        Err(RetryError::Failed {
            stop: StopReason::AttemptsExhausted,
            ..
        })
    ));
}

#[tokio::test(start_paused = true)]
async fn a_tool_error_is_not_retried() {
    let budget = ExtraRequestBudget::retries();
    let calls = Cell::new(0u32);
    let mut rng = StdRng::seed_from_u64(3);
    let clock = SystemClock;
    let policy = RetryPolicy::default();
    let context = RetryContext {
        policy: &policy,
        idempotent: true,
        deadline: clock.now() + ms(10_000),
        budget: &budget,
        rng: &mut rng,
        clock: &clock,
    };
    let report = call_with_retries(
        context,
        |_: &&str| Failure::Tool,
        || {
            calls.set(calls.get() + 1);
            async { Err::<(), _>("no such city") }
        },
    )
    .await;
    assert_eq!(calls.get(), 1);
    assert_eq!(report.attempts, 1);
}

#[tokio::test(start_paused = true)]
async fn retries_succeed_after_backoff_and_respect_the_deadline() {
    let budget = ExtraRequestBudget::retries();
    let clock = SystemClock;
    let start = clock.now();
    let calls = Cell::new(0u32);
    let mut rng = StdRng::seed_from_u64(11);
    let policy = RetryPolicy::default();
    let context = RetryContext {
        policy: &policy,
        idempotent: true,
        deadline: start + ms(10_000),
        budget: &budget,
        rng: &mut rng,
        clock: &clock,
    };
    let report = call_with_retries(
        context,
        |failure: &Failure| *failure,
        || {
            calls.set(calls.get() + 1);
            let fail = calls.get() == 1;
            async move {
                if fail {
                    Err(Failure::Transport)
                } else {
                    Ok(42)
                }
            }
        },
    )
    .await;
    assert_eq!(report.result.ok(), Some(42));
    assert_eq!(report.attempts, 2);
    let waited = clock.now() - start;
    assert!(waited >= ms(12) && waited <= ms(26), "{waited:?}");

    // An attempt that never answers is cut at the deadline and not retried past it.
    let mut rng = StdRng::seed_from_u64(11);
    let start = clock.now();
    let policy = RetryPolicy::default();
    let context = RetryContext {
        policy: &policy,
        idempotent: true,
        deadline: start + ms(300),
        budget: &budget,
        rng: &mut rng,
        clock: &clock,
    };
    let report = call_with_retries(
        context,
        |failure: &Failure| *failure,
        std::future::pending::<Result<(), Failure>>,
    )
    .await;
    assert_eq!(report.result, Err(RetryError::DeadlineExceeded));
    assert_eq!(clock.now() - start, ms(300));
}

#[tokio::test(start_paused = true)]
async fn a_failing_upstream_gets_at_most_about_ten_percent_extra() {
    let budget = ExtraRequestBudget::retries();
    let mut total_calls = 0;
    for _ in 0..1_000 {
        let (_, calls) = run_failing(true, &budget).await;
        total_calls += calls;
    }
    let extra = total_calls - 1_000;
    // ratio × requests + reserve = 100 + 1.
    assert!(extra <= 101, "{extra} extra calls");
    assert!(extra >= 90, "the budget is used: {extra}");
}

#[tokio::test(start_paused = true)]
async fn bounded_attempts_are_not_cut_by_the_loop_and_their_own_timeout_is_retried() {
    let budget = ExtraRequestBudget::retries();
    let clock = SystemClock;
    let start = clock.now();
    let calls = Cell::new(0u32);
    let mut rng = StdRng::seed_from_u64(5);
    let policy = RetryPolicy::default();
    let context = RetryContext {
        policy: &policy,
        idempotent: true,
        deadline: start + ms(1_000),
        budget: &budget,
        rng: &mut rng,
        clock: &clock,
    };
    // The first attempt times out by itself at 100 ms (as an error of its own); the second
    // runs 50 ms and answers. The loop adds no timer, so nothing else ends either.
    let report = call_with_bounded_retries(
        context,
        |error: &&str| {
            if *error == "timed out" {
                Failure::Timeout
            } else {
                Failure::Tool
            }
        },
        || {
            calls.set(calls.get() + 1);
            let first = calls.get() == 1;
            async move {
                if first {
                    tokio::time::sleep(ms(100)).await;
                    Err("timed out")
                } else {
                    tokio::time::sleep(ms(50)).await;
                    Ok("sunny")
                }
            }
        },
    )
    .await;
    assert_eq!(report.result.ok(), Some("sunny"));
    assert_eq!(report.attempts, 2);
    assert!(clock.now().saturating_duration_since(start) < ms(1_000));
}
