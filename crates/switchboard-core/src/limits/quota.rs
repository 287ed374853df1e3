//! Cost accounting: what a call costs (fixed and per second of wall time) and an agent's
//! budget of cost over a sliding window (this replica's spending; with replicas sharing a
//! store, the others' comes from [`SharedSpending`]).
//!
//! A quota keeps its charges one by one while they are few; past [`SEPARATE_CHARGES`] in its
//! window, a charge made within 1/[`SEPARATE_CHARGES`] of the window after the *first* charge
//! of the newest entry is added to that entry, which then counts from the later time. So a
//! busy agent with a long window (a year at most) holds a few thousand entries, not one per
//! call; an entry spans less than that fraction of the window, so a merged charge leaves the
//! window at most that fraction of it late, never early: no more is let through.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::SharedSpending;

/// How a tool's calls are costed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostModel {
    pub fixed: f64,
    pub per_second: f64,
}

impl CostModel {
    pub fn cost(&self, wall: Duration) -> f64 {
        self.fixed + self.per_second * wall.as_secs_f64()
    }
}

/// The shortest window a quota may have (the config refuses less; a zero window would count
/// nothing).
pub const MIN_QUOTA_WINDOW: Duration = Duration::from_secs(1);

/// The longest window a quota may have: a year (the config refuses more).
pub const MAX_QUOTA_WINDOW: Duration = Duration::from_secs(365 * 24 * 3600);

/// How many charges a quota keeps apart before it adds close ones together.
pub const SEPARATE_CHARGES: u32 = 4096;

/// A budget of cost over a sliding window.
#[derive(Debug)]
pub struct Quota {
    limit: f64,
    window: Duration,
    /// The agent's charges, shared with the quotas it had before a reload changed its budget
    /// or window (see [`Quota::counting_spending_of`]).
    spent: Arc<Mutex<Charges>>,
}

/// An agent's charges, oldest first.
#[derive(Debug)]
struct Charges {
    at: VecDeque<(Instant, f64)>,
    /// When the newest entry's first charge was made (entries merge only within a span).
    newest_began: Option<Instant>,
    /// How long a charge is kept: the window of the newest quota counting these charges.
    kept: Duration,
}

/// The quota is used up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("quota exceeded: {spent:.2} of {limit:.2} used in the last {}s; retry after {} ms", window.as_secs(), retry_after.as_millis())]
pub struct QuotaExceeded {
    pub spent: f64,
    pub limit: f64,
    pub window: Duration,
    pub retry_after: Duration,
}

impl Quota {
    pub fn new(limit: f64, window: Duration) -> Self {
        Self {
            limit,
            window,
            spent: Arc::new(Mutex::new(Charges {
                at: VecDeque::new(),
                newest_began: None,
                kept: window,
            })),
        }
    }

    /// This budget and window, counting the charges `previous` counts (the agent's quota
    /// before a reload changed it): what was spent still counts, under the new window, and
    /// so does what calls admitted under `previous` are charged later.
    pub fn counting_spending_of(&self, previous: &Quota) -> Quota {
        lock(&previous.spent).kept = self.window;
        Quota {
            limit: self.limit,
            window: self.window,
            spent: previous.spent.clone(),
        }
    }

    /// This quota's spending at `now`, once `charges` let go of what left their window.
    fn spent_at(&self, now: Instant, charges: &mut Charges) -> f64 {
        while let Some((at, _)) = charges.at.front() {
            if now.saturating_duration_since(*at) >= charges.kept {
                charges.at.pop_front();
            } else {
                break;
            }
        }
        self.in_window(now, charges).map(|(_, cost)| cost).sum()
    }

