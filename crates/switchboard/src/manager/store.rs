//! The operations database of one gateway: every operation (as JSON, with its state for queries) and every
//! server the manager installed (its directory, so removing it uninstalls it), in SQLite
//! beside the ledger. It is opened on first use, so a gateway that never manages a server
//! never creates it; on start an existing one has the operations the last run left
//! unfinished marked failed. [`OperationStore`] is what the manager asks of it, and of the
//! store the replicas of a deployment share on PostgreSQL (`super::postgres`).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::operation::{Operation, State};

/// Why the database could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the operations database {path}: {reason}")]
pub struct StoreError {
    pub path: String,
    pub reason: String,
}

/// A server the manager installed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub server: String,
    /// The registry name and version it came from.
    pub name: String,
    pub version: String,
    /// The directory it was installed into (removed when it is removed).
    pub dir: PathBuf,
    /// The operation that installed it.
    pub operation: String,
    pub installed_ms: u64,
    /// Its keys in the secrets file (removed with it).
    #[serde(default)]
    pub secrets: Vec<String>,
    /// The replica (host:pid) whose disk holds `dir`, when the replicas of a deployment
    /// share their installs (`[storage] url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The agent whose model asked for it, which may remove it again (kept here: the
    /// operation that installed it is pruned from the history in time). Installs recorded
    /// before this field fall back to that operation, while it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// How long finished operations (completed, failed, cancelled) are kept: those older than
/// `days` go, and those beyond the newest `finished` of the store (of the deployment, on
/// PostgreSQL). An open operation is never pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub days: u64,
    pub finished: usize,
}

/// What the manager keeps: 30 days, and at most 2,000 finished operations (as many as a
/// replica's mirror lists).
pub const RETENTION: Retention = Retention {
    days: 30,
    finished: 2000,
};

impl Retention {
    /// The `created_ms` before which a finished operation goes, at `now_ms`.
    pub fn cutoff_ms(self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.days.saturating_mul(24 * 3600 * 1000))
    }

    /// As SQL parameters: the cutoff, and how many of the newest finished are kept.
    pub(crate) fn bounds(self, now_ms: u64) -> (i64, i64) {
        (
            i64::try_from(self.cutoff_ms(now_ms)).unwrap_or(i64::MAX),
            i64::try_from(self.finished).unwrap_or(i64::MAX),
        )
    }
}

/// Where the manager keeps its operations and installs: the SQLite file of one gateway
/// ([`Store`]), or PostgreSQL, shared by the replicas of a deployment
/// (`super::postgres::SharedOperations`).
pub(crate) trait OperationStore {
    /// Saves an operation as it is now (a new one, or a change of one).
    fn save(&self, operation: &Operation) -> Result<(), StoreError>;
    /// The newest `limit` operations, newest first.
    fn recent(&self, limit: usize) -> Result<Vec<Operation>, StoreError>;
    fn get(&self, id: &str) -> Result<Option<Operation>, StoreError>;
    fn record_install(&self, installed: &Installed) -> Result<(), StoreError>;
    fn install_of(&self, server: &str) -> Result<Option<Installed>, StoreError>;
    /// Every install, by server id.
    fn installs(&self) -> Result<Vec<Installed>, StoreError>;
    fn forget_install(&self, server: &str) -> Result<(), StoreError>;
}

/// The exclusive lock of the process that owns a database (held while it runs).
pub(crate) type Claim = nix::fcntl::Flock<std::fs::File>;

/// Takes the lock `DATABASE.lock` if no other process holds it.
pub(crate) fn claim(database: &Path) -> Option<Claim> {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::path::PathBuf::from(name))
        .ok()?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()
}

