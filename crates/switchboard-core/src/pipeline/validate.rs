//! Stage 2: validate the arguments against the tool's compiled input schema.
//!
//! A violation is returned as a tool error (not a protocol error) listing every problem with
//! its JSON path, so the model can read it and retry with fixed arguments.

use serde_json::{Map, Value};

use crate::{CatalogEntry, ToolOutcome};

/// Returns the refusal to send back, or `None` when the arguments are valid.
pub fn validate(entry: &CatalogEntry, arguments: &mut Map<String, Value>) -> Option<ToolOutcome> {
    entry.schema.validate(arguments).err().map(|violations| {
        let lines: Vec<String> = violations
            .iter()
            .map(|violation| format!("- {violation}"))
            .collect();
        ToolOutcome::error(format!(
            "invalid arguments for tool '{}':\n{}",
            entry.exposed,
            lines.join("\n")
        ))
    })
}
