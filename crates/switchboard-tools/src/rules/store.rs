//! The rules index: one SQLite file in WAL mode (readers never block the writer), a busy
//! timeout for other processes (an import running beside the gateway). Every change is one
//! transaction. Calls are blocking; the provider runs them off the async runtime.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sqlite::sql;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::{Value, json};

use super::schema;
use crate::memory::store::fts_query;

/// What the index remembers of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    pub root: String,
    pub mtime_ns: i64,
    pub size: i64,
    pub sha256: String,
    pub parser: i64,
}

/// A rule to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRule {
    pub id: String,
    pub system: String,
    pub title: String,
    pub headings: Vec<String>,
    pub body: String,
    pub source_file: String,
}

/// A file (re)sectioned: its state and all its rules, replacing what it had.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRules {
    pub path: String,
    pub root: String,
    pub relative: String,
    pub mtime_ns: i64,
    pub size: i64,
    pub sha256: String,
    pub parser: i64,
    /// `(license, text)` the file declares.
    pub attribution: Option<(Option<String>, String)>,
    pub rules: Vec<NewRule>,
}

/// The store; safe to share between threads.
pub struct Store {
    conn: Mutex<Connection>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn file_attribution(path: &str) -> String {
    format!("file:{path}")
}

impl Store {
    /// Opens (creating) the file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, String> {
        let mut conn = crate::sqlite::open(path)?;
        schema::migrate(&mut conn).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R, String>) -> Result<R, String> {
        let mut conn = match self.conn.lock() {
            Ok(conn) => conn,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut conn)
    }

