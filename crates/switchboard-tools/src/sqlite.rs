//! How the built-ins that keep SQLite files (`memory`, `rules`, `sessions`) open them: the
//! directory created, WAL journaling (readers never wait on a writer; a crash loses nothing
//! committed), a 5 s busy timeout for concurrent writers, `synchronous=NORMAL`. Each store
//! then brings its own schema up to date.

use std::path::Path;

use rusqlite::Connection;

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
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .map_err(|e| format!("{}: {e}", path.display()))?;
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
