//! Tests of recheck schedules and the burst decision.

use super::*;
use crate::book::LatencyBook;
use crate::tiers::TierId;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

fn policy() -> RecheckPolicy {
    RecheckPolicy::after(Duration::from_secs(60))
}

/// A book where "work" was measured at `latency` `calls` times at `at`.
fn measured(latency: u64, calls: usize, at: Instant) -> LatencyBook {
    let mut book = LatencyBook::default();
    for _ in 0..calls {
        book.record("work", Sample::ok(ms(latency)), at);
    }
    book
}

#[test]
fn a_hidden_quiet_tool_is_due_after_the_interval_and_the_interval_doubles_while_nothing_changes() {
    let start = Instant::now();
    let book = measured(900, 20, start);
    let tool = book.tool("work").expect("recorded");
    assert_eq!(tool.placement(), Placement::Tier(TierId(1)));
    let mut schedule = RecheckSchedule::new(&policy(), start);
    assert!(!schedule.take_due(&policy(), tool, 20, start + Duration::from_secs(59)));
    assert!(schedule.take_due(&policy(), tool, 20, start + Duration::from_secs(60)));
    // Running: not due twice.
    assert!(!schedule.take_due(&policy(), tool, 20, start + Duration::from_secs(120)));
    let ended = start + Duration::from_secs(61);
    schedule.finish(&policy(), false, ended);
    assert_eq!(schedule.interval(), Duration::from_secs(120));
    assert!(!schedule.take_due(&policy(), tool, 20, ended + Duration::from_secs(119)));
    assert!(schedule.take_due(&policy(), tool, 20, ended + Duration::from_secs(120)));
    // Doubling stops at the cap.
    for _ in 0..20 {
        schedule.finish(&policy(), false, ended);
    }
    assert_eq!(schedule.interval(), MAX_RECHECK_INTERVAL);
    // A promotion starts over at the first interval.
    schedule.finish(&policy(), true, ended);
    assert_eq!(schedule.interval(), Duration::from_secs(60));
}

#[test]
fn a_call_since_the_last_recheck_starts_the_quiet_spell_over() {
    let start = Instant::now();
    let mut book = measured(900, 20, start);
    let mut schedule = RecheckSchedule::new(&policy(), start);
    for _ in 0..3 {
        schedule.finish(&policy(), false, start);
    }
    assert_eq!(schedule.interval(), Duration::from_secs(480));
    let called = start + Duration::from_secs(100);
    book.record("work", Sample::ok(ms(900)), called);
    let tool = book.tool("work").expect("recorded");
    assert!(!schedule.take_due(&policy(), tool, 20, called + Duration::from_secs(59)));
    assert_eq!(schedule.interval(), Duration::from_secs(60));
    assert!(schedule.take_due(&policy(), tool, 20, called + Duration::from_secs(60)));
}

#[test]
fn visible_unmeasured_degraded_or_disabled_tools_are_never_due() {
    let start = Instant::now();
    let later = start + Duration::from_secs(3_600);
    // In the fastest tier: no one is kept from it.
    let fast = measured(100, 20, start);
    let mut schedule = RecheckSchedule::new(&policy(), start);
    assert!(!schedule.take_due(&policy(), fast.tool("work").expect("recorded"), 20, later));
    // Too few calls to be placed by measurement.
    let young = measured(900, 5, start);
    assert!(!schedule.take_due(&policy(), young.tool("work").expect("recorded"), 20, later));
    // Degraded: probed anyway, at every tick.
    let mut failing = measured(900, 20, start);
    for _ in 0..20 {
        failing.record("work", Sample::error(ms(900)), start);
    }
    let tool = failing.tool("work").expect("recorded");
    assert_eq!(tool.health(), HealthState::Degraded);
    assert!(!schedule.take_due(&policy(), tool, 20, later));
    // Switched off.
    let slow = measured(900, 20, start);
    let off = RecheckPolicy::after(Duration::ZERO);
    let mut schedule = RecheckSchedule::new(&off, start);
    assert!(!schedule.take_due(&off, slow.tool("work").expect("recorded"), 20, later));
    // Slower than every tier is hidden too.
    let too_slow = measured(5_000, 20, start);
    let tool = too_slow.tool("work").expect("recorded");
    assert_eq!(tool.placement(), Placement::TooSlow);
    let mut schedule = RecheckSchedule::new(&policy(), start);
    assert!(schedule.take_due(&policy(), tool, 20, later));
}

#[test]
fn only_an_answer_within_a_faster_tier_is_worth_a_burst() {
    let tiers = TierSet::default();
    let standard = Placement::Tier(TierId(1));
    assert!(worth_a_burst(&Sample::ok(ms(100)), standard, &tiers));
    assert!(!worth_a_burst(&Sample::ok(ms(900)), standard, &tiers));
    assert!(!worth_a_burst(&Sample::error(ms(100)), standard, &tiers));
    assert!(!worth_a_burst(&Sample::timeout(ms(100)), standard, &tiers));
    assert!(worth_a_burst(
        &Sample::ok(ms(3_000)),
        Placement::TooSlow,
        &tiers
    ));
    assert!(!worth_a_burst(
        &Sample::ok(ms(9_000)),
        Placement::TooSlow,
        &tiers
    ));
}

#[test]
fn a_burst_places_the_tool_on_its_own_with_hysteresis() {
    let start = Instant::now();
    let book = measured(900, 100, start);
    let quick = vec![Sample::ok(ms(100)); 20];
    assert_eq!(
        book.placement_of("work", &quick),
        Placement::Tier(TierId(0))
    );
    // 480 ms fits fast's ceiling, not its shrunk one: no promotion.
    let borderline = vec![Sample::ok(ms(480)); 20];
    assert_eq!(
        book.placement_of("work", &borderline),
        Placement::Tier(TierId(1))
    );
    // The burst is only looked at: the book is unchanged.
    assert_eq!(
        book.tool("work").expect("recorded").placement(),
        Placement::Tier(TierId(1))
    );
}
