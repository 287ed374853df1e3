//! The knowledge store: one SQLite file in WAL mode (a crash loses nothing committed; readers
//! never block the writer), foreign keys on, a busy timeout for other processes. Every
//! operation is one transaction. Calls are blocking; the provider runs them off the async
//! runtime.

use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sqlite::sql;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::schema;

/// The store; safe to share between threads.
pub struct Store {
    conn: Mutex<Connection>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// English words too common to help a search (kept when a query has nothing else).
const STOPWORDS: [&str; 40] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "for", "from", "had",
    "has", "have", "he", "her", "his", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "she", "that", "the", "their", "they", "this", "to", "was", "we", "what", "with",
];

/// Turns free text into a safe FTS5 query: its words, each quoted, any of them (ranked by
/// bm25), common English words left out. Punctuation and FTS syntax in the input never
/// reach the query parser.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !STOPWORDS.contains(&w.to_lowercase().as_str()))
        .collect();
    let chosen = if content.is_empty() { words } else { content };
    let quoted: Vec<String> = chosen.iter().take(32).map(|w| format!("\"{w}\"")).collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

impl Store {
    /// Opens (creating) the file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Self, String> {
        Self::open_at(path, schema::MIGRATIONS.len())
    }

    /// Opens with the schema at `version` (tests of migrations use older versions).
    pub fn open_at(path: &Path, version: usize) -> Result<Self, String> {
        let mut conn = crate::sqlite::open(path)?;
        conn.execute_batch("PRAGMA foreign_keys=ON;").map_err(sql)?;
        schema::migrate(&mut conn, version).map_err(|e| format!("{}: {e}", path.display()))?;
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

    fn entity_id(tx: &Connection, name: &str) -> Result<Option<i64>, String> {
        tx.query_row("SELECT id FROM entities WHERE name = ?1", [name], |row| {
            row.get(0)
        })
        .optional()
        .map_err(sql)
    }

    fn known(tx: &Connection, name: &str) -> Result<i64, String> {
        Self::entity_id(tx, name)?
            .ok_or_else(|| format!("unknown entity '{name}' (create it with create_entities)"))
    }

    /// Creates entities (name, type, observations); existing names are skipped.
    pub fn create_entities(
        &self,
        entities: &[(String, String, Vec<String>)],
    ) -> Result<Value, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let (mut created, mut skipped) = (Vec::new(), Vec::new());
            let at = now();
            for (name, kind, observations) in entities {
                if Self::entity_id(&tx, name)?.is_some() {
                    skipped.push(name.clone());
                    continue;
                }
                tx.execute(
                    "INSERT INTO entities (name, entity_type, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
                    params![name, kind, at],
                )
                .map_err(sql)?;
                let id = tx.last_insert_rowid();
                for text in observations {
                    tx.execute(
                        "INSERT INTO facts (text, subject_id, source, recorded_at) VALUES (?1, ?2, NULL, ?3)",
                        params![text, id, at],
                    )
                    .map_err(sql)?;
                }
                created.push(name.clone());
            }
            crate::sqlite::commit(tx)?;
            Ok(json!({"created": created, "skipped": skipped}))
        })
    }

    /// Adds observations (facts about an entity).
    pub fn add_observations(
        &self,
        entity: &str,
        observations: &[String],
        source: Option<&str>,
    ) -> Result<Value, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let id = Self::known(&tx, entity)?;
            let at = now();
            for text in observations {
                tx.execute(
                    "INSERT INTO facts (text, subject_id, source, recorded_at) VALUES (?1, ?2, ?3, ?4)",
                    params![text, id, source, at],
                )
                .map_err(sql)?;
            }
            tx.execute("UPDATE entities SET updated_at = ?1 WHERE id = ?2", params![at, id]).map_err(sql)?;
            crate::sqlite::commit(tx)?;
            Ok(json!({"entity": entity, "added": observations.len()}))
        })
    }

    /// Adds relations (from, to, type); every entity must exist, or nothing is added.
    pub fn create_relations(
        &self,
        relations: &[(String, String, String)],
    ) -> Result<Value, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let (mut created, mut existing) = (0, 0);
            for (from, to, kind) in relations {
                let (from_id, to_id) = (Self::known(&tx, from)?, Self::known(&tx, to)?);
                let inserted = tx
                    .execute(
                        "INSERT OR IGNORE INTO relations (from_id, to_id, relation_type, created_at) VALUES (?1, ?2, ?3, ?4)",
                        params![from_id, to_id, kind, now()],
                    )
                    .map_err(sql)?;
                if inserted == 1 { created += 1 } else { existing += 1 }
            }
            crate::sqlite::commit(tx)?;
            Ok(json!({"created": created, "existing": existing}))
        })
    }

    /// Deletes entities with their observations and relations.
    pub fn delete_entities(&self, names: &[String]) -> Result<Value, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let (mut deleted, mut missing) = (Vec::new(), Vec::new());
            for name in names {
                match tx
                    .execute("DELETE FROM entities WHERE name = ?1", [name])
                    .map_err(sql)?
                {
                    0 => missing.push(name.clone()),
                    _ => deleted.push(name.clone()),
                }
            }
            crate::sqlite::commit(tx)?;
            Ok(json!({"deleted": deleted, "missing": missing}))
        })
    }

    /// Entities whose name contains `name` and/or whose type is `kind`, with their
    /// observations and relations.
    pub fn query_entities(
        &self,
        name: Option<&str>,
        kind: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Value>, String> {
        self.with(|conn| {
            let pattern = name.map(|n| format!("%{}%", n.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
            let mut select = conn
                .prepare_cached(
                    "SELECT id, name, entity_type, updated_at FROM entities
                     WHERE (?1 IS NULL OR name LIKE ?1 ESCAPE '\\') AND (?2 IS NULL OR entity_type = ?2)
                     ORDER BY name LIMIT ?3",
                )
                .map_err(sql)?;
            let rows: Vec<(i64, String, String, i64)> = select
                .query_map(params![pattern, kind, limit as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })
                .map_err(sql)?
                .collect::<Result<_, _>>()
                .map_err(sql)?;
            let mut found = Vec::new();
            for (id, name, kind, updated) in rows {
                let mut observations = conn
                    .prepare_cached("SELECT text FROM facts WHERE subject_id = ?1 ORDER BY id")
                    .map_err(sql)?;
                let observations: Vec<String> = observations
                    .query_map([id], |row| row.get(0))
                    .map_err(sql)?
                    .collect::<Result<_, _>>()
                    .map_err(sql)?;
                let mut relations = conn
                    .prepare_cached(
                        "SELECT a.name, b.name, r.relation_type FROM relations r
                         JOIN entities a ON a.id = r.from_id JOIN entities b ON b.id = r.to_id
                         WHERE r.from_id = ?1 OR r.to_id = ?1 ORDER BY r.id",
                    )
                    .map_err(sql)?;
                let relations: Vec<Value> = relations
                    .query_map([id], |row| {
                        Ok(json!({"from": row.get::<_, String>(0)?, "to": row.get::<_, String>(1)?, "relation_type": row.get::<_, String>(2)?}))
                    })
                    .map_err(sql)?
                    .collect::<Result<_, _>>()
                    .map_err(sql)?;
                found.push(json!({"name": name, "entity_type": kind, "updated_at": updated,
                    "observations": observations, "relations": relations}));
            }
            Ok(found)
        })
    }

    /// Records facts (text, subject, source); returns their ids.
    pub fn add_facts(
        &self,
        facts: &[(String, Option<String>, Option<String>)],
    ) -> Result<Vec<i64>, String> {
        self.with(|conn| {
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let mut ids = Vec::with_capacity(facts.len());
            let at = now();
            for (text, subject, source) in facts {
                let subject_id = match subject {
                    Some(name) => Some(Self::known(&tx, name)?),
                    None => None,
                };
                tx.execute(
                    "INSERT INTO facts (text, subject_id, source, recorded_at) VALUES (?1, ?2, ?3, ?4)",
                    params![text, subject_id, source, at],
                )
                .map_err(sql)?;
                ids.push(tx.last_insert_rowid());
            }
            crate::sqlite::commit(tx)?;
            Ok(ids)
        })
    }

    /// Full-text search over facts, best first, with snippets.
    pub fn search_facts(&self, query: &str, limit: usize) -> Result<Vec<Value>, String> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut search = conn
                .prepare_cached(
                    "SELECT f.id, f.text, m.snip, e.name, f.source, f.recorded_at, m.rank
                     FROM (SELECT rowid, snippet(facts_fts, 0, '[', ']', '…', 12) AS snip, rank
                           FROM facts_fts WHERE facts_fts MATCH ?1 ORDER BY rank LIMIT ?2) AS m
                     JOIN facts f ON f.id = m.rowid
                     LEFT JOIN entities e ON e.id = f.subject_id
                     ORDER BY m.rank",
                )
                .map_err(sql)?;
            let rows = search
                .query_map(params![fts, limit as i64], |row| {
                    Ok(json!({
                        "id": row.get::<_, i64>(0)?,
                        "text": row.get::<_, String>(1)?,
                        "snippet": row.get::<_, String>(2)?,
                        "subject": row.get::<_, Option<String>>(3)?,
                        "source": row.get::<_, Option<String>>(4)?,
                        "recorded_at": row.get::<_, i64>(5)?,
                        "score": -row.get::<_, f64>(6)?,
                    }))
                })
                .map_err(sql)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql)?;
            Ok(rows)
        })
    }

    pub fn put_summary(&self, session: &str, summary: &str) -> Result<(), String> {
        self.with(|conn| {
            crate::cancel::ensure_running()?;
            conn.execute(
                "INSERT INTO summaries (session_id, summary, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
                params![session, summary, now()],
            )
            .map_err(sql)?;
            Ok(())
        })
    }

    pub fn get_summary(&self, session: &str) -> Result<Option<(String, i64)>, String> {
        self.with(|conn| {
            conn.query_row(
                "SELECT summary, updated_at FROM summaries WHERE session_id = ?1",
                [session],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(sql)
        })
    }

    pub fn search_sessions(&self, query: &str, limit: usize) -> Result<Vec<Value>, String> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut search = conn
                .prepare_cached(
                    "SELECT s.session_id, m.snip, s.updated_at, m.rank
                     FROM (SELECT rowid, snippet(summaries_fts, 0, '[', ']', '…', 12) AS snip, rank
                           FROM summaries_fts WHERE summaries_fts MATCH ?1 ORDER BY rank LIMIT ?2) AS m
                     JOIN summaries s ON s.rowid = m.rowid
                     ORDER BY m.rank",
                )
                .map_err(sql)?;
            let rows = search
                .query_map(params![fts, limit as i64], |row| {
                    Ok(json!({
                        "session_id": row.get::<_, String>(0)?,
                        "snippet": row.get::<_, String>(1)?,
                        "updated_at": row.get::<_, i64>(2)?,
                        "score": -row.get::<_, f64>(3)?,
                    }))
                })
                .map_err(sql)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql)?;
            Ok(rows)
        })
    }
}
