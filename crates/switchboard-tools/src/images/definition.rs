//! `generate_image` as MCP lists it: the input schema (the configured styles as an enum), the
//! output schema, honest annotations (it creates something new each time: not read-only,
//! not destructive, not idempotent; open-world: it calls an outside service) and declared
//! latency under `_meta["switchboard.dev/latency"]` — 2 s typical, and at worst the configured
//! `timeout` (default 2 minutes; a hosted gpt-image-1 call takes 10-60 s): the declared bound is
//! the call's hard deadline, so it is never shorter than the built-in's own timeout. That bound
//! puts the declared p90 past the default DEEP ceiling (4 s): tiered callers see images only
//! under a tier whose ceiling holds them (see docs/builtins.md).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

use super::{ESTIMATED_MS, StyleSpec};

pub fn generate_image(styles: &BTreeMap<String, StyleSpec>, timeout: Duration) -> ToolDefinition {
    let mut style = json!({"type": "string", "description": "A configured style (default: the 'default' style, if any)"});
    if !styles.is_empty() {
        style["enum"] = json!(styles.keys().collect::<Vec<_>>());
    }
    let mut tool = ToolDefinition::new(
        "generate_image",
        "Generate an image from a text prompt, optionally in one of the configured styles; \
         answers the image (PNG, JPEG or WebP).",
        json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "minLength": 1, "description": "What the image shows"},
                "style": style
            },
            "required": ["prompt"],
            "additionalProperties": false
        }),
    );
    tool.title = Some("Generate an image".to_owned());
    tool.annotations = Some(ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        idempotent_hint: Some(false),
        open_world_hint: Some(true),
        ..ToolAnnotations::default()
    });
    let string = json!({"type": "string"});
    let maybe = json!({"type": ["string", "null"]});
    tool.output_schema = Some(json!({
        "type": "object",
        "properties": {
            "prompt": string, "full_prompt": string, "negative_prompt": maybe,
            "style": maybe, "backend": string,
            "model": maybe, "mime_type": string, "bytes": {"type": "integer"},
            "saved": maybe, "sidecar": maybe
        },
        "required": ["prompt", "full_prompt", "backend", "mime_type", "bytes"]
    }));
    let max = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    LatencyMeta::new(ESTIMATED_MS, max.max(ESTIMATED_MS))
        .idempotent(false)
        .cacheable_seconds(0)
        .write_into(&mut tool.meta);
    tool
}
