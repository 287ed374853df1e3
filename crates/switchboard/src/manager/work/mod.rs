//! What each kind of operation does. An install: look the server up in the registries,
//! resolve its `server.json` on the gateway (exact versions, no shell; the command line is
//! a step before anything runs), wait for its required inputs, install it into a directory
//! the manager owns, put it on probation, wait for its activation to be approved when the
//! policy says so, and add it through the live-configuration operation. Cancelled or failed
//! at any point, it undoes what it did: the directory, the processes, the config entry.

mod confinement;
mod install;
mod kept_home;
mod model_remotes;
mod replicate;

use serde_json::{Value, json};
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_core::config::edit::{EntryTransport, ServerEntry};
use switchboard_core::config::{self, ManagerConfig, Trust};
use tokio_util::sync::CancellationToken;

use super::operation::{Activation, Modification, Request, Requester, Waiting, Work};
use super::{Manager, inputs, vet};
use crate::Host;
use crate::live::{Change, ChangeRequest};

/// How an operation ended, short of success.
#[derive(Debug)]
pub(crate) enum WorkError {
    Cancelled,
    Failed(String),
}

pub(crate) use install::screen_values;
pub(super) use replicate::complete_private_dirs;

type Outcome = Result<Value, WorkError>;

fn failed(reason: impl std::fmt::Display) -> WorkError {
    WorkError::Failed(reason.to_string())
}

/// Runs the work of operation `id`.
pub(crate) async fn run(
    manager: &Manager,
    id: &str,
    request: &Request,
    cancel: &CancellationToken,
) -> Outcome {
    let host = manager
        .host()
        .ok_or_else(|| failed("the gateway is shutting down"))?;
    let config = host.config();
    let settings = config
        .as_deref()
        .map(|c| c.manager.clone())
        .unwrap_or_default();
    let job = Job {
        manager,
        host: &host,
        id,
        request,
        cancel,
        settings: &settings,
    };
    match &request.work {
        Work::Search { query, limit } => job.search(query, *limit).await,
        Work::Install {
            name,
            version,
            server,
            values,
            activation,
        } => {
            job.install(
                name,
                version.as_deref(),
                server.as_deref(),
                values,
                *activation,
            )
            .await
        }
        Work::Add {
            server,
            entry,
            activation,
        } => {
            // Servers the manager adds are pinned unless the entry or `[manager] trust` says.
            let mut entry = entry.clone();
            entry.trust.get_or_insert(settings.trust);
            job.add(server, entry, *activation, None).await
        }
        Work::Test { server } => job.test(server).await,
        Work::Modify {
            server,
            modification,
        } => job.modify(server, *modification).await,
        Work::Remove { server } => job.remove(server).await,
        Work::Replicate { server } => job.replicate(server).await,
    }
}

struct Job<'a> {
    manager: &'a Manager,
    host: &'a Host,
    id: &'a str,
    request: &'a Request,
    cancel: &'a CancellationToken,
    settings: &'a ManagerConfig,
}

/// The server id a registry name is added as: its last segment, in lower case, with
/// anything but letters, digits, `-` and `_` turned into `-`.
pub fn server_id_for(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    let id: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let id = id.trim_matches('-').to_owned();
    if id.is_empty() {
        "server".to_owned()
    } else {
        id
    }
}

