//! The gateway's own tools, listed instead of (or beside) upstream tools in the lazy exposure
//! modes: `list_categories` / `load_category` / `unload_category` (categories mode),
//! `search_tools` / `describe_tool` / `call_tool` (search mode) and `read_more` (for
//! truncated results). They are answered by the Host itself, never sent upstream.

use serde_json::{Value, json};
use switchboard_core::{ToolAnnotations, ToolDefinition};

pub(crate) const LIST_CATEGORIES: &str = "list_categories";
pub(crate) const LOAD_CATEGORY: &str = "load_category";
pub(crate) const UNLOAD_CATEGORY: &str = "unload_category";
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
pub(crate) const DESCRIBE_TOOL: &str = "describe_tool";
pub(crate) const CALL_TOOL: &str = "call_tool";
pub(crate) const READ_MORE: &str = "read_more";

/// Whether `name` is one of the gateway's own tools (in some mode).
pub(crate) fn is_meta(name: &str) -> bool {
    matches!(
        name,
        LIST_CATEGORIES
            | LOAD_CATEGORY
            | UNLOAD_CATEGORY
            | SEARCH_TOOLS
            | DESCRIBE_TOOL
            | CALL_TOOL
            | READ_MORE
    )
}

/// How a meta-tool behaves, for its annotations.
#[derive(Clone, Copy, PartialEq)]
enum Effect {
    /// Reads only.
    Reads,
    /// Changes the session's own listing, nothing else.
    Listing,
    /// Runs another tool: may do anything that tool does.
    Proxy,
}

fn tool(name: &str, description: &str, input: Value, effect: Effect) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(effect == Effect::Reads),
        destructive_hint: Some(effect == Effect::Proxy),
        idempotent_hint: Some(effect != Effect::Proxy),
        open_world_hint: Some(effect == Effect::Proxy),
        ..ToolAnnotations::default()
    });
    definition
}

fn name_input(what: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": what}},
        "required": ["name"],
        "additionalProperties": false
    })
}

/// The meta-tools of categories mode.
pub(crate) fn category_tools() -> Vec<ToolDefinition> {
    vec![
        tool(
            LIST_CATEGORIES,
            "List the categories of tools available, with how many tools each has and whether it is loaded.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            Effect::Reads,
        ),
        tool(
            LOAD_CATEGORY,
            "Load a category (e.g. \"files\" or \"games/dice\"; a parent loads all below it): its tools are added to your tool list.",
            name_input("Category name from list_categories"),
            Effect::Listing,
        ),
        tool(
            UNLOAD_CATEGORY,
            "Unload a category: its tools are removed from your tool list.",
            name_input("Category name"),
            Effect::Listing,
        ),
    ]
}

/// The meta-tools of search mode.
pub(crate) fn search_tools() -> Vec<ToolDefinition> {
    vec![
        tool(
            SEARCH_TOOLS,
            "Find tools for a task. Returns one line per match: name(params) — what it does.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What you want to do, in words"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most results (default 8)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            Effect::Reads,
        ),
        tool(
            DESCRIBE_TOOL,
            "The full definition (input schema) of one tool found with search_tools.",
            name_input("Tool name"),
            Effect::Reads,
        ),
        tool(
            CALL_TOOL,
            "Call a tool found with search_tools, with arguments matching its input schema.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Tool name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
            Effect::Proxy,
        ),
    ]
}

/// `read_more`, listed once a result of the session was truncated.
pub(crate) fn read_more_tool() -> ToolDefinition {
    tool(
        READ_MORE,
        "Read the rest of a truncated tool result, from a character offset.",
        json!({
            "type": "object",
            "properties": {
                "call_id": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0}
            },
            "required": ["call_id", "offset"],
            "additionalProperties": false
        }),
        Effect::Reads,
    )
}

#[cfg(test)]
mod tests {
    /// The names the catalog keeps from servers are exactly the ones answered here.
    #[test]
    fn the_reserved_names_are_the_meta_tools() {
        for name in switchboard_core::catalog::RESERVED_NAMES {
            assert!(super::is_meta(name), "{name}");
        }
        for name in [
            super::LIST_CATEGORIES,
            super::LOAD_CATEGORY,
            super::UNLOAD_CATEGORY,
            super::SEARCH_TOOLS,
            super::DESCRIBE_TOOL,
            super::CALL_TOOL,
            super::READ_MORE,
        ] {
            assert!(
                switchboard_core::catalog::RESERVED_NAMES.contains(&name),
                "{name}"
            );
        }
    }
}
