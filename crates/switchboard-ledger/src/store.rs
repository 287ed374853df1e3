//! The ledger's SQLite file: `mcp_tool_invocations` (one row per call, hash-chained) and
//! `mcp_servers`, in WAL mode; versioned schema; verification of the chain; queries;
//! retention that keeps the chain verifiable through an anchor.

use std::borrow::Cow;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::{LedgerEntry, LedgerError};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS mcp_tool_invocations (
    id INTEGER PRIMARY KEY,
    call_id TEXT NOT NULL UNIQUE,
    started_ms INTEGER NOT NULL,
    agent TEXT, session TEXT, tier TEXT,
    exposed TEXT NOT NULL, server TEXT, tool TEXT,
    args_digest TEXT, args_redacted TEXT,
    outcome TEXT NOT NULL, error TEXT,
    duration_us INTEGER NOT NULL, cost REAL NOT NULL,
    approval TEXT, result_bytes INTEGER, cached INTEGER NOT NULL,
    entry TEXT NOT NULL,
    prev_hash TEXT NOT NULL, row_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS invocations_started ON mcp_tool_invocations(started_ms);
CREATE INDEX IF NOT EXISTS invocations_agent ON mcp_tool_invocations(agent, started_ms);
CREATE TABLE IF NOT EXISTS mcp_servers (
    id TEXT PRIMARY KEY, transport TEXT NOT NULL,
    first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL, status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// The hash before the first row (and after pruning, the anchor replaces it).
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn sql(error: rusqlite::Error) -> LedgerError {
    LedgerError::Database(error.to_string())
}

pub(crate) fn chain(prev: &str, entry: &str) -> String {
    switchboard_core::hex::encode(
        &Sha256::new()
            .chain_update(prev.as_bytes())
            .chain_update([0x1f])
            .chain_update(entry.as_bytes())
            .finalize(),
    )
}

pub fn open(path: &Path) -> Result<Connection, LedgerError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            LedgerError::Database(format!("cannot create {}: {e}", parent.display()))
        })?;
    }
    // Gateways starting at the same moment race to switch a new file to WAL and create the
    // schema; SQLite answers some of those races "locked" without waiting for its busy
    // handler, so the whole setup is tried again for a while.
    let give_up = std::time::Instant::now() + OPEN_PATIENCE;
    let conn = loop {
        match set_up(path) {
            Ok(conn) => break conn,
            Err(error) if is_contention(&error) && std::time::Instant::now() < give_up => {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            Err(error) => {
                return Err(LedgerError::Database(format!(
                    "{}: {error}",
                    path.display()
                )));
            }
        }
    };
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(sql)?;
    if version > 1 {
        return Err(LedgerError::Database(format!(
            "{}: ledger schema version {version} is newer than this Switchboard",
            path.display()
        )));
    }
    conn.pragma_update(None, "user_version", 1).map_err(sql)?;
    Ok(conn)
}

/// How long opening waits out other processes setting the same file up.
const OPEN_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

fn is_contention(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Opens the file in WAL mode and creates the schema (idempotent).
fn set_up(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get::<_, String>(0))?;
    conn.execute_batch("PRAGMA synchronous=NORMAL;")?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

fn last_hash(conn: &Connection) -> Result<String, LedgerError> {
    // Cached: the writer reads the chain's tip once per batch.
    let last: Option<String> = conn
        .prepare_cached("SELECT row_hash FROM mcp_tool_invocations ORDER BY id DESC LIMIT 1")
        .map_err(sql)?
        .query_row([], |row| row.get(0))
        .optional()
        .map_err(sql)?;
    match last {
        Some(hash) => Ok(hash),
        None => anchor(conn),
    }
}

fn anchor(conn: &Connection) -> Result<String, LedgerError> {
    Ok(conn
        .query_row(
            "SELECT value FROM ledger_meta WHERE key = 'anchor'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(sql)?
        .unwrap_or_else(|| GENESIS.to_owned()))
}

/// Inserts a batch in one transaction, extending the chain; a call id already present is
/// skipped (journal replays are idempotent). The transaction takes the write lock up front:
/// a deferred one that read the chain's tip and then tried to write would fail at once,
/// without waiting, whenever another process had written in between.
pub fn insert(conn: &mut Connection, entries: &[LedgerEntry]) -> Result<usize, LedgerError> {
    insert_canonical(
        conn,
        entries
            .iter()
            .map(|entry| (entry, Cow::Owned(entry.canonical()))),
    )
}

/// [`insert`] of entries whose canonical text is already known: the journal line the caller
/// wrote is exactly `LedgerEntry::canonical`, so the writer hashes and stores that text
/// instead of serializing every row a second time.
pub(crate) fn insert_canonical<'a>(
    conn: &mut Connection,
    rows: impl IntoIterator<Item = (&'a LedgerEntry, Cow<'a, str>)>,
) -> Result<usize, LedgerError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    let mut prev = last_hash(&tx)?;
    let mut inserted = 0;
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO mcp_tool_invocations (call_id, started_ms, agent, session, tier, exposed, server, tool,
                 args_digest, args_redacted, outcome, error, duration_us, cost, approval, result_bytes, cached,
                 entry, prev_hash, row_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)
                 ON CONFLICT(call_id) DO NOTHING",
            )
            .map_err(sql)?;
        for (entry, canonical) in rows {
            let hash = chain(&prev, &canonical);
            // A call id already present (a replayed journal line) is left as it is and does
            // not extend the chain: the UNIQUE index answers that, with no lookup of our own.
            let added = insert
                .execute(params![
                    entry.call_id,
                    entry.started_ms,
                    entry.agent,
                    entry.session,
                    entry.tier,
                    entry.exposed,
                    entry.server,
                    entry.tool,
                    entry.args_digest,
                    entry.args_redacted.as_ref().map(|value| value.to_string()),
                    entry.outcome,
                    entry.error,
                    entry.duration_us,
                    entry.cost,
                    entry.approval,
                    entry.result_bytes,
                    entry.cached,
                    canonical.as_ref(),
                    prev,
                    hash,
                ])
                .map_err(sql)?;
            if added == 0 {
                continue;
            }
            prev = hash;
            inserted += 1;
        }
    }
    if inserted > 0 {
        // The head on record: `verify` then sees rows deleted from the end, which leave the
        // rest of the chain whole.
        tx.prepare_cached("INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('head', ?1)")
            .and_then(|mut head| head.execute([&prev]))
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    Ok(inserted)
}

