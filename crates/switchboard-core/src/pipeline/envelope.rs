//! Stage: the response envelope. Every result carries, under one `_meta` key, the call id
//! (the ledger row's id), its duration, the server, its cost and whether it was served from
//! cache — so a client can correlate a result with the ledger without MCP's result shape
//! changing.

use std::time::Duration;

use serde::Serialize;

use crate::{ServerId, ToolOutcome};

/// The `_meta` key of the envelope.
pub const CALL_META_KEY: &str = "switchboard.dev/call";

/// The `_meta` key the execution layer sets on a result it served from its cache (the
/// value says how old the result is); the envelope and the ledger then say `cached`.
pub const CACHE_META_KEY: &str = "switchboard.dev/cache";

/// Whether the execution layer served this result from its cache.
pub fn served_from_cache(outcome: &ToolOutcome) -> bool {
    outcome
        .meta
        .as_ref()
        .is_some_and(|meta| meta.contains_key(CACHE_META_KEY))
}

/// The envelope of one call, as the gateway stamps it on the call's result: kept typed on the
/// outcome ([`ToolOutcome::call`]) and written straight into the answer's `_meta` under
/// [`CALL_META_KEY`] when the outcome is serialized. (Built as a JSON map it cost every
/// call ten allocations: its keys, its strings and the map.)
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallEnvelope {
    /// The call id, the ledger row's.
    pub id: String,
    /// How long the call took, in milliseconds to the microsecond.
    pub duration_ms: f64,
    pub server: ServerId,
    pub cost: f64,
    /// Whether the result came from the cache.
    pub cached: bool,
    /// Set when result shaping cut the result's text to the caller's budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
}

/// How much of a result's text a cut left (result shaping's `read_more` gives the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Truncation {
    pub total_tokens: usize,
    pub shown_tokens: usize,
}

/// Stamps the envelope onto a result, keeping every other `_meta` key (an envelope the
/// server sent, from a gateway behind this one, gives way to this gateway's own).
pub fn stamp(
    outcome: &mut ToolOutcome,
    call_id: &str,
    duration: Duration,
    server: &ServerId,
    cost: f64,
    cached: bool,
) {
    if let Some(meta) = &mut outcome.meta {
        meta.shift_remove(CALL_META_KEY);
    }
    outcome.call = Some(Box::new(CallEnvelope {
        id: call_id.to_owned(),
        duration_ms: (duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
        server: server.clone(),
        cost,
        cached,
        truncated: None,
    }));
}
