//! How the built-ins that keep SQLite files (`memory`, `rules`, `sessions`) open them: the
//! directory created, WAL journaling (readers never wait on a writer; a crash loses nothing
//! committed), a 5 s busy timeout for concurrent writers, `synchronous=NORMAL`. Each store
//! then brings its own schema up to date with [`migrate`], and writes in [`write_transaction`]s.

use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The declared bound (`max_duration_ms`) of a tool that touches one of these files: above
/// [`BUSY_TIMEOUT`], so a call waiting its turn behind another writer is not cut off by its
/// own deadline (the bound is the call's hard deadline) while the wait it was promised runs.
pub(crate) const STORE_BOUND_MS: u64 = 6_000;

/// A database error as a tool's readable error text.
pub(crate) fn sql(error: rusqlite::Error) -> String {
    format!("database error: {error}")
}

/// Opens (creating) the file at `path`, set up as the module doc says.
pub(crate) fn open(path: &Path) -> Result<Connection, String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    let conn =
        Connection::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    let started = std::time::Instant::now();
    let mode: String = loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0)) {
            Ok(mode) => break mode,
            // Switching a fresh file to WAL takes a lock the busy handler does not wait for:
            // another connection opening it at that moment fails it at once. Try again, as
            // long as the busy timeout would have waited.
            Err(rusqlite::Error::SqliteFailure(error, _))
                if error.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    };
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!(
            "{}: cannot use WAL mode (got {mode})",
            path.display()
        ));
    }
    conn.execute_batch("PRAGMA synchronous=NORMAL;")
        .map_err(sql)?;
    Ok(conn)
}

/// A transaction that takes the write lock at once (`BEGIN IMMEDIATE`), waiting up to
/// [`BUSY_TIMEOUT`] for another writer. A deferred one that reads first and then writes must
/// upgrade its lock, and SQLite fails that upgrade with "database is locked" at once when
/// another connection wrote in between — the busy handler is not consulted.
pub(crate) fn write_transaction(conn: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
}

/// Commits `tx` unless the call it serves was cancelled (its caller already told it failed:
/// see `crate::cancel`), which rolls it back instead.
pub(crate) fn commit(tx: Transaction<'_>) -> Result<(), String> {
    crate::cancel::ensure_running()?;
    tx.commit().map_err(sql)
}

/// Brings the schema to version `target` by running `migrations[current..target]`, where
/// `current` is `PRAGMA user_version`. Each step reads the version inside its own IMMEDIATE
/// transaction, so processes opening a fresh file together run each migration once (the
/// others wait, then see it done). `what` names the file in errors ("database", "rules
/// database").
pub(crate) fn migrate(
    conn: &mut Connection,
    migrations: &[&str],
    target: usize,
    what: &str,
) -> Result<(), String> {
    loop {
        let tx = write_transaction(conn).map_err(|e| e.to_string())?;
        let current: usize = tx
            .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
            .map_err(|e| e.to_string())?
            .try_into()
            .map_err(|_| "negative schema version".to_owned())?;
        if current > migrations.len() {
            return Err(format!(
                "the {what} has schema version {current}, newer than this Switchboard knows ({}); use a newer Switchboard",
                migrations.len()
            ));
        }
        let Some(sql) = migrations.get(current).filter(|_| current < target) else {
            return Ok(());
        };
        tx.execute_batch(sql)
            .map_err(|e| format!("migration to version {}: {e}", current + 1))?;
        tx.pragma_update(None, "user_version", (current + 1) as i64)
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
    }
}
