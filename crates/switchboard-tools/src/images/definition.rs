//! `generate_image` as MCP lists it: the input schema (the configured styles as an enum), the
//! output schema, honest annotations (it creates something new each time: not read-only,
//! not destructive, not idempotent; open-world: it calls an outside service) and declared
//! latency under `_meta["switchboard.dev/latency"]` — 2 s typical, 4 s at worst, which places
//! it in the DEEP tier only.

use std::collections::BTreeMap;

use serde_json::json;
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

use super::{LATENCY_MS, StyleSpec};

pub fn generate_image(styles: &BTreeMap<String, StyleSpec>) -> ToolDefinition {
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
    LatencyMeta::new(LATENCY_MS.0, LATENCY_MS.1)
        .idempotent(false)
        .cacheable_seconds(0)
        .write_into(&mut tool.meta);
    tool
}
