//! The files tools as MCP lists them: input and output schemas, honest annotations, and
//! declared latency under `_meta["switchboard.dev/latency"]`.

use serde_json::{Value, json};
use switchboard_core::{LatencyMeta, ToolAnnotations, ToolDefinition};

#[derive(Clone, Copy)]
enum Effect {
    Reads,
    /// Creates without destroying (create_directory).
    Adds,
    /// May overwrite or remove.
    Destroys,
}

fn tool(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    effect: Effect,
    latency: (u64, u64),
) -> ToolDefinition {
    let mut definition = ToolDefinition::new(name, description, input);
    definition.title = Some(title.to_owned());
    let (read_only, destructive, idempotent) = match effect {
        Effect::Reads => (true, false, true),
        Effect::Adds => (false, false, true),
        Effect::Destroys => (false, true, false),
    };
    definition.annotations = Some(ToolAnnotations {
        read_only_hint: Some(read_only),
        destructive_hint: Some(destructive),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    });
    definition.output_schema = Some(output);
    LatencyMeta::new(latency.0, latency.1)
        .idempotent(idempotent)
        .cacheable_seconds(0)
        .write_into(&mut definition.meta);
    definition
}

/// The declared bound of `write_file` and `edit_file`: an edit's diff alone may take
/// [`super::DIFF_TIME`] (1 s), then the file is written and renamed into place. The bound
/// is the call's hard deadline, and a call cut off by it must not write (see
/// `files::cancel`); the declared p90 (≈ 170 ms) keeps both FAST until measured.
pub const WRITE_BOUND_MS: u64 = 3_000;

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn path(what: &str) -> Value {
    json!({"type": "string", "description": what})
}

pub fn all() -> Vec<ToolDefinition> {
    let string = json!({"type": "string"});
    vec![
        tool(
            "read_file",
            "Read a file",
            "Read a file under the allowed roots. Text comes back as text; binary files as a base64 resource. head/tail limit the lines.",
            object(
                json!({"path": path("File path (absolute under a root, or relative to the first root)"),
                "head": {"type": "integer", "minimum": 1, "description": "Only the first N lines"},
                "tail": {"type": "integer", "minimum": 1, "description": "Only the last N lines"}}),
                &["path"],
            ),
            json!({"type": "object", "properties": {"path": string, "content": string, "binary": {"type": "boolean"}, "size": {"type": "integer"}}, "required": ["path", "binary"]}),
            Effect::Reads,
            (2, 200),
        ),
        tool(
            "read_multiple_files",
            "Read several files",
            "Read several files at once; a file that cannot be read is reported without failing the others.",
            object(
                json!({"paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100}}),
                &["paths"],
            ),
            json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "object"}}}, "required": ["files"]}),
            Effect::Reads,
            (5, 500),
        ),
        tool(
            "write_file",
            "Write a file",
            "Create or replace a file with the given text, atomically (readers never see half a file).",
            object(
                json!({"path": path("File path"), "content": {"type": "string"}}),
                &["path", "content"],
            ),
            json!({"type": "object", "properties": {"path": string, "bytes": {"type": "integer"}}, "required": ["path", "bytes"]}),
            Effect::Destroys,
            (5, WRITE_BOUND_MS),
        ),
        tool(
            "edit_file",
            "Edit a file",
            "Replace exact text in a file; each oldText must occur exactly once. Returns a unified diff; dryRun shows the diff without writing.",
            object(
                json!({"path": path("File path"),
                "edits": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {"oldText": string, "newText": string}, "required": ["oldText", "newText"], "additionalProperties": false}},
                "dryRun": {"type": "boolean", "description": "Only show the diff (default false)"}}),
                &["path", "edits"],
            ),
            json!({"type": "object", "properties": {"path": string, "diff": string, "dryRun": {"type": "boolean"}}, "required": ["path", "diff", "dryRun"]}),
            Effect::Destroys,
            (5, WRITE_BOUND_MS),
        ),
        tool(
            "list_directory",
            "List a directory",
            "The entries of one directory, marked [DIR] or [FILE], with sizes; at most max_entries (truncated: true when there are more).",
            object(
                json!({"path": path("Directory path"),
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 20000, "description": "Default 1000"}}),
                &["path"],
            ),
            json!({"type": "object", "properties": {"path": string, "entries": {"type": "array", "items": {"type": "object", "properties": {"name": string, "type": string, "size": {"type": "integer"}}}}, "truncated": {"type": "boolean"}}, "required": ["path", "entries", "truncated"]}),
            Effect::Reads,
            (2, 200),
        ),
        tool(
            "directory_tree",
            "Directory tree",
            "A directory's tree as nested JSON, to a depth and entry limit.",
            object(
                json!({"path": path("Directory path"),
                "max_depth": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Default 3"},
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 20000, "description": "Default 1000"}}),
                &["path"],
            ),
            json!({"type": "object", "properties": {"path": string, "tree": {"type": "array"}, "truncated": {"type": "boolean"}}, "required": ["path", "tree", "truncated"]}),
            Effect::Reads,
            (5, 1000),
        ),
        tool(
            "search_files",
            "Search files",
            "Find files under a directory whose name or relative path matches a glob (* and ?), optionally containing a text.",
            object(
                json!({"path": path("Directory to search"),
                "pattern": {"type": "string", "description": "Glob such as \"*.rs\" (default *)"},
                "content": {"type": "string", "description": "Only files containing this text"},
                "exclude": {"type": "array", "items": {"type": "string"}, "description": "Globs to skip"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Default 100"}}),
                &["path"],
            ),
            json!({"type": "object", "properties": {"matches": {"type": "array", "items": string}, "truncated": {"type": "boolean"}}, "required": ["matches", "truncated"]}),
            Effect::Reads,
            (20, 2000),
        ),
        tool(
            "get_file_info",
            "File information",
            "Size, type, times (unix seconds), permissions, and whether the root is read-only.",
            object(json!({"path": path("Path")}), &["path"]),
            json!({"type": "object", "properties": {"path": string, "type": string, "size": {"type": "integer"}, "modified": {"type": "integer"}, "accessed": {"type": "integer"}, "changed": {"type": "integer"}, "permissions": string, "read_only_root": {"type": "boolean"}}, "required": ["path", "type", "size"]}),
            Effect::Reads,
            (1, 100),
        ),
        tool(
            "create_directory",
            "Create a directory",
            "Create a directory and any missing parents; an existing directory is fine.",
            object(json!({"path": path("Directory path")}), &["path"]),
            json!({"type": "object", "properties": {"path": string, "created": {"type": "boolean"}}, "required": ["path", "created"]}),
            Effect::Adds,
            (1, 100),
        ),
        tool(
            "move_file",
            "Move a file",
            "Move or rename a file or directory within the allowed roots; refuses to replace an existing destination unless overwrite is true.",
            object(
                json!({"source": path("From"), "destination": path("To"), "overwrite": {"type": "boolean"}}),
                &["source", "destination"],
            ),
            json!({"type": "object", "properties": {"source": string, "destination": string}, "required": ["source", "destination"]}),
            Effect::Destroys,
            (2, 200),
        ),
        tool(
            "list_allowed_roots",
            "Allowed roots",
            "The directories these tools may touch, and which are read-only.",
            object(json!({}), &[]),
            json!({"type": "object", "properties": {"roots": {"type": "array", "items": {"type": "object", "properties": {"path": string, "read_only": {"type": "boolean"}}}}}, "required": ["roots"]}),
            Effect::Reads,
            (1, 10),
        ),
    ]
}
