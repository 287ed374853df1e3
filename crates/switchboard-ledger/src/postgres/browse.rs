//! [`crate::browse`] on PostgreSQL, for the console: keyset pages newest first, one row
//! with its links in the chain, the filtered rows oldest first for export, and the rows the
//! running figures count (`tally_rows`). Reads only.
//! A tool glob (`*`, `?`) becomes a `LIKE` pattern.

use tokio_postgres::types::ToSql;

use super::describe;
use crate::browse::{Page, PageQuery, StoredRow};
use crate::tally::{TallyPlan, TallyRow};
use crate::{LedgerEntry, LedgerError};

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> LedgerError {
    move |error| LedgerError::Postgres(format!("{what}: {}", describe(&error)))
}

/// A glob over exposed names as a `LIKE` pattern (`\` escapes).
fn like(glob: &str) -> String {
    let mut pattern = String::with_capacity(glob.len());
    for c in glob.chars() {
        match c {
            '*' => pattern.push('%'),
            '?' => pattern.push('_'),
            '%' | '_' | '\\' => {
                pattern.push('\\');
                pattern.push(c);
            }
            c => pattern.push(c),
        }
    }
    pattern
}

type Values = Vec<Box<dyn ToSql + Sync + Send>>;

/// The conditions of `query`'s filters, their values numbered from `$first`.
fn filter(query: &PageQuery, first: usize) -> (Vec<String>, Values) {
    let mut clauses = Vec::new();
    let mut values: Values = Vec::new();
    let mut add = |clause: &str, value: Box<dyn ToSql + Sync + Send>| {
        clauses.push(clause.replace('?', &format!("${}", first + values.len())));
        values.push(value);
    };
    if let Some(agent) = &query.agent {
        add("agent = ?", Box::new(agent.clone()));
    }
    if let Some(tool) = &query.tool {
        add("exposed LIKE ?", Box::new(like(tool)));
    }
    if let Some(outcome) = &query.outcome {
        add("outcome = ?", Box::new(outcome.clone()));
    }
    if let Some(since) = query.since_ms {
        add("started_ms >= ?", Box::new(since));
    }
    if let Some(until) = query.until_ms {
        add("started_ms < ?", Box::new(until));
    }
    (clauses, values)
}

fn where_clause(clauses: &[String]) -> String {
    if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    }
}

fn stored(row: &tokio_postgres::Row) -> Option<StoredRow> {
    let entry: String = row.try_get(1).ok()?;
    Some(StoredRow {
        id: row.try_get(0).ok()?,
        entry: serde_json::from_str::<LedgerEntry>(&entry).ok()?,
        prev_hash: row.try_get(2).ok()?,
        row_hash: row.try_get(3).ok()?,
    })
}

fn params(values: &Values) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// The rows `query` asks for, newest first: by start time with an agent (its index), by id
/// otherwise, as on SQLite.
pub async fn page(client: &tokio_postgres::Client, query: &PageQuery) -> Result<Page, LedgerError> {
    let limit = query.limit.max(1);
    let by_agent = query.agent.is_some();
    let (mut clauses, mut values) = filter(query, 1);
    if let Some((started, id)) = query.before {
        if by_agent {
            values.push(Box::new(started));
            values.push(Box::new(id));
            clauses.push(format!(
                "(started_ms, id) < (${}, ${})",
                values.len() - 1,
                values.len()
            ));
        } else {
            values.push(Box::new(id));
            clauses.push(format!("id < ${}", values.len()));
        }
    }
    let clause = where_clause(&clauses);
    let order = if by_agent {
        "started_ms DESC, id DESC"
    } else {
        "id DESC"
    };
    let sql = format!(
        "SELECT id, entry, prev_hash, row_hash, started_ms FROM mcp_tool_invocations {clause}
         ORDER BY {order} LIMIT {}",
        limit + 1
    );
    let fetched = client
        .query(&sql, &params(&values))
        .await
        .map_err(pg("read a page"))?;
    let keys: Vec<(i64, i64)> = fetched
        .iter()
        .filter_map(|row| Some((row.try_get(4).ok()?, row.try_get(0).ok()?)))
        .collect();
    let rows = fetched.iter().take(limit).filter_map(stored).collect();
    let next_before = (fetched.len() > limit)
        .then(|| keys.get(limit - 1).copied())
        .flatten();
    Ok(Page { rows, next_before })
}

