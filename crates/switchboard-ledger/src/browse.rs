//! Reading the ledger a page at a time, for the operator's console: keyset pages newest
//! first (by row id, so a page costs the same at row 10 and at row 10 million), one row with
//! its place in the hash chain, per-agent totals over a time window, and one tool's recent
//! durations. Reads only: it never writes, and opens nothing itself.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use crate::{LedgerEntry, LedgerError};

fn sql(error: rusqlite::Error) -> LedgerError {
    LedgerError::Database(error.to_string())
}

/// Which rows a page wants.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageQuery {
    pub agent: Option<String>,
    /// An exposed name, or a glob of them (`*`, `?`).
    pub tool: Option<String>,
    pub outcome: Option<String>,
    /// Rows that started at or after this (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Rows that started before this.
    pub until_ms: Option<i64>,
    /// Rows older than this row id (the previous page's last id); `None`: the newest.
    pub before_id: Option<i64>,
    /// Rows a page holds (at least 1).
    pub limit: usize,
}

/// A row as stored: its id, its entry, and its links in the hash chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredRow {
    pub id: i64,
    pub entry: LedgerEntry,
    pub prev_hash: String,
    pub row_hash: String,
}

/// One page, newest first, and the id to ask the next one with (`None`: this is the last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    pub rows: Vec<StoredRow>,
    pub next_before: Option<i64>,
}

const FILTER: &str = "(?1 IS NULL OR id < ?1) AND (?2 IS NULL OR agent = ?2)
     AND (?3 IS NULL OR exposed GLOB ?3) AND (?4 IS NULL OR outcome = ?4)
     AND (?5 IS NULL OR started_ms >= ?5) AND (?6 IS NULL OR started_ms < ?6)";

fn stored(row: &rusqlite::Row<'_>) -> rusqlite::Result<Option<StoredRow>> {
    let text: String = row.get(1)?;
    Ok(serde_json::from_str::<LedgerEntry>(&text)
        .ok()
        .map(|entry| StoredRow {
            id: row.get(0).unwrap_or_default(),
            entry,
            prev_hash: row.get(2).unwrap_or_default(),
            row_hash: row.get(3).unwrap_or_default(),
        }))
}

/// The rows `query` asks for, newest first. A row whose entry does not parse is left out
/// (`verify` is what reports it).
pub fn page(conn: &Connection, query: &PageQuery) -> Result<Page, LedgerError> {
    let limit = query.limit.max(1);
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations WHERE {FILTER}
             ORDER BY id DESC LIMIT ?7"
        ))
        .map_err(sql)?;
    let fetched = select
        .query_map(
            params![
                query.before_id,
                query.agent,
                query.tool,
                query.outcome,
                query.since_ms,
                query.until_ms,
                i64::try_from(limit + 1).unwrap_or(i64::MAX),
            ],
            |row| Ok((row.get::<_, i64>(0)?, stored(row)?)),
        )
        .map_err(sql)?;
    let mut ids = Vec::new();
    let mut rows = Vec::new();
    for fetched in fetched {
        let (id, row) = fetched.map_err(sql)?;
        ids.push(id);
        if ids.len() <= limit
            && let Some(row) = row
        {
            rows.push(row);
        }
    }
    let next_before = (ids.len() > limit).then(|| ids[limit - 1]);
    Ok(Page { rows, next_before })
}

/// Every row `query` asks for, oldest first, handed to `each` one at a time (the export).
/// `before_id` and `limit` are ignored.
pub fn each(
    conn: &Connection,
    query: &PageQuery,
    mut each: impl FnMut(&StoredRow) -> bool,
) -> Result<usize, LedgerError> {
    let mut select = conn
        .prepare(&format!(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations WHERE {FILTER}
             ORDER BY id"
        ))
        .map_err(sql)?;
    let mut cursor = select
        .query(params![
            None::<i64>,
            query.agent,
            query.tool,
            query.outcome,
            query.since_ms,
            query.until_ms,
        ])
        .map_err(sql)?;
    let mut handed = 0;
    while let Some(row) = cursor.next().map_err(sql)? {
        if let Some(row) = stored(row).map_err(sql)? {
            handed += 1;
            if !each(&row) {
                break;
            }
        }
    }
    Ok(handed)
}

/// One row by id.
pub fn row(conn: &Connection, id: i64) -> Result<Option<StoredRow>, LedgerError> {
    conn.query_row(
        "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations WHERE id = ?1",
        [id],
        stored,
    )
    .optional()
    .map(Option::flatten)
    .map_err(sql)
}

/// One agent's calls in a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentTotals {
    /// `None`: callers without an agent.
    pub agent: Option<String>,
    pub calls: u64,
    pub denied: u64,
    pub rate_limited: u64,
    /// The cost charged, the unit of quotas.
    pub cost: f64,
}

