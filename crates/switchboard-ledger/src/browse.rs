//! Reading the ledger a page at a time, for the operator's console: keyset pages newest
//! first (a page goes on from where the last one ended, so it costs the same at row 10 and
//! at row 10 million), the filtered rows oldest first for export, and one row with its place
//! in the hash chain. The running figures (per agent, per server, per tool) are
//! [`crate::tally`]'s. Reads only: it never writes, and opens nothing itself.

use rusqlite::{Connection, OptionalExtension};
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
    /// Where the previous page ended: its last row's start time (ms) and id; `None`: the
    /// newest.
    pub before: Option<(i64, i64)>,
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

/// One page, newest first, and where the next one starts (`None`: this is the last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    pub rows: Vec<StoredRow>,
    pub next_before: Option<(i64, i64)>,
}

/// The order a page walks the ledger in. With an agent, the agent's index of start times
/// (its rows only, newest first); without one, the table itself by row id (the order rows
/// were written, which is their order in time but for calls that overlapped), which a
/// filter on tool or outcome tests row by row without the random reads an index of start
/// times would make. The ledger's schema gets no index for the console: each would cost
/// every call's row on the writer.
fn by_agent_index(query: &PageQuery) -> bool {
    query.agent.is_some()
}

/// The `WHERE` clause of `query` (only the filters it has, so SQLite picks the index that
/// serves them) and its parameters.
fn filter(query: &PageQuery, keyset: bool) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    if let Some((started, id)) = query.before.filter(|_| keyset) {
        values.push(Value::Integer(started));
        values.push(Value::Integer(id));
        if by_agent_index(query) {
            clauses.push("(started_ms, id) < (?1, ?2)".to_owned());
        } else {
            clauses.push("id < ?2".to_owned());
        }
    }
    let mut add = |clause: &str, value: Value| {
        values.push(value);
        clauses.push(clause.replace('?', &format!("?{}", values.len())));
    };
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
    let (table, order) = if by_agent_index(query) {
        ("mcp_tool_invocations", "started_ms DESC, id DESC")
    } else {
        ("mcp_tool_invocations NOT INDEXED", "id DESC")
    };
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT id, entry, prev_hash, row_hash, started_ms FROM {table} {clause}
             ORDER BY {order} LIMIT {}",
            limit + 1
        ))
        .map_err(sql)?;
    let fetched = select
        .query_map(rusqlite::params_from_iter(values), |row| {
            Ok(((row.get::<_, i64>(0)?, row.get::<_, i64>(4)?), stored(row)?))
        })
        .map_err(sql)?;
    let mut keys = Vec::new();
    let mut rows = Vec::new();
    for fetched in fetched {
        let (key, row) = fetched.map_err(sql)?;
        keys.push(key);
        if keys.len() <= limit
            && let Some(row) = row
        {
            rows.push(row);
        }
    }
    let next_before = (keys.len() > limit).then(|| {
        let (id, started) = keys[limit - 1];
        (started, id)
    });
    Ok(Page { rows, next_before })
}

/// One page of an export: the rows `query` filters whose id is above `after`, oldest first,
/// at most `limit` of them (`before` and the query's own `limit` are ignored), and the last id
/// read — a row whose entry does not parse is left out but still moves the next page on;
/// `None`: no row is left. Each page is its own read, so an export holds one page at a time
/// and no read stays open while its reader is slow; rows above `upto` (the [`last_id`] when
/// the export began) are not read, so an export of a busy ledger ends.
pub fn export_page(
    conn: &Connection,
    query: &PageQuery,
    after: i64,
    upto: i64,
    limit: usize,
) -> Result<(Vec<StoredRow>, Option<i64>), LedgerError> {
    let (clause, mut values) = filter(query, false);
    values.push(rusqlite::types::Value::Integer(after));
    values.push(rusqlite::types::Value::Integer(upto));
    let keyset = format!("id > ?{} AND id <= ?{}", values.len() - 1, values.len());
    let clause = match clause.is_empty() {
        true => format!("WHERE {keyset}"),
        false => format!("{clause} AND {keyset}"),
    };
    // Walked by rowid: through the agent index SQLite would read and sort all of an agent's
    // remaining rows for every page — quadratic over an export.
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations NOT INDEXED {clause}
             ORDER BY id LIMIT {}",
            limit.max(1)
        ))
        .map_err(sql)?;
    let mut cursor = select
        .query(rusqlite::params_from_iter(values))
        .map_err(sql)?;
    let mut rows = Vec::new();
    let mut last = None;
    while let Some(row) = cursor.next().map_err(sql)? {
        last = Some(row.get::<_, i64>(0).map_err(sql)?);
        if let Some(row) = stored(row).map_err(sql)? {
            rows.push(row);
        }
    }
    Ok((rows, last))
}

/// The id of the newest row (0 when there is none): where an export that begins now ends.
pub fn last_id(conn: &Connection) -> Result<i64, LedgerError> {
    conn.query_row(
        "SELECT coalesce(max(id), 0) FROM mcp_tool_invocations",
        [],
        |row| row.get(0),
    )
    .map_err(sql)
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
