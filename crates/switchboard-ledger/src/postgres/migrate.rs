//! The PostgreSQL schema's versions: SQL migrations compiled into the binary, applied in
//! order by `switchboard migrate` and recorded in `schema_migrations`.
//!
//! Migrations are applied by the operator's `switchboard migrate`, never by a gateway as it
//! starts: with several replicas starting (or rolling) at once, only one explicit step
//! changes the schema, its output says what changed, and a gateway whose schema is behind
//! (or ahead of) its own refuses to start with a message that names the command. All
//! pending migrations run in one transaction under an advisory lock, so two concurrent
//! `migrate` runs apply each migration once, and a failed one leaves the schema as it was.

use tokio_postgres::Client;

use crate::LedgerError;

/// One schema change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its version: migrations apply in increasing order, each once.
    pub version: i64,
    /// What it does, in a word or two.
    pub name: &'static str,
    sql: &'static str,
}

/// Every migration this Switchboard knows, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "audit ledger",
        sql: include_str!("migrations/0001_ledger.sql"),
    },
    Migration {
        version: 2,
        name: "approvals",
        sql: include_str!("migrations/0002_approvals.sql"),
    },
    Migration {
        version: 3,
        name: "managed configuration",
        sql: include_str!("migrations/0003_managed_config.sql"),
    },
    Migration {
        version: 4,
        name: "agent tokens",
        sql: include_str!("migrations/0004_agent_tokens.sql"),
    },
    Migration {
        version: 5,
        name: "quota spending",
        sql: include_str!("migrations/0005_quota_spending.sql"),
    },
    Migration {
        version: 6,
        name: "latency statistics",
        sql: include_str!("migrations/0006_latency_windows.sql"),
    },
    Migration {
        version: 7,
        name: "server manager operations",
        sql: include_str!("migrations/0007_manager_operations.sql"),
    },
    Migration {
        version: 8,
        name: "server manager limits across replicas",
        sql: include_str!("migrations/0008_manager_agents.sql"),
    },
    Migration {
        version: 9,
        name: "one open operation per new server across replicas",
        sql: include_str!("migrations/0009_manager_adds.sql"),
    },
    Migration {
        version: 10,
        name: "quota spending sent once",
        sql: include_str!("migrations/0010_quota_sends.sql"),
    },
    Migration {
        version: 11,
        name: "quota spending per process",
        sql: include_str!("migrations/0011_quota_spending_per_process.sql"),
    },
];

/// The schema version this Switchboard needs.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Serializes concurrent `migrate` runs (an arbitrary constant: "SWBD").
const LOCK_KEY: i64 = 0x5357_4244;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

fn pg(what: &str) -> impl FnOnce(tokio_postgres::Error) -> LedgerError + '_ {
    move |error| LedgerError::Postgres(format!("{what}: {}", super::describe(&error)))
}

/// Applies the migrations the database lacks; returns them (none when it was up to date).
pub async fn migrate(client: &mut Client) -> Result<Vec<Migration>, LedgerError> {
    let tx = client.transaction().await.map_err(pg("begin"))?;
    // A migration may rewrite a big table, and another replica's waits for it: the
    // sessions' statement and lock timeouts (`tls::SESSION_TIMEOUTS`) are not for it.
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .await
        .map_err(pg("lift the timeouts"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(pg("lock the schema"))?;
    tx.batch_execute(TABLE)
        .await
        .map_err(pg("create schema_migrations"))?;
    let applied = applied_versions(&tx).await?;
    if let Some(newest) = applied.iter().max().filter(|v| **v > latest()) {
        return Err(ahead(*newest));
    }
    let mut done = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| !applied.contains(&m.version)) {
        tx.batch_execute(migration.sql).await.map_err(|error| {
            LedgerError::Postgres(format!(
                "migration {} ({}): {}",
                migration.version,
                migration.name,
                super::describe(&error)
            ))
        })?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .await
        .map_err(pg("record the migration"))?;
        done.push(*migration);
    }
    tx.commit().await.map_err(pg("commit the migrations"))?;
    Ok(done)
}

/// Connects to `url` and applies the migrations it lacks (for tests and tools that hold no
/// pool of their own).
pub async fn migrate_url(url: &str) -> Result<Vec<Migration>, LedgerError> {
    let pool = super::pool(url, 1)?;
    let mut client = super::connect(&pool).await?;
    migrate(&mut client).await
}

/// The versions on record (none when `schema_migrations` does not exist).
async fn applied_versions(
    client: &impl tokio_postgres::GenericClient,
) -> Result<Vec<i64>, LedgerError> {
    let exists = client
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])
        .await
        .map_err(pg("look for schema_migrations"))?
        .try_get::<_, bool>(0)
        .map_err(pg("read schema_migrations"))?;
    if !exists {
        return Ok(Vec::new());
    }
    client
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await
        .map_err(pg("read schema_migrations"))?
        .iter()
        .map(|row| row.try_get(0).map_err(pg("read schema_migrations")))
        .collect()
}

fn ahead(version: i64) -> LedgerError {
    LedgerError::Schema(format!(
        "the database's schema is at version {version}, newer than this Switchboard's {}: \
         upgrade this gateway",
        latest()
    ))
}

/// Fails unless the database holds exactly the schema this Switchboard needs, naming
/// `switchboard migrate` when it is behind.
pub async fn require_current(client: &Client) -> Result<(), LedgerError> {
    let applied = applied_versions(client).await?;
    let missing: Vec<String> = MIGRATIONS
        .iter()
        .filter(|m| !applied.contains(&m.version))
        .map(|m| format!("{} ({})", m.version, m.name))
        .collect();
    if let Some(newest) = applied.iter().max().filter(|v| **v > latest()) {
        return Err(ahead(*newest));
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(LedgerError::Schema(format!(
        "the database's schema is out of date (missing migration {}): run `switchboard migrate` \
         with this config first",
        missing.join(", ")
    )))
}
