//! The memory tools as MCP lists them, with honest annotations and declared latency.

use serde_json::{Value, json};
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

#[derive(Clone, Copy, PartialEq)]
enum Effect {
    Reads,
    Adds,
    /// Replaces what was there (put_summary): idempotent.
    Sets,
    Deletes,
}

fn tool(
    name: &str,
    description: &str,
    input: Value,
    output: Value,
    effect: Effect,
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(effect == Effect::Reads),
        destructive_hint: Some(matches!(effect, Effect::Deletes | Effect::Sets)),
        idempotent_hint: Some(matches!(
            effect,
            Effect::Reads | Effect::Sets | Effect::Deletes
        )),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    });
    definition.output_schema = Some(output);
    // Typical figures of a FAST tool; the bound covers the wait for another writer (the
    // declared p90 stays under 250 ms, so the tiers keep these tools FAST until measured).
    let estimate = if effect == Effect::Reads { 2 } else { 5 };
    LatencyMeta::new(estimate, crate::sqlite::STORE_BOUND_MS)
        .idempotent(matches!(
            effect,
            Effect::Reads | Effect::Sets | Effect::Deletes
        ))
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
    let limit = json!({"type": "integer", "minimum": 1, "maximum": 200});
    vec![
        tool(
            "create_entities",
            "Create entities (people, places, things) with a type and observations; names already known are skipped.",
            object(
                json!({"entities": {"type": "array", "minItems": 1, "items": object(json!({"name": string, "entityType": string, "observations": strings}), &["name", "entityType"])}}),
                &["entities"],
            ),
            json!({"type": "object", "properties": {"created": strings, "skipped": strings}, "required": ["created", "skipped"]}),
            Effect::Adds,
        ),
        tool(
            "add_observations",
            "Add observations (facts) about an existing entity.",
            object(
                json!({"entity": string, "observations": {"type": "array", "minItems": 1, "items": {"type": "string"}}, "source": string}),
                &["entity", "observations"],
            ),
            json!({"type": "object", "properties": {"entity": string, "added": {"type": "integer"}}, "required": ["entity", "added"]}),
            Effect::Adds,
        ),
        tool(
            "create_relations",
            "Link entities: from —relationType→ to (e.g. Alice —knows→ Bob). Both must exist.",
            object(
                json!({"relations": {"type": "array", "minItems": 1, "items": object(json!({"from": string, "to": string, "relationType": string}), &["from", "to", "relationType"])}}),
                &["relations"],
            ),
            json!({"type": "object", "properties": {"created": {"type": "integer"}, "existing": {"type": "integer"}}, "required": ["created", "existing"]}),
            Effect::Adds,
        ),
        tool(
            "delete_entities",
            "Delete entities with their observations and relations.",
            object(
                json!({"names": {"type": "array", "minItems": 1, "items": {"type": "string"}}}),
                &["names"],
            ),
            json!({"type": "object", "properties": {"deleted": strings, "missing": strings}, "required": ["deleted", "missing"]}),
            Effect::Deletes,
        ),
        tool(
            "query_entities",
            "Find entities by part of their name and/or their type, with their observations and relations.",
            object(
                json!({"name": string, "entityType": string, "limit": limit}),
                &[],
            ),
            json!({"type": "object", "properties": {"entities": {"type": "array", "items": {"type": "object"}}}, "required": ["entities"]}),
            Effect::Reads,
        ),
        tool(
            "add_facts",
            "Record facts: free text, optionally about an entity (subject) and from a source.",
            object(
                json!({"facts": {"type": "array", "minItems": 1, "items": object(json!({"text": string, "subject": string, "source": string}), &["text"])}}),
                &["facts"],
            ),
            json!({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}, "required": ["ids"]}),
            Effect::Adds,
        ),
        tool(
            "search_facts",
            "Full-text search over facts and observations, best matches first, with snippets.",
            object(json!({"query": string, "limit": limit}), &["query"]),
            json!({"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}, "text": string, "snippet": string, "subject": {"type": ["string", "null"]}, "source": {"type": ["string", "null"]}, "recorded_at": {"type": "integer"}, "score": {"type": "number"}}}}}, "required": ["facts"]}),
            Effect::Reads,
        ),
        tool(
            "search_sessions",
            "Full-text search over session summaries.",
            object(json!({"query": string, "limit": limit}), &["query"]),
            json!({"type": "object", "properties": {"sessions": {"type": "array", "items": {"type": "object"}}}, "required": ["sessions"]}),
            Effect::Reads,
        ),
        tool(
            "get_summary",
            "The stored summary of a session.",
            object(json!({"session_id": string}), &["session_id"]),
            json!({"type": "object", "properties": {"session_id": string, "summary": string, "updated_at": {"type": "integer"}}, "required": ["session_id", "summary"]}),
            Effect::Reads,
        ),
        tool(
            "put_summary",
            "Store (or replace) the summary of a session.",
            object(
                json!({"session_id": string, "summary": string}),
                &["session_id", "summary"],
            ),
            json!({"type": "object", "properties": {"session_id": string, "stored": {"type": "boolean"}}, "required": ["session_id", "stored"]}),
            Effect::Sets,
        ),
    ]
}
