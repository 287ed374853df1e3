//! The generic cell rate algorithm: one timestamp per limiter (the theoretical arrival time),
//! no background refill. A request at `now` conforms when `tat - burst_tolerance <= now`.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// A GCRA limiter.
#[derive(Debug)]
pub struct Gcra {
    /// Time between requests at the steady rate.
    interval: Duration,
    /// How far ahead of schedule a request may be (burst − 1 intervals).
    tolerance: Duration,
    tat: Mutex<Option<Instant>>,
}

impl Gcra {
    /// `rate` requests per minute, `burst` of them back to back.
    pub fn per_minute(rate: f64, burst: u32) -> Self {
        let interval = Duration::from_secs_f64(60.0 / rate.max(1e-6));
        Self {
            interval,
            tolerance: interval * burst.max(1).saturating_sub(1),
            tat: Mutex::new(None),
        }
    }

    /// Reserves the next slot. `Ok(wait)`: the request may go after `wait` (zero = now), and
    /// the slot is taken; `Err(retry_after)`: the wait would exceed `max_wait`, nothing taken.
    pub fn reserve(&self, now: Instant, max_wait: Duration) -> Result<Duration, Duration> {
        let mut tat = match self.tat.lock() {
            Ok(tat) => tat,
            Err(poisoned) => poisoned.into_inner(),
        };
        let current = tat.unwrap_or(now).max(now);
        let allowed_at = current.checked_sub(self.tolerance).unwrap_or(now);
        let wait = allowed_at.saturating_duration_since(now);
        if wait > max_wait {
            return Err(wait);
        }
        *tat = Some(current + self.interval);
        Ok(wait)
    }

    /// Gives back a slot [`Gcra::reserve`] took for a request that then did not go (a later
    /// limit refused it): the schedule moves back one interval, never before `now`.
    pub fn give_back(&self, now: Instant) {
        let mut tat = match self.tat.lock() {
            Ok(tat) => tat,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(current) = *tat {
            *tat = Some(current.checked_sub(self.interval).unwrap_or(now).max(now));
        }
    }
}
