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

/// How far back the running figures go: a day, or the longest quota window of an agent.
fn keep_ms(host: &switchboard::Host) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    host.config()
        .iter()
        .flat_map(|config| config.agents.values())
        .filter_map(|agent| agent.quota.as_ref())
        .filter_map(|quota| i64::try_from(quota.window.as_millis()).ok())
        .fold(DAY_MS, i64::max)
}

/// Brings the console's tally of the ledger up to date (reading only the rows written since
/// the last look), then answers `read` from it. `None`: no ledger.
pub(crate) async fn tally<T: Send + 'static>(
    console: &crate::Console,
    read: impl FnOnce(&switchboard_ledger::tally::Tally) -> T + Send + 'static,
) -> Result<Option<T>, ConsoleError> {
    let shared = console.shared.clone();
    let keep = keep_ms(&shared.host);
    self::read(shared.ledger.clone(), move |conn| {
        let mut tally = shared
            .tally
            .lock()
            .map_err(|_| ConsoleError::Ledger("an earlier read of the tally failed".to_owned()))?;
        tally.refresh(conn, crate::time::now_ms(), keep)?;
        Ok(read(&tally))
    })
    .await
}
