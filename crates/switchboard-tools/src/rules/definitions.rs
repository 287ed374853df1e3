//! The rules tools as MCP lists them, with honest annotations and declared latency.
//!
//! A declared bound is the call's hard deadline, so each covers the wait for SQLite's lock
//! ([`crate::sqlite::STORE_BOUND_MS`], as memory and sessions declare): a lookup waits for
//! the index's one connection while a reindex holds it, and the reindex may wait
//! [`crate::sqlite::BUSY_TIMEOUT`] for another process's write lock (an import). `search_rules` and
//! `get_rule` estimate 200 ms (the seed says 300–500 ms; a lookup measures well under a
//! millisecond), which keeps their declared p90 (≈ 1.3 s) in the STANDARD tier, where the seed
//! places them, until measurements replace it. `reindex` reads and hashes files, so it
//! declares more room (500 ms, 10 s at most).

use serde_json::{Value, json};
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

fn tool(
    name: &str,
    description: &str,
    input: Value,
    output: Value,
    read_only: bool,
    latency: LatencyMeta,
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    });
    definition.output_schema = Some(output);
    latency
        .idempotent(true)
        .cacheable_seconds(0)
        .write_into(&mut definition.meta);
    definition
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

pub fn all() -> Vec<ToolDefinition> {
    let string = json!({"type": "string"});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let count = json!({"type": "integer", "minimum": 0});
    let attribution = json!({"type": ["object", "null"], "properties": {"license": {"type": ["string", "null"]}, "text": string}});
    let hit = json!({"type": "object", "properties": {
        "id": string, "system": string, "title": string, "heading_path": strings,
        "source_file": string, "snippet": string, "score": {"type": "number"}},
        "required": ["id", "system", "title", "heading_path", "source_file", "snippet", "score"]});
    let problem = json!({"type": "object", "properties": {"path": string, "reason": string}, "required": ["path", "reason"]});
    // A bound over the wait for the write lock (see the module doc), and an estimate that
    // keeps the declared p90 in STANDARD, as the design places lookups.
    let lookup = LatencyMeta::new(200, crate::sqlite::STORE_BOUND_MS);
    vec![
        tool(
            "search_rules",
            "Search the rules (game rules, house rules, reference text) by words, best matches first: a rule titled exactly as the query, then by relevance, a match in a title counting most. Optionally only one system (e.g. \"dnd5e\"). Returns ids for get_rule, with snippets.",
            object(
                json!({"query": string, "system": string, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}),
                &["query"],
            ),
            json!({"type": "object", "properties": {"rules": {"type": "array", "items": hit}, "systems": strings}, "required": ["rules"]}),
            true,
            lookup,
        ),
        tool(
            "get_rule",
            "The full text of one rule by its id (from search_rules), with its source file, heading path and the attribution its source requires.",
            object(json!({"id": string}), &["id"]),
            json!({"type": "object", "properties": {
                "id": string, "system": string, "title": string, "heading_path": strings, "text": string,
                "source_file": string, "path": {"type": ["string", "null"]}, "attribution": attribution},
                "required": ["id", "system", "title", "heading_path", "text", "source_file", "attribution"]}),
            true,
            lookup,
        ),
        tool(
            "reindex",
            "Re-read the rules directories: files added or edited since the last index are re-sectioned, deleted ones dropped. Reports what changed and files that could not be read.",
            object(json!({}), &[]),
            json!({"type": "object", "properties": {
                "added": count, "changed": count, "removed": count, "unchanged": count, "rules": count,
                "files": {"type": "object", "properties": {"added": strings, "changed": strings, "removed": strings}},
                "problems": {"type": "array", "items": problem}},
                "required": ["added", "changed", "removed", "unchanged", "rules", "files", "problems"]}),
            false,
            LatencyMeta::new(500, 10_000),
        ),
    ]
}
