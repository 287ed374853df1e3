//! The audit export streamed: the filtered rows are read a page at a time ([`PAGE_ROWS`]),
//! each page its own read of the ledger (SQLite or PostgreSQL), and written to the body as
//! the client takes it. So an export of a million rows holds one page, never all of them,
//! and no read stays open while the client is slow.
//!
//! The export holds the rows there were when it began (up to the newest row's id then): on a
//! busy gateway a download slower than the calls would otherwise never end. The first page
//! is read before the answer starts, so a ledger that cannot be read is an error status; a
//! failure later cuts the body short (a download that does not end well).

use axum::body::{Body, Bytes};
use switchboard_ledger::browse::{self, PageQuery, StoredRow};
use switchboard_ledger::postgres;

use crate::Console;
use crate::error::ConsoleError;

/// How many rows one page of an export reads.
pub(crate) const PAGE_ROWS: usize = 1_000;

/// The rows `query` filters, oldest first, one JSON object a line, as a body that reads the
/// ledger page by page while it is sent. Empty when there is no ledger.
pub(crate) async fn body(console: Console, query: PageQuery) -> Result<Body, ConsoleError> {
    let Some(upto) = last_id(&console).await? else {
        return Ok(Body::empty());
    };
    let Some((first, after)) = next_page(&console, &query, 0, upto).await? else {
        return Ok(Body::empty());
    };
    let rest = futures::stream::try_unfold(Some(after), move |after| {
        let (console, query) = (console.clone(), query.clone());
        async move {
            let Some(after) = after else {
                return Ok(None);
            };
            Ok(next_page(&console, &query, after, upto)
                .await?
                .map(|(lines, last)| (lines, Some(last))))
        }
    });
    let first = futures::stream::once(std::future::ready(Ok::<_, ConsoleError>(first)));
    Ok(Body::from_stream(futures::StreamExt::chain(first, rest)))
}

/// The newest row's id now; `None`: no ledger.
async fn last_id(console: &Console) -> Result<Option<i64>, ConsoleError> {
    if let Some(pool) = &console.shared.postgres {
        let client = postgres::connect(pool).await?;
        return Ok(Some(postgres::browse::last_id(&client).await?));
    }
    let read = crate::ledger::read(console.shared.ledger.clone(), |conn| {
        Ok(browse::last_id(conn)?)
    });
    read.await
}

/// The lines of the page after row `after` (up to row `upto`), and the last id it read;
/// `None`: no row is left, or no ledger.
async fn next_page(
    console: &Console,
    query: &PageQuery,
    after: i64,
    upto: i64,
) -> Result<Option<(Bytes, i64)>, ConsoleError> {
    let (rows, last) = if let Some(pool) = &console.shared.postgres {
        let client = postgres::connect(pool).await?;
        let limit = i64::try_from(PAGE_ROWS).unwrap_or(i64::MAX);
        postgres::browse::export_page(&client, query, after, upto, limit).await?
    } else {
        let query = query.clone();
        let read = crate::ledger::read(console.shared.ledger.clone(), move |conn| {
            Ok(browse::export_page(conn, &query, after, upto, PAGE_ROWS)?)
        });
        match read.await? {
            Some(page) => page,
            None => return Ok(None),
        }
    };
    Ok(last.map(|last| (lines(&rows), last)))
}

/// `rows` as JSON lines.
fn lines(rows: &[StoredRow]) -> Bytes {
    let mut out = Vec::with_capacity(rows.len() * 512);
    for row in rows {
        if serde_json::to_writer(&mut out, row).is_ok() {
            out.push(b'\n');
        }
    }
    Bytes::from(out)
}
