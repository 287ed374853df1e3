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
//! Code map: `reconcile` (old fleet + new config → new fleet, drains), `file` (reading,
//! hashing and writing the config file), `probe` (`servers test`: connect a copy, list,
//! judge), `watch` (the file watcher with its debounce), `record` (ledger rows of changes).

mod file;
mod probe;
mod reconcile;
mod record;
pub mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use switchboard_core::config::edit::{self, EditError, ServerEntry};
use switchboard_core::config::{Config, ConfigErrors, ServerConfig};

pub use crate::fleet::{Stamp, Surface};
pub use probe::{TestReport, test_server};
pub use reconcile::{Action, ServerOutcome};
pub use record::redacted_entry;

use crate::Host;

/// How the change operation behaves; set once by whoever starts the Host
/// ([`Host::set_live_options`]).
#[derive(Clone)]
pub struct LiveOptions {
    /// Every change surface refuses; hand edits of the file still reload (GitOps).
    pub read_only: bool,
    /// How long the calls of a removed or replaced server may take to finish before they are
    /// cancelled.
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

/// One change to the servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Change {
    /// Adds a server (refused if the id is taken).
    Add { server: String, entry: ServerEntry },
    /// Removes a server; its calls in flight finish first (up to the drain timeout).
    Remove { server: String },
    /// Starts a disabled server.
    Enable { server: String },
    /// Stops a server but keeps its entry (`enabled = false`).
    Disable { server: String },
    /// Replaces the server's connection by a new one with the same settings.
    Restart { server: String },
}

impl Change {
    pub fn server(&self) -> &str {
        match self {
            Self::Add { server, .. }
            | Self::Remove { server }
            | Self::Enable { server }
            | Self::Disable { server }
            | Self::Restart { server } => server,
        }
    }

    pub fn action(&self) -> &'static str {
        match self {
            Self::Add { .. } => "add",
            Self::Remove { .. } => "remove",
            Self::Enable { .. } => "enable",
            Self::Disable { .. } => "disable",
            Self::Restart { .. } => "restart",
        }
    }
}

/// A change with who asked for it and what it was based on.
#[derive(Debug, Clone)]
pub struct ChangeRequest {
    pub change: Change,
    pub by: Surface,
    /// Who asked, when the surface knows.
    pub actor: Option<String>,
    /// The revision the change was based on ([`Host::revision`]); `None` = the current one.
    pub base_revision: Option<String>,
    /// Validate and show the file's diff, change nothing.
    pub dry_run: bool,
}

impl ChangeRequest {
    pub fn new(change: Change, by: Surface) -> Self {
        Self {
            change,
            by,
            actor: None,
            base_revision: None,
            dry_run: false,
        }
    }
}

/// What a change or reload did.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ChangeReport {
    /// The revision after the change (before it, for a dry run).
    pub revision: String,
    /// Every server the change touched.
    pub servers: Vec<ServerOutcome>,
    /// Settings that changed but apply only after a restart of the gateway (left as they were).
    pub needs_restart: Vec<String>,
    /// The config file written (or, for a dry run, that would be).
    pub file: Option<PathBuf>,
    /// Whether the file was created by this change (the gateway ran on its built-in default).
    pub created_file: bool,
    /// The unified diff of the config file.
    pub diff: String,
    pub dry_run: bool,
}

/// Why a change was refused or failed. Every surface reports the same [`ChangeError::code`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// `gateway.read_only` / `serve --read-only-config`.
    #[error(
        "the configuration is read-only (gateway.read_only or --read-only-config): edit the file instead"
    )]
    ReadOnly,
    /// The revision the change was based on is no longer current.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The config would be invalid: every problem, located (`file:line:column: message`).
    #[error("the configuration would be invalid:\n{}", .0.join("\n"))]
    Invalid(Vec<String>),
    #[error("no server '{0}' in the configuration")]
    NotFound(String),
    #[error("server '{0}' is already in the configuration")]
    Exists(String),
    /// It was valid, but applying it failed; nothing changed.
    #[error("server '{server}': {reason}; nothing was changed")]
    Failed { server: String, reason: String },
    /// Reading or writing the config file failed.
    #[error("{0}")]
    Io(String),
}

impl ChangeError {
    /// A stable code for programs: `read_only`, `conflict`, `invalid`, `not_found`, `exists`,
    /// `failed`, `io`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Conflict(_) => "conflict",
            Self::Invalid(_) => "invalid",
            Self::NotFound(_) => "not_found",
            Self::Exists(_) => "exists",
            Self::Failed { .. } => "failed",
            Self::Io(_) => "io",
        }
    }

    /// The HTTP status the admin endpoint answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::ReadOnly => 403,
            Self::Conflict(_) | Self::Exists(_) => 409,
            Self::Invalid(_) => 422,
            Self::NotFound(_) => 404,
            Self::Failed { .. } => 502,
            Self::Io(_) => 500,
        }
    }

    fn from_edit(error: EditError) -> Self {
        match error {
            EditError::Exists(server) => Self::Exists(server),
            EditError::Missing(server) => Self::NotFound(server),
            other => Self::Invalid(vec![other.to_string()]),
        }
    }
}

