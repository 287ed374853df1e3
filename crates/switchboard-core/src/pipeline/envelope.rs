//! Stage: the response envelope. Every result carries, under one `_meta` key, the call id
//! (the ledger row's id), its duration, the server, its cost and whether it was served from
//! cache — so a client can correlate a result with the ledger without MCP's result shape
//! changing.

use std::time::Duration;

use serde_json::json;

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

/// Stamps the envelope onto a result, keeping every other `_meta` key.
pub fn stamp(
    outcome: &mut ToolOutcome,
    call_id: &str,
    duration: Duration,
    server: &ServerId,
    cost: f64,
    cached: bool,
) {
    let envelope = json!({
        "id": call_id,
        "duration_ms": (duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
        "server": server.as_str(),
        "cost": cost,
        "cached": cached,
    });
    outcome
        .meta
        .get_or_insert_with(Default::default)
        .insert(CALL_META_KEY.to_owned(), envelope);
}
