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

/// The `WHERE` clause of `query` (only the filters it has, so SQLite walks the row id range
/// of a keyset page instead of testing every row) and its parameters.
fn filter(query: &PageQuery, keyset: bool) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    let mut add = |clause: &str, value: Value| {
        values.push(value);
        clauses.push(clause.replace('?', &format!("?{}", values.len())));
    };
    if let Some(before) = query.before_id.filter(|_| keyset) {
        add("id < ?", Value::Integer(before));
    }
    if let Some(agent) = &query.agent {
        add("agent = ?", Value::Text(agent.clone()));
    }
    if let Some(tool) = &query.tool {
        add("exposed GLOB ?", Value::Text(tool.clone()));
    }
    if let Some(outcome) = &query.outcome {
        add("outcome = ?", Value::Text(outcome.clone()));
    }
    if let Some(since) = query.since_ms {
        add("started_ms >= ?", Value::Integer(since));
    }
    if let Some(until) = query.until_ms {
        add("started_ms < ?", Value::Integer(until));
    }
    if clauses.is_empty() {
        return (String::new(), values);
    }
    (format!("WHERE {}", clauses.join(" AND ")), values)
}

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
    let (clause, values) = filter(query, true);
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations {clause}
             ORDER BY id DESC LIMIT {}",
            limit + 1
        ))
        .map_err(sql)?;
    let fetched = select
        .query_map(rusqlite::params_from_iter(values), |row| {
            Ok((row.get::<_, i64>(0)?, stored(row)?))
        })
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
    let (clause, values) = filter(query, false);
    let mut select = conn
        .prepare(&format!(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations {clause} ORDER BY id"
        ))
        .map_err(sql)?;
    let mut cursor = select
        .query(rusqlite::params_from_iter(values))
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

/// `agent`'s totals (`None`: callers without an agent) of the calls that started at or after
/// `since_ms`, configuration changes left out. Read from an index alone.
pub fn agent_totals(
    conn: &Connection,
    agent: Option<&str>,
    since_ms: i64,
) -> Result<AgentTotals, LedgerError> {
    let mut select = conn
        .prepare_cached(
            "SELECT COUNT(*), SUM(outcome = 'denied'), SUM(outcome = 'rate_limited'), TOTAL(cost)
             FROM mcp_tool_invocations INDEXED BY invocations_agent_outcome
             WHERE agent IS ?1 AND started_ms >= ?2 AND outcome NOT LIKE 'config\\_%' ESCAPE '\\'",
        )
        .map_err(sql)?;
    let count = |value: Option<i64>| u64::try_from(value.unwrap_or(0)).unwrap_or(0);
    select
        .query_row(params![agent, since_ms], |row| {
            Ok(AgentTotals {
                agent: agent.map(str::to_owned),
                calls: count(row.get(0)?),
                denied: count(row.get(1)?),
                rate_limited: count(row.get(2)?),
                cost: row.get(3)?,
            })
        })
        .map_err(sql)
}

/// One call's start and duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    pub started_ms: i64,
    pub duration_us: i64,
    pub ok: bool,
}

/// Rows [`timings`] looks through, newest first: its cost stays bounded however long the
/// ledger grows.
pub const TIMINGS_SCAN: i64 = 50_000;

/// The last `limit` calls of the exposed tool `name` that reached its server, among the
/// ledger's latest [`TIMINGS_SCAN`] rows, oldest first.
pub fn timings(conn: &Connection, name: &str, limit: usize) -> Result<Vec<Timing>, LedgerError> {
    let mut select = conn
        .prepare_cached(
            "SELECT started_ms, duration_us, outcome FROM mcp_tool_invocations
             WHERE id > (SELECT IFNULL(MAX(id), 0) FROM mcp_tool_invocations) - ?3
               AND exposed = ?1 AND outcome IN ('ok', 'tool_error', 'timed_out', 'upstream_error')
             ORDER BY id DESC LIMIT ?2",
        )
        .map_err(sql)?;
    let found = select
        .query_map(
            params![name, i64::try_from(limit).unwrap_or(i64::MAX), TIMINGS_SCAN],
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

/// Outcomes that count as a failed call of a server.
const FAILED: [&str; 4] = ["tool_error", "timed_out", "upstream_down", "upstream_error"];

/// `server`'s last success and failure (with its error), and its calls and failed calls
/// that started at or after `since_ms`. Read from an index, a few seeks per outcome.
pub fn server_calls(
    conn: &Connection,
    server: &str,
    since_ms: i64,
) -> Result<ServerCalls, LedgerError> {
    let mut latest = conn
        .prepare_cached(
            "SELECT MAX(started_ms) FROM mcp_tool_invocations WHERE server = ?1 AND outcome = ?2",
        )
        .map_err(sql)?;
    let mut since = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM mcp_tool_invocations
             WHERE server = ?1 AND outcome = ?2 AND started_ms >= ?3",
        )
        .map_err(sql)?;
    let mut found = ServerCalls {
        server: server.to_owned(),
        ..ServerCalls::default()
    };
    for outcome in std::iter::once("ok").chain(FAILED) {
        let last: Option<i64> = latest
            .query_row(params![server, outcome], |row| row.get(0))
            .map_err(sql)?;
        let calls: i64 = since
            .query_row(params![server, outcome, since_ms], |row| row.get(0))
            .map_err(sql)?;
        let calls = u64::try_from(calls).unwrap_or(0);
        found.calls += calls;
        if outcome == "ok" {
            found.last_ok_ms = last;
        } else {
            found.failed += calls;
            found.last_error_ms = found.last_error_ms.max(last);
        }
    }
    if let Some(at) = found.last_error_ms {
        found.last_error = conn
            .prepare_cached(
                "SELECT error FROM mcp_tool_invocations
                 WHERE server = ?1 AND started_ms = ?2 AND outcome IN ('tool_error', 'timed_out', 'upstream_down', 'upstream_error')
                 ORDER BY id DESC LIMIT 1",
            )
            .map_err(sql)?
            .query_row(params![server, at], |row| row.get(0))
            .optional()
            .map_err(sql)?
            .flatten();
    }
    Ok(found)
}