/// A config file that failed validation: the gateway keeps the last good configuration.
#[derive(Debug, Clone, Serialize)]
pub struct FileError {
    pub file: PathBuf,
    /// Every problem as `file:line:column: message` (with its hint).
    pub problems: Vec<String>,
    pub since: Stamp,
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
}

impl LiveState {
    fn with<T>(&self, read: impl FnOnce(&mut Applied) -> T) -> T {
        match self.applied.lock() {
            Ok(mut applied) => read(&mut applied),
            Err(poisoned) => read(&mut poisoned.into_inner()),
        }
    }

    /// Remembers the config a Host was started from.
    pub(crate) fn init(&self, config: &Config) {
        let config = Arc::new(config.clone());
        let hash = config
            .source
            .as_deref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| file::hash(&text));
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
        })
    }

    /// The one change operation: validate → apply to the running Host → persist into the
    /// config file → record in the ledger. Serialized with every other change.
    pub async fn apply(&self, request: ChangeRequest) -> Result<ChangeReport, ChangeError> {
        let _turn = self.inner.live.turn.lock().await;
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
        if options.read_only {
            return Err(ChangeError::ReadOnly);
        }
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
        let (before, created) = file::read_current(&target, &current, &self.inner.live)?;
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
        let restart = match &request.change {
            Change::Restart { server } => Some(server.as_str()),
            _ => None,
        };
        let outcomes = self
            .reconcile(&config, request.by, true, restart, options.drain_timeout)
            .await?;
        if let Err(error) = edit::write_atomically(&target, &after, options.backups) {
            // Persisting failed: put the running configuration back as it was.
            let _ = self
                .reconcile(&current, request.by, false, None, options.drain_timeout)
                .await;
            return Err(ChangeError::Io(format!(
                "cannot write {}: {error}; the change was undone",
                target.display()
            )));
        }
        if created {
            tracing::info!("configuration changes are now kept in {}", target.display());
        }
        let config = Arc::new(config);
        let needs_restart = started_with
            .map(|started| reconcile::needs_restart(&started, &config))
            .unwrap_or_default();
        let revision = self.inner.live.with(|applied| {
            applied.config = Some(config.clone());
            applied.text_hash = Some(file::hash(&after));
            applied.generation += 1;
            applied.needs_restart = needs_restart.clone();
            applied.failed.remove(request.change.server());
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

    /// Runs `config` instead of the current configuration: servers whose settings did not
    /// change keep their connections, changed ones apply live or restart alone, removed ones
    /// drain. Nothing is written. A server whose replacement fails to start keeps its
    /// previous settings (reported in its outcome and in `status`).
    pub async fn reload(&self, config: Config, by: Surface) -> Result<ChangeReport, ChangeError> {
        let _turn = self.inner.live.turn.lock().await;
        self.reload_in_turn(config, by, None).await
    }

    /// Reads the config file again and runs it (`switchboard reload`, SIGHUP, the watcher).
    /// A file that fails validation changes nothing: its problems are logged and kept for
    /// `status` until a good file arrives. From the watcher, a file the gateway wrote itself
    /// (or that did not change) is left alone.
    pub async fn reload_file(&self, by: Surface) -> Result<ChangeReport, ChangeError> {
        let _turn = self.inner.live.turn.lock().await;
        let (path, known_hash, adjust) = self.inner.live.with(|applied| {
            (
                applied.config.as_ref().and_then(|c| c.source.clone()),
                applied.text_hash.clone(),
                applied.options.adjust.clone(),
            )
        });
        let Some(path) = path else {
            return Err(ChangeError::Io(
                "the gateway runs on its built-in default: there is no config file to reload"
                    .into(),
            ));
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|error| ChangeError::Io(format!("cannot read {}: {error}", path.display())))?;
        let hash = file::hash(&text);
        if by == Surface::File && known_hash.as_deref() == Some(hash.as_str()) {
            // The gateway's own write, or the file is back to what runs (a bad edit undone).
            self.inner.live.with(|applied| applied.file_error = None);
            return Ok(self.unchanged_report());
        }
        let mut config = match file::parse(&text, &path) {
            Ok(config) => config,
            Err(errors) => {
                let problems: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
                for problem in &problems {
                    tracing::error!(target: "switchboard::config", "{problem}");
                }
                tracing::error!(target: "switchboard::config", "{} is invalid: the previous configuration keeps running", path.display());
                self.inner.live.with(|applied| {
                    applied.file_error = Some(FileError {
                        file: path.clone(),
                        problems: problems.clone(),
                        since: Stamp::now(by),
                    });
                });
                return Err(ChangeError::Invalid(problems));
            }
        };
        if let Some(adjust) = &adjust {
            adjust(&mut config);
        }
        let report = self.reload_in_turn(config, by, Some(hash)).await?;
        Ok(report)
    }

    async fn reload_in_turn(
        &self,
        config: Config,
        by: Surface,
        hash: Option<String>,
    ) -> Result<ChangeReport, ChangeError> {
        let (current, started_with, drain) = self.inner.live.with(|applied| {
            (
                applied.config.clone(),
                applied.started_with.clone(),
                applied.options.drain_timeout,
            )
        });
        let outcomes = self.reconcile(&config, by, false, None, drain).await?;
        let config = Arc::new(config);
        let needs_restart = started_with
            .map(|started| reconcile::needs_restart(&started, &config))
            .unwrap_or_default();
        for restart in &needs_restart {
            tracing::warn!(target: "switchboard::config", "{restart}: applies after a restart of the gateway; left as it was");
        }
        let revision = self.inner.live.with(|applied| {
            applied.config = Some(config.clone());
            if hash.is_some() {
                applied.text_hash = hash;
            }
            applied.generation += 1;
            applied.file_error = None;
            applied.needs_restart = needs_restart.clone();
            for outcome in &outcomes {
                match &outcome.error {
                    Some(error) if !outcome.applied => {
                        applied.failed.insert(outcome.server.clone(), error.clone());
                    }
                    _ => {
                        applied.failed.remove(&outcome.server);
                    }
                }
            }
            LiveState::revision(applied)
        });
        if let Some(current) = current {
            self.record_changes(by, None, &current, &config, &outcomes);
        }
        Ok(ChangeReport {
            revision,
            servers: outcomes,
            needs_restart,
            file: config.source.clone(),
            created_file: false,
            diff: String::new(),
            dry_run: false,
        })
    }

    fn unchanged_report(&self) -> ChangeReport {
        let status = self.live_status();
        ChangeReport {
            revision: status.revision,
            servers: Vec::new(),
            needs_restart: status.needs_restart,
            file: status.file,
            created_file: false,
            diff: String::new(),
            dry_run: false,
        }
    }
}

fn invalid(errors: ConfigErrors) -> ChangeError {
    ChangeError::Invalid(errors.0.iter().map(ToString::to_string).collect())
}

impl Host {
    /// A server's entry in the running configuration, secrets redacted (`servers show`).
    pub fn server_entry(&self, server: &str) -> Option<serde_json::Value> {
        record::entry_of(self.config()?.as_ref(), server)
    }
}

/// The change operation on the config file alone, with no gateway running
/// (`switchboard servers ... --offline`): the same edit and validation, written atomically
/// with backups. A restart needs a running gateway and is refused.
pub fn apply_offline(
    path: &std::path::Path,
    change: &Change,
    dry_run: bool,
    backups: usize,
) -> Result<ChangeReport, ChangeError> {
    if let Change::Restart { server } = change {
        return Err(ChangeError::Failed {
            server: server.clone(),
            reason: "restarting needs a running gateway (drop --offline)".into(),
        });
    }
    let before = std::fs::read_to_string(path)
        .map_err(|error| ChangeError::Io(format!("cannot read {}: {error}", path.display())))?;
    let after = file::edit(&before, path, change)?;
    let config = file::parse(&after, path).map_err(invalid)?;
    let diff = edit::unified_diff(&file::display_name(path), &before, &after);
    if !dry_run {
        edit::write_atomically(path, &after, backups).map_err(|error| {
            ChangeError::Io(format!("cannot write {}: {error}", path.display()))
        })?;
    }
    let action = match change {
        Change::Add { .. } | Change::Enable { .. } => Action::Added,
        Change::Remove { .. } | Change::Disable { .. } => Action::Removed,
        Change::Restart { .. } => Action::Restarted,
    };
    Ok(ChangeReport {
        revision: format!("file-{}", &file::hash(&after)[..8]),
        servers: vec![ServerOutcome {
            server: change.server().to_owned(),
            action,
            applied: !dry_run,
            state: match config.servers.iter().find(|s| s.id == change.server()) {
                Some(server) if server.enabled => "configured",
                Some(_) => "disabled",
                None => "removed",
            }
            .to_owned(),
            tools: 0,
            generation: 0,
            error: None,
            connect_ms: None,
        }],
        needs_restart: Vec::new(),
        file: Some(path.to_owned()),
        created_file: false,
        diff,
        dry_run,
    })
}
