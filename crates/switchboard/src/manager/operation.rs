//! The vocabulary of the manager's work: what an operation asks for ([`Work`]), who asked
//! ([`Request`]), and what it became ([`Operation`]: state, progress, energy, result).
//! Everything here is plain data, serialized as JSON into the operations database and onto
//! every surface (the model's tools, the CLI, the admin endpoint).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::config::edit::ServerEntry;

/// How urgent an operation is: queued operations start in priority order, then by age.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    #[default]
    Medium,
    High,
}

impl Priority {
    /// Reads `low`, `medium` or `high`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }
}

/// Where an operation is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Queued,
    InProgress,
    Completed,
    Failed,
    Cancelled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Queued,
            Self::InProgress,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|state| state.as_str() == text)
    }

    /// Whether the operation is over (it will not change again).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// Whether a server that passes probation is added enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// As `[manager] activation` says for requests of a model; at once for an operator's.
    #[default]
    Policy,
    /// Added enabled once probation passes, with no approval (the operator asked).
    Now,
    /// Added disabled (`switchboard install --no-activate`): enable it later.
    Never,
}

/// What a `modify` operation does to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Modification {
    Enable,
    Disable,
    Restart,
}

/// The work an operation asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Work {
    /// Searches the registries and local catalogs.
    Search { query: String, limit: usize },
    /// Finds a server in the registries, installs it into a directory the manager owns,
    /// vets it and adds it.
    Install {
        /// The registry name (`io.github.owner/name`).
        name: String,
        /// An exact version; `None` = the latest.
        version: Option<String>,
        /// The id to add it as; `None` = derived from the name.
        server: Option<String>,
        /// Values of the server's inputs that are not secret (secrets never travel here:
        /// they go to the secrets file at once, see `inputs`).
        values: BTreeMap<String, String>,
        activation: Activation,
    },
    /// Vets a server entry given whole and adds it.
    Add {
        server: String,
        entry: ServerEntry,
        activation: Activation,
    },
    /// Connects a copy of a configured server and reports what it serves.
    Test { server: String },
    /// Enables, disables or restarts a configured server.
    Modify {
        server: String,
        modification: Modification,
    },
    /// Removes a server, and uninstalls it if the manager installed it.
    Remove { server: String },
    /// Installs here, on this replica, a server another replica of the deployment installed
    /// (its package is on that replica's disk), then restarts it here. Queued by the manager
    /// itself when the shared configuration runs a server whose install this replica lacks.
    Replicate { server: String },
}

impl Work {
    /// `search`, `install`, `add`, `test`, `modify`, `remove` or `replicate`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Search { .. } => "search",
            Self::Install { .. } => "install",
            Self::Add { .. } => "add",
            Self::Test { .. } => "test",
            Self::Modify { .. } => "modify",
            Self::Remove { .. } => "remove",
            Self::Replicate { .. } => "replicate",
        }
    }

    /// The id of the server the work adds to the configuration (an install's: the id it
    /// names, else the one [`super::server_id_for`] derives from the registry name; an
    /// add's), when it adds one. At most one open operation adds any id.
    pub fn adds(&self) -> Option<String> {
        match self {
            Self::Install { name, server, .. } => {
                Some(server.clone().unwrap_or_else(|| super::server_id_for(name)))
            }
            Self::Add { server, .. } => Some(server.clone()),
            _ => None,
        }
    }

    /// The server the work is about, when it names one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::Search { .. } => None,
            Self::Install { server, name, .. } => Some(server.as_deref().unwrap_or(name)),
            Self::Add { server, .. }
            | Self::Test { server }
            | Self::Modify { server, .. }
            | Self::Remove { server }
            | Self::Replicate { server } => Some(server),
        }
    }
}

/// Who asked for an operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requester {
    /// A model, through the `manager` built-in's tools.
    Model,
    /// An operator, through the CLI or the admin endpoint.
    Operator,
    /// A program embedding the Host.
    #[default]
    Library,
}

/// An operation to queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub work: Work,
    #[serde(default)]
    pub priority: Priority,
    /// The agent that asked (and pays the energy), if known.
    #[serde(default)]
    pub agent: Option<String>,
    /// Why (the model's `purpose`), shown to the approver.
    #[serde(default)]
    pub purpose: Option<String>,
    #[serde(default)]
    pub by: Requester,
}

impl Request {
    pub fn new(work: Work) -> Self {
        Self {
            work,
            priority: Priority::default(),
            agent: None,
            purpose: None,
            by: Requester::default(),
        }
    }
}

/// One step of an operation's progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub progress: u8,
    pub message: String,
}

/// What an operation waits for, while it waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "for")]
pub enum Waiting {
    /// Values of the server's inputs (`switchboard operations input ID`, or the client by
    /// elicitation).
    Input { names: Vec<String> },
    /// An approval of the activation (`switchboard approvals approve ID`).
    Approval { id: String },
}

/// An operation as every surface shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// A ULID: operations sort by the time they were queued.
    pub id: String,
    pub kind: String,
    pub request: Request,
    pub state: State,
    /// 0–100.
    pub progress: u8,
    /// The last step's message.
    pub message: String,
    pub steps: Vec<Step>,
    /// Energy units the work consumed (charged to the agent that asked).
    pub energy: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// What it produced (search results, a probation report, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed or was cancelled, readably.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub created_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_ms: Option<u64>,
    /// The replica (host:pid) whose manager runs it, when the replicas of a deployment share
    /// their operations (`[storage] url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The secrets-file keys (never the values) of the secrets given for this operation: the
    /// only stored secrets its install may use, removed again when it ends without installing
    /// (failed, cancelled, or cut off by a restart).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

impl Operation {
    pub(crate) fn queued(id: String, request: Request, now_ms: u64) -> Self {
        Self {
            id,
            kind: request.work.kind().to_owned(),
            request,
            state: State::Queued,
            progress: 0,
            message: "queued".to_owned(),
            steps: vec![Step {
                at_ms: now_ms,
                progress: 0,
                message: "queued".to_owned(),
            }],
            energy: 0.0,
            waiting: None,
            result: None,
            error: None,
            created_ms: now_ms,
            started_ms: None,
            finished_ms: None,
            replica: None,
            secrets: Vec::new(),
        }
    }

    /// Ends an operation that was left open (its gateway stopped, or its replica stopped
    /// answering) as failed, saying why.
    pub(crate) fn fail_interrupted(&mut self, now_ms: u64, reason: String) {
        self.state = State::Failed;
        self.steps.push(Step {
            at_ms: now_ms,
            progress: self.progress,
            message: reason.clone(),
        });
        self.message = reason.clone();
        self.error = Some(reason);
        self.waiting = None;
        self.finished_ms = Some(now_ms);
    }

    /// A one-line summary: `install 01J… in_progress 40% installing …`.
    pub fn summary(&self) -> String {
        let about = self
            .request
            .work
            .server()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        format!(
            "{} {}{about} {} {}% {}",
            self.id,
            self.kind,
            self.state.as_str(),
            self.progress,
            self.error.as_deref().unwrap_or(&self.message)
        )
    }
}

/// What the manager tells whoever polls it ([`super::Manager::poll_messages`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub operation: String,
    pub kind: MessageKind,
    pub text: String,
    pub at_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Progress of an operation.
    Status,
    Completed,
    Failed,
    Cancelled,
    /// A server was added: its tools can be called now.
    ToolsAvailable,
}
