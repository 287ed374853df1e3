//! Session turns in the memory database: the table `session_turns` (session, turn number,
//! speaker, text, time in milliseconds) and its FTS5 index `session_turns_fts`, created when
//! missing beside memory's own tables. Memory versions its schema with `PRAGMA user_version`,
//! which belongs to it: these tables never touch it and are only ever created with
//! `IF NOT EXISTS` (a later change must be additive, checked by looking at the tables).
//!
//! Summaries are memory's (`summaries`, written by its `put_summary`); this connection only
//! reads them, to list which sessions have one.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sqlite::sql;
use rusqlite::{Connection, params};
use serde_json::{Value, json};

use crate::memory::store::fts_query;

const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS session_turns (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn INTEGER NOT NULL,
        speaker TEXT NOT NULL,
        text TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        UNIQUE (session_id, turn)
    );
    CREATE VIRTUAL TABLE IF NOT EXISTS session_turns_fts USING fts5(
        speaker, text, content='session_turns', content_rowid='id', tokenize='porter unicode61'
    );
    CREATE TRIGGER IF NOT EXISTS session_turns_ai AFTER INSERT ON session_turns BEGIN
        INSERT INTO session_turns_fts(rowid, speaker, text) VALUES (new.id, new.speaker, new.text);
    END;
    CREATE TRIGGER IF NOT EXISTS session_turns_ad AFTER DELETE ON session_turns BEGIN
        INSERT INTO session_turns_fts(session_turns_fts, rowid, speaker, text)
        VALUES ('delete', old.id, old.speaker, old.text);
    END;
    CREATE TRIGGER IF NOT EXISTS session_turns_au AFTER UPDATE ON session_turns BEGIN
        INSERT INTO session_turns_fts(session_turns_fts, rowid, speaker, text)
        VALUES ('delete', old.id, old.speaker, old.text);
        INSERT INTO session_turns_fts(rowid, speaker, text) VALUES (new.id, new.speaker, new.text);
    END;
";

/// A session's turns in numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnStats {
    pub turns: u64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
}

/// The turns store; safe to share between threads.
pub struct TurnStore {
    conn: Mutex<Connection>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Milliseconds since the epoch as RFC 3339 (UTC, milliseconds).
pub fn time(ms: i64) -> String {
    let at = UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(at).to_string()
}

impl TurnStore {
    /// Opens the file (memory's store has already created it and set WAL mode) and creates
    /// the turns tables when missing.
    pub fn open(path: &Path) -> Result<Self, String> {
        let mut conn = crate::sqlite::open(path)?;
        let tx = crate::sqlite::write_transaction(&mut conn).map_err(sql)?;
        tx.execute_batch(TABLES)
            .map_err(|e| format!("{}: creating the session tables: {e}", path.display()))?;
        tx.commit().map_err(sql)?;
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

    /// Records a turn now; returns its number in the session (from 1) and its time (ms). Not
    /// committed when the call it serves was cancelled ([`crate::sqlite::commit`]).
    pub fn append(&self, session: &str, speaker: &str, text: &str) -> Result<(i64, i64), String> {
        self.with(|conn| {
            // IMMEDIATE: two writers never pick the same turn number.
            let tx = crate::sqlite::write_transaction(conn).map_err(sql)?;
            let turn: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(turn), 0) + 1 FROM session_turns WHERE session_id = ?1",
                    [session],
                    |row| row.get(0),
                )
                .map_err(sql)?;
            let at = now_ms();
            tx.execute(
                "INSERT INTO session_turns (session_id, turn, speaker, text, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![session, turn, speaker, text, at],
            )
            .map_err(sql)?;
            crate::sqlite::commit(tx)?;
            Ok((turn, at))
        })
    }

    /// Full-text search over turns (and speakers), best first, with snippets.
    pub fn search(
        &self,
        query: &str,
        session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Value>, String> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.with(|conn| {
            let mut search = conn
                .prepare_cached(
                    "SELECT t.session_id, t.turn, t.speaker, t.text, t.at_ms,
                            snippet(session_turns_fts, 1, '[', ']', '…', 12),
                            bm25(session_turns_fts, 0.5, 1.0) AS score
                     FROM session_turns_fts JOIN session_turns t ON t.id = session_turns_fts.rowid
                     WHERE session_turns_fts MATCH ?1 AND (?2 IS NULL OR t.session_id = ?2)
                     ORDER BY score LIMIT ?3",
                )
                .map_err(sql)?;
            let rows = search
                .query_map(params![fts, session, limit as i64], |row| {
                    Ok(json!({
                        "session_id": row.get::<_, String>(0)?,
                        "turn": row.get::<_, i64>(1)?,
                        "speaker": row.get::<_, String>(2)?,
                        "text": row.get::<_, String>(3)?,
                        "time": time(row.get(4)?),
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

    /// The number of turns of `session` and the times of its first and last.
    pub fn stats(&self, session: &str) -> Result<TurnStats, String> {
        self.with(|conn| {
            conn.query_row(
                "SELECT count(*), MIN(at_ms), MAX(at_ms) FROM session_turns WHERE session_id = ?1",
                [session],
                |row| {
                    Ok(TurnStats {
                        turns: row.get::<_, i64>(0)? as u64,
                        first_ms: row.get(1)?,
                        last_ms: row.get(2)?,
                    })
                },
            )
            .map_err(sql)
        })
    }

    /// Every session with turns or a summary: `(id, stats, has summary)`, the most recently
    /// active first (a session without turns counts its summary's time), at most `limit`.
    pub fn list(&self, limit: usize) -> Result<Vec<(String, TurnStats, bool)>, String> {
        struct Listed {
            stats: TurnStats,
            summary: bool,
            /// Last activity in ms, then the last turn's row: a tie in time goes to the
            /// later insert.
            recency: (i64, i64),
        }
        self.with(|conn| {
            let mut sessions: BTreeMap<String, Listed> = BTreeMap::new();
            let mut turns = conn
                .prepare_cached(
                    "SELECT session_id, count(*), MIN(at_ms), MAX(at_ms), MAX(id) FROM session_turns GROUP BY session_id",
                )
                .map_err(sql)?;
            let rows = turns
                .query_map([], |row| {
                    let stats = TurnStats {
                        turns: row.get::<_, i64>(1)? as u64,
                        first_ms: row.get(2)?,
                        last_ms: row.get(3)?,
                    };
                    let recency = (stats.last_ms.unwrap_or(0), row.get::<_, i64>(4)?);
                    Ok((row.get::<_, String>(0)?, Listed { stats, summary: false, recency }))
                })
                .map_err(sql)?;
            for row in rows {
                let (id, listed) = row.map_err(sql)?;
                sessions.insert(id, listed);
            }
            let mut summaries = conn
                .prepare_cached("SELECT session_id, updated_at FROM summaries")
                .map_err(sql)?;
            let rows = summaries
                .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
                .map_err(sql)?;
            for row in rows {
                let (id, updated_s) = row.map_err(sql)?;
                sessions
                    .entry(id)
                    .or_insert(Listed {
                        stats: TurnStats { turns: 0, first_ms: None, last_ms: None },
                        summary: false,
                        recency: (updated_s.saturating_mul(1000), 0),
                    })
                    .summary = true;
            }
            let mut listed: Vec<(String, Listed)> = sessions.into_iter().collect();
            listed.sort_by(|a, b| b.1.recency.cmp(&a.1.recency).then_with(|| a.0.cmp(&b.0)));
            Ok(listed
                .into_iter()
                .take(limit)
                .map(|(id, l)| (id, l.stats, l.summary))
                .collect())
        })
    }
}
