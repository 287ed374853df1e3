//! `memory`: the "cold layer" — a knowledge store in one SQLite file. Entities have a type
//! and observations; relations link entities; facts are free text with an optional subject
//! entity, a source and a time, full-text indexed (FTS5, bm25 ranking, snippets).
//! **Observations are facts whose subject is the entity**, so `search_facts` finds them too.
//! Session summaries are kept per session id and searchable.
//!
//! The file (default `$XDG_DATA_HOME/switchboard/memory.db`) is in WAL mode: concurrent
//! callers are safe and a crash loses nothing committed. The schema is versioned
//! ([`schema`]).

mod definitions;
pub mod schema;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

use store::Store;

/// Settings of the memory provider.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    pub database: PathBuf,
}

/// Why the store could not be opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("memory: {0}")]
pub struct MemoryError(pub String);

/// `$XDG_DATA_HOME/switchboard/memory.db`, else `~/.local/share/switchboard/memory.db`.
pub fn default_database_path() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("switchboard").join("memory.db")
}

/// The memory provider.
pub struct Memory {
    store: Arc<Store>,
}

impl Memory {
    pub fn open(settings: MemorySettings) -> Result<Self, MemoryError> {
        Ok(Self {
            store: Arc::new(Store::open(&settings.database).map_err(MemoryError)?),
        })
    }

    /// The store, for embedders and benchmarks.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

fn strings(arguments: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    arguments
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("'{key}' must be an array of strings"))?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{key}[{i}] must be a string"))
        })
        .collect()
}

fn text<'a>(arguments: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("'{key}' must be a string"))
}

fn limit(arguments: &Map<String, Value>, default: usize) -> usize {
    arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(default, |n| (n as usize).clamp(1, 200))
}

fn with_text(structured: Value, text: String) -> ToolOutcome {
    ToolOutcome::structured_with_text(structured, text)
}

/// Runs one tool against the store (blocking).
fn run(store: &Store, tool: &str, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
    match tool {
        "create_entities" => {
            let entities = arguments
                .get("entities")
                .and_then(Value::as_array)
                .ok_or("'entities' must be an array of {name, entityType, observations?}")?
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let field = |k: &str| {
                        e.get(k)
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .ok_or_else(|| format!("entities[{i}].{k} must be a string"))
                    };
                    let observations = e
                        .get("observations")
                        .and_then(Value::as_array)
                        .map(|o| {
                            o.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    Ok((field("name")?, field("entityType")?, observations))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let result = store.create_entities(&entities)?;
            let text = format!(
                "created {}; skipped (already known) {}",
                result["created"], result["skipped"]
            );
            Ok(with_text(result, text))
        }
        "add_observations" => {
            let entity = text(arguments, "entity")?;
            let observations = strings(arguments, "observations")?;
            let source = arguments.get("source").and_then(Value::as_str);
            let result = store.add_observations(entity, &observations, source)?;
            Ok(with_text(
                result,
                format!("added {} observations to {entity}", observations.len()),
            ))
        }
        "create_relations" => {
            let relations = arguments
                .get("relations")
                .and_then(Value::as_array)
                .ok_or("'relations' must be an array of {from, to, relationType}")?
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let field = |k: &str| {
                        r.get(k)
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .ok_or_else(|| format!("relations[{i}].{k} must be a string"))
                    };
                    Ok((field("from")?, field("to")?, field("relationType")?))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let result = store.create_relations(&relations)?;
            let text = format!(
                "{} new relations, {} already known",
                result["created"], result["existing"]
            );
            Ok(with_text(result, text))
        }
        "delete_entities" => {
            let result = store.delete_entities(&strings(arguments, "names")?)?;
            let text = format!(
                "deleted {}; not found {}",
                result["deleted"], result["missing"]
            );
            Ok(with_text(result, text))
        }
        "query_entities" => {
            let name = arguments.get("name").and_then(Value::as_str);
            let kind = arguments.get("entityType").and_then(Value::as_str);
            let found = store.query_entities(name, kind, limit(arguments, 20))?;
            let text = found
                .iter()
                .map(|e| {
                    format!(
                        "{} ({}): {}",
                        e["name"].as_str().unwrap_or(""),
                        e["entity_type"].as_str().unwrap_or(""),
                        e["observations"]
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok(with_text(
                json!({"entities": found}),
                if text.is_empty() {
                    "no entities match".to_owned()
                } else {
                    text
                },
            ))
        }
        "add_facts" => {
            let facts = arguments
                .get("facts")
                .and_then(Value::as_array)
                .ok_or("'facts' must be an array of {text, subject?, source?}")?
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let text = f
                        .get("text")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("facts[{i}].text must be a string"))?;
                    let optional = |k: &str| f.get(k).and_then(Value::as_str).map(str::to_owned);
                    Ok((text, optional("subject"), optional("source")))
                })
                .collect::<Result<Vec<_>, String>>()?;
            let ids = store.add_facts(&facts)?;
            Ok(with_text(
                json!({"ids": ids}),
                format!("recorded {} facts", ids.len()),
            ))
        }
        "search_facts" => {
            let query = text(arguments, "query")?;
            let found = store.search_facts(query, limit(arguments, 10))?;
            let text = found
                .iter()
                .map(|f| format!("- {}", f["snippet"].as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("\n");
            Ok(with_text(
                json!({"facts": found}),
                if text.is_empty() {
                    format!("no facts match '{query}'")
                } else {
                    text
                },
            ))
        }
        "search_sessions" => {
            let query = text(arguments, "query")?;
            let found = store.search_sessions(query, limit(arguments, 10))?;
            let text = found
                .iter()
                .map(|s| {
                    format!(
                        "{}: {}",
                        s["session_id"].as_str().unwrap_or(""),
                        s["snippet"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok(with_text(
                json!({"sessions": found}),
                if text.is_empty() {
                    format!("no sessions match '{query}'")
                } else {
                    text
                },
            ))
        }
        "get_summary" => {
            let session = text(arguments, "session_id")?;
            match store.get_summary(session)? {
                Some((summary, updated)) => Ok(with_text(
                    json!({"session_id": session, "summary": summary, "updated_at": updated}),
                    summary,
                )),
                None => Err(format!("no summary for session '{session}'")),
            }
        }
        "put_summary" => {
            let session = text(arguments, "session_id")?;
            store.put_summary(session, text(arguments, "summary")?)?;
            Ok(with_text(
                json!({"session_id": session, "stored": true}),
                format!("stored the summary of {session}"),
            ))
        }
        other => Err(format!("memory has no tool '{other}'")),
    }
}

impl ToolProvider for Memory {
    fn name(&self) -> &str {
        "memory"
    }

    fn description(&self) -> &str {
        "A knowledge store: entities, relations, facts and session summaries, searchable"
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
        let store = self.store.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            // A write whose call was dropped (its deadline passed) is not committed: the
            // caller was told it failed (see `crate::cancel`).
            crate::cancel::spawn_blocking_cancellable(move || run(&store, &tool, &arguments))
                .await
                .map_err(|error| ToolError::new(format!("memory: the operation failed: {error}")))?
                .map_err(ToolError::new)
        })
    }
}

#[cfg(test)]
mod tests;
