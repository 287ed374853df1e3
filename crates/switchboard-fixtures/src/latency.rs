//! The `latency` tool set: tools with known latency, for the latency budget's tests, the
//! tiers example and calibration. Every delay is multiplied by `--scale` (0.1 makes a 3 s
//! tool answer in 300 ms), and each tool declares its latency under
//! `_meta["switchboard.dev/latency"]` as its author would.
//!
//! - `fast_lookup` (~20 ms), `medium_report` (~1 s), `slow_analysis` (~3 s): read-only;
//! - `wait(ms)`: read-only and idempotent, takes `ms` (a programmable distribution: the
//!   test chooses each call's latency);
//! - `bimodal_search`: idempotent; every 10th call takes 2 s, the others 10 ms (the seed's
//!   web search with a cold cache);
//! - `cached_quote`: read-only, `cacheable_seconds` 60, ~200 ms; answers with how many times
//!   it actually ran;
//! - `write_note`: destructive and not idempotent, ~10 ms.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

static BIMODAL_CALLS: AtomicUsize = AtomicUsize::new(0);
static QUOTE_RUNS: AtomicUsize = AtomicUsize::new(0);
static NOTES: AtomicUsize = AtomicUsize::new(0);

fn tool(
    name: &str,
    description: &str,
    properties: Value,
    required: &[&str],
    annotations: Value,
    latency: Value,
) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": annotations,
        "_meta": {"switchboard.dev/latency": latency},
    })
}

/// The tool definitions.
pub fn tools() -> Vec<Value> {
    let read_only = json!({"readOnlyHint": true});
    vec![
        tool(
            "fast_lookup",
            "Looks a key up in memory (about 20 ms).",
            json!({"key": {"type": "string"}}),
            &[],
            read_only.clone(),
            json!({"estimated_duration_ms": 20, "max_duration_ms": 60}),
        ),
        tool(
            "medium_report",
            "Builds a report (about 1 s).",
            json!({"topic": {"type": "string"}}),
            &[],
            read_only.clone(),
            json!({"estimated_duration_ms": 1000, "max_duration_ms": 1400}),
        ),
        tool(
            "slow_analysis",
            "Runs a deep analysis (about 3 s).",
            json!({"subject": {"type": "string"}}),
            &[],
            read_only.clone(),
            json!({"estimated_duration_ms": 3000, "max_duration_ms": 3800}),
        ),
        tool(
            "wait",
            "Waits ms milliseconds (times the fixture's scale).",
            json!({"ms": {"type": "integer", "minimum": 0}}),
            &["ms"],
            json!({"readOnlyHint": true, "idempotentHint": true}),
            json!({}),
        ),
        tool(
            "bimodal_search",
            "Searches the web: usually 10 ms, every 10th call 2 s.",
            json!({"query": {"type": "string"}}),
            &["query"],
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}),
            json!({"idempotent": true}),
        ),
        tool(
            "cached_quote",
            "A quote of the day (about 200 ms); says how often it really ran.",
            json!({"symbol": {"type": "string"}}),
            &[],
            read_only,
            json!({"estimated_duration_ms": 200, "max_duration_ms": 600, "cacheable_seconds": 60}),
        ),
        tool(
            "write_note",
            "Appends a note (destructive; about 10 ms).",
            json!({"text": {"type": "string"}}),
            &["text"],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false}),
            json!({"estimated_duration_ms": 10, "max_duration_ms": 50}),
        ),
    ]
}

fn text(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Runs one tool; `wait` sleeps unless cancelled (false when cancelled).
pub fn run(name: &str, args: &Value, scale: f64, wait: impl Fn(Duration) -> bool) -> Option<Value> {
    let scaled = |ms: f64| Duration::from_secs_f64((ms * scale).max(0.0) / 1_000.0);
    let (delay, answer) = match name {
        "fast_lookup" => (20.0, "found".to_owned()),
        "medium_report" => (1_000.0, "report ready".to_owned()),
        "slow_analysis" => (3_000.0, "analysis done".to_owned()),
        "wait" => {
            let ms = args.get("ms").and_then(Value::as_f64).unwrap_or(0.0);
            (ms, format!("waited {ms} ms"))
        }
        "bimodal_search" => {
            let call = BIMODAL_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
            let ms = if call.is_multiple_of(10) {
                2_000.0
            } else {
                10.0
            };
            (ms, format!("results (call {call})"))
        }
        "cached_quote" => {
            let run = QUOTE_RUNS.fetch_add(1, Ordering::SeqCst) + 1;
            (200.0, format!("quote run {run}"))
        }
        "write_note" => {
            let note = NOTES.fetch_add(1, Ordering::SeqCst) + 1;
            (10.0, format!("note {note} written"))
        }
        _ => return None,
    };
    wait(scaled(delay));
    Some(text(answer))
}
