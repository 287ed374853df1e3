//! `audit verify` on PostgreSQL: the chain walked from the genesis in id order, in one
//! repeatable-read snapshot, so replicas may keep appending meanwhile.
//!
//! Besides what SQLite's verify checks (each row links to the one before, its hash matches
//! its entry, its columns match the hashed entry), ids must follow one another without a
//! gap, and the chain's head must name the last row: rows deleted from the end of the chain
//! leave a head that points past the table.

use super::{clean, describe, read_snapshot};
use crate::store::{GENESIS, VerifyReport, chain};
use crate::{LedgerEntry, LedgerError};

/// Rows read per round trip.
const PAGE: i64 = 5_000;

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> LedgerError {
    move |error| LedgerError::Postgres(format!("verify: {what}: {}", describe(&error)))
}

fn broken(rows: usize, id: i64, what: impl Into<String>) -> VerifyReport {
    VerifyReport {
        rows,
        ok: false,
        problem: Some((id, what.into())),
    }
}

/// Walks the whole chain; the first problem is reported with its row id.
pub async fn verify(client: &mut tokio_postgres::Client) -> Result<VerifyReport, LedgerError> {
    verify_with_progress(client, u64::MAX, &mut |_, _| ()).await
}

/// [`verify`], telling `progress` (rows checked, rows in all) every `every` rows.
pub async fn verify_with_progress(
    client: &mut tokio_postgres::Client,
    every: u64,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<VerifyReport, LedgerError> {
    let tx = read_snapshot(client).await.map_err(pg("begin"))?;
    let head = tx
        .query_opt(
            "SELECT seq, row_hash FROM ledger_head WHERE chain = $1",
            &[&super::CHAIN],
        )
        .await
        .map_err(pg("read the chain's head"))?;
    let Some(head) = head else {
        return Ok(broken(0, 0, "the chain's head is missing from ledger_head"));
    };
    let (head_seq, head_hash): (i64, String) = (
        head.try_get(0).map_err(pg("read the chain's head"))?,
        head.try_get(1).map_err(pg("read the chain's head"))?,
    );
    let total = u64::try_from(head_seq).unwrap_or(0);
    let mut prev = GENESIS.to_owned();
    let mut last_id = 0i64;
    let mut rows = 0usize;
    loop {
        let page = tx
            .query(
                "SELECT id, entry, prev_hash, row_hash, outcome, exposed, duration_us, agent, error
                 FROM mcp_tool_invocations WHERE id > $1 ORDER BY id LIMIT $2",
                &[&last_id, &PAGE],
            )
            .await
            .map_err(pg("read rows"))?;
        if page.is_empty() {
            break;
        }
        for row in &page {
            let id: i64 = row.try_get(0).map_err(pg("read a row"))?;
            let entry: String = row.try_get(1).map_err(pg("read a row"))?;
            let prev_hash: String = row.try_get(2).map_err(pg("read a row"))?;
            let row_hash: String = row.try_get(3).map_err(pg("read a row"))?;
            rows += 1;
            if (rows as u64).is_multiple_of(every.max(1)) {
                progress(rows as u64, total);
            }
            if id != last_id + 1 {
                return Ok(broken(
                    rows,
                    id,
                    format!(
                        "the chain breaks before this row: rows {} to {} were deleted",
                        last_id + 1,
                        id - 1
                    ),
                ));
            }
            if prev_hash != prev {
                return Ok(broken(
                    rows,
                    id,
                    "the chain breaks before this row: a row was deleted or reordered",
                ));
            }
            if chain(&prev_hash, &entry) != row_hash {
                return Ok(broken(
                    rows,
                    id,
                    "this row was edited: its hash does not match its content",
                ));
            }
            let matches = columns_match(row, &entry);
            if !matches {
                return Ok(broken(
                    rows,
                    id,
                    "this row was edited: its columns do not match the hashed entry",
                ));
            }
            prev = row_hash;
            last_id = id;
        }
    }
    if head_seq != last_id || head_hash != prev {
        return Ok(broken(
            rows,
            last_id + 1,
            format!(
                "the chain's head names row {head_seq} but the chain ends at row {last_id}: \
                 rows were deleted from its end, or the head was edited"
            ),
        ));
    }
    tx.commit().await.map_err(pg("end"))?;
    Ok(VerifyReport {
        rows,
        ok: true,
        problem: None,
    })
}

/// Whether a row's columns say what its hashed entry says (read through [`clean`], as they
/// were written).
fn columns_match(row: &tokio_postgres::Row, entry: &str) -> bool {
    let Ok(stored) = serde_json::from_str::<LedgerEntry>(entry) else {
        return false;
    };
    let outcome: Result<String, _> = row.try_get(4);
    let exposed: Result<String, _> = row.try_get(5);
    let duration: Result<i64, _> = row.try_get(6);
    let agent: Result<Option<String>, _> = row.try_get(7);
    let error: Result<Option<String>, _> = row.try_get(8);
    outcome.is_ok_and(|o| o == clean(&stored.outcome))
        && exposed.is_ok_and(|e| e == clean(&stored.exposed))
        && duration.is_ok_and(|d| d == stored.duration_us)
        && agent.is_ok_and(|a| a == stored.agent.as_deref().map(clean))
        && error.is_ok_and(|e| e == stored.error.as_deref().map(clean))
}