    /// The charges in this quota's window at `now` (a quota still used by calls admitted
    /// before a reload may have a longer window than the charges are kept for).
    fn in_window<'a>(
        &self,
        now: Instant,
        charges: &'a Charges,
    ) -> impl Iterator<Item = (Instant, f64)> + 'a {
        let window = self.window;
        charges
            .at
            .iter()
            .copied()
            .filter(move |(at, _)| now.saturating_duration_since(*at) < window)
    }

    /// Whether `other` has the same budget and window.
    pub fn same_budget(&self, other: &Quota) -> bool {
        self.limit == other.limit && self.window == other.window
    }

    /// The window the budget is counted over.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Refuses when the window's spending has reached the limit.
    pub fn check(&self, now: Instant) -> Result<(), QuotaExceeded> {
        self.check_with(now, None)
    }

    /// Refuses when this replica's spending in the window plus what `others` holds for the
    /// agent (the other replicas' spending, see [`SharedSpending`]) has reached the limit.
    pub fn check_with(
        &self,
        now: Instant,
        others: Option<(&SharedSpending, &str)>,
    ) -> Result<(), QuotaExceeded> {
        let mut spent = lock(&self.spent);
        let elsewhere = others.map_or(0.0, |(others, agent)| others.others_at(agent, now));
        let total = self.spent_at(now, &mut spent) + elsewhere;
        if total < self.limit {
            return Ok(());
        }
        // The budget frees up as the oldest charges, here or elsewhere, leave the window.
        let mut leaving: Vec<(Instant, f64)> = self
            .in_window(now, &spent)
            .filter_map(|(at, cost)| Some((at.checked_add(self.window)?, cost)))
            .collect();
        if let Some((others, agent)) = others {
            leaving.extend(
                others
                    .others_pieces(agent, now)
                    .iter()
                    .map(|piece| (piece.leaves, piece.cost)),
            );
        }
        leaving.sort_by_key(|(leaves, _)| *leaves);
        let mut remaining = total;
        let mut retry_after = self.window;
        for (leaves, cost) in leaving {
            remaining -= cost;
            if remaining < self.limit {
                retry_after = leaves.saturating_duration_since(now);
                break;
            }
        }
        Err(QuotaExceeded {
            spent: total,
            limit: self.limit,
            window: self.window,
            retry_after,
        })
    }

    pub fn charge(&self, now: Instant, cost: f64) {
        if cost <= 0.0 {
            return;
        }
        // A lock poisoned by a panic elsewhere still holds every charge: keep counting.
        let mut charges = lock(&self.spent);
        let close = charges.kept / SEPARATE_CHARGES;
        let many = charges.at.len() >= SEPARATE_CHARGES as usize;
        let began = charges.newest_began;
        if let Some((newest, spent)) = charges.at.back_mut()
            && many
            && began.is_some_and(|began| now.saturating_duration_since(began) < close)
        {
            *newest = now.max(*newest);
            *spent += cost;
            return;
        }
        charges.at.push_back((now, cost));
        charges.newest_began = Some(now);
    }

    /// How many separate charges the quota holds.
    #[cfg(test)]
    fn charges_held(&self) -> usize {
        lock(&self.spent).at.len()
    }
}

fn lock(charges: &Mutex<Charges>) -> MutexGuard<'_, Charges> {
    match charges.lock() {
        Ok(charges) => charges,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while the charges were locked (poisoning the lock) loses no later charge.
    #[test]
    fn a_poisoned_quota_still_counts_charges() {
        let quota = Quota::new(2.0, Duration::from_secs(60));
        let poisoner = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _held = quota.spent.lock();
                    panic!("a panic while the charges are locked");
                })
                .join()
        });
        assert!(poisoner.is_err() && quota.spent.is_poisoned());
        let now = Instant::now();
        quota.charge(now, 2.0);
        assert_eq!(quota.check(now).map_err(|e| e.spent), Err(2.0));
    }

    /// A busy agent with a long window holds a bounded number of charges, not one per call,
    /// and is refused exactly when it was before: at the budget, with every cost counted.
    #[test]
    fn a_long_window_holds_a_bounded_number_of_charges() {
        let hour = Duration::from_secs(3600);
        let calls = 100_000u32;
        let quota = Quota::new(f64::from(calls), hour);
        let start = Instant::now();
        let mut now = start;
        for _ in 0..calls - 1 {
            quota.charge(now, 1.0);
            now += Duration::from_millis(10);
        }
        assert!(quota.check(now).is_ok(), "one call of budget is left");
        quota.charge(now, 1.0);
        let held = quota.charges_held();
        assert!(
            held <= 2 * SEPARATE_CHARGES as usize,
            "{held} charges held for {calls} calls"
        );
        let exceeded = quota.check(now).expect_err("the budget is spent");
        assert_eq!(exceeded.spent, f64::from(calls));
        // The oldest charges leave the window on time (a merged one at most 1/4096 of it
        // late), and the budget frees up with them.
        let late = hour / SEPARATE_CHARGES;
        assert!(exceeded.retry_after <= hour - (now - start) + late);
        assert!(quota.check(start + hour + late).is_ok());
        // Once the window has passed, nothing is held beyond what the check let go of.
        assert!(quota.check(now + hour).is_ok());
        assert_eq!(quota.charges_held(), 0);
    }

    /// A steady stream of calls, closer together than the merging span, for two windows:
    /// what is counted is the last window's calls (a merged entry at most a span late), not
    /// an entry that kept absorbing calls for longer than its span.
    #[test]
    fn merged_charges_span_no_more_than_their_share_of_the_window() {
        let hour = Duration::from_secs(3600);
        let every = Duration::from_millis(500);
        let in_a_window = 7_200.0;
        // Room for a window's calls and the two a span late.
        let quota = Quota::new(in_a_window + 3.0, hour);
        let mut now = Instant::now();
        for call in 0..2 * 7_200 {
            quota.charge(now, 1.0);
            now += every;
            if call > 7_200 {
                assert!(
                    quota.check(now).is_ok(),
                    "call {call}: {:?}",
                    quota.check(now).err()
                );
            }
        }
        assert!(quota.charges_held() <= 2 * SEPARATE_CHARGES as usize);
    }

    /// A window past what the clock can add (an embedder's: the config refuses more than a
    /// year) refuses with its own length as the wait, never a panic.
    #[test]
    fn a_window_past_the_clock_never_panics() {
        let quota = Quota::new(1.0, Duration::MAX);
        let now = Instant::now();
        quota.charge(now, 1.0);
        let exceeded = quota.check(now).expect_err("spent");
        assert_eq!(exceeded.retry_after, Duration::MAX);
        quota.charge(now, 1.0);
        assert_eq!(quota.check(now).map_err(|e| e.spent), Err(2.0));
    }
}
