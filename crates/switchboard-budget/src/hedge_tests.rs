//! Tests of the hedge rule and runner (paused time).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use switchboard_core::clock::SystemClock;

use super::*;
use crate::window::Sample;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

/// Marks the attempt as cancelled when its future is dropped unfinished.
struct CancelProbe {
    index: usize,
    finished: bool,
    cancelled: Rc<RefCell<Vec<usize>>>,
}

impl Drop for CancelProbe {
    fn drop(&mut self) {
        if !self.finished {
            self.cancelled.borrow_mut().push(self.index);
        }
    }
}

/// A call factory whose n-th attempt takes `plan[n]` and then yields `outcomes[n]`.
fn scripted(
    plan: Vec<(u64, Result<&'static str, &'static str>)>,
    cancelled: Rc<RefCell<Vec<usize>>>,
    started: Rc<Cell<usize>>,
) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Result<&'static str, &'static str>>>> {
    move || {
        let index = started.get();
        started.set(index + 1);
        let (latency, outcome) = plan[index];
        let probe = CancelProbe {
            index,
            finished: false,
            cancelled: Rc::clone(&cancelled),
        };
        Box::pin(async move {
            let mut probe = probe;
            tokio::time::sleep(ms(latency)).await;
            probe.finished = true;
            outcome
        })
    }
}

#[test]
fn delay_is_the_measured_p95_of_idempotent_tools() {
    let policy = HedgePolicy::default();
    let window = LatencyWindow::from_samples(100, (1..=100).map(|i| Sample::ok(ms(i))));
    assert_eq!(
        policy.delay(true, &window),
        Some(Duration::from_micros(95_500))
    );
    assert_eq!(policy.delay(false, &window), None);
    let few = LatencyWindow::from_samples(100, (1..=19).map(|i| Sample::ok(ms(i))));
    assert_eq!(policy.delay(true, &few), None);
}

#[tokio::test(start_paused = true)]
async fn a_fast_primary_sends_no_hedge() {
    let (cancelled, started) = (Rc::default(), Rc::new(Cell::new(0)));
    let budget = ExtraRequestBudget::hedges();
    let call = scripted(
        vec![(50, Ok("primary"))],
        Rc::clone(&cancelled),
        Rc::clone(&started),
    );
    let outcome = hedged(call, ms(100), &budget, &SystemClock).await;
    assert_eq!(outcome.result, Ok("primary"));
    assert!(!outcome.hedge_sent);
    assert_eq!(started.get(), 1);
    assert_eq!(budget.usage().extras, 0);
}

#[tokio::test(start_paused = true)]
async fn a_slow_primary_is_beaten_by_the_hedge_and_cancelled() {
    let (cancelled, started) = (Rc::default(), Rc::new(Cell::new(0)));
    let budget = ExtraRequestBudget::hedges();
    let call = scripted(
        vec![(3_000, Ok("primary")), (150, Ok("hedge"))],
        Rc::clone(&cancelled),
        Rc::clone(&started),
    );
    let start = SystemClock.now();
    let outcome = hedged(call, ms(200), &budget, &SystemClock).await;
    assert_eq!(outcome.result, Ok("hedge"));
    assert_eq!(outcome.winner, Attempt::Hedge);
    assert!(outcome.hedge_sent);
    assert_eq!(SystemClock.now() - start, ms(350));
    assert_eq!(*cancelled.borrow(), vec![0], "the primary was dropped");
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_waits_for_the_other() {
    let (cancelled, started) = (Rc::default(), Rc::new(Cell::new(0)));
    let budget = ExtraRequestBudget::hedges();
    let call = scripted(
        vec![(250, Err("broken pipe")), (400, Ok("hedge"))],
        Rc::clone(&cancelled),
        Rc::clone(&started),
    );
    let outcome = hedged(call, ms(200), &budget, &SystemClock).await;
    assert_eq!(outcome.result, Ok("hedge"));

    let call = scripted(
        vec![(250, Err("primary failed")), (100, Err("hedge failed"))],
        Rc::new(RefCell::new(Vec::new())),
        Rc::new(Cell::new(0)),
    );
    let outcome = hedged(call, ms(200), &ExtraRequestBudget::hedges(), &SystemClock).await;
    assert_eq!(outcome.result, Err("primary failed"));
    assert!(cancelled.borrow().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_empty_budget_sends_no_hedge() {
    let (cancelled, started) = (Rc::default(), Rc::new(Cell::new(0)));
    let budget = ExtraRequestBudget::new(0.05, 0.0, 10.0);
    let call = scripted(
        vec![(3_000, Ok("primary"))],
        Rc::clone(&cancelled),
        Rc::clone(&started),
    );
    let outcome = hedged(call, ms(200), &budget, &SystemClock).await;
    assert_eq!(outcome.result, Ok("primary"));
    assert!(!outcome.hedge_sent);
    assert_eq!(started.get(), 1);
    assert_eq!(budget.usage().refused, 1);
}
