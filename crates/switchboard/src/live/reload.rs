//! Reloading: the running Host reconciled with a config handed over (`Host::reload`) or read
//! again from its file (`Host::reload_file`: the watcher, `switchboard reload`, SIGHUP). A
//! file that fails validation changes nothing and is kept, located, for `status`.

use std::sync::Arc;

use switchboard_core::config::Config;

use super::{ChangeError, ChangeReport, FileError, LiveState, Stamp, Surface, file, reconcile};
use crate::Host;

impl Host {
    /// Runs `config` instead of the current configuration: servers whose settings did not
    /// change keep their connections, changed ones apply live or restart alone, removed ones
    /// drain. Nothing is written. A server whose replacement fails to start keeps its
    /// previous settings (reported in its outcome and in `status`).
    pub async fn reload(&self, config: Config, by: Surface) -> Result<ChangeReport, ChangeError> {
        let _turn = self.change_turn().await?;
        self.reload_in_turn(config, by, None).await
    }

    /// Reads the config file again and runs it (`switchboard reload`, SIGHUP, the watcher).
    /// A file that fails validation changes nothing: its problems are logged and kept for
    /// `status` until a good file arrives. From the watcher, a file the gateway wrote itself
    /// (or that did not change) is left alone.
    pub async fn reload_file(&self, by: Surface) -> Result<ChangeReport, ChangeError> {
        let _turn = self.change_turn().await?;
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
        let managed = self
            .inner
            .live
            .with(|applied| applied.managed.as_ref().map(|m| m.document.clone()));
        let effective = match &managed {
            Some(document) => {
                let (effective, notes) =
                    super::shared_store::overlay_noting(&text, &path, document)?;
                self.inner.live.with(|applied| {
                    if let Some(managed) = applied.managed.as_mut() {
                        managed.notes = notes;
                    }
                });
                effective
            }
            None => text,
        };
        let mut config = match file::parse(&effective, &path) {
            Ok(config) => config,
            Err(errors) => {
                let problems = errors.0.iter().map(ToString::to_string).collect();
                return Err(self.keep_file_error(&path, problems, by));
            }
        };
        if let Some(adjust) = &adjust {
            adjust(&mut config);
        }
        match self.reload_in_turn(config, by, Some(hash)).await {
            // Valid, but not runnable (a built-in that cannot be built): kept like a bad file.
            Err(ChangeError::Invalid(problems)) => Err(self.keep_file_error(&path, problems, by)),
            other => other,
        }
    }

    /// Logs a bad file's problems and keeps them for `status`; the running configuration
    /// stays as it was.
    fn keep_file_error(
        &self,
        path: &std::path::Path,
        problems: Vec<String>,
        by: Surface,
    ) -> ChangeError {
        for problem in &problems {
            tracing::error!(target: "switchboard::config", "{problem}");
        }
        tracing::error!(target: "switchboard::config", "{} is invalid: the previous configuration keeps running", path.display());
        self.inner.live.with(|applied| {
            applied.file_error = Some(FileError {
                file: path.to_owned(),
                problems: problems.clone(),
                since: Stamp::now(by),
            });
        });
        ChangeError::Invalid(problems)
    }

    /// Reconciles the Host with `config`; its callers hold the turn (`change_turn`).
    pub(super) async fn reload_in_turn(
        &self,
        config: Config,
        by: Surface,
        hash: Option<String>,
    ) -> Result<ChangeReport, ChangeError> {
        let (current, started_with) = self
            .inner
            .live
            .with(|applied| (applied.config.clone(), applied.started_with.clone()));
        let drain = config.gateway.drain_timeout;
        let outcomes = self.reconcile(&config, by, None, None, drain).await?;
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
            applied.note_failures(&config, &outcomes);
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
