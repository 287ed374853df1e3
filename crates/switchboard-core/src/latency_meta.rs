//! Declared latency metadata: what a tool's author says it costs, carried in the tool's
//! `_meta` under one namespaced key, [`LATENCY_META_KEY`].
//!
//! ```json
//! "_meta": { "switchboard.dev/latency": {
//!     "estimated_duration_ms": 5, "max_duration_ms": 50,
//!     "idempotent": true, "cacheable_seconds": 0 } }
//! ```
//!
//! Every field is optional. These are claims, not measurements: the latency-budget layer
//! replaces them with measured figures once it has enough samples.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `_meta` key under which declared latency metadata lives.
pub const LATENCY_META_KEY: &str = "switchboard.dev/latency";

/// The `_meta` key of a `tools/call` request under which a caller sets its deadline: a number
/// of milliseconds from receipt, or `"tier"` for the ceiling of the caller's active tier.
pub const DEADLINE_META_KEY: &str = "switchboard.dev/deadline_ms";

/// A deadline a caller asked for on a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestedDeadline {
    /// Answer within this long (from when the call is planned), or time out.
    Within(std::time::Duration),
    /// Answer by this instant, or time out: a deadline counted from the request's receipt,
    /// as [`RequestedDeadline::received_at`] makes it, so the time a call waits for an
    /// approval or an admission slot counts against it.
    By {
        at: tokio::time::Instant,
        /// The whole budget the caller gave, for the timeout's message.
        budget: std::time::Duration,
    },
    /// Answer within the ceiling of the caller's active latency tier.
    Tier,
}

impl RequestedDeadline {
    /// Reads a request's `_meta`; absent or malformed values are no deadline (the request is
    /// still served, under the tool's own deadline).
    pub fn from_meta(meta: Option<&Map<String, Value>>) -> Option<Self> {
        match meta?.get(DEADLINE_META_KEY)? {
            Value::Number(millis) => millis
                .as_u64()
                .map(|ms| Self::Within(std::time::Duration::from_millis(ms))),
            Value::String(text) if text == "tier" => Some(Self::Tier),
            _ => None,
        }
    }

    /// This deadline counted from `received`, when the request arrived.
    pub fn received_at(self, received: tokio::time::Instant) -> Self {
        match self {
            Self::Within(budget) => Self::By {
                at: received + budget,
                budget,
            },
            other => other,
        }
    }
}

/// Declared latency metadata of one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMeta {
    /// Typical duration (p50), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_duration_ms: Option<u64>,
    /// Upper bound (p99), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_ms: Option<u64>,
    /// Calling twice with the same arguments has the same effect as calling once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// How long a result may be reused for identical arguments (0 = never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheable_seconds: Option<u64>,
}

impl LatencyMeta {
    /// Metadata with an estimate and a bound.
    pub fn new(estimated_duration_ms: u64, max_duration_ms: u64) -> Self {
        Self {
            estimated_duration_ms: Some(estimated_duration_ms),
            max_duration_ms: Some(max_duration_ms),
            ..Self::default()
        }
    }

    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    pub fn cacheable_seconds(mut self, seconds: u64) -> Self {
        self.cacheable_seconds = Some(seconds);
        self
    }

    /// These values where set, `declared` where not (an operator's override over a tool's
    /// own claims).
    pub fn over(self, declared: Self) -> Self {
        Self {
            estimated_duration_ms: self
                .estimated_duration_ms
                .or(declared.estimated_duration_ms),
            max_duration_ms: self.max_duration_ms.or(declared.max_duration_ms),
            idempotent: self.idempotent.or(declared.idempotent),
            cacheable_seconds: self.cacheable_seconds.or(declared.cacheable_seconds),
        }
    }

    /// Reads the metadata from a tool's `_meta`; `None` when the key is absent or malformed
    /// (declared metadata is untrusted input, never an error).
    pub fn from_meta(meta: Option<&Map<String, Value>>) -> Option<Self> {
        let value = meta?.get(LATENCY_META_KEY)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Writes the metadata into a `_meta` map (creating it), keeping every other key.
    pub fn write_into(&self, meta: &mut Option<Map<String, Value>>) {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        meta.get_or_insert_with(Map::new)
            .insert(LATENCY_META_KEY.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_through_meta_and_ignores_malformed_values() {
        let declared = LatencyMeta::new(5, 50)
            .idempotent(true)
            .cacheable_seconds(30);
        let mut meta = Some(Map::from_iter([("other".to_owned(), json!(1))]));
        declared.write_into(&mut meta);
        assert_eq!(LatencyMeta::from_meta(meta.as_ref()), Some(declared));
        assert_eq!(meta.as_ref().and_then(|m| m.get("other")), Some(&json!(1)));

        let bad = Map::from_iter([(LATENCY_META_KEY.to_owned(), json!({"max_duration_ms": "x"}))]);
        assert_eq!(LatencyMeta::from_meta(Some(&bad)), None);
        assert_eq!(LatencyMeta::from_meta(None), None);
    }

    #[test]
    fn a_caller_deadline_is_milliseconds_or_the_tier() {
        let meta = |value: Value| Map::from_iter([(DEADLINE_META_KEY.to_owned(), value)]);
        assert_eq!(
            RequestedDeadline::from_meta(Some(&meta(json!(250)))),
            Some(RequestedDeadline::Within(std::time::Duration::from_millis(
                250
            )))
        );
        assert_eq!(
            RequestedDeadline::from_meta(Some(&meta(json!("tier")))),
            Some(RequestedDeadline::Tier)
        );
        for bad in [json!(-1), json!("soon"), json!(1.5), json!(null)] {
            assert_eq!(RequestedDeadline::from_meta(Some(&meta(bad))), None);
        }
    }
}