pub(crate) struct Store {
    path: PathBuf,
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS operations (
    id TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS operations_state ON operations(state);
CREATE TABLE IF NOT EXISTS installs (
    server TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
";

impl Store {
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let failed = |reason: String| StoreError {
            path: path.display().to_string(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| failed(e.to_string()))?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            .and_then(|()| conn.execute_batch(SCHEMA))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Self {
            path: path.to_owned(),
            conn,
        })
    }

    fn error(&self, error: impl std::fmt::Display) -> StoreError {
        StoreError {
            path: self.path.display().to_string(),
            reason: error.to_string(),
        }
    }

    /// The first column of every row `sql` selects (rows that cannot be read are skipped).
    fn bodies(&self, sql: &str) -> Result<Vec<String>, StoreError> {
        let mut statement = self.conn.prepare(sql).map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([], |row| row.get(0))
            .map_err(|e| self.error(e))?
            .filter_map(Result::ok)
            .collect();
        Ok(rows)
    }

    /// Marks every operation the last run left queued or in progress failed, saying why.
    /// Returns them as they are now.
    pub(crate) fn fail_interrupted(&self, now_ms: u64) -> Result<Vec<Operation>, StoreError> {
        let bodies =
            self.bodies("SELECT body FROM operations WHERE state IN ('queued', 'in_progress')")?;
        let mut failed = Vec::new();
        for body in bodies {
            let Ok(mut operation) = serde_json::from_str::<Operation>(&body) else {
                continue;
            };
            let reason = match operation.state {
                State::InProgress => {
                    "the gateway stopped while this operation was in progress".to_owned()
                }
                _ => "the gateway stopped before this operation started".to_owned(),
            };
            operation.fail_interrupted(now_ms, reason);
            self.save(&operation)?;
            failed.push(operation);
        }
        Ok(failed)
    }

    /// Deletes the finished operations `retention` does not keep at `now_ms`; returns how
    /// many.
    pub(crate) fn prune(&self, retention: Retention, now_ms: u64) -> Result<usize, StoreError> {
        let (before, kept) = retention.bounds(now_ms);
        self.conn
            .execute(
                "DELETE FROM operations
                 WHERE state IN ('completed', 'failed', 'cancelled')
                   AND (created_ms < ?1 OR id IN (
                       SELECT id FROM operations
                       WHERE state IN ('completed', 'failed', 'cancelled')
                       ORDER BY created_ms DESC, id DESC LIMIT -1 OFFSET ?2))",
                params![before, kept],
            )
            .map_err(|e| self.error(e))
    }
}

impl OperationStore for Store {
    fn save(&self, operation: &Operation) -> Result<(), StoreError> {
        let body = serde_json::to_string(operation).map_err(|e| self.error(e))?;
        self.conn
            .execute(
                "INSERT INTO operations (id, created_ms, state, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(id) DO UPDATE SET state = excluded.state, body = excluded.body",
                params![
                    operation.id,
                    i64::try_from(operation.created_ms).unwrap_or(i64::MAX),
                    operation.state.as_str(),
                    body
                ],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The newest `limit` operations, newest first (rows that no longer parse are skipped
    /// with a warning).
    fn recent(&self, limit: usize) -> Result<Vec<Operation>, StoreError> {
        let mut statement = self
            .conn
            .prepare("SELECT id, body FROM operations ORDER BY created_ms DESC, id DESC LIMIT ?1")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.error(e))?;
        let mut operations = Vec::new();
        for row in rows {
            let (id, body) = row.map_err(|e| self.error(e))?;
            match serde_json::from_str(&body) {
                Ok(operation) => operations.push(operation),
                Err(error) => tracing::warn!(id, "operation row skipped: {error}"),
            }
        }
        Ok(operations)
    }

    fn get(&self, id: &str) -> Result<Option<Operation>, StoreError> {
        let body: Option<String> = self
            .conn
            .query_row("SELECT body FROM operations WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()
            .map_err(|e| self.error(e))?;
        body.map(|body| serde_json::from_str(&body).map_err(|e| self.error(e)))
            .transpose()
    }

    fn record_install(&self, installed: &Installed) -> Result<(), StoreError> {
        let body = serde_json::to_string(installed).map_err(|e| self.error(e))?;
        self.conn
            .execute(
                "INSERT INTO installs (server, body) VALUES (?1, ?2)
                 ON CONFLICT(server) DO UPDATE SET body = excluded.body",
                params![installed.server, body],
            )
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn install_of(&self, server: &str) -> Result<Option<Installed>, StoreError> {
        let body: Option<String> = self
            .conn
            .query_row(
                "SELECT body FROM installs WHERE server = ?1",
                [server],
                |row| row.get(0),
            )
            .optional()
            .map_err(|e| self.error(e))?;
        body.map(|body| serde_json::from_str(&body).map_err(|e| self.error(e)))
            .transpose()
    }

    fn installs(&self) -> Result<Vec<Installed>, StoreError> {
        let rows = self.bodies("SELECT body FROM installs ORDER BY server")?;
        Ok(rows
            .iter()
            .filter_map(|body| serde_json::from_str(body).ok())
            .collect())
    }

    fn forget_install(&self, server: &str) -> Result<(), StoreError> {
        self.conn
            .execute("DELETE FROM installs WHERE server = ?1", [server])
            .map_err(|e| self.error(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::operation::{Request, Work};

    #[test]
    fn interrupted_operations_fail_with_the_reason_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ops.db");
        let store = Store::open(&path).expect("open");
        let request = Request::new(Work::Test {
            server: "a".to_owned(),
        });
        let mut running = Operation::queued("01A".to_owned(), request.clone(), 1);
        running.state = State::InProgress;
        store.save(&running).expect("save");
        let mut done = Operation::queued("01B".to_owned(), request, 2);
        done.state = State::Completed;
        store.save(&done).expect("save");
        drop(store);
        let store = Store::open(&path).expect("reopen");
        let interrupted = store.fail_interrupted(10).expect("fail");
        assert_eq!(
            interrupted
                .iter()
                .map(|o| o.id.as_str())
                .collect::<Vec<_>>(),
            ["01A"]
        );
        let failed = store.get("01A").expect("get").expect("row");
        assert_eq!(interrupted[0], failed, "returned as saved");
        assert_eq!(failed.state, State::Failed);
        assert!(
            failed
                .error
                .as_deref()
                .is_some_and(|e| e.contains("in progress")),
            "{failed:?}"
        );
        assert_eq!(
            store.get("01B").expect("get").expect("row").state,
            State::Completed
        );
        let recent = store.recent(10).expect("recent");
        assert_eq!(
            recent.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
            ["01B", "01A"]
        );
    }

    #[test]
    fn finished_operations_past_their_retention_are_pruned_and_open_ones_never() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("ops.db")).expect("open");
        let day = 24 * 3600 * 1000;
        let now = 100 * day;
        let request = Request::new(Work::Test {
            server: "a".to_owned(),
        });
        for (id, state, created) in [
            ("01OLD", State::Failed, now - 31 * day),
            ("01OPEN", State::Queued, now - 40 * day),
            ("01R1", State::Completed, now - 3 * day),
            ("01R2", State::Cancelled, now - 2 * day),
            ("01R3", State::Completed, now - day),
        ] {
            let mut operation = Operation::queued(id.to_owned(), request.clone(), created);
            operation.state = state;
            store.save(&operation).expect("save");
        }
        let ids = || {
            let mut ids: Vec<String> = store
                .recent(10)
                .expect("recent")
                .into_iter()
                .map(|o| o.id)
                .collect();
            ids.sort();
            ids
        };
        assert_eq!(store.prune(RETENTION, now).expect("prune"), 1);
        assert_eq!(ids(), ["01OPEN", "01R1", "01R2", "01R3"]);
        let two = Retention {
            days: 30,
            finished: 2,
        };
        assert_eq!(store.prune(two, now).expect("prune"), 1);
        assert_eq!(ids(), ["01OPEN", "01R2", "01R3"]);
        assert_eq!(store.prune(two, now).expect("prune"), 0);
    }

    #[test]
    fn installs_are_kept_and_forgotten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("ops.db")).expect("open");
        let installed = Installed {
            agent: Some("npc".to_owned()),
            server: "memory".to_owned(),
            name: "io.example/memory".to_owned(),
            version: "1.0.0".to_owned(),
            dir: dir.path().join("memory"),
            operation: "01A".to_owned(),
            installed_ms: 5,
            secrets: vec!["SWITCHBOARD_SECRET_MEMORY_KEY_00000000".to_owned()],
            replica: None,
        };
        store.record_install(&installed).expect("record");
        assert_eq!(
            store.install_of("memory").expect("get"),
            Some(installed.clone())
        );
        assert_eq!(store.installs().expect("all"), vec![installed]);
        store.forget_install("memory").expect("forget");
        assert_eq!(store.install_of("memory").expect("get"), None);
        // A record written before the agent was kept on it still reads.
        let older: Installed = serde_json::from_str(
            r#"{"server":"m","name":"n","version":"1","dir":"/x","operation":"01A","installed_ms":5}"#,
        )
        .expect("an older record");
        assert_eq!(older.agent, None);
    }
}
