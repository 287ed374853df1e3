//! Latency distributions with known quantiles, for tests: log-normal (with an inverse CDF) and
//! a bimodal mix, drawn from a seeded RNG.

#![allow(dead_code)]

use std::time::Duration;

use rand::Rng;
use rand::seq::SliceRandom;

/// The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// A log-normal latency distribution.
#[derive(Debug, Clone, Copy)]
pub struct LogNormal {
    pub median_ms: f64,
    pub sigma: f64,
}

impl LogNormal {
    /// The true quantile.
    pub fn quantile(&self, p: f64) -> Duration {
        Duration::from_secs_f64(self.median_ms * (self.sigma * normal_quantile(p)).exp() / 1e3)
    }

    /// One independent draw.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        // Inverse-CDF sampling; keep u away from 0 and 1.
        let u: f64 = rng.random_range(1e-12..1.0 - 1e-12);
        self.quantile(u)
    }

    /// `n` draws stratified over the probability axis (one per stratum of width 1/n, at its
    /// midpoint) in random order: a fixture whose empirical distribution matches the true one
    /// as closely as n points can.
    pub fn stratified(&self, n: usize, rng: &mut impl Rng) -> Vec<Duration> {
        let mut draws: Vec<Duration> = (0..n)
            .map(|i| self.quantile((i as f64 + 0.5) / n as f64))
            .collect();
        draws.shuffle(rng);
        draws
    }
}

/// The seed's bimodal web search: mostly fast (uniform in `fast_ms`), sometimes slow.
#[derive(Debug, Clone, Copy)]
pub struct Bimodal {
    pub fast_ms: (u64, u64),
    pub slow_ms: u64,
    pub slow_share: f64,
}

impl Bimodal {
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        if rng.random_bool(self.slow_share) {
            Duration::from_millis(self.slow_ms)
        } else {
            Duration::from_millis(rng.random_range(self.fast_ms.0..=self.fast_ms.1))
        }
    }
}

/// The empirical Hazen quantile of arbitrary durations (for reports on results).
pub fn quantile_of(values: &[Duration], p: f64) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    let n = sorted.len();
    let position = (p * n as f64 + 0.5).clamp(1.0, n as f64);
    let lower = position.floor() as usize;
    let fraction = position - lower as f64;
    let low = sorted[lower - 1];
    let high = sorted[lower.min(n - 1)];
    low + (high.saturating_sub(low)).mul_f64(fraction)
}
