//! Latency tiers and which tools fit them.
//!
//! A [`TierSet`] orders tiers by ceiling (defaults FAST ≤ 500 ms, STANDARD ≤ 1,500 ms,
//! DEEP ≤ 4,000 ms). Each tool has a [`Placement`]: the fastest tier whose ceiling its effective
//! latency fits, kept with hysteresis — a tool moves to a slower tier as soon as it exceeds its
//! ceiling, but back to a faster one only once it fits that faster ceiling shrunk by a margin
//! (default 10%), so noise around a ceiling does not flip it.
//!
//! A tool **fits** tier *t* when its placement is at or below *t* and it is healthy; a degraded
//! tool is demoted one tier: it fits only from the tier above its placement. An **unknown** tool
//! (nothing measured or declared) fits only tiers with `allow_unknown` (default STANDARD and
//! DEEP), from the second such tier when degraded. The slowest tier has no tier below it: a
//! degraded tool placed there stays in it (hidden from every tier, it could be neither called
//! nor shown to recover). A batch of parallel calls fits a tier when
//! the *maximum* of its tools' latencies does — every tool of it fits ([`batch_fits`]).
//!
//! [`TierView::compute`] is a linear scan over pre-computed [`ToolProfile`]s: it never reads
//! windows or sorts, so 1,000 tools take microseconds.

use std::sync::Arc;
use std::time::Duration;

use crate::effective::EffectiveLatency;
use crate::health::HealthState;

/// Default hysteresis margin for moving to a faster tier.
pub const DEFAULT_PLACEMENT_MARGIN: f64 = 0.1;

/// One tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    /// Lower-case name, e.g. `fast`.
    pub name: String,
    /// The latency ceiling of a call (of the slowest of parallel calls) in this tier.
    pub ceiling: Duration,
    /// Whether tools of unknown latency are shown in this tier.
    pub allow_unknown: bool,
}

impl Tier {
    pub fn new(name: &str, ceiling: Duration, allow_unknown: bool) -> Self {
        Self {
            name: name.to_ascii_lowercase(),
            ceiling,
            allow_unknown,
        }
    }
}

/// A tier by position in its [`TierSet`]; smaller is faster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TierId(pub usize);

/// Why a tier set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    #[error("no tiers configured")]
    Empty,
    #[error("tier name `{0}` is used twice")]
    DuplicateName(String),
    #[error("tiers `{0}` and `{1}` have the same ceiling")]
    SameCeiling(String, String),
}

/// The configured tiers, fastest first.
#[derive(Debug, Clone, PartialEq)]
pub struct TierSet {
    tiers: Vec<Tier>,
}

impl Default for TierSet {
    fn default() -> Self {
        Self {
            tiers: vec![
                Tier::new("fast", Duration::from_millis(500), false),
                Tier::new("standard", Duration::from_millis(1_500), true),
                Tier::new("deep", Duration::from_millis(4_000), true),
            ],
        }
    }
}

impl TierSet {
    /// Validates and orders tiers by ceiling.
    pub fn new(mut tiers: Vec<Tier>) -> Result<Self, TierError> {
        if tiers.is_empty() {
            return Err(TierError::Empty);
        }
        tiers.sort_by_key(|tier| tier.ceiling);
        for (index, tier) in tiers.iter().enumerate() {
            if tiers[..index].iter().any(|other| other.name == tier.name) {
                return Err(TierError::DuplicateName(tier.name.clone()));
            }
            if index > 0 && tiers[index - 1].ceiling == tier.ceiling {
                return Err(TierError::SameCeiling(
                    tiers[index - 1].name.clone(),
                    tier.name.clone(),
                ));
            }
        }
        Ok(Self { tiers })
    }

    pub fn len(&self) -> usize {
        self.tiers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty()
    }

    /// The tier of a name (case-insensitive).
    pub fn find(&self, name: &str) -> Option<TierId> {
        self.tiers
            .iter()
            .position(|tier| tier.name.eq_ignore_ascii_case(name))
            .map(TierId)
    }

    pub fn get(&self, id: TierId) -> Option<&Tier> {
        self.tiers.get(id.0)
    }

    /// The name of a tier, `"?"` for an id from another set.
    pub fn name(&self, id: TierId) -> &str {
        self.get(id).map_or("?", |tier| tier.name.as_str())
    }

    pub fn fastest(&self) -> TierId {
        TierId(0)
    }

    pub fn slowest(&self) -> TierId {
        TierId(self.tiers.len().saturating_sub(1))
    }

    pub fn iter(&self) -> impl Iterator<Item = (TierId, &Tier)> {
        self.tiers
            .iter()
            .enumerate()
            .map(|(i, tier)| (TierId(i), tier))
    }