/// Per-agent totals of the calls that started at or after `since_ms` (configuration changes
/// left out).
pub fn agent_totals(conn: &Connection, since_ms: i64) -> Result<Vec<AgentTotals>, LedgerError> {
    let mut select = conn
        .prepare_cached(
            "SELECT agent, COUNT(*), SUM(outcome = 'denied'), SUM(outcome = 'rate_limited'),
                    TOTAL(cost)
             FROM mcp_tool_invocations
             WHERE started_ms >= ?1 AND outcome NOT LIKE 'config\\_%' ESCAPE '\\'
             GROUP BY agent ORDER BY agent",
        )
        .map_err(sql)?;
    let totals = select
        .query_map([since_ms], |row| {
            Ok(AgentTotals {
                agent: row.get(0)?,
                calls: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                denied: u64::try_from(row.get::<_, Option<i64>>(2)?.unwrap_or(0)).unwrap_or(0),
                rate_limited: u64::try_from(row.get::<_, Option<i64>>(3)?.unwrap_or(0))
                    .unwrap_or(0),
                cost: row.get(4)?,
            })
        })
        .map_err(sql)?;
    totals.collect::<Result<_, _>>().map_err(sql)
}

/// One call's start and duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub started_ms: i64,
    pub duration_us: i64,
    pub ok: bool,
}

/// The last `limit` calls of the exposed tool `name` that reached its server, oldest first.
pub fn timings(conn: &Connection, name: &str, limit: usize) -> Result<Vec<Timing>, LedgerError> {
    let mut select = conn
        .prepare_cached(
            "SELECT started_ms, duration_us, outcome FROM mcp_tool_invocations
             WHERE exposed = ?1 AND outcome IN ('ok', 'tool_error', 'timed_out', 'upstream_error')
             ORDER BY id DESC LIMIT ?2",
        )
        .map_err(sql)?;
    let found = select
        .query_map(
            params![name, i64::try_from(limit).unwrap_or(i64::MAX)],
            |row| {
                Ok(Timing {
                    started_ms: row.get(0)?,
                    duration_us: row.get(1)?,
                    ok: row.get::<_, String>(2)? == "ok",
                })
            },
        )
        .map_err(sql)?;
    let mut timings: Vec<Timing> = found.collect::<Result<_, _>>().map_err(sql)?;
    timings.reverse();
    Ok(timings)
}

/// The last call of each server that succeeded, and the last that failed, with its error.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerCalls {
    pub server: String,
    pub last_ok_ms: Option<i64>,
    pub last_error_ms: Option<i64>,
    pub last_error: Option<String>,
    /// Calls and failed calls that started at or after the window's start.
    pub calls: u64,
    pub failed: u64,
}

/// [`ServerCalls`] of every server with calls, failures counted since `since_ms`.
pub fn server_calls(conn: &Connection, since_ms: i64) -> Result<Vec<ServerCalls>, LedgerError> {
    const FAILED: &str = "('tool_error', 'timed_out', 'upstream_down', 'upstream_error')";
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT server,
                    MAX(CASE WHEN outcome = 'ok' THEN started_ms END),
                    MAX(CASE WHEN outcome IN {FAILED} THEN started_ms END),
                    SUM(started_ms >= ?1 AND outcome IN ('ok', {inner})),
                    SUM(started_ms >= ?1 AND outcome IN {FAILED})
             FROM mcp_tool_invocations WHERE server IS NOT NULL AND tool IS NOT NULL
             GROUP BY server ORDER BY server",
            inner = &FAILED[1..FAILED.len() - 1],
        ))
        .map_err(sql)?;
    let rows = select
        .query_map([since_ms], |row| {
            Ok(ServerCalls {
                server: row.get(0)?,
                last_ok_ms: row.get(1)?,
                last_error_ms: row.get(2)?,
                last_error: None,
                calls: u64::try_from(row.get::<_, Option<i64>>(3)?.unwrap_or(0)).unwrap_or(0),
                failed: u64::try_from(row.get::<_, Option<i64>>(4)?.unwrap_or(0)).unwrap_or(0),
            })
        })
        .map_err(sql)?;
    let mut servers: Vec<ServerCalls> = rows.collect::<Result<_, _>>().map_err(sql)?;
    let mut error_of = conn
        .prepare_cached(&format!(
            "SELECT error FROM mcp_tool_invocations WHERE server = ?1 AND outcome IN {FAILED}
             ORDER BY id DESC LIMIT 1"
        ))
        .map_err(sql)?;
    for server in servers.iter_mut().filter(|s| s.last_error_ms.is_some()) {
        server.last_error = error_of
            .query_row([&server.server], |row| row.get(0))
            .optional()
            .map_err(sql)?
            .flatten();
    }
    Ok(servers)
}
