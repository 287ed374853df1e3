//! The audit ledger on PostgreSQL (`[storage] url`): one hash chain per deployment, shared by
//! every replica.
//!
//! Each replica's writer appends a batch in one transaction: it locks the chain's head
//! (`SELECT … FROM ledger_head … FOR UPDATE`), hashes the rows onto the head, inserts them
//! in one multi-row `INSERT … SELECT FROM UNNEST(…)`, moves the head and commits; only then
//! are the rows counted as written. Call ids already on record (a replayed journal, or a
//! commit whose answer was lost with the connection) are left out: rows fresh from calls go
//! in without a lookup, and `UNIQUE (call_id)` refusing one sends the batch again with every
//! id looked up first ([`Recorded`]), as after opening and after a failed batch. Two replicas therefore take
//! turns on the head, and the chain stays one line: `UNIQUE (prev_hash)` refuses a second
//! successor of any row (a fork) whatever a writer does, and a trigger refuses UPDATE,
//! DELETE and TRUNCATE.
//!
//! The journal in front of it is the same as SQLite's ([`crate::Ledger`]); a failed append
//! (the server restarting, the connection lost) keeps its rows and is tried again with
//! backoff ([`crate::backoff`]).
//!
//! Code map: `migrate` (versioned schema), `verify` (walk the chain), `browse` (the
//! console's pages), this file (connect, append, read rows).

pub mod browse;
pub mod migrate;
pub mod tls;
mod verify;

use std::collections::HashSet;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};

pub use deadpool_postgres::Pool;
pub use tls::Target;
pub use verify::{verify, verify_with_progress};

use crate::store::Filter;
use crate::{ChainStore, LedgerEntry, LedgerError};

/// The one chain of a deployment (the head table is keyed so more could exist).
pub(crate) const CHAIN: &str = "main";

/// How long connecting may take before the attempt fails (unless the URL says).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The error's own words: the server's message (with its detail) when there is one.
pub fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let said = match db.detail() {
                Some(detail) => format!("{} ({detail})", db.message()),
                None => db.message().to_owned(),
            };
            // pg_hba.conf's `cert` (or `clientcert=`) and no certificate, or one for
            // another user.
            if db.message().contains("client certificate")
                || db
                    .message()
                    .starts_with("certificate authentication failed")
            {
                format!(
                    "{said}: give its client certificate with [storage] tls_cert and tls_key \
                     (CN = the user)"
                )
            } else {
                said
            }
        }
        None => match std::error::Error::source(error) {
            // `sslmode=require` and the server said no to TLS.
            Some(source) if source.to_string() == "server does not support TLS" => {
                "the server does not offer TLS, and [storage] url says sslmode=require".to_owned()
            }
            // Already in an operator's words (`tls::TlsError`).
            Some(source) if source.is::<tls::TlsError>() => source.to_string(),
            // A TLS 1.3 server's refusal of our certificate, met on the first read.
            Some(source) => match source
                .downcast_ref::<std::io::Error>()
                .and_then(tls::client_cert_refusal)
            {
                Some(refused) => refused,
                None => format!("{error}: {source}"),
            },
            None => error.to_string(),
        },
    }
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> LedgerError {
    move |error| LedgerError::Postgres(format!("{what}: {}", describe(&error)))
}

fn pool_error(error: deadpool_postgres::PoolError) -> LedgerError {
    match error {
        deadpool_postgres::PoolError::Backend(error) => pg("connect")(error),
        other => LedgerError::Postgres(format!("connect: {other}")),
    }
}

/// A pool of connections to the URL (none is opened yet), over TLS as its `sslmode` says
/// ([`tls`]). The URL is never repeated in an error: it may hold a password.
pub fn pool(url: &str, size: usize) -> Result<Pool, LedgerError> {
    let target = Target::parse(url)?;
    let manager = Manager::from_config(
        target.config().clone(),
        target.connector(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .create_timeout(Some(CONNECT_TIMEOUT))
        .wait_timeout(Some(CONNECT_TIMEOUT * 2))
        .build()
        .map_err(|error| LedgerError::Postgres(format!("cannot make a connection pool: {error}")))
}

/// A connection taken from a pool (it goes back when dropped).
pub type Pooled = deadpool_postgres::Object;

/// A connection from the pool.
pub async fn connect(pool: &Pool) -> Result<Pooled, LedgerError> {
    pool.get().await.map_err(pool_error)
}

/// A read-only transaction that sees one snapshot of the database for all its queries
/// (repeatable read): what another transaction committed is seen whole or not at all.
pub async fn read_snapshot(
    client: &mut tokio_postgres::Client,
) -> Result<tokio_postgres::Transaction<'_>, tokio_postgres::Error> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
}

/// This gateway, as the `replica` column names it: host and process id.
pub fn replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    format!("{host}:{}", std::process::id())
}

