//! The config file as the change operation sees it: which file changes go to, whether it
//! moved on since the gateway read it, the edit of one server's entry, and validation by the
//! same rules as `config check`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use switchboard_core::config::edit::{self, EntryTransport, ServerEntry};
use switchboard_core::config::{Config, ConfigErrors, Format, GatewayEnvironment, Origin};

use super::{Applied, Change, ChangeError, LiveState};

/// The SHA-256 of a file's text, in hex.
pub(super) fn hash(text: &str) -> String {
    switchboard_core::hex::encode(&Sha256::digest(text.as_bytes()))
}

/// The name a diff shows for the file.
pub(super) fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// The file changes are written to: the one the config came from, else the default file
/// chosen for a Host running on the built-in default.
pub(super) fn target(applied: &Applied) -> Option<PathBuf> {
    applied
        .config
        .as_ref()
        .and_then(|config| config.source.clone())
        .or_else(|| applied.options.default_file.clone())
}

/// The text a change starts from, and whether the file is new. Refuses when the file moved
/// on since the gateway read it (a hand edit the watcher has not applied yet).
pub(super) fn read_current(
    target: &Path,
    current: &Config,
    live: &LiveState,
) -> Result<(String, bool), ChangeError> {
    if current.source.is_some() {
        let text = std::fs::read_to_string(target).map_err(|error| {
            ChangeError::Io(format!("cannot read {}: {error}", target.display()))
        })?;
        let known = live.with(|applied| applied.text_hash.clone());
        if known.as_deref() != Some(hash(&text).as_str()) {
            return Err(ChangeError::Conflict(format!(
                "{} changed on disk since the gateway last read it (a hand edit not applied yet): run `switchboard reload` to apply it, then retry",
                target.display()
            )));
        }
        return Ok((text, false));
    }
    if target.exists() {
        return Err(ChangeError::Conflict(format!(
            "{} exists, but the gateway runs on its built-in default: restart it with --config {}, or move the file away",
            target.display(),
            target.display()
        )));
    }
    Ok((default_text(current, Format::of(target))?, true))
}

/// The text of a new config file holding the built-in default's servers, so that the file
/// describes what runs now.
fn default_text(current: &Config, format: Format) -> Result<String, ChangeError> {
    let mut text = match format {
        Format::Toml => "# Switchboard configuration (docs/config.md). Written when the first change was made\n# to a gateway running on its built-in default; edit it freely: comments and layout are kept.\n".to_owned(),
        Format::Json => "{\n  \"mcpServers\": {}\n}\n".to_owned(),
    };
    for server in &current.servers {
        if let switchboard_core::config::Transport::Builtin { name, .. } = &server.transport {
            let entry = ServerEntry {
                transport: EntryTransport::Builtin { name: name.clone() },
                enabled: (!server.enabled).then_some(false),
                trust: None,
                sandbox: None,
            };
            text = edit::add_server(&text, format, &server.id, &entry)
                .map_err(ChangeError::from_edit)?;
        }
    }
    Ok(text)
}

/// The file's text with `change` made to one server's entry.
pub(super) fn edit(before: &str, target: &Path, change: &Change) -> Result<String, ChangeError> {
    let format = Format::of(target);
    let edited = match change {
        Change::Add { server, entry } => {
            check_id(server)?;
            edit::add_server(before, format, server, entry)
        }
        Change::Remove { server } => edit::remove_server(before, format, server),
        Change::Enable { server } => edit::set_enabled(before, format, server, true),
        Change::Disable { server } => edit::set_enabled(before, format, server, false),
        // Nothing is edited: the server need only be in the file, in whichever form.
        Change::Restart { server } => match edit::server_ids(before, format) {
            Ok(ids) if ids.contains(server) => Ok(before.to_owned()),
            Ok(_) => Err(edit::EditError::Missing(server.clone())),
            Err(error) => Err(error),
        },
    };
    edited.map_err(ChangeError::from_edit)
}

/// Server ids are 1–64 characters of `A-Z a-z 0-9 _ -` (the validator's rule, checked here
/// first so the error names the id rather than a place in a file the user never wrote).
fn check_id(server: &str) -> Result<(), ChangeError> {
    let valid = !server.is_empty()
        && server.len() <= 64
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(ChangeError::Invalid(vec![format!(
            "server id '{server}': use 1-64 characters of A-Z a-z 0-9 _ -"
        )]))
    }
}

/// Validates config text by the rules of `config check`, substituting `${VAR}` from this
/// process's environment.
pub(super) fn parse(text: &str, path: &Path) -> Result<Config, ConfigErrors> {
    Config::parse(
        text,
        Origin::from(path),
        Format::of(path),
        &GatewayEnvironment::new(),
    )
}
