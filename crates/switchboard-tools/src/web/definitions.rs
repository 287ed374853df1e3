//! The web tools as MCP lists them: input and output schemas, honest annotations (read-only,
//! idempotent, open-world: they reach the internet), and declared latency under
//! `_meta["switchboard.dev/latency"]` — 700 ms typical, and at worst the configured `timeout`
//! (default 15 s): the declared bound is the call's hard deadline, so it must not be shorter
//! than the built-in's own timeout. With the default timeout the declared p90 (≈ 3.8 s, see
//! docs/tiers.md) places both tools in the DEEP tier only.

use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

/// Typical duration of a web tool, in milliseconds; the worst case is the configured timeout.
pub const ESTIMATED_MS: u64 = 700;
/// Results per search when the caller does not say, and at most.
pub const DEFAULT_LIMIT: u64 = 5;
pub const MAX_LIMIT: u64 = 20;

fn tool(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    cacheable_seconds: u64,
    timeout: Duration,
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.title = Some(title.to_owned());
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(true),
        ..ToolAnnotations::default()
    });
    definition.output_schema = Some(output);
    LatencyMeta::new(ESTIMATED_MS, max_duration_ms(timeout))
        .idempotent(true)
        .cacheable_seconds(cacheable_seconds)
        .write_into(&mut definition.meta);
    definition
}

/// The declared bound of a web tool: its own `timeout`, so the built-in's deadline (with its
/// clear "did not answer within" message) is the one that answers, never a shorter one.
pub fn max_duration_ms(timeout: Duration) -> u64 {
    u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(ESTIMATED_MS)
}

pub fn all(timeout: Duration) -> Vec<ToolDefinition> {
    let string = json!({"type": "string"});
    vec![
        tool(
            "search",
            "Search the web",
            "Search the web; answers each result's title, URL and snippet. Follow up with \
             fetch_page to read a result.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to search for"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                              "description": format!("Most results to answer (default {DEFAULT_LIMIT})")}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "query": string,
                    "backend": string,
                    "results": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"title": string, "url": string, "snippet": string, "source": string},
                        "required": ["title", "url", "snippet", "source"]
                    }}
                },
                "required": ["query", "backend", "results"]
            }),
            300,
            timeout,
        ),
        tool(
            "fetch_page",
            "Read a web page",
            "Fetch a web page (http or https) and answer its readable text: the title and the \
             text without markup. Plain text and JSON come back as they are; binary files are \
             refused. Long pages are cut at a size limit (truncated: true).",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "minLength": 1, "description": "An http or https URL"}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "url": string,
                    "final_url": string,
                    "status": {"type": "integer"},
                    "content_type": string,
                    "title": {"type": ["string", "null"]},
                    "text": string,
                    "bytes": {"type": "integer"},
                    "truncated": {"type": "boolean"},
                    "redirects": {"type": "integer"}
                },
                "required": ["url", "final_url", "content_type", "text", "bytes", "truncated"]
            }),
            60,
            timeout,
        ),
    ]
}
