//! Stage: the response envelope. Every result carries, under one `_meta` key, the call id
//! (the ledger row's id), its duration, the server, its cost and whether it was served from
//! cache — so a client can correlate a result with the ledger without MCP's result shape
//! changing.

use std::time::Duration;

use serde_json::{Map, Value};

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
    // Sized up front: `json!` grows an empty map key by key, and this runs on every call.
    let mut envelope = Map::with_capacity(5);
    envelope.insert("id".to_owned(), call_id.into());
    let duration_ms = (duration.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
    envelope.insert("duration_ms".to_owned(), duration_ms.into());
    envelope.insert("server".to_owned(), server.as_str().into());
    envelope.insert("cost".to_owned(), cost.into());
    envelope.insert("cached".to_owned(), cached.into());
    outcome
        .meta
        .get_or_insert_with(|| Map::with_capacity(1))
        .insert(CALL_META_KEY.to_owned(), Value::Object(envelope));
}
