//! `[tiers]` and the latency keys: which latency budgets exist and how a tool's latency is
//! judged.
//!
//! ```toml
//! [tiers]
//! fast = "500ms"             # tier name = ceiling; any names, ordered by ceiling
//! standard = "1500ms"
//! deep = "4s"
//!
//! [latency]
//! quantile = "p90"           # p50 | p90 | p95 | p99: what "fits a tier" compares
//! window = 100               # calls kept per tool
//! min_samples = 20           # measured replaces declared only after this many calls
//! environment = "laptop"     # default: host name + transport
//! database = "latency.db"    # default: $XDG_DATA_HOME/switchboard/latency.db
//! probe_on_connect = false   # probe read-only/idempotent tools when their server connects
//! probe_calls = 3            # calls per tool of such a probe
//! list_interval = "30s"      # least time between measurement-driven listing changes
//! mask_after = "700ms"       # predicted latency that earns an early "working…" progress
//! max_attempts = 3           # attempts of an idempotent call after transport errors/timeouts
//! hedging = true             # second request to an idempotent tool slower than its p95
//! recover_calls = 20         # healthy calls in a row that promote a degraded tool back
//! recover_after = "60s"      # or a healthy streak this long
//! recheck_after = "60s"      # re-measure a hidden tool nobody called this long ("0": never)
//!
//! [servers.search.tools.web_search]
//! estimated_duration_ms = 800   # overrides the tool's declared _meta
//! max_duration_ms = 3000
//! idempotent = true
//! cacheable_seconds = 60
//! read_only = true              # overrides readOnlyHint (probing, caching, approvals)
//! probe = false                 # never probe this tool
//! probe_arguments = { query = "ping" }   # what probes call it with
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use super::model::{LatencyConfig, TierConfig};
use super::tree::{Node, Value};
use super::validate::Walk;

pub(super) const LATENCY_KEYS: [&str; 14] = [
    "recover_calls",
    "recover_after",
    "recheck_after",
    "quantile",
    "window",
    "min_samples",
    "environment",
    "database",
    "probe_on_connect",
    "probe_calls",
    "list_interval",
    "mask_after",
    "max_attempts",
    "hedging",
];
const QUANTILES: [&str; 4] = ["p50", "p90", "p95", "p99"];

/// The default tiers.
pub fn default_tiers() -> Vec<TierConfig> {
    [("fast", 500), ("standard", 1_500), ("deep", 4_000)]
        .into_iter()
        .map(|(name, ms)| TierConfig {
            name: name.to_owned(),
            ceiling: Duration::from_millis(ms),
        })
        .collect()
}

