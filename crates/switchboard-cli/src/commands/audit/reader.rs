//! What `audit` reads: the SQLite file or the PostgreSQL of `[storage] url`, each first
//! brought up to date with the journals of gateways that crashed (or still run) here, so
//! every answered call is seen.

use std::path::{Path, PathBuf};

use switchboard_ledger::{Filter, Ledger, LedgerEntry, VerifyReport, postgres, store};

pub(super) enum Reader {
    Sqlite {
        conn: rusqlite::Connection,
        path: PathBuf,
    },
    Postgres(postgres::Pooled),
}

impl Reader {
    pub(super) fn sqlite(path: &Path) -> anyhow::Result<Self> {
        if !path.exists() {
            anyhow::bail!(
                "no ledger at {} yet: it is created when the gateway serves its first call",
                path.display()
            );
        }
        let mut conn = store::open(path)?;
        // Rows a crashed (or still running) gateway journaled but did not insert yet.
        switchboard_ledger::catch_up(&mut conn, path)?;
        Ok(Self::Sqlite {
            conn,
            path: path.to_owned(),
        })
    }

    pub(super) async fn postgres(url: &str, journal_base: &Path) -> anyhow::Result<Self> {
        Ledger::catch_up_postgres(url, journal_base)?;
        let pool = postgres::pool(url, 1)?;
        Ok(Self::Postgres(postgres::connect(&pool).await?))
    }

    /// How reports name the ledger (never the URL: it may hold a password).
    pub(super) fn name(&self) -> String {
        match self {
            Self::Sqlite { path, .. } => path.display().to_string(),
            Self::Postgres(_) => "on PostgreSQL ([storage] url)".to_owned(),
        }
    }

    pub(super) async fn verify(&mut self) -> anyhow::Result<VerifyReport> {
        Ok(match self {
            Self::Sqlite { conn, .. } => store::verify(conn)?,
            Self::Postgres(client) => postgres::verify(client).await?,
        })
    }

    pub(super) async fn query(&self, filter: &Filter) -> anyhow::Result<Vec<LedgerEntry>> {
        Ok(match self {
            Self::Sqlite { conn, .. } => store::query(conn, filter)?,
            Self::Postgres(client) => postgres::query(client, filter).await?,
        })
    }
}