/// Text PostgreSQL accepts: it stores no NUL character, which JSON strings may hold; the
/// hashed entry keeps the original (escaped), verification compares through this too.
pub(crate) fn clean(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

fn clean_opt(text: Option<&String>) -> Option<String> {
    text.map(|t| clean(t))
}

/// The columns of a batch, one array each, for `INSERT … SELECT FROM UNNEST`.
#[derive(Default)]
struct Columns {
    id: Vec<i64>,
    call_id: Vec<String>,
    started_ms: Vec<i64>,
    agent: Vec<Option<String>>,
    session: Vec<Option<String>>,
    tier: Vec<Option<String>>,
    exposed: Vec<String>,
    server: Vec<Option<String>>,
    tool: Vec<Option<String>>,
    args_digest: Vec<Option<String>>,
    args_redacted: Vec<Option<String>>,
    outcome: Vec<String>,
    error: Vec<Option<String>>,
    duration_us: Vec<i64>,
    cost: Vec<f64>,
    approval: Vec<Option<String>>,
    result_bytes: Vec<Option<i64>>,
    cached: Vec<bool>,
    entry: Vec<String>,
    prev_hash: Vec<String>,
    row_hash: Vec<String>,
}

impl Columns {
    fn push(&mut self, id: i64, entry: &LedgerEntry, canonical: &str, prev: &str, hash: &str) {
        self.id.push(id);
        self.call_id.push(clean(&entry.call_id));
        self.started_ms.push(entry.started_ms);
        self.agent.push(clean_opt(entry.agent.as_ref()));
        self.session.push(clean_opt(entry.session.as_ref()));
        self.tier.push(clean_opt(entry.tier.as_ref()));
        self.exposed.push(clean(&entry.exposed));
        self.server.push(clean_opt(entry.server.as_ref()));
        self.tool.push(clean_opt(entry.tool.as_ref()));
        self.args_digest.push(clean_opt(entry.args_digest.as_ref()));
        self.args_redacted
            .push(entry.args_redacted.as_ref().map(|v| clean(&v.to_string())));
        self.outcome.push(clean(&entry.outcome));
        self.error.push(clean_opt(entry.error.as_ref()));
        self.duration_us.push(entry.duration_us);
        self.cost.push(entry.cost);
        self.approval.push(clean_opt(entry.approval.as_ref()));
        self.result_bytes.push(entry.result_bytes);
        self.cached.push(entry.cached);
        self.entry.push(clean(canonical));
        self.prev_hash.push(prev.to_owned());
        self.row_hash.push(hash.to_owned());
    }
}

const INSERT: &str =
    "INSERT INTO mcp_tool_invocations (id, call_id, started_ms, agent, session, tier,
    exposed, server, tool, args_digest, args_redacted, outcome, error, duration_us, cost, approval,
    result_bytes, cached, entry, prev_hash, row_hash, replica)
    SELECT *, $22::text FROM UNNEST($1::int8[], $2::text[], $3::int8[], $4::text[], $5::text[],
    $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
    $13::text[], $14::int8[], $15::float8[], $16::text[], $17::int8[], $18::bool[], $19::text[],
    $20::text[], $21::text[])";

/// Whether a batch's call ids may be on record already, which decides how [`append`] goes
/// about leaving them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Rows fresh from calls: inserted without looking them up first; `UNIQUE (call_id)`
    /// refuses the batch if one is on record after all (a commit whose answer was lost),
    /// and it is done again as [`Recorded::Maybe`].
    Unlikely,
    /// A journal replayed, or a batch tried again: every id is looked up first.
    Maybe,
}

