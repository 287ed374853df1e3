//! A tool's effective latency: the one figure tiers compare with their ceilings.
//!
//! In order of preference:
//! 1. **Measured** — the configured quantile (default p90) of the rolling window, once it holds at
//!    least `min_samples` calls (default 20), so one slow call never re-tiers a tool;
//! 2. **Declared** — from the operator's per-tool config, field by field over the tool's own
//!    `_meta` ([`LatencyMeta`]). The author declares a p50 (`estimated_duration_ms`) and a p99
//!    bound (`max_duration_ms`); other quantiles are interpolated between them assuming a
//!    log-normal shape (`ln q = ln p50 + (ln p99 − ln p50) · z_q / z_0.99`). With only one of the
//!    two, that one is used as is.
//! 3. **Unknown** — nothing measured, nothing declared. Policy: an unknown tool fits only tiers
//!    marked `allow_unknown` (by default STANDARD and DEEP, not FAST — a voice turn cannot gamble
//!    on an unmeasured tool); see [`crate::tiers`].

use std::time::Duration;

use switchboard_core::LatencyMeta;

use crate::window::{LatencyWindow, Quantile};

/// Default number of samples before measured figures replace declared ones.
pub const DEFAULT_MIN_SAMPLES: usize = 20;

/// How effective latency is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectiveConfig {
    /// Which quantile of measured (or declared) latency counts. Default p90.
    pub quantile: Quantile,
    /// Samples needed before measurements count. Default 20.
    pub min_samples: usize,
}

impl Default for EffectiveConfig {
    fn default() -> Self {
        Self {
            quantile: Quantile::P90,
            min_samples: DEFAULT_MIN_SAMPLES,
        }
    }
}

/// A tool's declared metadata after operator overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Declared {
    pub estimated: Option<Duration>,
    pub max: Option<Duration>,
    pub idempotent: Option<bool>,
    pub cacheable: Option<Duration>,
}

impl Declared {
    /// Merges the operator's override (wins field by field) over the tool's own `_meta`.
    pub fn resolve(meta: Option<&LatencyMeta>, overrides: Option<&LatencyMeta>) -> Self {
        let pick = |field: fn(&LatencyMeta) -> Option<u64>| {
            overrides
                .and_then(field)
                .or_else(|| meta.and_then(field))
                .map(Duration::from_millis)
        };
        Self {
            estimated: pick(|m| m.estimated_duration_ms),
            // A bound of 0 ms would time every call out at once: no bound declared.
            max: pick(|m| m.max_duration_ms.filter(|ms| *ms > 0)),
            idempotent: overrides
                .and_then(|m| m.idempotent)
                .or_else(|| meta.and_then(|m| m.idempotent)),
            cacheable: pick(|m| m.cacheable_seconds.map(|s| s.saturating_mul(1_000))),
        }
    }

    /// The declared value of `quantile` (see the module doc), `None` when nothing is declared.
    pub fn quantile(&self, quantile: Quantile) -> Option<Duration> {
        match (self.estimated, self.max) {
            (None, None) => None,
            (Some(one), None) | (None, Some(one)) => Some(one),
            (Some(p50), Some(p99)) => {
                let p99 = p99.max(p50);
                if p50.is_zero() {
                    return Some(if quantile == Quantile::P50 { p50 } else { p99 });
                }
                let (low, high) = (p50.as_secs_f64().ln(), p99.as_secs_f64().ln());
                let ln = low + (high - low) * z_score(quantile) / z_score(Quantile::P99);
                Some(Duration::from_secs_f64(ln.exp()))
            }
        }
    }
}

/// The standard normal quantile of `quantile`.
fn z_score(quantile: Quantile) -> f64 {
    match quantile {
        Quantile::P50 => 0.0,
        Quantile::P90 => 1.281_551_565_544_600_4,
        Quantile::P95 => 1.644_853_626_951_472_2,
        Quantile::P99 => 2.326_347_874_040_840_8,
    }
}

