//! `sessions`: the session manager — the turns of each session's conversation (who spoke,
//! what, when), full-text searchable (FTS5, bm25, snippets), and each session's summary.
//!
//! It lives in the memory database (default `$XDG_DATA_HOME/switchboard/memory.db`), so there
//! is one store: the turns in tables of their own ([`store`]), the summaries in memory's —
//! `get_summary` reads them through memory's [`crate::memory::store::Store`], the same code
//! behind memory's `put_summary` and `get_summary`. Both providers may use the file at once
//! (WAL mode).

mod definitions;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

use crate::memory::store::Store as MemoryStore;
use store::{TurnStore, time};

/// Settings of the session manager.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionsSettings {
    /// The memory database (default [`crate::memory::default_database_path`]).
    pub database: PathBuf,
}

impl Default for SessionsSettings {
    fn default() -> Self {
        Self {
            database: crate::memory::default_database_path(),
        }
    }
}

/// Why the session store could not be opened.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("sessions: {0}")]
pub struct SessionsError(pub String);

/// The session manager provider.
pub struct Sessions {
    stores: Arc<Stores>,
}

struct Stores {
    memory: MemoryStore,
    turns: TurnStore,
}

impl Sessions {
    /// Opens (creating) the memory database, bringing memory's schema up to date, and adds
    /// the turns tables when missing.
    pub fn open(settings: SessionsSettings) -> Result<Self, SessionsError> {
        let memory = MemoryStore::open(&settings.database).map_err(SessionsError)?;
        let turns = TurnStore::open(&settings.database).map_err(SessionsError)?;
        Ok(Self {
            stores: Arc::new(Stores { memory, turns }),
        })
    }

    /// The turns store, for embedders and benchmarks.
    pub fn turns(&self) -> &TurnStore {
        &self.stores.turns
    }
}

/// A required string argument: present, not blank, at most `max` characters.
fn text<'a>(arguments: &'a Map<String, Value>, key: &str, max: usize) -> Result<&'a str, String> {
    let value = match arguments.get(key) {
        None | Some(Value::Null) => return Err(format!("'{key}' is required")),
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(format!(
                "'{key}' must be a string, not {}",
                switchboard_core::json_kind(other)
            ));
        }
    };
    if value.trim().is_empty() {
        return Err(format!("'{key}' must not be empty"));
    }
    if value.chars().count() > max {
        return Err(format!("'{key}' is longer than {max} characters"));
    }
    Ok(value)
}

fn limit(arguments: &Map<String, Value>, default: usize, max: usize) -> Result<usize, String> {
    match arguments.get("limit") {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|n| (1..=max as u64).contains(n))
            .map(|n| n as usize)
            .ok_or_else(|| format!("'limit' must be a whole number from 1 to {max}")),
    }
}

const MAX_ID: usize = 200;
const MAX_SPEAKER: usize = 200;
const MAX_TEXT: usize = 100_000;

/// Runs one tool (blocking).
fn run(stores: &Stores, tool: &str, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
    match tool {
        "append_turn" => {
            let session = text(arguments, "session_id", MAX_ID)?;
            let speaker = text(arguments, "speaker", MAX_SPEAKER)?;
            let said = text(arguments, "text", MAX_TEXT)?;
            let (turn, at) = stores.turns.append(session, speaker, said)?;
            Ok(ToolOutcome::structured_with_text(
                json!({"session_id": session, "turn": turn, "time": time(at)}),
                format!("recorded turn {turn} of {session}"),
            ))
        }
        "search_history" => {
            let query = text(arguments, "query", 1_000)?;
            let session = match arguments.get("session_id") {
                None | Some(Value::Null) => None,
                Some(_) => Some(text(arguments, "session_id", MAX_ID)?),
            };
            if let Some(session) = session
                && stores.turns.stats(session)?.turns == 0
            {
                return Err(format!(
                    "session '{session}' has no turns (list_sessions lists the sessions)"
                ));
            }
            let found = stores
                .turns
                .search(query, session, limit(arguments, 10, 100)?)?;
            let text = found
                .iter()
                .map(|t| {
                    format!(
                        "{} #{} {} ({}): {}",
                        t["session_id"].as_str().unwrap_or(""),
                        t["turn"],
                        t["speaker"].as_str().unwrap_or(""),
                        t["time"].as_str().unwrap_or(""),
                        t["snippet"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok(ToolOutcome::structured_with_text(
                json!({"turns": found}),
                if text.is_empty() {
                    format!("no turns match '{query}'")
                } else {
                    text
                },
            ))
        }
        "get_summary" => {
            let session = text(arguments, "session_id", MAX_ID)?;
            let summary = stores.memory.get_summary(session)?;
            let stats = stores.turns.stats(session)?;
            if summary.is_none() && stats.turns == 0 {
                return Err(format!(
                    "no session '{session}': it has no turns and no summary (list_sessions lists the sessions)"
                ));
            }
            let (first, last) = (stats.first_ms.map(time), stats.last_ms.map(time));
            let structured = json!({
                "session_id": session,
                "summary": summary.as_ref().map(|s| &s.0),
                "summary_updated_at": summary.as_ref().map(|s| time(s.1.saturating_mul(1000))),
                "turns": stats.turns,
                "first_turn_at": first,
                "last_turn_at": last,
            });
            let span = match (&first, &last) {
                (Some(first), Some(last)) => format!("{} turns, {first} to {last}", stats.turns),
                _ => "no turns".to_owned(),
            };
            let text = match &summary {
                Some((summary, _)) => format!("{summary}\n({span})"),
                None => format!("no summary yet ({span})"),
            };
            Ok(ToolOutcome::structured_with_text(structured, text))
        }
        "list_sessions" => {
            let listed = stores.turns.list(limit(arguments, 100, 1_000)?)?;
            let sessions: Vec<Value> = listed
                .iter()
                .map(|(id, stats, summary)| {
                    json!({"session_id": id, "turns": stats.turns, "first_turn_at": stats.first_ms.map(time),
                        "last_turn_at": stats.last_ms.map(time), "has_summary": summary})
                })
                .collect();
            let text = listed
                .iter()
                .map(|(id, stats, summary)| {
                    let last = stats
                        .last_ms
                        .map_or_else(String::new, |ms| format!(", last {}", time(ms)));
                    let summary = if *summary { ", summarized" } else { "" };
                    format!("{id}: {} turns{last}{summary}", stats.turns)
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok(ToolOutcome::structured_with_text(
                json!({"sessions": sessions}),
                if text.is_empty() {
                    "no sessions yet".to_owned()
                } else {
                    text
                },
            ))
        }
        other => Err(format!("sessions has no tool '{other}'")),
    }
}

impl ToolProvider for Sessions {
    fn name(&self) -> &str {
        "sessions"
    }

    fn description(&self) -> &str {
        "Session manager: record and search each session's turns, read its summary"
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
        let stores = self.stores.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            // Cancellable: an append whose call timed out is not committed (`crate::cancel`).
            crate::cancel::spawn_blocking_cancellable(move || run(&stores, &tool, &arguments))
                .await
                .map_err(|error| {
                    ToolError::new(format!("sessions: the operation failed: {error}"))
                })?
                .map_err(ToolError::new)
        })
    }
}

#[cfg(test)]
mod tests;