    /// Every indexed file, by absolute path.
    pub fn files(&self) -> Result<HashMap<String, StoredFile>, String> {
        self.with(|conn| {
            let mut select = conn
                .prepare_cached("SELECT path, root, mtime_ns, size, sha256, parser FROM files")
                .map_err(sql)?;
            let rows = select
                .query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        StoredFile {
                            root: row.get(1)?,
                            mtime_ns: row.get(2)?,
                            size: row.get(3)?,
                            sha256: row.get(4)?,
                            parser: row.get(5)?,
                        },
                    ))
                })
                .map_err(sql)?
                .collect::<Result<HashMap<_, _>, _>>()
                .map_err(sql)?;
            Ok(rows)
        })
    }

    fn remove_source(
        tx: &Transaction<'_>,
        source: &str,
        attribution: &str,
    ) -> Result<usize, String> {
        let removed = tx
            .execute("DELETE FROM rules WHERE source = ?1", [source])
            .map_err(sql)?;
        tx.execute("DELETE FROM attributions WHERE key = ?1", [attribution])
            .map_err(sql)?;
        Ok(removed)
    }

    /// Inserts `rule` under its id, or under `id-2`, `id-3`… when another source has it.
    fn insert(
        tx: &Transaction<'_>,
        rule: &NewRule,
        source: &str,
        attribution: Option<&str>,
        ordinal: usize,
    ) -> Result<(), String> {
        let mut id = rule.id.clone();
        let mut n = 1;
        while tx
            .query_row("SELECT 1 FROM rules WHERE id = ?1", [&id], |_| Ok(()))
            .optional()
            .map_err(sql)?
            .is_some()
        {
            n += 1;
            id = format!("{}-{n}", rule.id);
        }
        let headings = serde_json::to_string(&rule.headings).map_err(|e| e.to_string())?;
        tx.prepare_cached(
            "INSERT INTO rules (id, system, title, headings, body, source, source_file, attribution, ordinal)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(sql)?
        .execute(params![
            id,
            rule.system,
            rule.title,
            headings,
            rule.body,
            source,
            rule.source_file,
            attribution,
            ordinal as i64
        ])
        .map_err(sql)?;
        Ok(())
    }

    /// One reindex's writes in one transaction: files re-sectioned (their old rules replaced),
    /// files whose content was unchanged (new time and size remembered), files removed.
    /// Returns the number of rules in the index afterwards. Not committed when the call it
    /// serves was cancelled ([`crate::sqlite::commit`]).
    pub fn apply(
        &self,
        sectioned: &[FileRules],
        touched: &[(String, i64, i64)],
        removed: &[String],
    ) -> Result<usize, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            for path in removed {
                Self::remove_source(&tx, path, &file_attribution(path))?;
                tx.execute("DELETE FROM files WHERE path = ?1", [path]).map_err(sql)?;
            }
            for (path, mtime_ns, size) in touched {
                tx.execute(
                    "UPDATE files SET mtime_ns = ?2, size = ?3 WHERE path = ?1",
                    params![path, mtime_ns, size],
                )
                .map_err(sql)?;
            }
            // Old rules of every re-sectioned file go first, so ids move freely between them.
            for file in sectioned {
                Self::remove_source(&tx, &file.path, &file_attribution(&file.path))?;
            }
            for file in sectioned {
                let key = file_attribution(&file.path);
                let attribution = match &file.attribution {
                    Some((license, text)) => {
                        tx.execute(
                            "INSERT OR REPLACE INTO attributions (key, license, text) VALUES (?1, ?2, ?3)",
                            params![key, license, text],
                        )
                        .map_err(sql)?;
                        Some(key.as_str())
                    }
                    None => None,
                };
                for (ordinal, rule) in file.rules.iter().enumerate() {
                    Self::insert(&tx, rule, &file.path, attribution, ordinal)?;
                }
                tx.execute(
                    "INSERT OR REPLACE INTO files (path, root, relative, mtime_ns, size, sha256, parser, indexed_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![file.path, file.root, file.relative, file.mtime_ns, file.size, file.sha256, file.parser, now()],
                )
                .map_err(sql)?;
            }
            let count: i64 = tx
                .query_row("SELECT count(*) FROM rules", [], |row| row.get(0))
                .map_err(sql)?;
            crate::sqlite::commit(tx)?;
            Ok(count as usize)
        })
    }

    /// Replaces every rule of the import `name` (source `import:NAME`) with `rules`, all
    /// carrying the attribution `(license, text)`. Returns how many rules it replaced.
    pub fn replace_import(
        &self,
        name: &str,
        attribution: (Option<&str>, &str),
        rules: &[NewRule],
    ) -> Result<usize, String> {
        let source = format!("import:{name}");
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let replaced = Self::remove_source(&tx, &source, &source)?;
            tx.execute(
                "INSERT INTO attributions (key, license, text) VALUES (?1, ?2, ?3)",
                params![source, attribution.0, attribution.1],
            )
            .map_err(sql)?;
            for (ordinal, rule) in rules.iter().enumerate() {
                Self::insert(&tx, rule, &source, Some(&source), ordinal)?;
            }
            tx.commit().map_err(sql)?;
            Ok(replaced)
        })
    }

    /// Full-text search, best first, with snippets: a rule whose title is the query (in any
    /// case) first, then by bm25 (title ×10, heading path ×3, text ×1). FTS5's bm25 scales
    /// term counts by the weights before saturating them, so the weights alone cannot lift
    /// an exact title over a longer title that the text repeats ("Fireball" under "Wand of
    /// Fireballs"); hence the first key.
    pub fn search(
        &self,
        query: &str,
        system: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Value>, String> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut search = conn
                .prepare_cached(
                    "SELECT r.id, r.system, r.title, r.headings, r.source_file,
                            snippet(rules_fts, 2, '[', ']', '…', 16), bm25(rules_fts, 10.0, 3.0, 1.0) AS score
                     FROM rules_fts JOIN rules r ON r.n = rules_fts.rowid
                     WHERE rules_fts MATCH ?1 AND (?2 IS NULL OR r.system = ?2 COLLATE NOCASE)
                     ORDER BY r.title = ?4 COLLATE NOCASE DESC, score LIMIT ?3",
                )
                .map_err(sql)?;
            let rows = search
                .query_map(params![fts, system, limit as i64, query.trim()], |row| {
                    let headings: String = row.get(3)?;
                    Ok(json!({
                        "id": row.get::<_, String>(0)?,
                        "system": row.get::<_, String>(1)?,
                        "title": row.get::<_, String>(2)?,
                        "heading_path": serde_json::from_str::<Value>(&headings).unwrap_or(Value::Null),
                        "source_file": row.get::<_, String>(4)?,
                        "snippet": row.get::<_, String>(5)?,
                        "score": -row.get::<_, f64>(6)?,
                    }))
                })
                .map_err(sql)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql)?;
            Ok(rows)
        })
    }

    /// The rule `id` with its whole text, source and attribution.
    pub fn get(&self, id: &str) -> Result<Option<Value>, String> {
        self.with(|conn| {
            conn.query_row(
                "SELECT r.id, r.system, r.title, r.headings, r.body, r.source_file, f.path, a.license, a.text
                 FROM rules r LEFT JOIN files f ON f.path = r.source
                 LEFT JOIN attributions a ON a.key = r.attribution
                 WHERE r.id = ?1",
                [id],
                |row| {
                    let headings: String = row.get(3)?;
                    let attribution = row.get::<_, Option<String>>(8)?.map(|text| {
                        json!({"license": row.get::<_, Option<String>>(7).ok().flatten(), "text": text})
                    });
                    Ok(json!({
                        "id": row.get::<_, String>(0)?,
                        "system": row.get::<_, String>(1)?,
                        "title": row.get::<_, String>(2)?,
                        "heading_path": serde_json::from_str::<Value>(&headings).unwrap_or(Value::Null),
                        "text": row.get::<_, String>(4)?,
                        "source_file": row.get::<_, String>(5)?,
                        "path": row.get::<_, Option<String>>(6)?,
                        "attribution": attribution,
                    }))
                },
            )
            .optional()
            .map_err(sql)
        })
    }

    /// Ids of rules that start with `prefix`, for "did you mean" (at most `limit`).
    pub fn ids_like(&self, prefix: &str, limit: usize) -> Result<Vec<String>, String> {
        self.with(|conn| {
            let pattern = format!(
                "{}%",
                prefix
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            );
            let mut select = conn
                .prepare_cached(
                    "SELECT id FROM rules WHERE id LIKE ?1 ESCAPE '\\' ORDER BY id LIMIT ?2",
                )
                .map_err(sql)?;
            let ids = select
                .query_map(params![pattern, limit as i64], |row| row.get(0))
                .map_err(sql)?
                .collect::<Result<Vec<String>, _>>()
                .map_err(sql)?;
            Ok(ids)
        })
    }

    /// Every system with its number of rules.
    pub fn systems(&self) -> Result<Vec<(String, usize)>, String> {
        self.with(|conn| {
            let mut select = conn
                .prepare_cached(
                    "SELECT system, count(*) FROM rules GROUP BY system ORDER BY system",
                )
                .map_err(sql)?;
            let rows = select
                .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as usize)))
                .map_err(sql)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql)?;
            Ok(rows)
        })
    }
}
