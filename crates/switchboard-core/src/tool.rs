//! Tool definitions: what an upstream says a tool is ([`ToolDefinition`]) and that definition
//! placed in the catalog under its server ([`ToolSpec`]).
//!
//! Fields the gateway reasons about are typed; every other field an upstream sends is kept in
//! `extra` and passed through unchanged, so a newer protocol revision loses nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ServerId;

/// One tool as an MCP server lists it (`tools/list` → `tools[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields this version of Switchboard does not interpret (`icons`, `execution`, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl ToolDefinition {
    /// A definition with just a name, a description and an input schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// `execution.taskSupport` as declared (`"forbidden"`, `"optional"`, `"required"`).
    pub fn task_support(&self) -> Option<&str> {
        self.extra
            .get("execution")
            .and_then(|execution| execution.get("taskSupport"))
            .and_then(Value::as_str)
    }
}

/// Tool annotations as hints. They come from the upstream and are untrusted: absent values
/// take the protocol's conservative defaults (see the accessors).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolAnnotations {
    /// `readOnlyHint`, default false.
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// `destructiveHint`, default true (meaningful only when not read-only).
    pub fn destructive(&self) -> bool {
        !self.read_only() && self.destructive_hint.unwrap_or(true)
    }

    /// `idempotentHint`, default false.
    pub fn idempotent(&self) -> bool {
        self.read_only() || self.idempotent_hint.unwrap_or(false)
    }
}

/// A tool in the catalog: its definition and the server that provides it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub server: ServerId,
    pub definition: ToolDefinition,
}

impl ToolSpec {
    /// The upstream's own name for the tool.
    pub fn upstream_name(&self) -> &str {
        &self.definition.name
    }

    /// The annotations with protocol defaults for absent ones.
    pub fn annotations(&self) -> ToolAnnotations {
        self.definition.annotations.clone().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = serde_json::json!({
            "name": "t",
            "inputSchema": {"type": "object"},
            "icons": [{"src": "x.png"}],
            "execution": {"taskSupport": "required"}
        });
        let definition: ToolDefinition = serde_json::from_value(raw.clone()).expect("valid tool");
        assert_eq!(definition.task_support(), Some("required"));
        assert_eq!(serde_json::to_value(&definition).expect("serializes"), raw);
    }

    #[test]
    fn annotation_defaults_are_conservative() {
        let none = ToolAnnotations::default();
        assert!(!none.read_only());
        assert!(none.destructive());
        assert!(!none.idempotent());
        let read_only = ToolAnnotations {
            read_only_hint: Some(true),
            ..Default::default()
        };
        assert!(!read_only.destructive());
        assert!(read_only.idempotent());
    }
}
