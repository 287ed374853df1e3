//! Hedged requests for idempotent tools with a long tail (the seed's web search: 200 ms cached,
//! 3,000 ms uncached): if no answer has come by the tool's measured p95, send a second request;
//! the first success wins and the other is dropped — dropping its future is how the caller
//! cancels it upstream (`notifications/cancelled`, or closing the stream). A shared
//! [`ExtraRequestBudget`] (default 5%) bounds the extra load.
//!
//! [`HedgePolicy::delay`] is the pure rule; [`hedged`] runs it on injected time.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use switchboard_core::clock::Clock;

use crate::extra_budget::ExtraRequestBudget;
use crate::window::{LatencyWindow, Quantile};

/// When to hedge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgePolicy {
    /// The quantile of measured latency after which the hedge goes out. Default p95.
    pub quantile: Quantile,
    /// Samples needed before hedging (no guessing a tail from a few calls). Default 20.
    pub min_samples: usize,
}

impl Default for HedgePolicy {
    fn default() -> Self {
        Self {
            quantile: Quantile::P95,
            min_samples: 20,
        }
    }
}

impl HedgePolicy {
    /// The hedge delay of a tool: its measured quantile, `None` when the tool is not
    /// idempotent or has too few samples.
    pub fn delay(&self, idempotent: bool, window: &LatencyWindow) -> Option<Duration> {
        if !idempotent || window.len() < self.min_samples.max(1) {
            return None;
        }
        window.quantile(self.quantile.fraction())
    }
}

/// Which request answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    Primary,
    Hedge,
}

/// The result of a hedged call.
#[derive(Debug)]
pub struct Hedged<T> {
    pub result: T,
    /// The request whose result this is.
    pub winner: Attempt,
    /// Whether a second request was sent.
    pub hedge_sent: bool,
}

/// Runs `call()`; if it has not answered after `delay` and the budget allows, runs `call()`
/// again and returns the first success, dropping (cancelling) the other. When the primary
/// answers before the delay — success or error — that is the result. When both fail, the
/// primary's error is returned.
pub async fn hedged<T, E, F, Fut>(
    mut call: F,
    delay: Duration,
    budget: &ExtraRequestBudget,
    clock: &dyn Clock,
) -> Hedged<Result<T, E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    budget.deposit();
    let hedge_at = clock.now() + delay;
    let mut primary = pin!(call());
    tokio::select! {
        biased;
        result = &mut primary => {
            return Hedged { result, winner: Attempt::Primary, hedge_sent: false };
        }
        () = tokio::time::sleep_until(hedge_at) => {}
    }
    if !budget.try_withdraw() {
        let result = primary.await;
        return Hedged {
            result,
            winner: Attempt::Primary,
            hedge_sent: false,
        };
    }
    let mut hedge = pin!(call());
    let mut primary_error: Option<E> = None;
    let mut hedge_failed = false;
    loop {
        tokio::select! {
            biased;
            result = &mut primary, if primary_error.is_none() => match result {
                Ok(value) => {
                    return Hedged { result: Ok(value), winner: Attempt::Primary, hedge_sent: true };
                }
                Err(error) if hedge_failed => {
                    return Hedged { result: Err(error), winner: Attempt::Primary, hedge_sent: true };
                }
                Err(error) => primary_error = Some(error),
            },
            result = &mut hedge, if !hedge_failed => match (result, primary_error.take()) {
                (Ok(value), _) => {
                    return Hedged { result: Ok(value), winner: Attempt::Hedge, hedge_sent: true };
                }
                (Err(_), Some(error)) => {
                    return Hedged { result: Err(error), winner: Attempt::Primary, hedge_sent: true };
                }
                (Err(_), None) => hedge_failed = true,
            },
        }
    }
}

#[cfg(test)]
#[path = "hedge_tests.rs"]
mod tests;
