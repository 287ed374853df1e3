//! A budget of extra requests (retries, hedges) as a share of original requests: a token
//! bucket where each original request deposits `ratio` tokens and each extra request takes one.
//!
//! Over any run, `extras ≤ ratio × requests + reserve`, so with the default ratios (10% for
//! retries, 5% for hedges) a failing or slow upstream is never hit by a retry storm. The balance
//! is capped (default 10 tokens) so a long quiet spell cannot bank a burst. Shared between
//! concurrent calls (a mutex around three numbers; a poisoned lock is recovered, since the
//! numbers stay consistent).

use std::sync::{Mutex, MutexGuard};

/// Counters of a budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetUsage {
    pub requests: u64,
    pub extras: u64,
    /// Extra requests refused because the budget was empty.
    pub refused: u64,
}

#[derive(Debug)]
struct Bucket {
    balance: f64,
    usage: BudgetUsage,
}

/// A shared budget of extra requests.
#[derive(Debug)]
pub struct ExtraRequestBudget {
    ratio: f64,
    cap: f64,
    bucket: Mutex<Bucket>,
}

impl ExtraRequestBudget {
    /// A budget of `ratio` extra requests per request, starting with `reserve` tokens and
    /// holding at most `cap`.
    pub fn new(ratio: f64, reserve: f64, cap: f64) -> Self {
        let cap = cap.max(0.0);
        Self {
            ratio: ratio.max(0.0),
            cap,
            bucket: Mutex::new(Bucket {
                balance: reserve.clamp(0.0, cap),
                usage: BudgetUsage::default(),
            }),
        }
    }

    /// The retry default: 10%, one token in reserve, at most 10.
    pub fn retries() -> Self {
        Self::new(0.10, 1.0, 10.0)
    }

    /// The hedging default: 5%, one token in reserve, at most 10.
    pub fn hedges() -> Self {
        Self::new(0.05, 1.0, 10.0)
    }

    fn bucket(&self) -> MutexGuard<'_, Bucket> {
        self.bucket
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts one original request.
    pub fn deposit(&self) {
        let mut bucket = self.bucket();
        bucket.balance = (bucket.balance + self.ratio).min(self.cap);
        bucket.usage.requests += 1;
    }

    /// Takes a token for one extra request; `false` when the budget is empty.
    pub fn try_withdraw(&self) -> bool {
        let mut bucket = self.bucket();
        if bucket.balance >= 1.0 {
            bucket.balance -= 1.0;
            bucket.usage.extras += 1;
            true
        } else {
            bucket.usage.refused += 1;
            false
        }
    }

    pub fn usage(&self) -> BudgetUsage {
        self.bucket().usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_stay_within_ratio_plus_reserve() {
        let budget = ExtraRequestBudget::new(0.1, 1.0, 10.0);
        let mut granted = 0;
        for _ in 0..1_000 {
            budget.deposit();
            // A pathological caller asks for an extra request every time.
            if budget.try_withdraw() {
                granted += 1;
            }
        }
        assert!(granted <= 101, "{granted}");
        assert!(granted >= 99, "{granted}");
        let usage = budget.usage();
        assert_eq!(usage.requests, 1_000);
        assert_eq!(usage.extras, granted);
        assert_eq!(usage.refused, 1_000 - granted);
    }

    #[test]
    fn balance_is_capped() {
        let budget = ExtraRequestBudget::new(0.5, 0.0, 2.0);
        for _ in 0..100 {
            budget.deposit();
        }
        assert!(budget.try_withdraw() && budget.try_withdraw());
        assert!(!budget.try_withdraw());
    }
}
