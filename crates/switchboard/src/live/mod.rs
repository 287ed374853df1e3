//! Live configuration: the one change operation every surface goes through — the CLI, the
//! admin endpoint, a library call, a hand edit of the config file — and the state it keeps.
//!
//! A change is validated by the same rules as `config check`, applied to the running Host
//! (`reconcile`: per server, by fingerprint — untouched servers keep their process), then
//! persisted into the file the gateway was started with (touching only that server's entry:
//! `switchboard_core::config::edit`), then recorded in the audit ledger. Changes are
//! serialized; each may name the revision it was based on and is refused as a conflict if
//! the running configuration or the file moved on since.
//!
//! Code map: `change` (the request, the report, the typed errors), this module (the
//! operation itself and the state it keeps), `reconcile` (old fleet + new config → new
//! fleet, drains), `reload` (a config handed over or read again), `file` (which file, has it
//! moved on, the edit, validation), `offline` (the operation on the file alone), `probe`
//! (`servers test`: connect a copy, list, judge), `watch` (the file watcher with its
//! debounce), `record` (ledger rows of changes), `managed` (with `[storage] url`: the
//! managed document overlaid on the file) and `shared_store` (that document on PostgreSQL,
//! followed by every replica).

mod change;
mod file;
pub mod managed;
mod offline;
pub(crate) mod probe;
mod reconcile;
mod record;
mod reload;
pub mod shared_store;
pub mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use switchboard_core::config::edit;
use switchboard_core::config::{Config, ConfigErrors, ServerConfig};

pub use crate::fleet::{Stamp, Surface};
pub use change::{Change, ChangeError, ChangeReport, ChangeRequest, FileError};
pub use offline::apply_offline;
pub use probe::{TestReport, test_server};
pub use reconcile::{Action, ServerOutcome};
pub use record::redacted_entry;
pub use shared_store::{ManagedStatus, ManagedStore};

use crate::Host;

/// How the change operation behaves; set once by whoever starts the Host
/// ([`Host::set_live_options`]).
#[derive(Clone)]
pub struct LiveOptions {
    /// Every change surface refuses; hand edits of the file still reload (GitOps). Read-only
    /// also when the running config says `gateway.read_only = true`.
    pub read_only: bool,
    /// How long the calls of a removed or replaced server may take to finish before they are
    /// cancelled, for a Host without a config (else `gateway.drain_timeout`).
    pub drain_timeout: Duration,
    /// Backups of the config file kept when it is rewritten (`FILE.bak`, `FILE.bak.1`, …).
    pub backups: usize,
    /// Where changes go when the Host runs on the built-in default (no file).
    pub default_file: Option<PathBuf>,
    /// Applied to every config read from the file before it runs (the command line's
    /// overrides, such as `serve --no-prefix`).
    pub adjust: Option<Adjust>,
}

/// A change made to every config read from the file before it runs.
pub type Adjust = Arc<dyn Fn(&mut Config) + Send + Sync>;

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            read_only: false,
            drain_timeout: Duration::from_secs(30),
            backups: 3,
            default_file: None,
            adjust: None,
        }
    }
}

/// The live configuration's state, inside the Host.
#[derive(Default)]
pub(crate) struct LiveState {
    /// One change at a time, in arrival order.
    turn: tokio::sync::Mutex<()>,
    applied: Mutex<Applied>,
}

#[derive(Default)]
struct Applied {
    /// The config running now (as validated; None for a Host started from plans).
    config: Option<Arc<Config>>,
    /// The config the Host started with: what needs a restart is judged against it.
    started_with: Option<Arc<Config>>,
    /// The hash of the file text `config` came from or was written as.
    text_hash: Option<String>,
    /// Bumped by every applied change or reload.
    generation: u64,
    file_error: Option<FileError>,
    /// Server → why its last change failed (its previous settings keep serving).
    failed: HashMap<String, String>,
    needs_restart: Vec<String>,
    options: LiveOptions,
    /// With `[storage] url`: the managed configuration this replica runs.
    managed: Option<shared_store::Managed>,
}

impl LiveState {
    fn with<T>(&self, read: impl FnOnce(&mut Applied) -> T) -> T {
        match self.applied.lock() {
            Ok(mut applied) => read(&mut applied),
            Err(poisoned) => read(&mut poisoned.into_inner()),
        }
    }

    /// Waits for the change operation's turn (a shutdown waits for the change under way).
    pub(crate) async fn turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Remembers the config a Host was started from.
    pub(crate) fn init(&self, config: &Config) {
        let config = Arc::new(config.clone());
        // The text it was read from, not the file as it is now: an edit since then must
        // still look like one (the watcher's first look applies it).
        let hash = config.source_digest.clone();
        self.with(|applied| {
            applied.config = Some(config.clone());
            applied.started_with = Some(config);
            applied.text_hash = hash;
        });
    }

    /// Why the last change to `server` failed, while it keeps its previous settings.
    pub(crate) fn failed_change(&self, server: &str) -> Option<String> {
        self.with(|applied| applied.failed.get(server).cloned())
    }