    /// The fastest tier whose ceiling `latency` fits.
    pub fn fastest_fitting(&self, latency: Duration) -> Option<TierId> {
        self.tiers
            .iter()
            .position(|tier| latency <= tier.ceiling)
            .map(TierId)
    }
}

/// Where a tool sits by latency alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Fits this tier and every slower one.
    Tier(TierId),
    /// Slower than every ceiling.
    TooSlow,
    /// Nothing measured or declared.
    Unknown,
}

impl Placement {
    /// Whether this placement is in a faster tier than `other` (nothing is faster or slower
    /// than [`Placement::Unknown`]).
    pub fn is_faster_than(self, other: Placement) -> bool {
        match (self, other) {
            (Placement::Tier(a), Placement::Tier(b)) => a < b,
            (Placement::Tier(_), Placement::TooSlow) => true,
            _ => false,
        }
    }

    /// The placement of an effective latency, with hysteresis against `previous` (see the
    /// module doc).
    pub fn update(
        previous: Placement,
        effective: EffectiveLatency,
        tiers: &TierSet,
        margin: f64,
    ) -> Placement {
        let Some(latency) = effective.latency() else {
            return Placement::Unknown;
        };
        let raw = tiers.fastest_fitting(latency);
        let current = match previous {
            Placement::Tier(id) => Some(id),
            Placement::TooSlow => Some(TierId(tiers.len())),
            Placement::Unknown => return raw.map_or(Placement::TooSlow, Placement::Tier),
        };
        let raw_position = raw.unwrap_or(TierId(tiers.len()));
        if current.is_some_and(|current| raw_position >= current) {
            // Slower or unchanged: follow at once.
            return raw.map_or(Placement::TooSlow, Placement::Tier);
        }
        // Faster: only as far as the shrunk ceilings allow, never slower than before.
        let shrink = (1.0 - margin).clamp(0.0, 1.0);
        let strict = tiers
            .iter()
            .find(|(_, tier)| latency <= tier.ceiling.mul_f64(shrink))
            .map(|(id, _)| id);
        match (strict, current) {
            (Some(strict), Some(current)) if strict < current => Placement::Tier(strict),
            _ => previous,
        }
    }
}

/// What tier views need to know about one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProfile {
    pub name: Arc<str>,
    pub effective: EffectiveLatency,
    pub placement: Placement,
    pub health: HealthState,
}

impl ToolProfile {
    /// Whether the tool is shown (and callable) in `tier`.
    pub fn fits(&self, tiers: &TierSet, tier: TierId) -> bool {
        let demotion = usize::from(self.health == HealthState::Degraded && tier != tiers.slowest());
        match self.placement {
            Placement::Tier(placed) => placed.0 + demotion <= tier.0,
            Placement::TooSlow => false,
            Placement::Unknown => {
                let Some(allowed) = tiers.get(tier).map(|t| t.allow_unknown) else {
                    return false;
                };
                let allowed_below = tiers
                    .iter()
                    .take_while(|(id, _)| *id < tier)
                    .filter(|(_, t)| t.allow_unknown)
                    .count();
                allowed && allowed_below >= demotion
            }
        }
    }

    /// The fastest tier the tool fits, if any.
    pub fn fastest_tier(&self, tiers: &TierSet) -> Option<TierId> {
        tiers
            .iter()
            .map(|(id, _)| id)
            .find(|id| self.fits(tiers, *id))
    }
}

/// The tools visible in one tier, in input order.
#[derive(Debug, Clone, PartialEq)]
pub struct TierView {
    pub tier: TierId,
    pub visible: Vec<Arc<str>>,
}

impl TierView {
    /// The tools of `profiles` that fit `tier`.
    pub fn compute(profiles: &[ToolProfile], tiers: &TierSet, tier: TierId) -> Self {
        let visible = profiles
            .iter()
            .filter(|profile| profile.fits(tiers, tier))
            .map(|profile| Arc::clone(&profile.name))
            .collect();
        Self { tier, visible }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.visible.iter().any(|visible| &**visible == name)
    }
}

/// The cost of parallel calls: the maximum of their latencies (`None` when one is unknown or
/// the batch is empty).
pub fn batch_latency(latencies: impl IntoIterator<Item = Option<Duration>>) -> Option<Duration> {
    let mut max: Option<Duration> = None;
    for latency in latencies {
        let latency = latency?;
        max = Some(max.map_or(latency, |current| current.max(latency)));
    }
    max
}

/// Whether a batch of parallel calls fits `tier`: the max, not the sum, of the latencies — i.e.
/// every tool of the batch fits the tier.
pub fn batch_fits<'a>(
    batch: impl IntoIterator<Item = &'a ToolProfile>,
    tiers: &TierSet,
    tier: TierId,
) -> bool {
    batch.into_iter().all(|profile| profile.fits(tiers, tier))
}

#[cfg(test)]
#[path = "tiers_tests.rs"]
mod tests;