/// What `audit verify` found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VerifyReport {
    pub rows: usize,
    pub ok: bool,
    /// The first problem: the row id and what is wrong.
    pub problem: Option<(i64, String)>,
}

/// Walks the chain from the anchor: an edited row breaks its own hash (or no longer matches
/// its columns), a deleted row breaks the link of the row after it, and rows deleted from
/// the end leave the chain short of the head on record.
pub fn verify(conn: &Connection) -> Result<VerifyReport, LedgerError> {
    verify_with_progress(conn, u64::MAX, &mut |_, _| ())
}

/// [`verify`], telling `progress` (rows checked, rows in all) every `every` rows.
pub fn verify_with_progress(
    conn: &Connection,
    every: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport, LedgerError> {
    // Counted only for someone who listens: a plain `verify` does not read the table twice.
    let total: u64 = if every == u64::MAX {
        0
    } else {
        conn.query_row("SELECT count(*) FROM mcp_tool_invocations", [], |row| {
            row.get::<_, i64>(0)
        })
        .map_err(sql)?
        .try_into()
        .unwrap_or(0)
    };
    let mut prev = anchor(conn)?;
    let mut rows = 0;
    let mut last = 0;
    let mut select = conn
        .prepare("SELECT id, entry, prev_hash, row_hash FROM mcp_tool_invocations ORDER BY id")
        .map_err(sql)?;
    let mut cursor = select.query([]).map_err(sql)?;
    while let Some(row) = cursor.next().map_err(sql)? {
        let (id, entry, prev_hash, row_hash): (i64, String, String, String) = (
            row.get(0).map_err(sql)?,
            row.get(1).map_err(sql)?,
            row.get(2).map_err(sql)?,
            row.get(3).map_err(sql)?,
        );
        rows += 1;
        if (rows as u64).is_multiple_of(every.max(1)) {
            progress(rows as u64, total);
        }
        if prev_hash != prev {
            return Ok(VerifyReport {
                rows,
                ok: false,
                problem: Some((
                    id,
                    "the chain breaks before this row: a row was deleted or reordered".to_owned(),
                )),
            });
        }
        if chain(&prev_hash, &entry) != row_hash {
            return Ok(VerifyReport {
                rows,
                ok: false,
                problem: Some((
                    id,
                    "this row was edited: its hash does not match its content".to_owned(),
                )),
            });
        }
        let stored: Option<LedgerEntry> = serde_json::from_str(&entry).ok();
        let columns_match = stored.is_some_and(|e| columns_match(conn, id, &e));
        if !columns_match {
            return Ok(VerifyReport {
                rows,
                ok: false,
                problem: Some((
                    id,
                    "this row was edited: its columns do not match the hashed entry".to_owned(),
                )),
            });
        }
        prev = row_hash;
        last = id;
    }
    let head: Option<String> = conn
        .query_row(
            "SELECT value FROM ledger_meta WHERE key = 'head'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?;
    if head.is_some_and(|head| head != prev) {
        return Ok(VerifyReport {
            rows,
            ok: false,
            problem: Some((
                last,
                "the chain ends before the last row written: rows after this one were deleted"
                    .to_owned(),
            )),
        });
    }
    Ok(VerifyReport {
        rows,
        ok: true,
        problem: None,
    })
}

/// Whether row `id`'s columns (what queries, filters and the console read) are those of
/// its hashed entry.
fn columns_match(conn: &Connection, id: i64, e: &LedgerEntry) -> bool {
    type Columns = (
        (
            String,
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
        ),
        (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            String,
        ),
        (Option<String>, i64, f64, Option<String>, Option<i64>, bool),
    );
    let read = conn.query_row(
        "SELECT call_id, started_ms, agent, session, tier, exposed, server, tool, args_digest,
                args_redacted, outcome, error, duration_us, cost, approval, result_bytes, cached
         FROM mcp_tool_invocations WHERE id = ?1",
        [id],
        |r| -> rusqlite::Result<Columns> {
            Ok((
                (
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ),
                (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?),
                (
                    r.get(11)?,
                    r.get(12)?,
                    r.get(13)?,
                    r.get(14)?,
                    r.get(15)?,
                    r.get(16)?,
                ),
            ))
        },
    );
    let Ok((who, what, how)) = read else {
        return false;
    };
    let redacted = what
        .3
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>);
    let redacted_matches = match (redacted, &e.args_redacted) {
        (None, None) => true,
        (Some(Ok(column)), Some(hashed)) => column == **hashed,
        _ => false,
    };
    who == (
        e.call_id.clone(),
        e.started_ms,
        e.agent.clone(),
        e.session.clone(),
        e.tier.clone(),
        e.exposed.clone(),
    ) && (what.0, what.1, what.2, what.4)
        == (
            e.server.clone(),
            e.tool.clone(),
            e.args_digest.clone(),
            e.outcome.clone(),
        )
        && redacted_matches
        && how
            == (
                e.error.clone(),
                e.duration_us,
                e.cost,
                e.approval.clone(),
                e.result_bytes,
                e.cached,
            )
}

/// Deletes rows older than `older_than_ms` and beyond `max_rows`, remembering the hash of
/// the last deleted row as the anchor so the rest still verifies.
pub fn prune(
    conn: &mut Connection,
    older_than_ms: Option<i64>,
    max_rows: Option<i64>,
) -> Result<usize, LedgerError> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    let total: i64 = tx
        .query_row("SELECT COUNT(*) FROM mcp_tool_invocations", [], |r| {
            r.get(0)
        })
        .map_err(sql)?;
    let by_age: i64 = match older_than_ms {
        Some(cutoff) => tx
            .query_row(
                "SELECT COUNT(*) FROM mcp_tool_invocations WHERE started_ms < ?1",
                [cutoff],
                |r| r.get(0),
            )
            .map_err(sql)?,
        None => 0,
    };
    let by_count = max_rows.map_or(0, |max| (total - max).max(0));
    let drop = by_age.max(by_count);
    if drop == 0 {
        return Ok(0);
    }
    let last: Option<(i64, String)> = tx
        .query_row(
            "SELECT id, row_hash FROM mcp_tool_invocations ORDER BY id LIMIT 1 OFFSET ?1",
            [drop - 1],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    if let Some((id, hash)) = last {
        tx.execute("DELETE FROM mcp_tool_invocations WHERE id <= ?1", [id])
            .map_err(sql)?;
        tx.execute(
            "INSERT OR REPLACE INTO ledger_meta (key, value) VALUES ('anchor', ?1)",
            [hash],
        )
        .map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    Ok(usize::try_from(drop).unwrap_or(0))
}

/// Which rows a query wants.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub since_ms: Option<i64>,
    pub agent: Option<String>,
    /// A glob over exposed names (`*` and `?`).
    pub tool: Option<String>,
    pub outcome: Option<String>,
    pub limit: usize,
}

/// Matching rows, newest first.
pub fn query(conn: &Connection, filter: &Filter) -> Result<Vec<LedgerEntry>, LedgerError> {
    let mut select = conn
        .prepare(
            "SELECT entry FROM mcp_tool_invocations
             WHERE (?1 IS NULL OR started_ms >= ?1) AND (?2 IS NULL OR agent = ?2) AND (?3 IS NULL OR outcome = ?3)
             ORDER BY id DESC",
        )
        .map_err(sql)?;
    let mut cursor = select
        .query(params![filter.since_ms, filter.agent, filter.outcome])
        .map_err(sql)?;
    let mut found = Vec::new();
    let limit = if filter.limit == 0 {
        usize::MAX
    } else {
        filter.limit
    };
    while let Some(row) = cursor.next().map_err(sql)? {
        let text: String = row.get(0).map_err(sql)?;
        let Ok(entry) = serde_json::from_str::<LedgerEntry>(&text) else {
            continue;
        };
        if let Some(glob) = &filter.tool
            && !switchboard_core::agent::glob_match(glob, &entry.exposed)
        {
            continue;
        }
        found.push(entry);
        if found.len() >= limit {
            break;
        }
    }
    Ok(found)
}

/// Records a server's state.
pub fn record_server(
    conn: &Connection,
    id: &str,
    transport: &str,
    status: &str,
    now_ms: i64,
) -> Result<(), LedgerError> {
    conn.execute(
        "INSERT INTO mcp_servers (id, transport, first_seen_ms, last_seen_ms, status) VALUES (?1, ?2, ?3, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET transport = excluded.transport, last_seen_ms = excluded.last_seen_ms, status = excluded.status",
        params![id, transport, now_ms, status],
    )
    .map_err(sql)?;
    Ok(())
}
