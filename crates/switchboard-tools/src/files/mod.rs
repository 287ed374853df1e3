//! `files`: read, write, edit, list and search files under configured roots — and nowhere
//! else. Confinement is in [`roots`]: every operation goes through a capability handle of its
//! root, so neither `..`, an absolute path, nor a symlink (even one swapped in between two
//! calls) reaches outside. Read-only roots refuse writes; reads and writes have size limits;
//! binary files come back as base64 resources.

mod definitions;
mod edit;
mod listing;
mod partial;
mod read;
pub mod roots;
mod write;

#[cfg(test)]
pub(crate) use edit::DIFF_TIME;

use std::path::PathBuf;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

use edit::Edit;
use read::{Content, block};
use roots::{RootDir, RootError};

/// One root of the files provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    pub path: PathBuf,
    pub read_only: bool,
}

/// Settings of the files provider.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesSettings {
    pub roots: Vec<Root>,
    pub max_read_bytes: u64,
    pub max_write_bytes: u64,
}

impl Default for FilesSettings {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            max_read_bytes: 10 << 20,
            max_write_bytes: 10 << 20,
        }
    }
}

/// The files provider. Cheap to clone: clones share the roots' handles.
#[derive(Clone)]
pub struct Files {
    roots: std::sync::Arc<[RootDir]>,
    max_read_bytes: u64,
    max_write_bytes: u64,
}

impl Files {
    /// Opens every root; a root that does not exist or is not a directory is an error, and so
    /// is a read-only root inside a writable one.
    pub fn new(settings: FilesSettings) -> Result<Self, RootError> {
        if settings.roots.is_empty() {
            return Err(RootError {
                path: PathBuf::new(),
                reason: "no roots are configured".to_owned(),
            });
        }
        let roots = settings
            .roots
            .iter()
            .map(|root| RootDir::open(&root.path, root.read_only))
            .collect::<Result<Vec<_>, _>>()?;
        // A read-only root inside a writable one cannot be kept read-only: a link made in the
        // writable root (or a path through it) reaches the files beneath it.
        for inner in roots.iter().filter(|root| root.read_only) {
            if let Some(outer) = roots
                .iter()
                .find(|outer| !outer.read_only && inner.path.starts_with(&outer.path))
            {
                return Err(RootError {
                    path: inner.path.clone(),
                    reason: format!(
                        "is read-only but inside the writable root {}, through which it could \
                         be written; make that root read-only too, or move one of them",
                        outer.path.display()
                    ),
                });
            }
        }
        Ok(Self {
            roots: roots.into(),
            max_read_bytes: settings.max_read_bytes,
            max_write_bytes: settings.max_write_bytes,
        })
    }

