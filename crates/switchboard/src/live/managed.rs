//! Managed configuration: with `[storage] url`, the servers changed through the live
//! operation (`servers add/remove/enable/disable`, the admin endpoint, the console,
//! `Host::apply`) are kept in PostgreSQL as one versioned document shared by every replica,
//! instead of being written into each replica's own file.
//!
//! Precedence: the replica's file is the base and the managed document is overlaid on it,
//! server by server — a managed entry replaces the file's entry of the same id, a managed
//! removal takes the file's entry out, a managed enable/disable of a server only the file
//! has flips its `enabled`. Every other section (gateway, agents, limits, …) stays the
//! file's, per replica. Where the overlay overrides what the file says, a note says so (in
//! the log at every overlay, and in `status`), so a hand edit is never dropped silently.
//!
//! This module is the document, the overlay and what the document refuses ([`refusal`]: an
//! entry naming this machine's TLS files), all pure; `shared_store` keeps it in PostgreSQL
//! and follows other replicas' changes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use switchboard_core::config::Format;
use switchboard_core::config::edit::{self, EditError, ServerEntry};

use super::Change;

/// Why `change` cannot go into the managed document, if it cannot: an entry naming files of
/// this machine (`tls`), which every replica would read on its own disk, so one that lacks
/// them could not apply the document (nor start).
pub fn refusal(change: &Change) -> Option<String> {
    let Change::Add { server, entry } = change else {
        return None;
    };
    let tls = match &entry.transport {
        edit::EntryTransport::Http { tls, .. } | edit::EntryTransport::Sse { tls, .. } => tls,
        _ => return None,
    };
    tls.as_ref().map(|_| {
        format!(
            "servers.{server}.tls: with [storage] url a server added here is shared by every \
             replica, and its TLS files are this machine's; put a server with tls in each \
             replica's config file (the same paths on each), where a reload takes it"
        )
    })
}

/// The managed part of the configuration at one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagedDocument {
    /// Server id → what the live operation made of it.
    pub servers: BTreeMap<String, ManagedServer>,
}

/// What the managed configuration says of one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum ManagedServer {
    /// The server's whole entry (added through the live operation).
    Entry { entry: ServerEntry },
    /// A server of the file, enabled or disabled through the live operation.
    Enabled { enabled: bool },
    /// Removed through the live operation: it does not run, whatever the file says.
    Removed,
}

impl ManagedDocument {
    /// The document after `change` (a restart changes nothing shared: it is per replica).
    pub fn changed(&self, change: &Change) -> Self {
        let mut next = self.clone();
        match change {
            Change::Add { server, entry } => {
                let entry = entry.clone();
                next.servers
                    .insert(server.clone(), ManagedServer::Entry { entry });
            }
            Change::Remove { server } => {
                next.servers.insert(server.clone(), ManagedServer::Removed);
            }
            Change::Enable { server } | Change::Disable { server } => {
                let enabled = matches!(change, Change::Enable { .. });
                match next.servers.get_mut(server) {
                    Some(ManagedServer::Entry { entry }) => {
                        entry.enabled = (!enabled).then_some(false);
                    }
                    _ => {
                        next.servers
                            .insert(server.clone(), ManagedServer::Enabled { enabled });
                    }
                }
            }
            Change::Restart { .. } => {}
        }
        next
    }
}

/// The file's text with the managed document laid over it, and a note for every place where
/// the document overrides or cannot apply to what the file says.
pub fn overlay(
    text: &str,
    format: Format,
    document: &ManagedDocument,
) -> Result<(String, Vec<String>), EditError> {
    let mut text = text.to_owned();
    let mut notes = Vec::new();
    for (id, server) in &document.servers {
        let in_file = edit::server_text(&text, format, id).is_some();
        match server {
            ManagedServer::Entry { entry } => {
                if in_file {
                    notes.push(format!(
                        "servers.{id}: the file's entry is overridden by the managed configuration (changed with `switchboard servers`); remove it from the file, or change the server with `switchboard servers`"
                    ));
                    text = edit::remove_server(&text, format, id)?;
                }
                text = edit::add_server(&text, format, id, entry)?;
            }
            ManagedServer::Enabled { enabled } => {
                if in_file {
                    text = edit::set_enabled(&text, format, id, *enabled)?;
                } else {
                    let verb = if *enabled { "enabled" } else { "disabled" };
                    notes.push(format!(
                        "servers.{id}: {verb} in the managed configuration, but the file has no such server: nothing to {}",
                        if *enabled { "enable" } else { "disable" }
                    ));
                }
            }
            ManagedServer::Removed => {
                if in_file {
                    notes.push(format!(
                        "servers.{id}: in the file, but removed with `switchboard servers remove` (managed configuration): it does not run; `switchboard servers add` brings it back"
                    ));
                    text = edit::remove_server(&text, format, id)?;
                }
            }
        }
    }
    Ok((text, notes))
}

