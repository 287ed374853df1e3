//! The managed configuration on PostgreSQL (`managed_config`, migration 2): one row per
//! revision holding the whole [`ManagedDocument`]. A change is written as revision = the
//! head it was based on + 1 in a transaction that also sends `NOTIFY switchboard_config`; two
//! replicas changing at once cannot both win (the primary key refuses the later one, which
//! gets the usual conflict and can retry). Every replica follows the head — woken by the
//! notification, and polling it every second in case a notification is lost — and
//! reconciles to it through `live::reload` (no restart), recording what changed.

use std::sync::Arc;
use std::time::Duration;

use switchboard_ledger::postgres::Pool;
use tokio_postgres::error::SqlState;

use super::managed::{ManagedDocument, overlay};
use super::{Change, ChangeError, LiveState, Surface, file};
use crate::Host;

/// The channel changes are announced on.
pub const CHANNEL: &str = "switchboard_config";

/// How often a replica looks at the head when no notification came.
const POLL: Duration = Duration::from_secs(1);

/// The managed configuration's store in PostgreSQL.
pub struct ManagedStore {
    pool: Pool,
    config: switchboard_ledger::postgres::Target,
    replica: String,
}

/// Where the managed configuration is, as `status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ManagedStatus {
    /// The managed revision this replica runs (0: none written yet).
    pub revision: i64,
    /// Where the managed configuration overrides the file (or cannot apply to it).
    pub notes: Vec<String>,
}

/// What this replica knows of the managed configuration.
pub(super) struct Managed {
    pub(super) store: Arc<ManagedStore>,
    pub(super) revision: i64,
    pub(super) document: ManagedDocument,
    pub(super) notes: Vec<String>,
    /// False once the Host shuts down: the follower stops (changes still go to the store).
    pub(super) following: bool,
}

fn pg(what: &'static str) -> impl Fn(tokio_postgres::Error) -> ChangeError {
    move |error| {
        let detail = error
            .as_db_error()
            .map_or_else(|| error.to_string(), |db| db.message().to_owned());
        ChangeError::Io(format!(
            "managed configuration on PostgreSQL: {what}: {detail}"
        ))
    }
}

impl ManagedStore {
    /// A store on the `[storage] url` (nothing is connected yet). The URL is never repeated
    /// in an error: it may hold a password.
    pub fn new(url: &str) -> Result<Self, ChangeError> {
        let pool = switchboard_ledger::postgres::pool(url, 2)
            .map_err(|error| ChangeError::Io(error.to_string()))?;
        let config = switchboard_ledger::postgres::Target::parse(url)
            .map_err(|error| ChangeError::Io(error.to_string()))?;
        Ok(Self {
            pool,
            config,
            replica: switchboard_ledger::postgres::replica(),
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, ChangeError> {
        self.pool.get().await.map_err(|error| {
            ChangeError::Io(format!(
                "managed configuration on PostgreSQL: connect: {error}"
            ))
        })
    }

    /// The head revision (0 when nothing was written yet).
    pub async fn head_revision(&self) -> Result<i64, ChangeError> {
        let client = self.client().await?;
        let row = client
            .query_one("SELECT coalesce(max(revision), 0) FROM managed_config", &[])
            .await
            .map_err(pg("read the head"))?;
        row.try_get(0).map_err(pg("read the head"))
    }

    /// The head revision and its document.
    pub async fn head(&self) -> Result<(i64, ManagedDocument), ChangeError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT revision, document FROM managed_config ORDER BY revision DESC LIMIT 1",
                &[],
            )
            .await
            .map_err(pg("read the head"))?;
        let Some(row) = row else {
            return Ok((0, ManagedDocument::default()));
        };
        let revision: i64 = row.try_get(0).map_err(pg("read the head"))?;
        let text: String = row.try_get(1).map_err(pg("read the head"))?;
        let document = serde_json::from_str(&text).map_err(|error| {
            ChangeError::Io(format!(
                "managed configuration revision {revision} does not parse: {error}"
            ))
        })?;
        Ok((revision, document))
    }

    /// Writes `document` as revision `base + 1` and announces it; a conflict when another
    /// replica wrote that revision first.
    pub async fn commit(
        &self,
        base: i64,
        document: &ManagedDocument,
        change: &Change,
        by: Surface,
        actor: Option<&str>,
    ) -> Result<i64, ChangeError> {
        let encode = |error: serde_json::Error| ChangeError::Io(format!("encode: {error}"));
        let text = serde_json::to_string(document).map_err(encode)?;
        let change = serde_json::to_string(change).map_err(encode)?;
        let revision = base + 1;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin"))?;
        let inserted = tx
            .execute(
                "INSERT INTO managed_config (revision, document, change, surface, actor, replica) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &revision,
                    &text,
                    &change,
                    &by.as_str(),
                    &actor,
                    &self.replica,
                ],
            )
            .await;
        if let Err(error) = inserted {
            if error.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                return Err(ChangeError::Conflict(format!(
                    "another replica changed the managed configuration first (revision {revision}); the change was undone: look again and retry"
                )));
            }
            return Err(pg("write the revision")(error));
        }
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&CHANNEL, &revision.to_string()],
        )
        .await
        .map_err(pg("announce the revision"))?;
        tx.commit().await.map_err(pg("commit the revision"))?;
        Ok(revision)
    }
}

