//! The operator's view of latency (`switchboard tools --stats`): per tool, the measured p50 /
//! p90 / p99, error and timeout rates and samples next to what it declares; the figure tiers
//! judge it by and where that came from; its badge ("Lightning" < 50 ms, "Fast" < 200 ms,
//! "Standard" < 1 s, "Slow" ≥ 1 s); its health; the tiers it is visible in; and its rank by
//! p50 within its category.

use std::collections::BTreeMap;

use serde::Serialize;
use switchboard_budget::{Badge, EffectiveLatency, HealthState, Quantile, leaderboard};

use super::LatencyBudget;

/// One tool's line.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ToolStats {
    pub tool: String,
    pub server: String,
    pub category: String,
    pub samples: usize,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub error_rate: Option<f64>,
    pub timeout_rate: Option<f64>,
    pub declared_p50_ms: Option<f64>,
    pub declared_max_ms: Option<f64>,
    /// The latency tiers compare, and its source: `measured`, `declared` or `unknown`.
    pub effective_ms: Option<f64>,
    pub source: &'static str,
    pub badge: Option<&'static str>,
    pub health: &'static str,
    /// The tiers the tool is visible in now.
    pub tiers: Vec<String>,
    /// Rank by p50 within its category (1 = fastest), when it has a p50.
    pub rank: Option<usize>,
    pub idempotent: bool,
    pub read_only: bool,
    pub cacheable_seconds: Option<u64>,
}

fn ms(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 100_000.0).round() / 100.0
}

impl LatencyBudget {
    /// Every catalog tool's stats, sorted by category, then rank, then name.
    pub fn report(&self) -> Vec<ToolStats> {
        let tools = self.tools();
        let fits = self.fits();
        let book = self.book();
        let mut rows: Vec<ToolStats> = tools
            .values()
            .map(|traits| {
                let summary = book.summary(&traits.key);
                let effective = book.effective(&traits.key);
                let (effective_ms, source) = match effective {
                    EffectiveLatency::Measured { latency, .. } => (Some(ms(latency)), "measured"),
                    EffectiveLatency::Declared { latency } => (Some(ms(latency)), "declared"),
                    EffectiveLatency::Unknown => (None, "unknown"),
                };
                let p50 = summary
                    .map(|s| s.p50)
                    .or_else(|| traits.declared.quantile(Quantile::P50));
                let health = match book.tool(&traits.key).map(|tool| tool.health()) {
                    Some(HealthState::Degraded) => "degraded",
                    _ => "healthy",
                };
                let fastest = fits.get(&traits.exposed).copied().flatten();
                let tiers = self
                    .tiers()
                    .iter()
                    .filter(|(id, _)| fastest.is_some_and(|fastest| fastest <= *id))
                    .map(|(_, tier)| tier.name.clone())
                    .collect();
                ToolStats {
                    tool: traits.exposed.clone(),
                    server: traits.server.as_str().to_owned(),
                    category: traits.category.clone(),
                    samples: summary.map_or(0, |s| s.samples),
                    p50_ms: summary.map(|s| ms(s.p50)),
                    p90_ms: summary.map(|s| ms(s.p90)),
                    p99_ms: summary.map(|s| ms(s.p99)),
                    error_rate: summary.map(|s| s.error_rate),
                    timeout_rate: summary.map(|s| s.timeout_rate),
                    declared_p50_ms: traits.declared.estimated.map(ms),
                    declared_max_ms: traits.declared.max.map(ms),
                    effective_ms,
                    source,
                    badge: p50.map(|p50| Badge::for_latency(p50).label()),
                    health,
                    tiers,
                    rank: None,
                    idempotent: traits.safety.idempotent,
                    read_only: traits.safety.read_only,
                    cacheable_seconds: traits.declared.cacheable.map(|ttl| ttl.as_secs()),
                }
            })
            .collect();
        drop(book);
        rank_within_categories(&mut rows);
        rows.sort_by(|a, b| {
            a.category
                .cmp(&b.category)
                .then(
                    a.rank
                        .unwrap_or(usize::MAX)
                        .cmp(&b.rank.unwrap_or(usize::MAX)),
                )
                .then_with(|| a.tool.cmp(&b.tool))
        });
        rows
    }
}

/// Fills each row's rank within its category (the leaderboard), by p50: measured, else
/// declared.
fn rank_within_categories(rows: &mut [ToolStats]) {
    let mut by_category: BTreeMap<String, Vec<(String, Option<std::time::Duration>)>> =
        BTreeMap::new();
    for row in rows.iter() {
        let p50 = row
            .p50_ms
            .or(row.declared_p50_ms)
            .map(|ms| std::time::Duration::from_secs_f64(ms / 1_000.0));
        by_category
            .entry(row.category.clone())
            .or_default()
            .push((row.tool.clone(), p50));
    }
    let mut ranks: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (category, tools) in &by_category {
        for ranked in leaderboard(tools.iter().map(|(tool, p50)| (tool.as_str(), *p50))) {
            ranks.insert((category.clone(), ranked.tool.to_owned()), ranked.rank);
        }
    }
    for row in rows.iter_mut() {
        row.rank = ranks
            .get(&(row.category.clone(), row.tool.clone()))
            .copied();
    }
}

/// The badge label of a p50 in milliseconds (for renderers that only have the number).
pub fn badge_of_ms(p50_ms: f64) -> &'static str {
    Badge::for_latency(std::time::Duration::from_secs_f64(
        p50_ms.max(0.0) / 1_000.0,
    ))
    .label()
}
