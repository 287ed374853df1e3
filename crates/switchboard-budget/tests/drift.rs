//! A tool drifting from 100 ms to 900 ms leaves FAST within the configured number of calls and
//! returns after recovery, with hysteresis; the listing does not flap under noise around a
//! ceiling. Time is simulated (each call advances a virtual clock), no sleeps.

mod support;

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use support::LogNormal;
use switchboard_budget::{
    BudgetConfig, Declared, HealthState, HealthTransition, LatencyBook, ListDecision, Sample,
    TierId, TierView, VisibleSet,
};
use switchboard_core::LatencyMeta;
use tokio::time::Instant;

const FAST: TierId = TierId(0);
const STANDARD: TierId = TierId(1);
const DEEP: TierId = TierId(2);

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

struct Session {
    book: LatencyBook,
    visible: VisibleSet,
    tier: TierId,
    now: Instant,
    notifications: usize,
}

impl Session {
    fn new(book: LatencyBook, tier: TierId, min_interval: Duration) -> Self {
        let mut session = Self {
            book,
            visible: VisibleSet::new(min_interval),
            tier,
            now: Instant::now(),
            notifications: 0,
        };
        session.offer();
        session
    }

    fn offer(&mut self) -> ListDecision {
        let names = ["search", "dice"];
        let profiles = self.book.profiles(names);
        let view = TierView::compute(&profiles, &self.book.config().tiers, self.tier);
        let decision = self.visible.offer(&view, self.now);
        if decision.list_changed_due() {
            self.notifications += 1;
        }
        decision
    }

    /// One call of `tool` that took `latency`, one second after the previous call.
    fn call(&mut self, tool: &str, sample: Sample) -> Option<HealthTransition> {
        self.now += Duration::from_secs(1);
        let outcome = self.book.record(tool, sample, self.now);
        // Offering after every call is allowed: views only change on transitions.
        self.offer();
        outcome.health
    }

    fn fits(&self, tool: &str, tier: TierId) -> bool {
        self.book
            .profile(tool)
            .fits(&self.book.config().tiers, tier)
    }
}

fn drifting_book() -> LatencyBook {
    let mut book = LatencyBook::new(BudgetConfig::default());
    book.declare(
        "search",
        Declared::resolve(Some(&LatencyMeta::new(100, 300)), None),
    );
    book.declare(
        "dice",
        Declared::resolve(Some(&LatencyMeta::new(5, 20)), None),
    );
    book
}

#[test]
fn a_drifting_tool_leaves_fast_in_time_and_returns_with_hysteresis() {
    let config = BudgetConfig::default();
    let mut session = Session::new(drifting_book(), FAST, Duration::ZERO);
    let mut rng = StdRng::seed_from_u64(5);
    let healthy = LogNormal {
        median_ms: 100.0,
        sigma: 0.1,
    };
    let slow = LogNormal {
        median_ms: 900.0,
        sigma: 0.1,
    };
    for _ in 0..100 {
        session.call("search", Sample::ok(healthy.sample(&mut rng)));
    }
    assert!(session.visible.allows("search"));

    // Drift. The configured bound: health demotes once more than `max_slow_rate` of the
    // window is over max_duration_ms; effective p90 leaves FAST once 10% of the window is slow.
    let bound = (config.health.max_slow_rate * config.window as f64).floor() as usize + 1;
    let mut left_after = None;
    for call in 1..=60 {
        session.call("search", Sample::ok(slow.sample(&mut rng)));
        if left_after.is_none() && !session.visible.allows("search") {
            left_after = Some(call);
        }
    }
    let left_after = left_after.expect("left FAST");
    assert!(
        left_after <= bound,
        "left FAST after {left_after} slow calls (bound {bound})"
    );
    assert!(left_after > 1, "one slow call must not re-tier a tool");
    // 900 ms fits STANDARD by latency, but the tool is degraded: DEEP only.
    assert_eq!(session.book.profile("search").health, HealthState::Degraded);
    assert!(!session.fits("search", STANDARD) && session.fits("search", DEEP));

    // Recovery: healthy calls promote after `recover_calls`, not before.
    let mut promoted_after = None;
    let mut back_in_fast_after = None;
    for call in 1..=200 {
        let transition = session.call("search", Sample::ok(healthy.sample(&mut rng)));
        if transition == Some(HealthTransition::Promoted) {
            promoted_after.get_or_insert(call);
        }
        if back_in_fast_after.is_none() && session.visible.allows("search") {
            back_in_fast_after = Some(call);
        }
    }
    assert_eq!(promoted_after, Some(config.health.recover_calls as usize));
    let back = back_in_fast_after.expect("returned to FAST");
    // Hysteresis: the slow samples must leave the window (p90 under 450 ms) first.
    assert!(
        back > config.health.recover_calls as usize,
        "back after {back}"
    );
    assert!(back <= config.window, "back after {back}");
    assert!(session.fits("search", FAST));
    eprintln!(
        "left FAST after {left_after} slow calls; promoted after {promoted_after:?}; back in FAST after {back}"
    );
    // Leaving and coming back: exactly two list changes for this session.
    assert_eq!(session.notifications, 2);
}

#[test]
fn noise_around_the_ceiling_does_not_flap_the_listing() {
    // p90 of this tool is ~500 ms: right on FAST's ceiling.
    let noisy = LogNormal {
        median_ms: 500.0 / (0.1f64 * 1.281_551_565).exp(),
        sigma: 0.1,
    };
    let mut book = LatencyBook::new(BudgetConfig::default());
    book.declare(
        "search",
        Declared::resolve(Some(&LatencyMeta::new(430, 560)), None),
    );
    let mut session = Session::new(book, FAST, Duration::from_secs(30));
    assert!(
        session.visible.allows("search"),
        "declared p90 ≈ 500 ms: starts in FAST"
    );
    let mut rng = StdRng::seed_from_u64(9);

    // What a naive "p90 ≤ ceiling" rule would do, call by call.
    let mut naive_window = switchboard_budget::LatencyWindow::new(100);
    let mut naive_flips = 0;
    let mut naive_fits = None;
    for _ in 0..2_000 {
        let latency = noisy.sample(&mut rng);
        naive_window.record(Sample::ok(latency));
        if naive_window.len() >= 20 {
            let fits = naive_window.quantile(0.9).is_some_and(|p90| p90 <= ms(500));
            if naive_fits.is_some_and(|previous| previous != fits) {
                naive_flips += 1;
            }
            naive_fits = Some(fits);
        }
        session.call("search", Sample::ok(latency));
    }
    eprintln!(
        "noise: {naive_flips} naive flips, {} list changes",
        session.notifications
    );
    assert!(
        naive_flips >= 10,
        "the noise is real: {naive_flips} naive flips"
    );
    assert!(
        session.notifications <= 2,
        "{} list changes under noise ({naive_flips} naive flips)",
        session.notifications
    );
    assert_eq!(session.book.profile("search").health, HealthState::Healthy);
}