    /// The servers the running config has but disables.
    pub(crate) fn disabled_servers(&self) -> Vec<ServerConfig> {
        self.with(|applied| {
            applied
                .config
                .as_ref()
                .map(|config| {
                    config
                        .servers
                        .iter()
                        .filter(|s| !s.enabled)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    fn revision(applied: &Applied) -> String {
        let hash = applied.text_hash.as_deref().unwrap_or("00000000");
        format!("{}-{}", applied.generation, &hash[..hash.len().min(8)])
    }
}

/// The live configuration as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LiveStatus {
    pub revision: String,
    /// The file changes are written to (None: the built-in default, and none chosen).
    pub file: Option<PathBuf>,
    pub read_only: bool,
    /// A hand edit that failed validation; the previous configuration keeps running.
    pub file_error: Option<FileError>,
    /// Settings changed in the file that apply only after a restart.
    pub needs_restart: Vec<String>,
    /// With `[storage] url`: the managed revision this replica runs, and where it
    /// overrides the file.
    pub managed: Option<ManagedStatus>,
}

impl Host {
    /// Sets how the change operation behaves (read-only mode, drain timeout, backups, where
    /// a config without a file is written, the command line's overrides).
    pub fn set_live_options(&self, options: LiveOptions) {
        self.inner.live.with(|applied| applied.options = options);
    }

    /// The configuration running now (None for a Host started from plans, not a config).
    pub fn config(&self) -> Option<Arc<Config>> {
        self.inner.live.with(|applied| applied.config.clone())
    }

    /// The current revision: changes based on another one are refused as conflicts.
    pub fn revision(&self) -> String {
        self.inner.live.with(|applied| LiveState::revision(applied))
    }

    /// The revision, the file, read-only mode, a bad file's located problems.
    pub fn live_status(&self) -> LiveStatus {
        self.inner.live.with(|applied| LiveStatus {
            revision: LiveState::revision(applied),
            file: file::target(applied),
            read_only: applied.options.read_only,
            file_error: applied.file_error.clone(),
            needs_restart: applied.needs_restart.clone(),
            managed: applied.managed.as_ref().map(|m| ManagedStatus {
                revision: m.revision,
                notes: m.notes.clone(),
            }),
        })
    }

    /// Takes the change operation's turn for a change, a reload or the managed config's
    /// follower; refused once the Host has shut down (checked in the turn, which the shutdown
    /// takes to mark it).
    pub(super) async fn change_turn(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, ChangeError> {
        let turn = self.inner.live.turn().await;
        if self.inner.shut_down.refuses_changes() {
            return Err(ChangeError::ShutDown);
        }
        Ok(turn)
    }

    /// The one change operation: validate → apply to the running Host → persist into the
    /// config file → record in the ledger. Serialized with every other change.
    pub async fn apply(&self, request: ChangeRequest) -> Result<ChangeReport, ChangeError> {
        let _turn = self.change_turn().await?;
        let result = self.apply_in_turn(&request).await;
        if !request.dry_run
            && let Err(error) = &result
        {
            self.record_refusal(&request, error);
        }
        result
    }

    async fn apply_in_turn(&self, request: &ChangeRequest) -> Result<ChangeReport, ChangeError> {
        let (options, revision, current, started_with) = self.inner.live.with(|applied| {
            (
                applied.options.clone(),
                LiveState::revision(applied),
                applied.config.clone(),
                applied.started_with.clone(),
            )
        });
        let read_only = options.read_only
            || current
                .as_deref()
                .is_some_and(|config| config.gateway.read_only);
        if read_only {
            return Err(ChangeError::ReadOnly);
        }
        let drain_timeout = current
            .as_deref()
            .map_or(options.drain_timeout, |config| config.gateway.drain_timeout);
        if let Some(base) = &request.base_revision
            && *base != revision
        {
            return Err(ChangeError::Conflict(format!(
                "the change was based on revision {base}, but the configuration is at {revision} now: look again and retry"
            )));
        }
        let current = current.ok_or_else(|| {
            ChangeError::Io(
                "this Host was not started from a config: there is nothing to change".into(),
            )
        })?;
        let target = self.inner.live.with(|applied| file::target(applied)).ok_or_else(|| {
            ChangeError::Io(
                "the gateway runs on its built-in default and no file was chosen for changes: start it with --config FILE".into(),
            )
        })?;
        let (file_text, created) = file::read_current(&target, &current, &self.inner.live)?;
        // With a managed configuration, the change is made to the file with the managed
        // head over it, and written to PostgreSQL instead of the file.
        let managed = match self.inner.live.managed_store() {
            Some(store) => {
                if let Some(why) = managed::refusal(&request.change) {
                    return Err(ChangeError::Invalid(vec![why]));
                }
                let (base, document) = store.head().await?;
                Some((store, base, document))
            }
            None => None,
        };
        let before = match &managed {
            Some((_, _, document)) => {
                shared_store::overlay_noting(&file_text, &target, document)?.0
            }
            None => file_text.clone(),
        };
        let after = file::edit(&before, &target, &request.change)?;
        let mut config = file::parse(&after, &target).map_err(invalid)?;
        if let Some(adjust) = &options.adjust {
            adjust(&mut config);
        }
        let diff = edit::unified_diff(&file::display_name(&target), &before, &after);
        if request.dry_run {
            return Ok(ChangeReport {
                revision,
                servers: Vec::new(),
                needs_restart: Vec::new(),
                file: Some(target),
                created_file: created,
                diff,
                dry_run: true,
            });
        }
        let (must_start, restart) = match &request.change {
            Change::Restart { server } => (Some(server.as_str()), Some(server.as_str())),
            Change::Add { server, .. } | Change::Enable { server } => (Some(server.as_str()), None),
            Change::Remove { .. } | Change::Disable { .. } => (None, None),
        };
        let outcomes = self
            .reconcile(&config, request.by, must_start, restart, drain_timeout)
            .await?;
        let persisted = match &managed {
            Some((store, base, document)) => {
                let next = document.changed(&request.change);
                if next == *document {
                    // A restart: per replica, nothing shared changed.
                    Ok(Some((*base, next)))
                } else {
                    store
                        .commit(
                            *base,
                            &next,
                            &request.change,
                            request.by,
                            request.actor.as_deref(),
                        )
                        .await
                        .map(|revision| Some((revision, next)))
                }
            }
            None => self
                .persist(&target, &before, &after, created, options.backups)
                .map(|()| None),
        };
        let managed_now = match persisted {
            Ok(managed_now) => managed_now,
            Err(error) => {
                // Persisting failed: put the running configuration back as it was.
                let _ = self
                    .reconcile(&current, request.by, None, None, drain_timeout)
                    .await;
                return Err(error);
            }
        };
        if created {
            tracing::info!("configuration changes are now kept in {}", target.display());
        }
        let config = Arc::new(config);
        let needs_restart = started_with
            .map(|started| reconcile::needs_restart(&started, &config))
            .unwrap_or_default();
        let revision = self.inner.live.with(|applied| {
            applied.config = Some(config.clone());
            match (managed_now, applied.managed.as_mut()) {
                (Some((revision, document)), Some(managed)) => {
                    managed.revision = revision;
                    managed.document = document;
                }
                _ => applied.text_hash = Some(file::hash(&after)),
            }
            applied.generation += 1;
            applied.needs_restart = needs_restart.clone();
            applied.note_failures(&config, &outcomes);
            if applied
                .started_with
                .as_ref()
                .is_some_and(|s| s.source.is_none())
            {
                // From now on the file is the source.
                applied.started_with = Some(config.clone());
            }
            LiveState::revision(applied)
        });
        self.record_changes(
            request.by,
            request.actor.as_deref(),
            &current,
            &config,
            &outcomes,
        );
        Ok(ChangeReport {
            revision,
            servers: outcomes,
            needs_restart,
            file: Some(target),
            created_file: created,
            diff,
            dry_run: false,
        })
    }
}

impl Host {
    /// Writes the changed file, unless it moved on while the change was applied (a hand edit
    /// saved meanwhile must not be overwritten: that is a conflict) or nothing in it changed.
    fn persist(
        &self,
        target: &std::path::Path,
        before: &str,
        after: &str,
        created: bool,
        backups: usize,
    ) -> Result<(), ChangeError> {
        let on_disk = std::fs::read_to_string(target).ok();
        let moved_on = match &on_disk {
            Some(text) => created || text != before,
            None => !created,
        };
        if moved_on {
            return Err(ChangeError::Conflict(format!(
                "{} changed on disk while the change was applied; the change was undone: look again and retry",
                target.display()
            )));
        }
        if after == before && !created {
            return Ok(());
        }
        match edit::write_atomically(target, after, backups) {
            Ok(()) => Ok(()),
            // A failure after the rename (syncing the directory) left the new text in place.
            Err(error) if std::fs::read_to_string(target).is_ok_and(|text| text == after) => {
                tracing::warn!(
                    "{} was written, but not synced to disk: {error}",
                    target.display()
                );
                Ok(())
            }
            Err(error) => Err(ChangeError::Io(format!(
                "cannot write {}: {error}; the change was undone",
                target.display()
            ))),
        }
    }
}

impl Applied {
    /// Keeps, per server of `config`, why its last change failed while it keeps its
    /// previous settings — and forgets it once a change to it applies or it is as it runs.
    fn note_failures(&mut self, config: &Config, outcomes: &[ServerOutcome]) {
        for server in &config.servers {
            match outcomes.iter().find(|o| o.server == server.id) {
                Some(outcome) if !outcome.applied => {
                    let error = outcome.error.clone().unwrap_or_default();
                    self.failed.insert(server.id.clone(), error);
                }
                Some(_) => {
                    self.failed.remove(&server.id);
                }
                // Unchanged: what it says is what runs (a replacement that keeps failing is
                // tried, and noted, again at every reload).
                None => {
                    self.failed.remove(&server.id);
                }
            }
        }
        self.failed
            .retain(|server, _| config.servers.iter().any(|s| &s.id == server));
    }
}

fn invalid(errors: ConfigErrors) -> ChangeError {
    ChangeError::Invalid(errors.0.iter().map(ToString::to_string).collect())
}
