//! Tests of the rolling window.

use super::*;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

#[test]
fn quantiles_follow_the_hazen_rule() {
    let window = LatencyWindow::from_samples(100, (1..=100).map(|i| Sample::ok(ms(i))));
    let summary = window.summary().expect("non-empty");
    // p50: position 50.5 -> halfway between 50 and 51.
    assert_eq!(summary.p50, Duration::from_micros(50_500));
    assert_eq!(summary.p90, Duration::from_micros(90_500));
    assert_eq!(summary.p99, Duration::from_micros(99_500));
    assert_eq!(window.quantile(1.0), Some(ms(100)));
    assert_eq!(window.quantile(0.0), Some(ms(1)));
}

#[test]
fn evicts_the_oldest_and_keeps_rates_in_step() {
    let mut window = LatencyWindow::new(4);
    window.record(Sample::error(ms(1)));
    window.record(Sample::timeout(ms(2)));
    window.record(Sample::ok(ms(3)));
    window.record(Sample::ok(ms(4)));
    assert_eq!(window.error_rate(), 0.25);
    assert_eq!(window.timeout_rate(), 0.25);
    window.record(Sample::ok(ms(5))); // evicts the error
    assert_eq!(window.error_rate(), 0.0);
    assert_eq!(window.timeout_rate(), 0.25);
    let latencies: Vec<_> = window.samples().map(|s| s.latency).collect();
    assert_eq!(latencies, vec![ms(2), ms(3), ms(4), ms(5)]);
    assert_eq!(window.last(), Some(Sample::ok(ms(5))));
    let recent = window.recent_counts(2, Some(ms(4)));
    assert_eq!((recent.samples, recent.slow, recent.timeouts), (2, 1, 0));
    let all = window.recent_counts(10, Some(ms(2)));
    assert_eq!((all.samples, all.slow, all.timeouts), (4, 3, 1));
    // New samples move the quantiles at once.
    assert_eq!(window.quantile(1.0), Some(ms(5)));
    window.record(Sample::ok(ms(50)));
    assert_eq!(window.quantile(1.0), Some(ms(50)));
}

#[test]
fn the_sorted_copy_follows_evictions() {
    // Many more samples than the window holds, with repeats, so evictions remove values that
    // occur several times; every quantile must match sorting the window's samples afresh.
    let mut window = LatencyWindow::new(100);
    let fractions = [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0];
    for i in 0..1_000u64 {
        window.record(Sample::ok(ms((i * 7919) % 97)));
        let mut fresh: Vec<u32> = window
            .samples()
            .map(|sample| u32::try_from(sample.latency.as_micros()).expect("fits"))
            .collect();
        fresh.sort_unstable();
        for fraction in fractions {
            let expected = hazen_quantile(&fresh, fraction)
                .map(|micros| Duration::from_secs_f64(micros / 1e6));
            assert_eq!(
                window.quantile(fraction),
                expected,
                "after {i}, q{fraction}"
            );
        }
    }
    assert_eq!(window.len(), 100);
}

#[test]
fn empty_window_has_no_figures() {
    let window = LatencyWindow::new(0);
    assert_eq!(window.capacity(), 1);
    assert!(window.summary().is_none());
    assert_eq!(window.error_rate(), 0.0);
}

#[test]
fn outcome_codes_round_trip() {
    for outcome in [Outcome::Ok, Outcome::Error, Outcome::Timeout] {
        assert_eq!(Outcome::from_code(outcome.code()), Some(outcome));
    }
    assert_eq!(Outcome::from_code(9), None);
}

#[test]
fn the_finished_quantile_leaves_timeouts_out_through_evictions() {
    // Mixed outcomes with repeated values, many more than the window holds: the finished
    // quantile must match sorting the finished samples afresh, whichever copy a timeout shares
    // its latency with.
    let mut window = LatencyWindow::new(50);
    let fractions = [0.0, 0.5, 0.95, 0.99, 1.0];
    for i in 0..600u64 {
        let latency = ms((i * 7919) % 31);
        let sample = match i % 7 {
            0 | 3 => Sample::timeout(latency),
            5 => Sample::error(latency),
            _ => Sample::ok(latency),
        };
        window.record(sample);
        let mut finished: Vec<u32> = window
            .samples()
            .filter(|sample| sample.outcome != Outcome::Timeout)
            .map(|sample| u32::try_from(sample.latency.as_micros()).expect("fits"))
            .collect();
        finished.sort_unstable();
        assert_eq!(window.finished_len(), finished.len(), "after {i}");
        for fraction in fractions {
            let expected = hazen_quantile(&finished, fraction)
                .map(|micros| Duration::from_secs_f64(micros / 1e6));
            assert_eq!(
                window.finished_quantile(fraction),
                expected,
                "after {i}, q{fraction}"
            );
        }
    }
    let mut cut = LatencyWindow::new(3);
    cut.record(Sample::timeout(ms(9)));
    assert_eq!(cut.finished_quantile(0.99), None, "nothing finished");
}