impl Job<'_> {
    fn step(&self, progress: u8, message: &str) {
        self.manager.step(self.id, progress, message);
    }

    fn check_cancel(&self) -> Result<(), WorkError> {
        if self.cancel.is_cancelled() {
            Err(WorkError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Runs `future` unless the operation is cancelled first.
    async fn or_cancel<T>(&self, future: impl Future<Output = T>) -> Result<T, WorkError> {
        tokio::select! {
            value = future => Ok(value),
            () = self.cancel.cancelled() => Err(WorkError::Cancelled),
        }
    }

    async fn search(&self, query: &str, limit: usize) -> Outcome {
        let registry = self.manager.registry(self.settings);
        self.step(10, &format!("searching for '{query}'"));
        let listings = self
            .or_cancel(registry.search(query, limit.clamp(1, 100)))
            .await?
            .map_err(failed)?;
        let servers: Vec<Value> = listings.iter().map(super::listing::summary).collect();
        self.step(100, &format!("{} found", servers.len()));
        Ok(json!({"query": query, "servers": servers}))
    }

    /// What a remote answered is cut from a model's report (its HTTP status stays): the body
    /// of an internal service's error page is not the model's to read. The gateway's log
    /// keeps it whole for the operator.
    fn keep_remote_answers_from_the_model(&self, report: &mut vet::VetReport) {
        let notes = report.reason.iter_mut().chain(
            report
                .tools
                .iter_mut()
                .filter_map(|t| t.probe_note.as_mut()),
        );
        for note in notes {
            let cut = model_remotes::without_response_bodies(note);
            if cut != *note {
                tracing::warn!(
                    server = report.server,
                    operation = self.id,
                    "probation of '{}': {note}",
                    report.server
                );
                *note = cut;
            }
        }
    }

    /// Vets `entry`, has its activation approved when the policy says so, and adds it.
    pub(super) async fn add(
        &self,
        server: &str,
        mut entry: ServerEntry,
        activation: Activation,
        origin: Option<Value>,
    ) -> Outcome {
        self.check_cancel()?;
        self.step(72, &format!("probation: starting '{server}'"));
        let (mut report, tools) = match vet::vet(self.host, server, &entry, self.cancel).await {
            Ok(vetted) => vetted,
            Err(_) if self.cancel.is_cancelled() => return Err(WorkError::Cancelled),
            Err(reason) => return Err(failed(format!("probation could not run: {reason}"))),
        };
        let remote = matches!(
            entry.transport,
            EntryTransport::Http { .. } | EntryTransport::Sse { .. }
        );
        if remote && self.request.by == Requester::Model {
            self.keep_remote_answers_from_the_model(&mut report);
        }
        let report_json = serde_json::to_value(&report).unwrap_or(Value::Null);
        if !report.passed {
            self.manager.set_result(
                self.id,
                json!({"server": server, "origin": origin, "probation": report_json}),
            );
            return Err(failed(format!(
                "probation failed: {}; nothing was added",
                report.reason.as_deref().unwrap_or("no reason")
            )));
        }
        self.step(
            88,
            &format!(
                "probation passed: {} tools, {} listing tokens",
                report.tools.len(),
                report.listing_tokens
            ),
        );
        let enabled = match self.activation(activation) {
            Activation::Never => false,
            Activation::Now => true,
            Activation::Policy => {
                self.approve(server, &report, origin.as_ref()).await?;
                true
            }
        };
        if !enabled {
            entry.enabled = Some(false);
        }
        self.check_cancel()?;
        let seeded = match &self.host.inner.options.pins {
            Some(pins) if entry.trust == Some(Trust::Pinned) => {
                Some((pins.clone(), pins.seed(server, &tools)))
            }
            _ => None,
        };
        self.step(95, &format!("adding '{server}'"));
        let mut change = ChangeRequest::new(
            Change::Add {
                server: server.to_owned(),
                entry,
            },
            crate::Surface::Manager,
        );
        change.actor = Some(self.actor());
        let host = self.host.clone();
        // The change runs to its end on its own task even if this operation is cancelled:
        // then it is undone below.
        let applied = tokio::spawn(async move { host.apply(change).await })
            .await
            .map_err(|e| failed(format!("the change task failed: {e}")))
            .and_then(|applied| applied.map_err(|e| failed(format!("adding failed: {e}"))));
        let report_of_change = match applied {
            Ok(report) => report,
            Err(error) => {
                // Not added (another server of that id, a file that refused the change): the
                // pins of whatever holds the id stay as they were.
                if let Some((pins, before)) = seeded {
                    pins.restore(server, before);
                }
                return Err(error);
            }
        };
        if self.cancel.is_cancelled() {
            self.undo_add(server).await;
            return Err(WorkError::Cancelled);
        }
        let tool_names: Vec<&str> = report.tools.iter().map(|t| t.name.as_str()).collect();
        if enabled {
            self.manager.tools_available(
                self.id,
                format!(
                    "server '{server}' added: its tools can be called now ({})",
                    tool_names.join(", ")
                ),
            );
        }
        Ok(json!({
            "server": server,
            "activated": enabled,
            "origin": origin,
            "file": report_of_change.file,
            "probation": report_json,
        }))
    }

    fn actor(&self) -> String {
        match (&self.request.agent, self.request.by) {
            (Some(agent), _) => format!("agent:{agent}"),
            (None, Requester::Model) => "model".to_owned(),
            (None, Requester::Operator) => "operator".to_owned(),
            (None, Requester::Library) => "library".to_owned(),
        }
    }

    /// What `Activation::Policy` means for this request: the config's word for a model's
    /// request, at once for an operator's or a program's.
    fn activation(&self, asked: Activation) -> Activation {
        match (asked, self.request.by, self.settings.activation) {
            (Activation::Policy, Requester::Model, config::Activation::Auto) => Activation::Now,
            (Activation::Policy, Requester::Model, config::Activation::Approval) => {
                Activation::Policy
            }
            (Activation::Policy, _, _) => Activation::Now,
            (other, _, _) => other,
        }
    }

    async fn approve(
        &self,
        server: &str,
        report: &vet::VetReport,
        origin: Option<&Value>,
    ) -> Result<(), WorkError> {
        let pending = self.host.pending_approvals().ok_or_else(|| {
            failed("activation needs an approval, and this Host has no approval queue")
        })?;
        let mut arguments = serde_json::Map::new();
        arguments.insert("server".into(), json!(server));
        if let Some(origin) = origin {
            arguments.insert("origin".into(), origin.clone());
        }
        arguments.insert(
            "tools".into(),
            json!(report.tools.iter().map(|t| &t.name).collect::<Vec<_>>()),
        );
        arguments.insert("listing_tokens".into(), json!(report.listing_tokens));
        if let Some(purpose) = &self.request.purpose {
            arguments.insert("purpose".into(), json!(purpose));
        }
        let request = ApprovalRequest {
            call_id: self.id.to_owned(),
            agent: self.request.agent.clone(),
            tool: format!("activate server '{server}'"),
            server: "manager".to_owned(),
            arguments,
            reason: "a model asked for this server ([manager] activation = \"approval\")"
                .to_owned(),
        };
        self.manager.set_waiting(
            self.id,
            Some(Waiting::Approval {
                id: self.id.to_owned(),
            }),
        );
        self.step(
            90,
            &format!(
                "probation passed; waiting for approval (switchboard approvals approve {})",
                self.id
            ),
        );
        let decision = self
            .or_cancel(pending.ask(request, self.settings.approval_timeout))
            .await?;
        self.manager.set_waiting(self.id, None);
        match decision {
            Decision::Approved { by, channel } => {
                self.step(92, &format!("activation approved by {by} via {channel}"));
                Ok(())
            }
            Decision::Denied { by, reason, .. } => Err(failed(format!(
                "activation denied by {by}: {reason}; nothing was added"
            ))),
            Decision::InputRequired { .. } => Err(failed(format!(
                "the approval queue answered the activation of '{server}' with a question instead of a decision (approval {})",
                self.id
            ))),
        }
    }

    /// Takes back a server this operation added (it was cancelled while the change ran).
    async fn undo_add(&self, server: &str) {
        let mut change = ChangeRequest::new(
            Change::Remove {
                server: server.to_owned(),
            },
            crate::Surface::Manager,
        );
        change.actor = Some(self.actor());
        let host = self.host.clone();
        match tokio::spawn(async move { host.apply(change).await }).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::warn!(server, "cannot undo the addition: {error}"),
            Err(error) => tracing::warn!(server, "cannot undo the addition: {error}"),
        }
    }

    async fn test(&self, server: &str) -> Outcome {
        self.step(10, &format!("connecting a copy of '{server}'"));
        let report = self
            .or_cancel(self.host.test_server(server, None))
            .await?
            .map_err(failed)?;
        Ok(serde_json::to_value(report).unwrap_or(Value::Null))
    }

    async fn modify(&self, server: &str, modification: Modification) -> Outcome {
        let change = match modification {
            Modification::Enable => Change::Enable {
                server: server.to_owned(),
            },
            Modification::Disable => Change::Disable {
                server: server.to_owned(),
            },
            Modification::Restart => Change::Restart {
                server: server.to_owned(),
            },
        };
        self.step(10, &format!("{} '{server}'", change.action()));
        let report = self.apply(change).await?;
        Ok(serde_json::to_value(report).unwrap_or(Value::Null))
    }

    async fn apply(&self, change: Change) -> Result<crate::ChangeReport, WorkError> {
        let mut request = ChangeRequest::new(change, crate::Surface::Manager);
        request.actor = Some(self.actor());
        let host = self.host.clone();
        tokio::spawn(async move { host.apply(request).await })
            .await
            .map_err(|e| failed(format!("the change task failed: {e}")))?
            .map_err(failed)
    }

    async fn remove(&self, server: &str) -> Outcome {
        let installed = self.manager.installed_server(server).map_err(failed)?;
        if self.request.by == Requester::Model {
            let Some(installed) = &installed else {
                return Err(failed(format!(
                    "'{server}' was not installed by the manager: only an operator can remove it"
                )));
            };
            let asked_by = installed.agent.clone().or_else(|| {
                self.manager
                    .status(&installed.operation)
                    .ok()
                    .and_then(|operation| operation.request.agent)
            });
            if asked_by != self.request.agent {
                return Err(failed(format!(
                    "'{server}' was installed for another agent: only it or an operator can remove it"
                )));
            }
        }
        let configured = self
            .host
            .config()
            .is_some_and(|c| c.server(server).is_some());
        let mut report = None;
        if configured {
            self.step(20, &format!("removing '{server}' from the configuration"));
            report = Some(
                self.apply(Change::Remove {
                    server: server.to_owned(),
                })
                .await?,
            );
        } else if installed.is_none() {
            return Err(failed(format!("no server '{server}' in the configuration")));
        }
        let mut uninstalled = None;
        let mut left = None;
        if let Some(installed) = installed {
            let root = install::install_root(self.settings)?;
            if install::is_install_dir(&root, server, &installed.dir) {
                self.step(70, &format!("uninstalling {}", installed.dir.display()));
                install::remove_dir(&installed.dir).await.map_err(failed)?;
                uninstalled = Some(installed.dir);
            } else {
                // Not the manager's directory for this server (a changed install_dir, or a
                // record that says anything else): the record goes, the directory stays.
                let note = format!(
                    "left {} in place: it is not {}, the only directory the manager removes for '{server}'",
                    installed.dir.display(),
                    root.join(server).display()
                );
                tracing::warn!(server, "{note}");
                self.step(70, &note);
                left = Some(note);
            }
            inputs::forget_secrets(&installed.secrets);
            self.manager.forget_install(server).map_err(failed)?;
        }
        // A home kept from an install again that did not finish goes with the server.
        if let Ok(root) = install::install_root(self.settings)
            && let Err(WorkError::Failed(e)) = kept_home::forget_kept_home(&root, server)
        {
            tracing::warn!(server, "{e}");
        }
        // The vetted definitions go with the server: one added later under its name is judged
        // on its own tools.
        if let Some(pins) = &self.host.inner.options.pins {
            pins.forget_server(server);
        }
        let mut result = json!({
            "server": server,
            "removed": report.is_some(),
            "uninstalled": uninstalled,
        });
        if let Some(left) = left {
            result["left"] = json!(left);
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_become_server_ids() {
        assert_eq!(
            server_id_for("io.github.modelcontextprotocol/server-memory"),
            "server-memory"
        );
        assert_eq!(server_id_for("com.example/My Tool!"), "my-tool");
        assert_eq!(server_id_for("///"), "server");
    }
}
