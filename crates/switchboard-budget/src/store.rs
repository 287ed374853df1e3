//! Persistence of latency windows per (environment, tool) in SQLite, so a restart does not
//! forget what each tool costs here.
//!
//! **Environment.** The same tool measures 10 ms locally and 300 ms as a remote API, so stats
//! are kept per environment: a configured name, by default `<hostname>/<transport>` (e.g.
//! `studio-pc/stdio`) — [`Environment::default_for`]. The host name comes from `$HOSTNAME`,
//! else `/proc/sys/kernel/hostname`, else `/etc/hostname`, else `localhost`.
//!
//! **Storage.** One table, `latency_samples(environment, tool, seq, latency_us, outcome)`, in
//! WAL mode (readers never block the writer). It may share a database file with other
//! Switchboard tables: it only ever touches its own. Saving a window replaces that tool's rows
//! in one transaction. Rows with an unknown outcome code are skipped on load: a damaged row
//! must not stop the gateway from starting.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, params};

use crate::book::LatencyBook;
use crate::window::{LatencyWindow, Outcome, Sample};

/// Where stats are kept apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Environment(String);

impl Environment {
    /// A configured environment name.
    pub fn named(name: &str) -> Self {
        Self(name.to_owned())
    }

    /// `<host>/<transport>`.
    pub fn from_host(host: &str, transport: &str) -> Self {
        Self(format!("{host}/{transport}"))
    }

    /// The default: this machine's host name and the transport (see the module doc).
    pub fn default_for(transport: &str) -> Self {
        Self::from_host(&hostname(), transport)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn hostname() -> String {
    let from_env = std::env::var("HOSTNAME").ok();
    let from_files = || {
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok())
    };
    from_env
        .or_else(from_files)
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("latency store: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS latency_samples (
    environment TEXT NOT NULL,
    tool TEXT NOT NULL,
    seq INTEGER NOT NULL,
    latency_us INTEGER NOT NULL,
    outcome INTEGER NOT NULL,
    PRIMARY KEY (environment, tool, seq)
) WITHOUT ROWID;
";

/// The SQLite store of latency windows.
#[derive(Debug)]
pub struct LatencyStore {
    connection: Connection,
}

impl LatencyStore {
    /// Opens (creating) the database at `path` in WAL mode.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let connection = Connection::open(path)?;
        // Waiting for other gateways first: switching a new file to WAL needs it alone.
        connection.busy_timeout(Duration::from_secs(5))?;
        connection
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        Self::with_connection(connection)
    }

    /// An in-memory store (tests, `--no-persist`).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::with_connection(Connection::open_in_memory()?)
    }

    fn with_connection(connection: Connection) -> Result<Self, StoreError> {
        connection.execute_batch(SCHEMA)?;
        Ok(Self { connection })
    }

    /// Replaces the stored window of one tool.
    pub fn save_window(
        &mut self,
        environment: &Environment,
        tool: &str,
        window: &LatencyWindow,
    ) -> Result<(), StoreError> {
        let transaction = self.connection.transaction()?;
        write_window(&transaction, environment, tool, window)?;
        transaction.commit()?;
        Ok(())
    }

    /// Saves every tool of a book in one transaction.
    pub fn save_book(
        &mut self,
        environment: &Environment,
        book: &LatencyBook,
    ) -> Result<usize, StoreError> {
        let transaction = self.connection.transaction()?;
        let mut saved = 0;
        for name in book.names() {
            if let Some(tool) = book.tool(name) {
                write_window(&transaction, environment, name, tool.window())?;
                saved += 1;
            }
        }
        transaction.commit()?;
        Ok(saved)
    }