/// Appends `rows` to the chain in one transaction (see the module's doc); returns how many
/// were new. All or nothing: on an error nothing of the batch is on record, and the head
/// has not moved.
pub async fn append(
    client: &mut deadpool_postgres::Object,
    rows: &[(&LedgerEntry, &str)],
    replica: &str,
    recorded: Recorded,
) -> Result<usize, LedgerError> {
    if recorded == Recorded::Unlikely {
        match append_once(client, rows, replica, Recorded::Unlikely).await {
            Err(Appended::Duplicate) => {}
            Err(Appended::Failed(error)) => return Err(error),
            Ok(added) => return Ok(added),
        }
    }
    append_once(client, rows, replica, Recorded::Maybe)
        .await
        .map_err(|error| match error {
            Appended::Failed(error) => error,
            // Refused twice: a row with that id came in between (another replica replayed
            // the same journal); the next try looks again.
            Appended::Duplicate => LedgerError::Postgres(
                "insert rows: a call id was recorded by another writer meanwhile".to_owned(),
            ),
        })
}

/// Why one transaction of [`append`] did not commit.
enum Appended {
    /// `UNIQUE (call_id)` refused a row: look the ids up and try again.
    Duplicate,
    Failed(LedgerError),
}

impl From<LedgerError> for Appended {
    fn from(error: LedgerError) -> Self {
        Self::Failed(error)
    }
}

/// The one constraint whose refusal means "already on record" (migration 0001).
const CALL_ID_UNIQUE: &str = "mcp_tool_invocations_call_id_key";

async fn append_once(
    client: &mut deadpool_postgres::Object,
    rows: &[(&LedgerEntry, &str)],
    replica: &str,
    recorded: Recorded,
) -> Result<usize, Appended> {
    if rows.is_empty() {
        return Ok(0);
    }
    let tx = client.transaction().await.map_err(pg("begin"))?;
    let head = tx
        .prepare_cached("SELECT seq, row_hash FROM ledger_head WHERE chain = $1 FOR UPDATE")
        .await
        .map_err(pg("lock the chain's head"))?;
    let head = tx
        .query_opt(&head, &[&CHAIN])
        .await
        .map_err(pg("lock the chain's head"))?
        .ok_or_else(|| {
            LedgerError::Schema(
                "the chain's head is missing from ledger_head: run `switchboard migrate`"
                    .to_owned(),
            )
        })?;
    let (mut seq, mut prev): (i64, String) = (
        head.try_get(0).map_err(pg("read the chain's head"))?,
        head.try_get(1).map_err(pg("read the chain's head"))?,
    );
    let ids: Vec<String> = rows
        .iter()
        .map(|(entry, _)| clean(&entry.call_id))
        .collect();
    let mut seen = match recorded {
        Recorded::Unlikely => HashSet::with_capacity(ids.len()),
        Recorded::Maybe => on_record(&tx, &ids).await?,
    };
    let mut columns = Columns::default();
    for ((entry, canonical), id) in rows.iter().zip(&ids) {
        // On record already, or twice in this batch: the first one stands.
        if !seen.insert(id.clone()) {
            continue;
        }
        let hash = crate::store::chain(&prev, canonical);
        seq += 1;
        columns.push(seq, entry, canonical, &prev, &hash);
        prev = hash;
    }
    let added = columns.id.len();
    if added > 0 {
        let insert = tx.prepare_cached(INSERT).await.map_err(pg("insert rows"))?;
        let c = &columns;
        let inserted = tx
            .execute(
                &insert,
                &[
                    &c.id,
                    &c.call_id,
                    &c.started_ms,
                    &c.agent,
                    &c.session,
                    &c.tier,
                    &c.exposed,
                    &c.server,
                    &c.tool,
                    &c.args_digest,
                    &c.args_redacted,
                    &c.outcome,
                    &c.error,
                    &c.duration_us,
                    &c.cost,
                    &c.approval,
                    &c.result_bytes,
                    &c.cached,
                    &c.entry,
                    &c.prev_hash,
                    &c.row_hash,
                    &replica,
                ],
            )
            .await;
        if let Err(error) = inserted {
            let duplicate = error
                .as_db_error()
                .is_some_and(|db| db.constraint() == Some(CALL_ID_UNIQUE));
            return Err(match duplicate {
                true => Appended::Duplicate,
                false => Appended::Failed(pg("insert rows")(error)),
            });
        }
        tx.execute(
            "UPDATE ledger_head SET seq = $2, row_hash = $3 WHERE chain = $1",
            &[&CHAIN, &seq, &prev],
        )
        .await
        .map_err(pg("move the chain's head"))?;
    }
    tx.commit().await.map_err(pg("commit"))?;
    Ok(added)
}