#[cfg(test)]
mod tests {
    use switchboard_core::config::edit::EntryTransport;

    use super::*;

    const FILE: &str =
        "[servers.clock]\nbuiltin = \"clock\"\n\n[servers.dice]\nbuiltin = \"dice\"\n";

    fn builtin(name: &str) -> ServerEntry {
        ServerEntry {
            transport: EntryTransport::Builtin { name: name.into() },
            enabled: None,
            trust: None,
            sandbox: None,
        }
    }

    fn entry_of(document: &ManagedDocument, server: &str) -> Option<ServerEntry> {
        match document.servers.get(server) {
            Some(ManagedServer::Entry { entry }) => Some(entry.clone()),
            _ => None,
        }
    }

    /// The document after `changes`, in order, from an empty one.
    fn after(changes: &[Change]) -> ManagedDocument {
        changes
            .iter()
            .fold(ManagedDocument::default(), |document, change| {
                document.changed(change)
            })
    }

    fn remove(server: &str) -> Change {
        Change::Remove {
            server: server.into(),
        }
    }

    fn disable(server: &str) -> Change {
        Change::Disable {
            server: server.into(),
        }
    }

    fn add(server: &str, name: &str) -> Change {
        Change::Add {
            server: server.into(),
            entry: builtin(name),
        }
    }

    #[test]
    fn an_empty_document_leaves_the_file_as_it_is() {
        let (text, notes) =
            overlay(FILE, Format::Toml, &ManagedDocument::default()).expect("overlay");
        assert_eq!(text, FILE);
        assert!(notes.is_empty());
    }

    #[test]
    fn managed_changes_are_laid_over_the_file_server_by_server() {
        let document = after(&[add("echo", "clock"), remove("dice"), disable("clock")]);
        let (text, notes) = overlay(FILE, Format::Toml, &document).expect("overlay");
        assert!(text.contains("[servers.echo]"), "{text}");
        assert!(!text.contains("[servers.dice]"), "{text}");
        assert!(text.contains("enabled = false"), "{text}");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("servers.dice"), "{notes:?}");
    }

    #[test]
    fn enabling_a_managed_entry_changes_the_entry_itself() {
        let document = after(&[add("echo", "clock"), disable("echo")]);
        let disabled = ServerEntry {
            enabled: Some(false),
            ..builtin("clock")
        };
        assert_eq!(entry_of(&document, "echo"), Some(disabled));
        let again = document.changed(&Change::Enable {
            server: "echo".into(),
        });
        assert_eq!(entry_of(&again, "echo"), Some(builtin("clock")));
    }

    #[test]
    fn a_hand_edit_overridden_by_the_document_is_noted_not_dropped_silently() {
        let document = ManagedDocument::default().changed(&add("dice", "clock"));
        let (text, notes) = overlay(FILE, Format::Toml, &document).expect("overlay");
        assert_eq!(text.matches("[servers.dice]").count(), 1, "{text}");
        assert!(notes[0].contains("overridden"), "{notes:?}");
        let document = ManagedDocument::default().changed(&Change::Enable {
            server: "gone".into(),
        });
        let (_, notes) = overlay(FILE, Format::Toml, &document).expect("overlay");
        assert!(notes[0].contains("no such server"), "{notes:?}");
    }

    #[test]
    fn an_entry_naming_tls_files_is_refused_and_others_are_not() {
        let https = |tls| Change::Add {
            server: "internal".into(),
            entry: ServerEntry {
                transport: edit::EntryTransport::Http {
                    url: "https://mcp.internal.example/mcp".into(),
                    headers: BTreeMap::new(),
                    tls,
                    public_only: false,
                },
                enabled: None,
                trust: None,
                sandbox: None,
            },
        };
        let files = edit::EntryTls {
            ca: Some("/etc/switchboard/ca.pem".into()),
            ..edit::EntryTls::default()
        };
        let refused = refusal(&https(Some(files))).expect("refused");
        assert!(refused.starts_with("servers.internal.tls:"), "{refused}");
        assert!(refused.contains("each replica's config file"), "{refused}");
        assert_eq!(refusal(&https(None)), None);
        assert_eq!(refusal(&add("dice", "dice")), None);
        assert_eq!(refusal(&remove("dice")), None);
    }

    #[test]
    fn the_document_round_trips_through_json() {
        let document = after(&[add("echo", "clock"), remove("dice")]);
        let json = serde_json::to_string(&document).expect("json");
        let back: ManagedDocument = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, document);
    }
}
