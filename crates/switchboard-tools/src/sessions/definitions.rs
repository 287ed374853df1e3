//! The session tools as MCP lists them, with honest annotations and declared latency: the
//! seed's figures for the session manager (100 ms estimated, 300 ms at most), which place
//! them in the STANDARD tier until measurements replace them.

use serde_json::{Value, json};
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

fn tool(name: &str, description: &str, input: Value, output: Value, reads: bool) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(reads),
        destructive_hint: Some(false),
        // Appending twice records two turns.
        idempotent_hint: Some(reads),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    });
    definition.output_schema = Some(output);
    // The seed's typical figure (200 ms: the middle of its 100–300 ms), and a bound over the
    // wait for another writer of the shared database: the declared p90 (≈ 1.3 s) places these
    // tools in STANDARD, as the design does, until measurements say otherwise.
    LatencyMeta::new(200, crate::sqlite::STORE_BOUND_MS)
        .idempotent(reads)
        .cacheable_seconds(0)
        .write_into(&mut definition.meta);
    definition
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

pub fn all() -> Vec<ToolDefinition> {
    let string = json!({"type": "string", "minLength": 1});
    let time = json!({"type": ["string", "null"], "description": "RFC 3339, UTC"});
    let count = json!({"type": "integer", "minimum": 0});
    let turn = json!({"type": "object", "properties": {
        "session_id": string, "turn": count, "speaker": string, "text": string,
        "time": time, "snippet": string, "score": {"type": "number"}},
        "required": ["session_id", "turn", "speaker", "text", "time", "snippet", "score"]});
    let session = json!({"type": "object", "properties": {
        "session_id": string, "turns": count, "first_turn_at": time, "last_turn_at": time,
        "has_summary": {"type": "boolean"}},
        "required": ["session_id", "turns", "first_turn_at", "last_turn_at", "has_summary"]});
    vec![
        tool(
            "append_turn",
            "Record one turn of a session's conversation (who spoke, what was said); the time is recorded. Returns the turn's number in the session.",
            object(
                json!({"session_id": string, "speaker": string, "text": string}),
                &["session_id", "speaker", "text"],
            ),
            json!({"type": "object", "properties": {"session_id": string, "turn": count, "time": time}, "required": ["session_id", "turn", "time"]}),
            false,
        ),
        tool(
            "search_history",
            "Full-text search over the turns of past sessions (or of one session), best matches first, with speaker, time and snippets.",
            object(
                json!({"query": string, "session_id": string, "limit": {"type": "integer", "minimum": 1, "maximum": 100}}),
                &["query"],
            ),
            json!({"type": "object", "properties": {"turns": {"type": "array", "items": turn}}, "required": ["turns"]}),
            true,
        ),
        tool(
            "get_summary",
            "A session's summary (the one memory's put_summary stores), with its number of turns and the times of its first and last turn.",
            object(json!({"session_id": string}), &["session_id"]),
            json!({"type": "object", "properties": {
                "session_id": string, "summary": {"type": ["string", "null"]}, "summary_updated_at": time,
                "turns": count, "first_turn_at": time, "last_turn_at": time},
                "required": ["session_id", "summary", "turns", "first_turn_at", "last_turn_at"]}),
            true,
        ),
        tool(
            "list_sessions",
            "Every session with turns or a summary, the most recently active first: turns, first and last turn time, whether it has a summary.",
            object(
                json!({"limit": {"type": "integer", "minimum": 1, "maximum": 1000}}),
                &[],
            ),
            json!({"type": "object", "properties": {"sessions": {"type": "array", "items": session}}, "required": ["sessions"]}),
            true,
        ),
    ]
}
