//! `limits`, `cost` and `quota`: the keys that keep calls from running away.
//!
//! ```toml
//! [gateway]
//! limits = { per_minute = 600 }                        # everything together
//! [agents.npc]
//! limits = { per_minute = 60, burst = 5, max_concurrent = 2, queue = "2s" }
//! quota = { cost = 100, window = "1h" }                 # cost budget over a sliding window
//! [servers.search]
//! limits = { max_concurrent = 4 }
//! cost = { fixed = 1, per_second = 0.5 }               # or cost = 1
//! [servers.search.tools.deep_search]
//! limits = { per_minute = 10 }
//! cost = 5
//! ```

use std::time::Duration;

use super::model::{CostConfig, LimitsConfig, QuotaConfig};
use super::tree::{Node, Value};
use super::validate::Walk;
use crate::limits::{MAX_QUOTA_WINDOW, MIN_PER_MINUTE, MIN_QUOTA_WINDOW};

pub(super) const LIMIT_KEYS: [&str; 4] = ["per_minute", "burst", "max_concurrent", "queue"];
const COST_KEYS: [&str; 2] = ["fixed", "per_second"];
const QUOTA_KEYS: [&str; 2] = ["cost", "window"];

impl Walk<'_> {
    pub(super) fn limits(&mut self, node: &Node, what: &str) -> LimitsConfig {
        let mut limits = LimitsConfig::default();
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "per_minute" => limits.per_minute = self.rate(value, &key_what),
                "burst" => {
                    limits.burst = self
                        .count(value, &key_what)
                        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
                }
                "max_concurrent" => {
                    limits.max_concurrent = self
                        .count(value, &key_what)
                        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
                }
                "queue" => limits.queue = self.duration(value, &key_what),
                other => self.unknown(*key_pos, other, what, &LIMIT_KEYS),
            }
        }
        limits
    }

    /// `cost = 1.5` or `cost = { fixed = 1, per_second = 0.5 }`.
    pub(super) fn cost(&mut self, node: &Node, what: &str) -> Option<CostConfig> {
        if let Value::Table(entries) = &node.value {
            let mut cost = CostConfig::default();
            for (key, key_pos, value) in entries {
                let key_what = format!("{what}.{key}");
                match key.as_str() {
                    "fixed" => cost.fixed = self.non_negative(value, &key_what).unwrap_or(0.0),
                    "per_second" => {
                        cost.per_second = self.non_negative(value, &key_what).unwrap_or(0.0);
                    }
                    other => self.unknown(*key_pos, other, what, &COST_KEYS),
                }
            }
            return Some(cost);
        }
        self.non_negative(node, what).map(|fixed| CostConfig {
            fixed,
            per_second: 0.0,
        })
    }

    pub(super) fn quota(&mut self, node: &Node, what: &str) -> Option<QuotaConfig> {
        let mut cost = None;
        let mut window = Some(Duration::from_secs(3600));
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "cost" => cost = self.positive_number(value, &key_what),
                "window" => window = self.quota_window(value, &key_what),
                other => self.unknown(*key_pos, other, what, &QUOTA_KEYS),
            }
        }
        if cost.is_none() && self.table(node, what).iter().all(|(k, _, _)| k != "cost") {
            self.problem(
                node.pos,
                format!("{what} needs \"cost\": the budget per window"),
                Some("e.g. quota = { cost = 100, window = \"1h\" }".to_owned()),
            );
        }
        Some(QuotaConfig {
            cost: cost?,
            window: window?,
        })
    }

    /// A `per_minute`: at least [`MIN_PER_MINUTE`] (slower is a wait nobody means, and
    /// past what a limiter's schedule can hold).
    fn rate(&mut self, node: &Node, what: &str) -> Option<f64> {
        match self.number(node) {
            Some(x) if x >= MIN_PER_MINUTE => Some(x),
            _ => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a number of at least {MIN_PER_MINUTE} (a call about every \
                         week), found {}",
                        node.value.described()
                    ),
                    None,
                );
                None
            }
        }
    }

    /// A quota's `window`: from [`MIN_QUOTA_WINDOW`] to [`MAX_QUOTA_WINDOW`] (a zero window
    /// would count nothing, and a quota is not kept for longer than a year).
    fn quota_window(&mut self, node: &Node, what: &str) -> Option<Duration> {
        let window = self.duration(node, what)?;
        if (MIN_QUOTA_WINDOW..=MAX_QUOTA_WINDOW).contains(&window) {
            return Some(window);
        }
        self.problem(
            node.pos,
            format!(
                "{what} must be between {}s and {}h (365 days), found {}s",
                MIN_QUOTA_WINDOW.as_secs(),
                MAX_QUOTA_WINDOW.as_secs() / 3600,
                window.as_secs_f64()
            ),
            None,
        );
        None
    }

    fn number(&mut self, node: &Node) -> Option<f64> {
        match node.value {
            Value::Integer(n) => Some(n as f64),
            Value::Float(x) if x.is_finite() => Some(x),
            _ => None,
        }
    }

    fn positive_number(&mut self, node: &Node, what: &str) -> Option<f64> {
        match self.number(node) {
            Some(x) if x > 0.0 => Some(x),
            _ => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a number above 0, found {}",
                        node.value.described()
                    ),
                    None,
                );
                None
            }
        }
    }

    pub(super) fn non_negative(&mut self, node: &Node, what: &str) -> Option<f64> {
        match self.number(node) {
            Some(x) if x >= 0.0 => Some(x),
            _ => {
                self.problem(
                    node.pos,
                    format!(
                        "{what} must be a number of at least 0, found {}",
                        node.value.described()
                    ),
                    None,
                );
                None
            }
        }
    }
}
