//! Units of a shared rate taken ahead: a replica that admits many calls a second under one
//! rate takes a few units per round trip to Redis and admits the next calls from them
//! without a round trip.
//!
//! The units are taken in Redis like single ones (the rate's TAT moves past them), so taking
//! ahead never admits more than the limit: a replica asks for as many units as it admitted
//! in the last [`AHEAD`] (its pace, at least 1), never more than the rate allows in [`AHEAD`]
//! nor [`MAX_BATCH`], and a rate that allows fewer than two calls in [`AHEAD`] is taken one
//! unit at a time as before. Units not used within [`AHEAD`] of their round trip are dropped:
//! what taking ahead can cost is a few calls under the limit when a replica's traffic stops,
//! never one over it.
//!
//! Calls that find no unit left at once (a replica at high concurrency) do not each ask for a
//! batch: units already asked for by round trips on their way count against the pace, so
//! together they ask for about one window's worth, not one each. Asking for a batch per call
//! would take units that then expire unused, and move the rate's TAT ahead of the calls it
//! admitted, until the rate refused calls far under its limit.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// How long units taken ahead stay usable, and the window a rate's pace is counted over.
pub(crate) const AHEAD: Duration = Duration::from_millis(20);
/// The most units one round trip takes for one rate.
pub(crate) const MAX_BATCH: u64 = 256;

/// Units taken ahead, by rate key.
#[derive(Default)]
pub(super) struct Allowances {
    rates: HashMap<String, Allowance>,
}

/// One rate's units taken ahead, and its pace here.
struct Allowance {
    units: u64,
    /// Units asked for by round trips not answered yet ([`Allowances::asked`] to
    /// [`Allowances::answered`]).
    asking: u64,
    expires: Instant,
    window_start: Instant,
    this_window: u64,
    last_window: u64,
}

impl Allowances {
    /// Takes one unit of every rate of `keys` when each has one left that has not expired;
    /// else takes nothing (the call goes to Redis).
    pub(super) fn take_all(&mut self, keys: &[String], now: Instant) -> bool {
        let ready = !keys.is_empty()
            && keys.iter().all(|key| {
                self.rates
                    .get(key)
                    .is_some_and(|rate| rate.units > 0 && now < rate.expires)
            });
        if !ready {
            return false;
        }
        for key in keys {
            if let Some(rate) = self.rates.get_mut(key) {
                rate.units -= 1;
                rate.count(now);
            }
        }
        true
    }

    /// How many units a round trip asks for `key`, a rate of `per_second` calls: the pace
    /// here less what round trips on their way asked for, at least the call's own unit.
    /// Counted as asked until [`Allowances::answered`].
    pub(super) fn asked(&mut self, key: &str, per_second: f64, now: Instant) -> u64 {
        let ceiling = (per_second * AHEAD.as_secs_f64()).floor();
        let rate = self
            .rates
            .entry(key.to_owned())
            .or_insert_with(|| Allowance::new(now));
        let wanted = if ceiling < 2.0 {
            1
        } else {
            // A float in range: at least 2, at most MAX_BATCH once clamped.
            let ceiling = (ceiling.min(MAX_BATCH as f64)) as u64;
            rate.pace(now).saturating_sub(rate.asking).clamp(1, ceiling)
        };
        rate.asking += wanted;
        wanted
    }

    /// The round trip that asked for `wanted` units of `key` is over (answered or not).
    pub(super) fn answered(&mut self, key: &str, wanted: u64) {
        if let Some(rate) = self.rates.get_mut(key) {
            rate.asking = rate.asking.saturating_sub(wanted);
        }
    }

    /// Keeps what a round trip granted for `key` beyond the unit its call used.
    pub(super) fn granted(&mut self, key: &str, granted: u64, now: Instant) {
        let rate = self
            .rates
            .entry(key.to_owned())
            .or_insert_with(|| Allowance::new(now));
        if now >= rate.expires {
            rate.units = 0;
        }
        rate.units += granted.saturating_sub(1);
        rate.expires = now + AHEAD;
        rate.count(now);
    }

    /// Units held for `key` now (tests).
    #[cfg(test)]
    pub(super) fn held(&self, key: &str, now: Instant) -> u64 {
        self.rates
            .get(key)
            .filter(|rate| now < rate.expires)
            .map_or(0, |rate| rate.units)
    }
}

