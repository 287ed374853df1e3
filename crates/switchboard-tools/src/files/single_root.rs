//! Test support: a files provider over one writable root, and a call of one of its tools.

use serde_json::Value;

use super::*;

pub(super) fn files(root: &std::path::Path) -> Files {
    Files::new(FilesSettings {
        roots: vec![Root {
            path: root.to_path_buf(),
            read_only: false,
        }],
        ..FilesSettings::default()
    })
    .expect("files")
}

pub(super) fn run(files: &Files, tool: &str, arguments: Value) -> Result<ToolOutcome, String> {
    files.dispatch(tool, arguments.as_object().expect("object"))
}
