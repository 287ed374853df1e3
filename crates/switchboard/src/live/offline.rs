//! The change operation without a running gateway (`switchboard servers ... --offline`), and
//! a server's entry as `servers show` prints it.

use switchboard_core::config::edit;

use super::{Action, Change, ChangeError, ChangeReport, ServerOutcome, file, invalid, record};
use crate::Host;

impl Host {
    /// A server's entry in the running configuration, secrets redacted (`servers show`).
    pub fn server_entry(&self, server: &str) -> Option<serde_json::Value> {
        record::entry_of(self.config()?.as_ref(), server)
    }
}

/// The change operation on the config file alone, with no gateway running
/// (`switchboard servers ... --offline`): the same edit and validation, written atomically
/// with backups. A restart needs a running gateway and is refused. `base_revision`
/// (`--revision`): the change is refused as a conflict unless the file is still the one
/// that revision names — its hash part, as a running gateway's (`3-9f86d081`) or an offline
/// change's (`file-9f86d081`) report gives it.
pub fn apply_offline(
    path: &std::path::Path,
    change: &Change,
    dry_run: bool,
    backups: usize,
    base_revision: Option<&str>,
) -> Result<ChangeReport, ChangeError> {
    if let Change::Restart { server } = change {
        return Err(ChangeError::Failed {
            server: server.clone(),
            reason: "restarting needs a running gateway (drop --offline)".into(),
        });
    }
    let before = std::fs::read_to_string(path)
        .map_err(|error| ChangeError::Io(format!("cannot read {}: {error}", path.display())))?;
    if let Some(base) = base_revision {
        let current = &file::hash(&before)[..8];
        if base.rsplit('-').next() != Some(current) {
            return Err(ChangeError::Conflict(format!(
                "the change was based on revision {base}, but {} is at file-{current} now: look again and retry",
                path.display()
            )));
        }
    }
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
            state: match config.server(change.server()) {
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