impl Allowance {
    fn new(now: Instant) -> Self {
        Self {
            units: 0,
            asking: 0,
            expires: now,
            window_start: now,
            this_window: 0,
            last_window: 0,
        }
    }

    /// Starts a new window when the current one is over.
    fn roll(&mut self, now: Instant) {
        let since = now.saturating_duration_since(self.window_start);
        if since >= AHEAD {
            self.last_window = if since >= AHEAD * 2 {
                0
            } else {
                self.this_window
            };
            self.this_window = 0;
            self.window_start = now;
        }
    }

    fn count(&mut self, now: Instant) {
        self.roll(now);
        self.this_window += 1;
    }

    /// Calls admitted here in the last window (or this one, when it already has more).
    fn pace(&self, now: Instant) -> u64 {
        let since = now.saturating_duration_since(self.window_start);
        if since >= AHEAD * 2 {
            0
        } else if since >= AHEAD {
            self.this_window
        } else {
            self.last_window.max(self.this_window)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one round trip at a time asks for.
    fn want(allowances: &mut Allowances, key: &str, per_second: f64, now: Instant) -> u64 {
        let wanted = allowances.asked(key, per_second, now);
        allowances.answered(key, wanted);
        wanted
    }

    #[test]
    fn calls_that_miss_at_once_ask_for_one_windows_worth_together() {
        let now = Instant::now();
        let mut allowances = Allowances::default();
        for _ in 0..150 {
            allowances.granted("k", 1, now);
        }
        // 150 admitted this window; 64 calls find no unit at the same moment.
        let asked: Vec<u64> = (0..64)
            .map(|_| allowances.asked("k", 10_000.0, now))
            .collect();
        assert_eq!(asked[0], 150, "the first asks for the pace");
        assert!(asked[1..].iter().all(|&n| n == 1), "{asked:?}");
        // Answered: the next round trip asks for the pace again.
        for wanted in asked {
            allowances.answered("k", wanted);
        }
        assert_eq!(want(&mut allowances, "k", 10_000.0, now), 150);
    }

    #[test]
    fn a_slow_rate_is_taken_one_unit_at_a_time() {
        let now = Instant::now();
        let mut allowances = Allowances::default();
        allowances.granted("k", 1, now);
        // 60 a minute: one a second, far fewer than two in AHEAD.
        assert_eq!(want(&mut allowances, "k", 1.0, now), 1);
        assert!(!allowances.take_all(&["k".to_owned()], now));
    }

    #[test]
    fn the_batch_follows_the_pace_within_the_rate_and_units_expire() {
        let now = Instant::now();
        let mut allowances = Allowances::default();
        let keys = ["k".to_owned()];
        // 10,000 a second: up to 200 in AHEAD.
        assert_eq!(want(&mut allowances, "k", 10_000.0, now), 1);
        allowances.granted("k", 1, now);
        allowances.granted("k", 1, now);
        allowances.granted("k", 1, now);
        assert_eq!(
            want(&mut allowances, "k", 10_000.0, now),
            3,
            "three admitted this window"
        );
        allowances.granted("k", 3, now);
        assert_eq!(allowances.held("k", now), 2);
        assert!(allowances.take_all(&keys, now));
        assert!(allowances.take_all(&keys, now));
        assert!(!allowances.take_all(&keys, now), "used up");
        allowances.granted("k", 5, now);
        let later = now + AHEAD;
        assert!(!allowances.take_all(&keys, later), "expired");
        assert_eq!(
            want(&mut allowances, "k", 10_000.0, later),
            7,
            "the last window's pace"
        );
        assert_eq!(
            want(&mut allowances, "k", 100.0, later),
            2,
            "never past 20 ms of the rate"
        );
        assert_eq!(
            want(&mut allowances, "k", 10_000.0, now + AHEAD * 3),
            1,
            "idle: from one"
        );
    }

    #[test]
    fn a_call_under_two_rates_needs_units_of_both() {
        let now = Instant::now();
        let mut allowances = Allowances::default();
        allowances.granted("a", 3, now);
        let both = ["a".to_owned(), "b".to_owned()];
        assert!(!allowances.take_all(&both, now));
        assert_eq!(allowances.held("a", now), 2, "nothing taken");
        allowances.granted("b", 2, now);
        assert!(allowances.take_all(&both, now));
        assert_eq!(
            (allowances.held("a", now), allowances.held("b", now)),
            (1, 0)
        );
    }
}