    pub(crate) fn dispatch(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<ToolOutcome, String> {
        let text = |key: &str| -> Result<&str, String> {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("'{key}' must be a string"))
        };
        let number = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
        };
        let flag = |key: &str| arguments.get(key).and_then(Value::as_bool).unwrap_or(false);
        match tool {
            "read_file" => {
                let path = text("path")?;
                let (head, tail) = (number("head"), number("tail"));
                let content = if head.is_some() || tail.is_some() {
                    self.read_lines(path, head, tail)?
                } else {
                    self.read(path)?
                };
                match content {
                    Content::Text(shown) => Ok(with_text(
                        json!({"path": path, "content": shown, "binary": false}),
                        shown,
                    )),
                    binary @ Content::Binary { .. } => Ok(binary_outcome(path, &binary)),
                }
            }
            "read_multiple_files" => {
                let paths: Vec<&str> = arguments
                    .get("paths")
                    .and_then(Value::as_array)
                    .ok_or("'paths' must be an array of strings")?
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                let mut files = Vec::new();
                let mut blocks = Vec::new();
                // One call reads at most four times what one file may hold: the rest of the
                // paths are answered with why they were not read.
                let limit = self.max_read_bytes.saturating_mul(4);
                let mut read = 0u64;
                for path in paths {
                    if read >= limit {
                        let error = format!(
                            "not read: the files before it took this call's limit of {limit} bytes (read it on its own)"
                        );
                        blocks.push(
                            json!({"type": "text", "text": format!("{path}: error: {error}")}),
                        );
                        files.push(json!({"path": path, "error": error}));
                        continue;
                    }
                    match self.read(path) {
                        Ok(Content::Text(content)) => {
                            read += content.len() as u64;
                            blocks.push(
                                json!({"type": "text", "text": format!("{path}:\n{content}")}),
                            );
                            files.push(json!({"path": path, "content": content}));
                        }
                        Ok(binary @ Content::Binary { size, .. }) => {
                            read += size;
                            blocks.push(block(&binary));
                            files.push(json!({"path": path, "binary": true}));
                        }
                        Err(error) => {
                            blocks.push(
                                json!({"type": "text", "text": format!("{path}: error: {error}")}),
                            );
                            files.push(json!({"path": path, "error": error}));
                        }
                    }
                }
                let mut outcome = ToolOutcome::structured(json!({"files": files}));
                outcome.content = blocks;
                Ok(outcome)
            }
            "write_file" => {
                let path = text("path")?;
                let bytes = self.write(path, text("content")?)?;
                Ok(with_text(
                    json!({"path": path, "bytes": bytes}),
                    format!("wrote {bytes} bytes to {path}"),
                ))
            }
            "edit_file" => {
                let path = text("path")?;
                let edits = arguments
                    .get("edits")
                    .and_then(Value::as_array)
                    .ok_or("'edits' must be an array of {oldText, newText}")?
                    .iter()
                    .enumerate()
                    .map(|(i, edit)| {
                        let field = |key: &str| {
                            edit.get(key)
                                .and_then(Value::as_str)
                                .map(str::to_owned)
                                .ok_or_else(|| format!("edits[{i}].{key} must be a string"))
                        };
                        Ok(Edit {
                            old: field("oldText")?,
                            new: field("newText")?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                let dry_run = flag("dryRun");
                let diff = self.edit(path, &edits, dry_run)?;
                Ok(with_text(
                    json!({"path": path, "diff": diff, "dryRun": dry_run}),
                    diff,
                ))
            }
            "list_directory" => {
                let path = text("path")?;
                let max = number("max_entries").unwrap_or(1_000).clamp(1, 20_000);
                let (entries, truncated) = self.list_directory(path, max)?;
                let lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        let tag = if e["type"] == "directory" {
                            "[DIR]"
                        } else {
                            "[FILE]"
                        };
                        format!("{tag} {}", e["name"].as_str().unwrap_or(""))
                    })
                    .collect();
                let mut text = lines.join("\n");
                if truncated {
                    text.push_str(&format!(
                        "\n… more entries not listed (at most {max}; raise max_entries)"
                    ));
                }
                Ok(with_text(
                    json!({"path": path, "entries": entries, "truncated": truncated}),
                    text,
                ))
            }
            "directory_tree" => {
                let path = text("path")?;
                let depth = number("max_depth").unwrap_or(3).clamp(1, 20);
                let limit = number("max_entries").unwrap_or(1_000).clamp(1, 20_000);
                let (tree, truncated) = self.directory_tree(path, depth, limit)?;
                let text = serde_json::to_string(&tree).unwrap_or_default();
                Ok(with_text(
                    json!({"path": path, "tree": tree, "truncated": truncated}),
                    text,
                ))
            }
            "search_files" => {
                let path = text("path")?;
                let pattern = arguments
                    .get("pattern")
                    .and_then(Value::as_str)
                    .unwrap_or("*");
                let content = arguments.get("content").and_then(Value::as_str);
                let exclude: Vec<String> = arguments
                    .get("exclude")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let max = number("max_results").unwrap_or(100).clamp(1, 10_000);
                let (found, truncated) = self.search(path, pattern, content, &exclude, max)?;
                let text = if found.is_empty() {
                    "no matches".to_owned()
                } else {
                    found.join("\n")
                };
                Ok(with_text(
                    json!({"matches": found, "truncated": truncated}),
                    text,
                ))
            }
            "get_file_info" => {
                let info = self.info(text("path")?)?;
                let text = serde_json::to_string_pretty(&info).unwrap_or_default();
                Ok(with_text(info, text))
            }
            "create_directory" => {
                let path = text("path")?;
                self.create_directory(path)?;
                Ok(with_text(
                    json!({"path": path, "created": true}),
                    format!("created {path}"),
                ))
            }
            "move_file" => {
                let (from, to) = (text("source")?, text("destination")?);
                self.move_file(from, to, flag("overwrite"))?;
                Ok(with_text(
                    json!({"source": from, "destination": to}),
                    format!("moved {from} to {to}"),
                ))
            }
            "list_allowed_roots" => {
                let roots: Vec<Value> = self
                    .roots
                    .iter()
                    .map(
                        |r| json!({"path": r.path.display().to_string(), "read_only": r.read_only}),
                    )
                    .collect();
                let text = self
                    .roots
                    .iter()
                    .map(|r| {
                        format!(
                            "{}{}",
                            r.path.display(),
                            if r.read_only { " (read-only)" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(with_text(json!({"roots": roots}), text))
            }
            other => Err(format!("files has no tool '{other}'")),
        }
    }
}

fn with_text(structured: Value, text: String) -> ToolOutcome {
    ToolOutcome::structured_with_text(structured, text)
}

fn binary_outcome(path: &str, content: &Content) -> ToolOutcome {
    let size = match content {
        Content::Binary { size, .. } => *size,
        Content::Text(_) => 0,
    };
    let mut outcome = ToolOutcome::structured(json!({"path": path, "binary": true, "size": size}));
    outcome.content = vec![block(content)];
    outcome
}

impl ToolProvider for Files {
    fn name(&self) -> &str {
        "files"
    }

    fn description(&self) -> &str {
        "Files under configured roots"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        definitions::all()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        // On a blocking thread: a walk, a search or a diff may take a while, and must not hold
        // a runtime thread (nor keep the call's deadline from ending its wait).
        // A write whose call was dropped (its deadline passed) stops before the rename: the
        // caller was told it failed, so nothing may change (see `crate::cancel`).
        let files = self.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            crate::cancel::spawn_blocking_cancellable(move || files.dispatch(&tool, &arguments))
                .await
                .map_err(|error| ToolError::new(format!("files: the operation failed: {error}")))?
                .map_err(ToolError::new)
        })
    }
}

#[cfg(test)]
mod listing_tests;
#[cfg(test)]
mod read_tests;
#[cfg(test)]
mod single_root;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod write_tests;
