//! `switchboard migrate`: creates or upgrades the PostgreSQL schema of `[storage] url` with
//! the migrations compiled into this binary, and says what it applied. Idempotent: a second
//! run applies nothing. Gateways never migrate on their own (they refuse to start on an
//! out-of-date schema and name this command): see `switchboard_ledger::postgres::migrate`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use switchboard_ledger::postgres;

use crate::output::print_line;

#[derive(Debug, clap::Args)]
pub struct MigrateArgs {}

pub async fn run(config: Option<&Path>, _args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let config = super::load_config(config)?;
    let url = super::audit::storage_url(&config).context(
        "the config has no [storage] url: migrations are for the shared PostgreSQL store \
         (the SQLite ledger needs none)",
    )?;
    let pool = postgres::pool(url, 1)?;
    let mut client = postgres::connect(&pool).await?;
    let applied = postgres::migrate::migrate(&mut client).await?;
    if applied.is_empty() {
        print_line(&format!(
            "the schema is up to date (version {})",
            postgres::migrate::latest()
        ))?;
    }
    for migration in &applied {
        print_line(&format!(
            "applied migration {}: {}",
            migration.version, migration.name
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
