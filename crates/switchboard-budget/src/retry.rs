//! Retries: only for idempotent tools, only after transport errors and timeouts (never after a
//! tool's own error result — the tool answered), with exponential backoff and jitter, within
//! the call's deadline and a shared [`ExtraRequestBudget`] (default at most ~10% extra).
//!
//! [`RetryPolicy::decide`] is the pure decision; [`call_with_retries`] runs a call factory
//! under it, each attempt bounded by the deadline, on injected time and randomness.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use switchboard_core::clock::Clock;
use tokio::time::Instant;

use crate::extra_budget::ExtraRequestBudget;

/// How an attempt failed, as far as retrying is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// No answer: connection refused, stream broken, upstream gone.
    Transport,
    /// The attempt ran out of time.
    Timeout,
    /// The tool answered with an error (or a protocol error): retrying would repeat it.
    Tool,
}

/// Why no retry happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    NotIdempotent,
    NotRetryable,
    AttemptsExhausted,
    NoTimeLeft,
    BudgetExhausted,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    RetryAfter(Duration),
    Stop(StopReason),
}

/// Retry limits and backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. Default 3.
    pub max_attempts: u32,
    /// Backoff before the first retry (before jitter). Default 25 ms.
    pub base_backoff: Duration,
    /// Backoff ceiling. Default 1 s.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_backoff: Duration::from_millis(25),
            max_backoff: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// The pause before retry number `retry` (1-based): "equal jitter", uniform in
    /// `[d/2, d]` with `d = min(max_backoff, base_backoff · 2^(retry−1))`.
    pub fn backoff(&self, retry: u32, rng: &mut impl Rng) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        let full = self
            .base_backoff
            .saturating_mul(doubling)
            .min(self.max_backoff);
        let half = full / 2;
        half + full.mul_f64(rng.random_range(0.0..=0.5))
    }

    /// Decides after a failed attempt. `attempts` is how many were made; `remaining` is the
    /// time left until the deadline. Takes a budget token only when it says retry.
    pub fn decide(
        &self,
        attempts: u32,
        failure: Failure,
        idempotent: bool,
        remaining: Duration,
        budget: &ExtraRequestBudget,
        rng: &mut impl Rng,
    ) -> RetryDecision {
        if !idempotent {
            return RetryDecision::Stop(StopReason::NotIdempotent);
        }
        if failure == Failure::Tool {
            return RetryDecision::Stop(StopReason::NotRetryable);
        }
        if attempts >= self.max_attempts {
            return RetryDecision::Stop(StopReason::AttemptsExhausted);
        }
        let pause = self.backoff(attempts, rng);
        if pause >= remaining {
            return RetryDecision::Stop(StopReason::NoTimeLeft);
        }
        if !budget.try_withdraw() {
            return RetryDecision::Stop(StopReason::BudgetExhausted);
        }
        RetryDecision::RetryAfter(pause)
    }
}

/// How a retried call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryError<E> {
    /// The last attempt failed and no retry followed.
    Failed { error: E, stop: StopReason },
    /// The deadline passed during an attempt.
    DeadlineExceeded,
}

/// The result and how many attempts it took.
#[derive(Debug)]
pub struct RetryReport<T, E> {
    pub result: Result<T, RetryError<E>>,
    pub attempts: u32,
}

/// What [`call_with_retries`] needs besides the call.
pub struct RetryContext<'a, R> {
    pub policy: &'a RetryPolicy,
    pub idempotent: bool,
    pub deadline: Instant,
    pub budget: &'a ExtraRequestBudget,
    pub rng: &'a mut R,
    pub clock: &'a dyn Clock,
}

/// Runs `attempt()` until it succeeds or the policy stops; each attempt is cut at the
/// deadline (dropping the attempt's future, which cancels it). `classify` says how an error
/// counts.
pub async fn call_with_retries<T, E, F, Fut, R>(
    context: RetryContext<'_, R>,
    classify: impl Fn(&E) -> Failure,
    attempt: F,
) -> RetryReport<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    R: Rng,
{
    retry_loop(context, classify, attempt, Cut::AtDeadline).await
}

/// [`call_with_retries`] for attempts that each end by the deadline on their own (every
/// attempt carries its own timeout at or before it): they are not wrapped in a second
/// timer. The result is the same; what is saved is arming one more timer per call, which
/// on tokio costs a wake-up of the runtime's driver (an `eventfd` write) whenever the timer
/// is due before its next planned wake-up. A bounded attempt reports its own timeout as an
/// error, classified like any other.
pub async fn call_with_bounded_retries<T, E, F, Fut, R>(
    context: RetryContext<'_, R>,
    classify: impl Fn(&E) -> Failure,
    attempt: F,
) -> RetryReport<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    R: Rng,
{
    retry_loop(context, classify, attempt, Cut::ByAttempt).await
}

/// Who ends an attempt that runs past the deadline.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    /// The retry loop, with a timer of its own.
    AtDeadline,
    /// The attempt itself.
    ByAttempt,
}

async fn retry_loop<T, E, F, Fut, R>(
    context: RetryContext<'_, R>,
    classify: impl Fn(&E) -> Failure,
    mut attempt: F,
    cut: Cut,
) -> RetryReport<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    R: Rng,
{
    let RetryContext {
        policy,
        idempotent,
        deadline,
        budget,
        rng,
        clock,
    } = context;
    budget.deposit();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let answer = match cut {
            Cut::AtDeadline => tokio::time::timeout_at(deadline, attempt()).await,
            Cut::ByAttempt => Ok(attempt().await),
        };
        let failure_and_error = match answer {
            Ok(Ok(value)) => {
                return RetryReport {
                    result: Ok(value),
                    attempts,
                };
            }
            Ok(Err(error)) => (classify(&error), Some(error)),
            Err(_elapsed) => (Failure::Timeout, None),
        };
        let (failure, error) = failure_and_error;
        let remaining = deadline.saturating_duration_since(clock.now());
        let decision = policy.decide(attempts, failure, idempotent, remaining, budget, rng);
        match (decision, error) {
            (RetryDecision::RetryAfter(pause), _) => {
                tokio::time::sleep_until(clock.now() + pause).await;
            }
            (RetryDecision::Stop(stop), Some(error)) => {
                return RetryReport {
                    result: Err(RetryError::Failed { error, stop }),
                    attempts,
                };
            }
            (RetryDecision::Stop(_), None) => {
                return RetryReport {
                    result: Err(RetryError::DeadlineExceeded),
                    attempts,
                };
            }
        }
    }
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