impl Host {
    /// Runs on the managed configuration in `store`: applies its head over the file now,
    /// then follows it (a task, returned) for as long as the gateway runs.
    pub async fn manage(
        &self,
        store: ManagedStore,
    ) -> Result<tokio::task::JoinHandle<()>, ChangeError> {
        let store = Arc::new(store);
        self.inner.live.with(|applied| {
            applied.managed = Some(Managed {
                store: store.clone(),
                revision: -1,
                document: ManagedDocument::default(),
                notes: Vec::new(),
                following: true,
            });
        });
        self.follow_managed(Surface::Startup).await?;
        // A package another replica installed for a server of this configuration is
        // installed here too (docs/scale-out.md).
        if let Some(manager) = self.manager() {
            manager.replicate_installs();
        }
        // The follower holds the Host weakly, and ends with it or at its shutdown.
        let weak = Arc::downgrade(&self.inner);
        Ok(tokio::spawn(async move {
            let wakeups = Wakeups::start(store.config.clone(), CHANNEL, POLL);
            let mut failing = false;
            loop {
                wakeups.next().await;
                let Some(inner) = weak.upgrade() else { break };
                let host = Host { inner };
                if !host.inner.live.following() {
                    break;
                }
                match host.follow_managed(Surface::Replica).await {
                    Ok(()) => failing = false,
                    Err(error) if !failing => {
                        failing = true;
                        tracing::warn!(target: "switchboard::config", "{error}; retrying every second");
                    }
                    Err(_) => {}
                }
            }
        }))
    }

    /// Reconciles to the managed head if this replica is not on it.
    async fn follow_managed(&self, by: Surface) -> Result<(), ChangeError> {
        let Some((store, known)) = self.inner.live.with(|applied| {
            applied
                .managed
                .as_ref()
                .map(|m| (m.store.clone(), m.revision))
        }) else {
            return Ok(());
        };
        if store.head_revision().await? == known {
            return Ok(());
        }
        let _turn = self.change_turn().await?;
        if !self.inner.live.following() {
            return Ok(());
        }
        let (revision, document) = store.head().await?;
        let (path, adjust) = self.inner.live.with(|applied| {
            (
                applied.config.as_ref().and_then(|c| c.source.clone()),
                applied.options.adjust.clone(),
            )
        });
        let Some(path) = path else {
            return Err(ChangeError::Io(
                "the managed configuration needs a config file (--config FILE)".into(),
            ));
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|error| ChangeError::Io(format!("cannot read {}: {error}", path.display())))?;
        let (effective, notes) = overlay_noting(&text, &path, &document)?;
        let mut config = file::parse(&effective, &path).map_err(super::invalid)?;
        if let Some(adjust) = &adjust {
            adjust(&mut config);
        }
        self.reload_in_turn(config, by, Some(file::hash(&text)))
            .await?;
        self.inner.live.with(|applied| {
            if let Some(managed) = applied.managed.as_mut() {
                managed.revision = revision;
                managed.document = document;
                managed.notes = notes;
            }
        });
        tracing::info!(target: "switchboard::config", "running managed configuration revision {revision}");
        Ok(())
    }
}

