//! The audit ledger as the console reads it: a read-only SQLite connection per request, on
//! the blocking pool, so a long query never holds a runtime thread and nothing here can
//! write — or, with `[storage] url`, a pooled PostgreSQL connection for the audit page
//! (`page`, `row`, `verify`, `tally` and the `export` module choose).

use std::path::PathBuf;

use rusqlite::{Connection, OpenFlags};
use switchboard_ledger::VerifyReport;
use switchboard_ledger::browse::{self, Page, PageQuery, StoredRow};
use switchboard_ledger::postgres;

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
    if let Some(pool) = &shared.postgres {
        // Read without the lock held (PostgreSQL is across an await), then counted under
        // it; rows a refresh that ran meanwhile counted are skipped.
        let locked = || {
            shared
                .tally
                .lock()
                .map_err(|_| ConsoleError::Ledger("an earlier read of the tally failed".to_owned()))
        };
        let plan = locked()?.plan(crate::time::now_ms(), keep);
        let client = postgres::connect(pool).await?;
        let (rows, last_id) = postgres::browse::tally_rows(&client, &plan).await?;
        let mut tally = locked()?;
        tally.apply(&plan, rows, last_id);
        return Ok(Some(read(&tally)));
    }
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

/// A page of the audit, from whichever store holds the ledger (`None`: no ledger).
pub(crate) async fn page(
    console: &crate::Console,
    query: PageQuery,
) -> Result<Option<Page>, ConsoleError> {
    if let Some(pool) = &console.shared.postgres {
        let client = postgres::connect(pool).await?;
        return Ok(Some(postgres::browse::page(&client, &query).await?));
    }
    read(console.shared.ledger.clone(), move |conn| {
        Ok(browse::page(conn, &query)?)
    })
    .await
}

/// One row of the audit (`None`: no ledger, or no such row).
pub(crate) async fn row(
    console: &crate::Console,
    id: i64,
) -> Result<Option<StoredRow>, ConsoleError> {
    if let Some(pool) = &console.shared.postgres {
        let client = postgres::connect(pool).await?;
        return Ok(postgres::browse::row(&client, id).await?);
    }
    Ok(read(console.shared.ledger.clone(), move |conn| {
        Ok(browse::row(conn, id)?)
    })
    .await?
    .flatten())
}

/// Walks the chain, telling `progress` (rows checked, rows in all) every `every` rows
/// (`None`: no ledger).
pub(crate) async fn verify(
    console: &crate::Console,
    every: u64,
    mut progress: impl FnMut(u64, u64) + Send + 'static,
) -> Result<Option<VerifyReport>, ConsoleError> {
    // A whole read of the ledger: one at a time (a tab reloaded ten times starts one walk
    // after the other, never ten at once on the blocking pool).
    let Ok(_walking) = console.shared.verifying.try_lock() else {
        return Err(ConsoleError::Refused(
            "a check of the chain is running already: wait for its verdict, then check again"
                .to_owned(),
        ));
    };
    if let Some(pool) = &console.shared.postgres {
        let mut client = postgres::connect(pool).await?;
        return Ok(Some(
            postgres::verify_with_progress(&mut client, every, &mut progress).await?,
        ));
    }
    read(console.shared.ledger.clone(), move |conn| {
        Ok(switchboard_ledger::store::verify_with_progress(
            conn,
            every,
            &mut progress,
        )?)
    })
    .await
}
