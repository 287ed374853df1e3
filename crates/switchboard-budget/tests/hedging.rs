//! Hedging cuts the p99 of a bimodal tool (the seed's web search: ~150 ms cached, 3 s uncached)
//! by at least 5× at no more than 5% extra requests. Paused tokio time: the fixture's latencies
//! are virtual sleeps.

mod support;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use support::{Bimodal, quantile_of};
use switchboard_budget::{ExtraRequestBudget, HedgePolicy, LatencyWindow, Sample, hedged};
use switchboard_core::clock::{Clock, SystemClock};

const CALLS: usize = 2_000;

#[tokio::test(start_paused = true)]
async fn hedging_cuts_the_bimodal_tail_at_bounded_extra_load() {
    let fixture = Bimodal {
        fast_ms: (100, 200),
        slow_ms: 3_000,
        slow_share: 0.03,
    };
    let rng = RefCell::new(StdRng::seed_from_u64(2026));
    let clock = SystemClock;

    // Calibrate: the hedge delay is the measured p95.
    let window = LatencyWindow::from_samples(
        100,
        (0..100).map(|_| Sample::ok(fixture.sample(&mut *rng.borrow_mut()))),
    );
    let delay = HedgePolicy::default()
        .delay(true, &window)
        .expect("idempotent and calibrated");

    // Without hedging, a call takes one draw.
    let unhedged: Vec<Duration> = (0..CALLS)
        .map(|_| fixture.sample(&mut *rng.borrow_mut()))
        .collect();

    let budget = ExtraRequestBudget::hedges();
    let requests = Cell::new(0usize);
    let cancelled = Cell::new(0usize);
    let mut hedged_latencies = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = clock.now();
        let call = || {
            requests.set(requests.get() + 1);
            let latency = fixture.sample(&mut *rng.borrow_mut());
            let guard = CountOnDrop(&cancelled, true);
            async move {
                let mut guard = guard;
                tokio::time::sleep(latency).await;
                guard.1 = false;
                Ok::<_, ()>(latency)
            }
        };
        let outcome = hedged(call, delay, &budget, &clock).await;
        assert!(outcome.result.is_ok());
        hedged_latencies.push(clock.now() - start);
    }

    let before = quantile_of(&unhedged, 0.99);
    let after = quantile_of(&hedged_latencies, 0.99);
    let extra = requests.get() - CALLS;
    let cut = before.as_secs_f64() / after.as_secs_f64();
    eprintln!(
        "hedge delay {delay:?}; p99 {before:?} -> {after:?} ({cut:.1}x); extra requests {extra} \
         ({:.2}%); cancelled {}",
        100.0 * extra as f64 / CALLS as f64,
        cancelled.get()
    );
    assert!(cut >= 5.0, "p99 cut only {cut:.1}x");
    assert!(
        extra as f64 <= 0.05 * CALLS as f64,
        "{extra} extra requests"
    );
    assert!(extra > 0, "hedges were sent");
    // Every hedge race ends with the loser dropped, unless both finished together.
    assert!(cancelled.get() <= extra && cancelled.get() >= extra * 9 / 10);
    assert_eq!(budget.usage().extras as usize, extra);
}

#[test]
fn non_idempotent_tools_are_never_hedged() {
    let window = LatencyWindow::from_samples(
        100,
        (0..100).map(|i| Sample::ok(Duration::from_millis(100 + i))),
    );
    assert_eq!(HedgePolicy::default().delay(false, &window), None);
}

/// Counts a future dropped before it finished (the second field says "unfinished").
struct CountOnDrop<'a>(&'a Cell<usize>, bool);

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.set(self.0.get() + 1);
        }
    }
}