/// One page of an export: the rows `query` filters whose id is above `after`, oldest first,
/// at most `limit` of them (`before` and the query's own `limit` are ignored), and the last id
/// read — a row whose entry does not parse is left out but still moves the next page on;
/// `None`: no row is left. Rows above `upto` (the [`last_id`] when the export began) are not
/// read, so an export of a busy ledger ends.
pub async fn export_page(
    client: &tokio_postgres::Client,
    query: &PageQuery,
    after: i64,
    upto: i64,
    limit: i64,
) -> Result<(Vec<StoredRow>, Option<i64>), LedgerError> {
    // `$1` and `$2` are the keyset: the filters' values are numbered after them.
    let (mut clauses, filters) = filter(query, 3);
    clauses.insert(0, "id > $1 AND id <= $2".to_owned());
    let clause = where_clause(&clauses);
    let mut values: Values = vec![Box::new(after), Box::new(upto)];
    values.extend(filters);
    values.push(Box::new(limit.max(1)));
    let sql = format!(
        "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations {clause}
         ORDER BY id LIMIT ${}",
        values.len()
    );
    let fetched = client
        .query(&sql, &params(&values))
        .await
        .map_err(pg("read rows"))?;
    let last = fetched.last().and_then(|row| row.try_get::<_, i64>(0).ok());
    Ok((fetched.iter().filter_map(stored).collect(), last))
}

/// The id of the newest row (0 when there is none): where an export that begins now ends.
pub async fn last_id(client: &tokio_postgres::Client) -> Result<i64, LedgerError> {
    let row = client
        .query_one(
            "SELECT coalesce(max(id), 0)::int8 FROM mcp_tool_invocations",
            &[],
        )
        .await
        .map_err(pg("read the newest row's id"))?;
    row.try_get(0).map_err(pg("read the newest row's id"))
}

/// One row by id.
pub async fn row(
    client: &tokio_postgres::Client,
    id: i64,
) -> Result<Option<StoredRow>, LedgerError> {
    Ok(client
        .query_opt(
            "SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations WHERE id = $1",
            &[&id],
        )
        .await
        .map_err(pg("read a row"))?
        .as_ref()
        .and_then(stored))
}

/// The rows a [`crate::tally::Tally`] refresh must count ([`crate::tally::Tally::plan`]), in
/// id order, and the newest row id there was when they were read (the chain's head).
pub async fn tally_rows(
    client: &tokio_postgres::Client,
    plan: &TallyPlan,
) -> Result<(Vec<TallyRow>, i64), LedgerError> {
    let head: i64 = client
        .query_opt(
            "SELECT seq FROM ledger_head WHERE chain = $1",
            &[&super::CHAIN],
        )
        .await
        .map_err(pg("read the chain's head"))?
        .and_then(|row| row.try_get(0).ok())
        .unwrap_or(0);
    const COLUMNS: &str =
        "SELECT id, started_ms, agent, server, exposed, outcome, error, duration_us, cost
         FROM mcp_tool_invocations";
    let rows = match plan.after_id {
        Some(after) => {
            client
                .query(
                    &format!("{COLUMNS} WHERE id > $1 AND id <= $2 ORDER BY id"),
                    &[&after, &head],
                )
                .await
        }
        None => {
            client
                .query(
                    &format!("{COLUMNS} WHERE started_ms >= $1 AND id <= $2 ORDER BY id"),
                    &[&plan.horizon_ms, &head],
                )
                .await
        }
    }
    .map_err(pg("read rows for the figures"))?;
    let rows = rows
        .iter()
        .filter_map(|row| {
            Some(TallyRow {
                id: row.try_get(0).ok()?,
                started_ms: row.try_get(1).ok()?,
                agent: row.try_get(2).ok()?,
                server: row.try_get(3).ok()?,
                exposed: row.try_get(4).ok()?,
                outcome: row.try_get(5).ok()?,
                error: row.try_get(6).ok()?,
                duration_us: row.try_get(7).ok()?,
                cost: row.try_get(8).ok()?,
            })
        })
        .collect();
    Ok((rows, head))
}