/// Where an effective latency came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectiveLatency {
    Measured { latency: Duration, samples: usize },
    Declared { latency: Duration },
    Unknown,
}

impl EffectiveLatency {
    /// Chooses the effective latency of a tool (see the module doc).
    pub fn of(config: &EffectiveConfig, window: &LatencyWindow, declared: &Declared) -> Self {
        Self::at(config.quantile, config.min_samples, window, declared)
    }

    /// Same, for an explicit quantile (the masking predictor uses p50).
    pub fn at(
        quantile: Quantile,
        min_samples: usize,
        window: &LatencyWindow,
        declared: &Declared,
    ) -> Self {
        if window.len() >= min_samples.max(1)
            && let Some(latency) = window.quantile(quantile.fraction())
        {
            return EffectiveLatency::Measured {
                latency,
                samples: window.len(),
            };
        }
        match declared.quantile(quantile) {
            Some(latency) => EffectiveLatency::Declared { latency },
            None => EffectiveLatency::Unknown,
        }
    }

    pub fn latency(&self) -> Option<Duration> {
        match self {
            EffectiveLatency::Measured { latency, .. } | EffectiveLatency::Declared { latency } => {
                Some(*latency)
            }
            EffectiveLatency::Unknown => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::Sample;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn overrides_win_field_by_field() {
        let meta = LatencyMeta::new(100, 900).idempotent(true);
        let overrides = LatencyMeta {
            max_duration_ms: Some(400),
            ..LatencyMeta::default()
        };
        let declared = Declared::resolve(Some(&meta), Some(&overrides));
        assert_eq!(declared.estimated, Some(ms(100)));
        assert_eq!(declared.max, Some(ms(400)));
        assert_eq!(declared.idempotent, Some(true));
        assert_eq!(Declared::resolve(None, None), Declared::default());
        // A declared bound of 0 ms is no bound (it would time every call out at once).
        let zero = LatencyMeta {
            max_duration_ms: Some(0),
            ..LatencyMeta::default()
        };
        assert_eq!(Declared::resolve(Some(&zero), None).max, None);
    }

    #[test]
    fn declared_quantiles_interpolate_log_normally() {
        let declared = Declared::resolve(Some(&LatencyMeta::new(100, 1_000)), None);
        assert_eq!(declared.quantile(Quantile::P50), Some(ms(100)));
        let p99 = declared.quantile(Quantile::P99).expect("declared");
        assert!((p99.as_secs_f64() - 1.0).abs() < 1e-9);
        // ln p90 = ln 100 + ln 10 · 1.2816/2.3263 → ≈ 356 ms.
        let p90 = declared.quantile(Quantile::P90).expect("declared");
        assert!((p90.as_secs_f64() * 1e3 - 355.9).abs() < 1.0, "{p90:?}");
        let only_max = Declared {
            max: Some(ms(700)),
            ..Declared::default()
        };
        assert_eq!(only_max.quantile(Quantile::P50), Some(ms(700)));
    }

    #[test]
    fn measured_replaces_declared_only_after_min_samples() {
        let config = EffectiveConfig::default();
        let declared = Declared::resolve(Some(&LatencyMeta::new(50, 50)), None);
        let mut window = LatencyWindow::new(100);
        for _ in 0..19 {
            window.record(Sample::ok(ms(800)));
        }
        assert_eq!(
            EffectiveLatency::of(&config, &window, &declared),
            EffectiveLatency::Declared { latency: ms(50) }
        );
        window.record(Sample::ok(ms(800)));
        assert_eq!(
            EffectiveLatency::of(&config, &window, &declared),
            EffectiveLatency::Measured {
                latency: ms(800),
                samples: 20
            }
        );
        assert_eq!(
            EffectiveLatency::of(&config, &LatencyWindow::new(100), &Declared::default()),
            EffectiveLatency::Unknown
        );
    }
}
