//! Tests of tiers, placement and fit.

use super::*;

fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

fn measured(value: u64) -> EffectiveLatency {
    EffectiveLatency::Measured {
        latency: ms(value),
        samples: 100,
    }
}

fn profile(name: &str, placement: Placement, health: HealthState) -> ToolProfile {
    ToolProfile {
        name: name.into(),
        effective: EffectiveLatency::Unknown,
        placement,
        health,
    }
}

#[test]
fn tier_sets_are_ordered_and_validated() {
    let tiers = TierSet::new(vec![
        Tier::new("Deep", ms(4_000), true),
        Tier::new("fast", ms(500), false),
    ])
    .expect("valid");
    assert_eq!(tiers.find("DEEP"), Some(TierId(1)));
    assert_eq!(tiers.name(TierId(0)), "fast");
    assert_eq!(TierSet::new(vec![]), Err(TierError::Empty));
    assert!(matches!(
        TierSet::new(vec![
            Tier::new("a", ms(1), true),
            Tier::new("A", ms(2), true)
        ]),
        Err(TierError::DuplicateName(_))
    ));
    assert!(matches!(
        TierSet::new(vec![
            Tier::new("a", ms(1), true),
            Tier::new("b", ms(1), true)
        ]),
        Err(TierError::SameCeiling(..))
    ));
}

#[test]
fn placement_leaves_at_once_and_returns_with_a_margin() {
    let tiers = TierSet::default();
    let place = |previous, latency| Placement::update(previous, measured(latency), &tiers, 0.1);
    let fast = Placement::Tier(TierId(0));
    let standard = Placement::Tier(TierId(1));
    assert_eq!(place(Placement::Unknown, 480), fast);
    assert_eq!(place(fast, 501), standard);
    // Back under 500 but not under 450: stays STANDARD.
    assert_eq!(place(standard, 499), standard);
    assert_eq!(place(standard, 451), standard);
    assert_eq!(place(standard, 450), fast);
    assert_eq!(place(fast, 5_000), Placement::TooSlow);
    assert_eq!(place(Placement::TooSlow, 3_900), Placement::TooSlow);
    assert_eq!(place(Placement::TooSlow, 3_500), Placement::Tier(TierId(2)));
    // From DEEP straight to FAST when fast enough.
    assert_eq!(place(Placement::Tier(TierId(2)), 100), fast);
    assert_eq!(
        Placement::update(fast, EffectiveLatency::Unknown, &tiers, 0.1),
        Placement::Unknown
    );
}

#[test]
fn fit_follows_placement_health_and_the_unknown_policy() {
    let tiers = TierSet::default();
    let (fast, standard, deep) = (TierId(0), TierId(1), TierId(2));
    let cases = [
        // (placement, health, fits fast, standard, deep)
        (
            Placement::Tier(fast),
            HealthState::Healthy,
            [true, true, true],
        ),
        (
            Placement::Tier(fast),
            HealthState::Degraded,
            [false, true, true],
        ),
        (
            Placement::Tier(standard),
            HealthState::Degraded,
            [false, false, true],
        ),
        (
            Placement::Tier(deep),
            HealthState::Healthy,
            [false, false, true],
        ),
        // No tier below the slowest: a degraded tool there stays in it.
        (
            Placement::Tier(deep),
            HealthState::Degraded,
            [false, false, true],
        ),
        (
            Placement::TooSlow,
            HealthState::Healthy,
            [false, false, false],
        ),
        (
            Placement::Unknown,
            HealthState::Healthy,
            [false, true, true],
        ),
        (
            Placement::Unknown,
            HealthState::Degraded,
            [false, false, true],
        ),
    ];
    for (placement, health, expected) in cases {
        let tool = profile("t", placement, health);
        let got = [fast, standard, deep].map(|tier| tool.fits(&tiers, tier));
        assert_eq!(got, expected, "{placement:?} {health:?}");
    }
    assert_eq!(
        profile("t", Placement::Tier(fast), HealthState::Degraded).fastest_tier(&tiers),
        Some(standard)
    );
}

#[test]
fn views_and_batches() {
    let tiers = TierSet::default();
    let profiles = vec![
        profile("dice", Placement::Tier(TierId(0)), HealthState::Healthy),
        profile("rules", Placement::Tier(TierId(1)), HealthState::Healthy),
        profile("image", Placement::Tier(TierId(2)), HealthState::Healthy),
    ];
    let fast = TierView::compute(&profiles, &tiers, TierId(0));
    assert!(fast.contains("dice") && !fast.contains("rules"));
    let deep = TierView::compute(&profiles, &tiers, TierId(2));
    assert_eq!(deep.visible.len(), 3);

    // The seed's example: max(15, 80, 200) = 200 ms fits FAST; the sum would not matter.
    let batch = batch_latency([Some(ms(15)), Some(ms(80)), Some(ms(200))]);
    assert_eq!(batch, Some(ms(200)));
    assert_eq!(batch_latency([Some(ms(15)), None]), None);
    assert!(batch_fits(&profiles[..1], &tiers, TierId(0)));
    assert!(!batch_fits(&profiles[..2], &tiers, TierId(0)));
    assert!(batch_fits(&profiles[..2], &tiers, TierId(1)));
}