/// The ids of `ids` already on record. Planned for these ids and the table's size now
/// (`plan_cache_mode`): a plan cached while the table was small scans it whole, which a
/// table of millions of rows makes the writer's bottleneck.
async fn on_record(
    tx: &deadpool_postgres::Transaction<'_>,
    ids: &[String],
) -> Result<HashSet<String>, LedgerError> {
    tx.batch_execute("SET LOCAL plan_cache_mode = force_custom_plan")
        .await
        .map_err(pg("look up call ids"))?;
    let present = tx
        .prepare_cached("SELECT call_id FROM mcp_tool_invocations WHERE call_id = ANY($1)")
        .await
        .map_err(pg("look up call ids"))?;
    Ok(tx
        .query(&present, &[&ids])
        .await
        .map_err(pg("look up call ids"))?
        .iter()
        .filter_map(|row| row.try_get::<_, String>(0).ok())
        .collect())
}

/// Matching rows, newest first (as [`crate::store::query`] reads SQLite).
pub async fn query(
    client: &tokio_postgres::Client,
    filter: &Filter,
) -> Result<Vec<LedgerEntry>, LedgerError> {
    let limit = if filter.limit == 0 || filter.tool.is_some() {
        i64::MAX
    } else {
        i64::try_from(filter.limit).unwrap_or(i64::MAX)
    };
    let rows = client
        .query(
            "SELECT entry FROM mcp_tool_invocations
             WHERE ($1::int8 IS NULL OR started_ms >= $1) AND ($2::text IS NULL OR agent = $2)
               AND ($3::text IS NULL OR outcome = $3)
             ORDER BY id DESC LIMIT $4",
            &[&filter.since_ms, &filter.agent, &filter.outcome, &limit],
        )
        .await
        .map_err(pg("read rows"))?;
    let wanted = if filter.limit == 0 {
        usize::MAX
    } else {
        filter.limit
    };
    Ok(rows
        .iter()
        .filter_map(|row| row.try_get::<_, String>(0).ok())
        .filter_map(|text| serde_json::from_str::<LedgerEntry>(&text).ok())
        .filter(|entry| {
            filter
                .tool
                .as_ref()
                .is_none_or(|glob| switchboard_core::agent::glob_match(glob, &entry.exposed))
        })
        .take(wanted)
        .collect())
}

/// The writer thread's side of PostgreSQL: its own single-threaded runtime (the writer is
/// a plain thread, like SQLite's) and a pool that reconnects after a lost connection.
pub struct PostgresStore {
    runtime: tokio::runtime::Runtime,
    pool: Pool,
    replica: String,
    /// How the next batch is appended: ids are looked up first after opening (the journals
    /// of gone processes are replayed then) and after a batch that held ids on record or
    /// failed; fresh rows go in without.
    next: Recorded,
}

impl PostgresStore {
    /// Connects and checks the schema is the one this Switchboard needs. Call it off any
    /// async runtime (the CLI does, on a thread of its own).
    pub fn open(url: &str) -> Result<Self, LedgerError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| {
                LedgerError::Postgres(format!("cannot start the writer's runtime: {error}"))
            })?;
        let pool = pool(url, 2)?;
        runtime.block_on(async {
            let client = connect(&pool).await?;
            migrate::require_current(&client).await
        })?;
        Ok(Self {
            runtime,
            pool,
            replica: replica(),
            next: Recorded::Maybe,
        })
    }
}

impl ChainStore for PostgresStore {
    fn append(&mut self, rows: &[(&LedgerEntry, &str)]) -> Result<usize, LedgerError> {
        let (pool, replica, recorded) = (&self.pool, &self.replica, self.next);
        let result = self.runtime.block_on(async {
            let mut client = connect(pool).await?;
            let result = append(&mut client, rows, replica, recorded).await;
            if result.is_err() {
                // A connection that failed mid-transaction is not given back to the pool.
                let _ = deadpool_postgres::Object::take(client);
            }
            result
        });
        self.next = match result {
            Ok(added) if added == rows.len() => Recorded::Unlikely,
            _ => Recorded::Maybe,
        };
        result
    }

    fn retries(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod append_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
