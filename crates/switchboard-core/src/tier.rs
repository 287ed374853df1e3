//! Latency tiers: a tier is a ceiling, and a tool fits a tier when its effective latency is
//! under that ceiling. The effective latency here is the declared one — the tool's `_meta`
//! with operator overrides (`estimated_duration_ms` stands for the median, `max_duration_ms`
//! for p99; the judged quantile picks between them: p50 uses the estimate, higher quantiles
//! the bound, or the estimate when no bound is declared). A tool that declares nothing has an
//! unknown latency and fits only tiers of at least [`UNKNOWN_FITS_FROM`]: it is kept out of
//! the fastest tier until something says it is fast.

use std::time::Duration;

use crate::agent::View;
use crate::{CatalogEntry, LatencyMeta};

/// Unknown latencies fit tiers with at least this ceiling.
pub const UNKNOWN_FITS_FROM: Duration = Duration::from_millis(1_500);

/// One tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Tier {
    pub name: String,
    pub ceiling: Duration,
}

/// The latency a tool is judged by, if anything is known.
pub fn effective_latency(latency: &LatencyMeta, quantile: f64) -> Option<Duration> {
    let millis = if quantile <= 0.5 {
        latency.estimated_duration_ms.or(latency.max_duration_ms)
    } else {
        latency.max_duration_ms.or(latency.estimated_duration_ms)
    }?;
    Some(Duration::from_millis(millis))
}

/// Whether a tool fits a tier.
pub fn fits(entry: &CatalogEntry, tier: &Tier, quantile: f64) -> bool {
    match effective_latency(&entry.latency, quantile) {
        Some(latency) => latency <= tier.ceiling,
        None => tier.ceiling >= UNKNOWN_FITS_FROM,
    }
}

/// A view narrowed to a tier: visible = permitted and fits.
pub struct TierView<V> {
    pub inner: V,
    pub tier: Tier,
    pub quantile: f64,
}

impl<V: View> View for TierView<V> {
    fn contains(&self, entry: &CatalogEntry) -> bool {
        self.inner.contains(entry) && fits(entry, &self.tier, self.quantile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_latency_decides_the_fit() {
        let fast = LatencyMeta::new(20, 300);
        let slow = LatencyMeta::new(800, 3_000);
        let only_estimate = LatencyMeta {
            estimated_duration_ms: Some(100),
            ..LatencyMeta::default()
        };
        assert_eq!(
            effective_latency(&fast, 0.9),
            Some(Duration::from_millis(300))
        );
        assert_eq!(
            effective_latency(&fast, 0.5),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            effective_latency(&only_estimate, 0.9),
            Some(Duration::from_millis(100))
        );
        assert_eq!(effective_latency(&LatencyMeta::default(), 0.9), None);
        let overridden = LatencyMeta {
            max_duration_ms: Some(5_000),
            ..LatencyMeta::default()
        }
        .over(fast);
        assert_eq!(
            overridden,
            LatencyMeta::new(20, 5_000),
            "the operator wins field by field"
        );
        let _ = slow;
    }
}