    /// The stored samples of one tool, oldest first (empty when none).
    pub fn load_samples(
        &self,
        environment: &Environment,
        tool: &str,
    ) -> Result<Vec<Sample>, StoreError> {
        let mut statement = self.connection.prepare_cached(
            "SELECT latency_us, outcome FROM latency_samples
             WHERE environment = ?1 AND tool = ?2 ORDER BY seq",
        )?;
        let rows = statement.query_map(params![environment.as_str(), tool], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
        })?;
        let mut samples = Vec::new();
        for row in rows {
            if let Some(sample) = decode(row?) {
                samples.push(sample);
            }
        }
        Ok(samples)
    }

    /// The tools with stored samples in `environment`, sorted.
    pub fn tools(&self, environment: &Environment) -> Result<Vec<String>, StoreError> {
        let mut statement = self.connection.prepare_cached(
            "SELECT DISTINCT tool FROM latency_samples WHERE environment = ?1 ORDER BY tool",
        )?;
        let rows = statement.query_map(params![environment.as_str()], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Restores every stored tool of `environment` into `book`; returns how many.
    pub fn load_into(
        &self,
        environment: &Environment,
        book: &mut LatencyBook,
    ) -> Result<usize, StoreError> {
        let tools = self.tools(environment)?;
        for tool in &tools {
            book.restore(tool, self.load_samples(environment, tool)?);
        }
        Ok(tools.len())
    }
}

fn write_window(
    connection: &Connection,
    environment: &Environment,
    tool: &str,
    window: &LatencyWindow,
) -> Result<(), StoreError> {
    connection.execute(
        "DELETE FROM latency_samples WHERE environment = ?1 AND tool = ?2",
        params![environment.as_str(), tool],
    )?;
    let mut insert = connection.prepare_cached(
        "INSERT INTO latency_samples (environment, tool, seq, latency_us, outcome)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (seq, sample) in window.samples().enumerate() {
        let micros = i64::try_from(sample.latency.as_micros()).unwrap_or(i64::MAX);
        insert.execute(params![
            environment.as_str(),
            tool,
            seq as i64,
            micros,
            i64::from(sample.outcome.code())
        ])?;
    }
    Ok(())
}

fn decode((micros, code): (i64, i64)) -> Option<Sample> {
    let outcome = Outcome::from_code(u8::try_from(code).ok()?)?;
    let latency = Duration::from_micros(u64::try_from(micros).ok()?);
    Some(Sample { latency, outcome })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::BudgetConfig;
    use crate::tiers::{Placement, TierId};
    use tokio::time::Instant;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn stats_survive_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("switchboard.db");
        let here = Environment::from_host("studio", "stdio");
        let elsewhere = Environment::named("cloud");
        let now = Instant::now();
        let mut book = LatencyBook::new(BudgetConfig::default());
        for i in 0..150 {
            let sample = if i % 10 == 0 {
                Sample::error(ms(5))
            } else {
                Sample::ok(ms(100 + i))
            };
            book.record("search", sample, now);
            book.record("dice", Sample::ok(ms(3)), now);
        }
        let before = book.summary("search").expect("measured");
        {
            let mut store = LatencyStore::open(&path).expect("open");
            assert_eq!(store.save_book(&here, &book).expect("save"), 2);
            let mut other = LatencyWindow::new(100);
            other.record(Sample::ok(ms(900)));
            store
                .save_window(&elsewhere, "search", &other)
                .expect("save");
        }

        let store = LatencyStore::open(&path).expect("reopen");
        let mut restored = LatencyBook::new(BudgetConfig::default());
        assert_eq!(store.load_into(&here, &mut restored).expect("load"), 2);
        assert_eq!(restored.summary("search"), Some(before));
        let samples: Vec<_> = restored
            .tool("search")
            .expect("restored")
            .window()
            .samples()
            .collect();
        let original: Vec<_> = book
            .tool("search")
            .expect("recorded")
            .window()
            .samples()
            .collect();
        assert_eq!(samples, original, "same samples in the same order");
        assert_eq!(
            restored.profile("dice").placement,
            Placement::Tier(TierId(0))
        );
        assert_eq!(store.tools(&elsewhere).expect("tools"), vec!["search"]);
        assert_eq!(
            store
                .load_samples(&elsewhere, "search")
                .expect("load")
                .len(),
            1
        );
        assert!(
            store
                .load_samples(&here, "unknown")
                .expect("load")
                .is_empty()
        );
    }

    #[test]
    fn damaged_rows_are_skipped_and_the_default_environment_names_the_transport() {
        let store = LatencyStore::open_in_memory().expect("open");
        let env = Environment::named("e");
        store
            .connection
            .execute(
                "INSERT INTO latency_samples VALUES ('e', 't', 0, 5000, 0), ('e', 't', 1, 7, 99)",
                [],
            )
            .expect("insert");
        assert_eq!(
            store.load_samples(&env, "t").expect("load"),
            vec![Sample::ok(ms(5))]
        );
        let default = Environment::default_for("http");
        assert!(default.as_str().ends_with("/http") && default.as_str().len() > 5);
    }
}
