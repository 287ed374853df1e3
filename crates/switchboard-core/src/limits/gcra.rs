//! The generic cell rate algorithm: one timestamp per limiter (the theoretical arrival time),
//! no background refill. A request at `now` conforms when `tat - burst_tolerance <= now`.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// The slowest rate a limit may have, in requests per minute: about one a week (the config
/// refuses less; a limiter takes less as this).
pub const MIN_PER_MINUTE: f64 = 1e-4;

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
        let interval = Self::interval(rate);
        Self {
            interval,
            tolerance: Self::tolerance(interval, burst),
            tat: Mutex::new(None),
        }
    }

    /// The time between requests at `per_minute` requests per minute, a rate below
    /// [`MIN_PER_MINUTE`] (or not a number) taken as that.
    pub fn interval(per_minute: f64) -> Duration {
        let rate = if per_minute >= MIN_PER_MINUTE {
            per_minute
        } else {
            MIN_PER_MINUTE
        };
        Duration::try_from_secs_f64(60.0 / rate).unwrap_or(Duration::ZERO)
    }

    /// How far ahead of schedule a request may be when `burst` may go back to back: `burst`
    /// − 1 intervals, saturating.
    pub fn tolerance(interval: Duration, burst: u32) -> Duration {
        interval.saturating_mul(burst.max(1).saturating_sub(1))
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
