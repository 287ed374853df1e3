//! Latency masking (the seed's open question 2): predict how long a call will take, so the
//! gateway can send an early progress notification ("working…") and a voice client can play a
//! filler line while a slow tool runs.
//!
//! The prediction is the tool's *typical* latency — by default the p50 of measured calls once
//! there are enough of them, else the declared p50 — and masking is due when it exceeds the
//! threshold (default 700 ms, about where a pause in conversation becomes awkward). A tool with
//! no figures at all is masked when `mask_unknown` is set (default true: a needless filler line
//! costs less than dead air).

use std::time::Duration;

use crate::effective::{Declared, EffectiveLatency};
use crate::window::{LatencyWindow, Quantile};

/// When to mask a call's latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaskingConfig {
    /// Predicted latency above which masking is due. Default 700 ms.
    pub threshold: Duration,
    /// Which quantile predicts. Default p50.
    pub quantile: Quantile,
    /// Whether a tool with no figures is masked. Default true.
    pub mask_unknown: bool,
}

impl Default for MaskingConfig {
    fn default() -> Self {
        Self {
            threshold: Duration::from_millis(700),
            quantile: Quantile::P50,
            mask_unknown: true,
        }
    }
}

/// How long a call is expected to take and whether to mask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prediction {
    pub latency: EffectiveLatency,
    pub mask: bool,
}

impl Prediction {
    /// Predicts from a tool's window and declared metadata (`None` for a tool never seen).
    pub fn of(
        config: &MaskingConfig,
        min_samples: usize,
        tool: Option<(&LatencyWindow, &Declared)>,
    ) -> Self {
        let latency = match tool {
            Some((window, declared)) => {
                EffectiveLatency::at(config.quantile, min_samples, window, declared)
            }
            None => EffectiveLatency::Unknown,
        };
        let mask = match latency.latency() {
            Some(latency) => latency > config.threshold,
            None => config.mask_unknown,
        };
        Self { latency, mask }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::Sample;
    use switchboard_core::LatencyMeta;

    #[test]
    fn masks_slow_and_unknown_tools() {
        let config = MaskingConfig::default();
        let declared_slow = Declared::resolve(Some(&LatencyMeta::new(2_000, 4_000)), None);
        let window = LatencyWindow::new(100);
        assert!(Prediction::of(&config, 20, Some((&window, &declared_slow))).mask);
        assert!(Prediction::of(&config, 20, None).mask);
        let quiet = MaskingConfig {
            mask_unknown: false,
            ..config
        };
        assert!(!Prediction::of(&quiet, 20, None).mask);

        // Measured figures win once there are enough: this tool is fast here.
        let fast_here = LatencyWindow::from_samples(
            100,
            (0..20).map(|_| Sample::ok(Duration::from_millis(40))),
        );
        let prediction = Prediction::of(&config, 20, Some((&fast_here, &declared_slow)));
        assert!(!prediction.mask);
        assert_eq!(
            prediction.latency.latency(),
            Some(Duration::from_millis(40))
        );
    }
}