/// The file's text with `document` over it; every note is logged.
pub(super) fn overlay_noting(
    text: &str,
    path: &std::path::Path,
    document: &ManagedDocument,
) -> Result<(String, Vec<String>), ChangeError> {
    let (effective, notes) = overlay(text, switchboard_core::config::Format::of(path), document)
        .map_err(ChangeError::from_edit)?;
    for note in &notes {
        tracing::warn!(target: "switchboard::config", "{}: {note}", path.display());
    }
    Ok((effective, notes))
}

impl LiveState {
    /// Stops following the managed configuration (the Host is shutting down): nothing is
    /// reconciled from now on.
    pub(crate) fn stop_managed(&self) {
        self.with(|applied| {
            if let Some(managed) = applied.managed.as_mut() {
                managed.following = false;
            }
        });
    }

    fn following(&self) -> bool {
        self.with(|applied| applied.managed.as_ref().is_some_and(|m| m.following))
    }

    /// The managed store, when the gateway runs on one.
    pub(super) fn managed_store(&self) -> Option<Arc<ManagedStore>> {
        self.with(|applied| applied.managed.as_ref().map(|m| m.store.clone()))
    }
}

/// What wakes a follower of PostgreSQL: a `NOTIFY` on its channel, or its poll when none
/// came (a notification can be lost with its connection). The LISTEN connection ends with it.
pub(crate) struct Wakeups {
    woken: Arc<tokio::sync::Notify>,
    poll: std::time::Duration,
    _listener: AbortOnDrop,
}

impl Wakeups {
    /// LISTENs on `channel` of the database `config` names (needs a tokio runtime).
    pub(crate) fn start(
        config: switchboard_ledger::postgres::Target,
        channel: &'static str,
        poll: std::time::Duration,
    ) -> Self {
        let woken = Arc::new(tokio::sync::Notify::new());
        let listener = tokio::spawn(listen(config, channel, woken.clone()));
        Self {
            woken,
            poll,
            _listener: AbortOnDrop(listener),
        }
    }

    /// Returns at the next notification, or after the poll.
    pub(crate) async fn next(&self) {
        tokio::select! {
            () = self.woken.notified() => {}
            () = tokio::time::sleep(self.poll) => {}
        }
    }
}

/// Aborts a task when dropped (the listener, with the follower that started it).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Wakes a follower at every `NOTIFY` on `channel` (`switchboard_config`, and the tokens'
/// `switchboard_tokens`); reconnects after a second when the connection is lost (the
/// follower's poll covers the gap).
async fn listen(
    config: switchboard_ledger::postgres::Target,
    channel: &'static str,
    woken: Arc<tokio::sync::Notify>,
) {
    loop {
        if let Ok((client, mut connection)) = config.connect().await {
            let (sender, mut messages) = tokio::sync::mpsc::unbounded_channel();
            let driver = tokio::spawn(async move {
                while let Some(Ok(message)) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    if sender.send(message).is_err() {
                        break;
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .is_ok()
            {
                while let Some(message) = messages.recv().await {
                    if matches!(message, tokio_postgres::AsyncMessage::Notification(_)) {
                        woken.notify_one();
                    }
                }
            }
            driver.abort();
        }
        tokio::time::sleep(POLL).await;
    }
}
