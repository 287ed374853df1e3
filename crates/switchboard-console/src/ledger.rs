//! The audit ledger as the console reads it: a read-only SQLite connection per request, on
//! the blocking pool, so a long query never holds a runtime thread and nothing here can
//! write.

use std::path::PathBuf;

use rusqlite::{Connection, OpenFlags};

use crate::error::ConsoleError;

/// Runs `read` on a read-only connection to the ledger at `path` (`None`: no ledger, which
/// `read` is not called for).
pub(crate) async fn read<T: Send + 'static>(
    path: Option<PathBuf>,
    read: impl FnOnce(&Connection) -> Result<T, ConsoleError> + Send + 'static,
) -> Result<Option<T>, ConsoleError> {
    let Some(path) = path else {
        return Ok(None);
    };
    tokio::task::spawn_blocking(move || {
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|error| ConsoleError::Ledger(format!("{}: {error}", path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|error| ConsoleError::Ledger(error.to_string()))?;
        read(&conn).map(Some)
    })
    .await
    .map_err(|error| ConsoleError::Ledger(format!("the read failed: {error}")))?
}