impl Walk<'_> {
    pub(super) fn tiers(&mut self, node: &Node) -> Vec<TierConfig> {
        let mut tiers = Vec::new();
        for (name, name_pos, value) in self.table(node, "tiers") {
            if !super::server::is_valid_id(name) {
                self.problem(
                    *name_pos,
                    format!("tier name '{name}' is not allowed"),
                    Some("use 1-64 characters of A-Z a-z 0-9 _ -".to_owned()),
                );
            }
            let Some(ceiling) = self.duration(value, &format!("tiers.{name}")) else {
                continue;
            };
            let name = name.to_lowercase();
            // Tiers are told apart by name (case-insensitive) and ordered by ceiling: a twin
            // of either would leave the latency book unable to place a tool in one of them.
            if tiers.iter().any(|tier: &TierConfig| tier.name == name) {
                self.problem(
                    *name_pos,
                    format!("tier '{name}' is defined twice (tier names ignore case)"),
                    None,
                );
                continue;
            }
            if ceiling.is_zero() {
                self.problem(
                    value.pos,
                    format!("tiers.{name} is zero: no call fits a tier of no time"),
                    Some("give it the time a turn may take, e.g. \"500ms\"".to_owned()),
                );
                continue;
            }
            if let Some(twin) = tiers.iter().find(|tier| tier.ceiling == ceiling) {
                self.problem(
                    value.pos,
                    format!(
                        "tiers.{name} has the same ceiling as tier '{}' ({ceiling:?})",
                        twin.name
                    ),
                    Some("each tier needs a ceiling of its own".to_owned()),
                );
                continue;
            }
            tiers.push(TierConfig { name, ceiling });
        }
        if tiers.is_empty() {
            self.problem(
                node.pos,
                "[tiers] defines no tier",
                Some("e.g. fast = \"500ms\"; omit [tiers] for the defaults".to_owned()),
            );
            return default_tiers();
        }
        tiers.sort_by_key(|tier| tier.ceiling);
        tiers
    }

    pub(super) fn latency(&mut self, node: &Node) -> LatencyConfig {
        let mut latency = LatencyConfig::default();
        for (key, key_pos, value) in self.table(node, "latency") {
            let what = format!("latency.{key}");
            match key.as_str() {
                "quantile" => {
                    if let Some(text) = self.string(value, &what) {
                        match text.as_str() {
                            "p50" => latency.quantile = 0.5,
                            "p90" => latency.quantile = 0.9,
                            "p95" => latency.quantile = 0.95,
                            "p99" => latency.quantile = 0.99,
                            other => self.problem(
                                value.pos,
                                format!("{what} '{other}' is not known"),
                                Some(format!("use one of {}", QUANTILES.join(", "))),
                            ),
                        }
                    }
                }
                "window" => {
                    if let Some(n) = self.count(value, &what) {
                        latency.window = usize::try_from(n).unwrap_or(usize::MAX).min(100_000);
                    }
                }
                "min_samples" => {
                    if let Some(n) = self.count(value, &what) {
                        latency.min_samples = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                }
                "environment" => latency.environment = self.string(value, &what),
                "database" => latency.database = self.path(value, &what),
                "probe_on_connect" => {
                    latency.probe_on_connect = self.bool(value, &what).unwrap_or(false);
                }
                "probe_calls" => {
                    if let Some(n) = self.count(value, &what) {
                        latency.probe_calls = u32::try_from(n).unwrap_or(u32::MAX).clamp(1, 1_000);
                    }
                }
                "list_interval" => {
                    if let Some(interval) = self.duration(value, &what) {
                        latency.list_interval = interval;
                    }
                }
                "mask_after" => {
                    if let Some(threshold) = self.duration(value, &what) {
                        latency.mask_after = threshold;
                    }
                }
                "max_attempts" => {
                    if let Some(n) = self.count(value, &what) {
                        latency.max_attempts = u32::try_from(n).unwrap_or(u32::MAX).clamp(1, 10);
                    }
                }
                "hedging" => latency.hedging = self.bool(value, &what).unwrap_or(true),
                "recover_calls" => {
                    if let Some(n) = self.count(value, &what) {
                        latency.recover_calls = u32::try_from(n).unwrap_or(u32::MAX).max(1);
                    }
                }
                "recover_after" => {
                    if let Some(after) = self.duration(value, &what) {
                        latency.recover_after = after;
                    }
                }
                "recheck_after" => {
                    if let Some(after) = self.duration(value, &what) {
                        latency.recheck_after = after;
                    }
                }
                other => self.unknown(*key_pos, other, "[latency]", &LATENCY_KEYS),
            }
        }
        if latency.min_samples > latency.window {
            self.problem(
                node.pos,
                format!(
                    "latency.min_samples ({}) is larger than latency.window ({}): measured figures would never be used",
                    latency.min_samples, latency.window
                ),
                None,
            );
        }
        latency
    }

    /// An agent's default tier must be one of the tiers.
    pub(super) fn check_tier_names(
        &mut self,
        tiers: &[TierConfig],
        wanted: &BTreeMap<String, (String, super::tree::Pos)>,
    ) {
        let names: Vec<&str> = tiers.iter().map(|t| t.name.as_str()).collect();
        for (who, (tier, pos)) in wanted {
            if !names.contains(&tier.as_str()) {
                self.problem(
                    *pos,
                    format!("{who} names unknown tier '{tier}'"),
                    Some(super::suggest::hint(tier, &names, "tiers")),
                );
            }
        }
    }

    /// A non-negative integer of milliseconds or seconds.
    pub(super) fn millis(&mut self, node: &Node, what: &str) -> Option<u64> {
        match node.value {
            Value::Integer(n) if n >= 0 => u64::try_from(n).ok(),
            ref other => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a non-negative integer, found {}",
                        other.kind()
                    ),
                    None,
                );
                None
            }
        }
    }
}
