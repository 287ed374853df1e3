//! How long the writer waits before trying a failed append again: doubling from
//! [`Backoff::FIRST`] up to [`Backoff::MOST`], with no clock of its own (the writer sleeps
//! what it is told), so the sequence is tested without waiting.

use std::time::Duration;

/// The waits between attempts at one batch.
#[derive(Debug, Clone, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The wait after the first failure.
    pub const FIRST: Duration = Duration::from_millis(50);
    /// The longest wait: a server back up is noticed within this.
    pub const MOST: Duration = Duration::from_secs(2);

    /// The wait before the next attempt, one failure more.
    pub fn next_wait(&mut self) -> Duration {
        let wait = Self::FIRST
            .saturating_mul(1u32 << self.failures.min(16))
            .min(Self::MOST);
        self.failures = self.failures.saturating_add(1);
        wait
    }

    /// An attempt succeeded: the next failure starts over.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_most_and_start_over_after_a_success() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..8)
            .map(|_| backoff.next_wait().as_millis() as u64)
            .collect();
        assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(backoff.failures(), 8);
        for _ in 0..100 {
            assert_eq!(backoff.next_wait(), Backoff::MOST);
        }
        backoff.reset();
        assert_eq!(backoff.next_wait(), Backoff::FIRST);
    }
}
