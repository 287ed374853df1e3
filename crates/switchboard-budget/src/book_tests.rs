//! Tests of the book.

use switchboard_core::LatencyMeta;

use super::*;
use crate::tiers::TierId;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

#[test]
fn declared_tools_are_placed_and_measured_ones_re_placed() {
    let mut book = LatencyBook::default();
    let now = Instant::now();
    book.declare(
        "image",
        Declared::resolve(Some(&LatencyMeta::new(2_500, 3_800)), None),
    );
    assert_eq!(book.profile("image").placement, Placement::Tier(TierId(2)));
    assert_eq!(book.profile("never-seen").placement, Placement::Unknown);

    // Here the image tool is quick: after min_samples it moves to FAST, once.
    let mut changes = 0;
    for call in 1..=30 {
        let outcome = book.record("image", Sample::ok(ms(120)), now);
        assert_eq!(outcome.health, None);
        if outcome.placement_changed {
            changes += 1;
            assert_eq!(call, 20, "measured figures count from min_samples");
        }
        assert_eq!(outcome.views_may_change(), outcome.placement_changed);
    }
    assert_eq!(changes, 1);
    assert_eq!(book.profile("image").placement, Placement::Tier(TierId(0)));
    assert_eq!(book.measured_p99("image"), Some(ms(120)));
    assert_eq!(book.measured_p99("never-seen"), None);
    assert!(!book.predict("image").mask);
    assert!(book.predict("never-seen").mask);
}

#[test]
fn unknown_tools_recorded_without_declaration_become_known() {
    let mut book = LatencyBook::default();
    let now = Instant::now();
    for _ in 0..19 {
        book.record("mystery", Sample::ok(ms(2_000)), now);
    }
    assert_eq!(book.effective("mystery"), EffectiveLatency::Unknown);
    book.record("mystery", Sample::ok(ms(2_000)), now);
    assert_eq!(
        book.profile("mystery").placement,
        Placement::Tier(TierId(2))
    );
    let names: Vec<_> = book.names().collect();
    assert_eq!(names, vec!["mystery"]);
}

#[test]
fn merged_windows_keep_every_sample_and_quantiles_are_over_the_union() {
    let mut book = LatencyBook::default();
    let capacity = book.config().window;
    // Two replicas: one measured 150 calls of 100 ms, the other 50 of 900 ms. The union's
    // p50 is 100 ms and its p90 900 ms; averaging each window's p50 would say 500 ms.
    let mut samples: Vec<Sample> = (0..150).map(|_| Sample::ok(ms(100))).collect();
    samples.extend((0..50).map(|_| Sample::ok(ms(900))));
    book.restore_merged("search", samples);
    let window = book.tool("search").map(ToolBudget::window).expect("window");
    assert_eq!(
        window.len(),
        200,
        "every sample, beyond the window of {capacity}"
    );
    let summary = book.summary("search").expect("figures");
    assert_eq!(summary.p50, ms(100));
    assert_eq!(summary.p90, ms(900));
    // Fewer samples than the window: the window keeps its configured size.
    book.restore_merged("lookup", vec![Sample::ok(ms(5))]);
    assert_eq!(
        book.tool("lookup").map(|tool| tool.window().capacity()),
        Some(capacity)
    );
}

#[test]
fn restoring_a_window_re_places_the_tool() {
    let mut book = LatencyBook::default();
    book.declare(
        "search",
        Declared::resolve(Some(&LatencyMeta::new(100, 300)), None),
    );
    book.restore("search", (0..50).map(|_| Sample::ok(ms(1_000))));
    assert_eq!(book.profile("search").placement, Placement::Tier(TierId(1)));
    assert_eq!(
        book.tool("search").map(|tool| tool.window().len()),
        Some(50)
    );
    assert_eq!(
        book.tool("search").map(ToolBudget::health),
        Some(HealthState::Healthy)
    );
}

#[test]
fn a_hanging_call_does_not_raise_the_next_deadline() {
    // A 50 ms tool whose deadline is derived from its p99: a call that hangs is cut at that
    // deadline and recorded there; it must not become the p99 that sets the next deadline.
    let mut book = LatencyBook::default();
    let now = Instant::now();
    for _ in 0..30 {
        book.record("lookup", Sample::ok(ms(50)), now);
    }
    assert_eq!(book.measured_p99("lookup"), Some(ms(50)));
    for _ in 0..3 {
        book.record("lookup", Sample::timeout(ms(1_000)), now);
        assert_eq!(book.measured_p99("lookup"), Some(ms(50)));
    }
    // Placement still sees the hangs: the caller waited for them.
    assert!(book.summary("lookup").is_some_and(|s| s.p99 > ms(50)));
}

#[test]
fn a_degraded_tool_nothing_calls_is_given_another_chance() {
    let mut book = LatencyBook::default();
    let start = Instant::now();
    for _ in 0..30 {
        book.record("create_ticket", Sample::error(ms(40)), start);
    }
    assert_eq!(book.profile("create_ticket").health, HealthState::Degraded);
    assert!(!book.recover_idle(start + ms(30_000)), "called 30 s ago");
    assert!(book.recover_idle(start + ms(60_000)));
    assert_eq!(book.profile("create_ticket").health, HealthState::Healthy);
    assert!(
        !book.recover_idle(start + ms(90_000)),
        "nothing left to promote"
    );
}

#[test]
fn a_tool_that_got_slower_for_good_gets_a_longer_deadline() {
    // 30 calls of 800 ms: a deadline of 1.6 s. Then every call takes 3 s and is cut at 1.6 s:
    // once timeouts pass the health's 10%, they count, and the deadline grows with them.
    let mut book = LatencyBook::default();
    let now = Instant::now();
    for _ in 0..30 {
        book.record("report", Sample::ok(ms(800)), now);
    }
    assert_eq!(book.measured_p99("report"), Some(ms(800)));
    let mut cut = 0;
    while book.measured_p99("report") == Some(ms(800)) {
        book.record("report", Sample::timeout(ms(1_600)), now);
        cut += 1;
        assert!(
            cut <= 4,
            "still {:?} after {cut} timeouts",
            book.measured_p99("report")
        );
    }
    assert_eq!(book.measured_p99("report"), Some(ms(1_600)));
}
