//! The last stage: one record per call that reached the pipeline, whatever its fate.
//!
//! [`Recorder`] is the seam the audit ledger implements; until then [`LogRecorder`] writes one
//! structured log line per call.

use std::time::{Duration, SystemTime};

use crate::ServerId;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool ran and succeeded.
    Ok,
    /// The tool ran and reported an error (`isError`).
    ToolError,
    /// No visible tool had the name.
    UnknownTool,
    /// The arguments did not match the input schema; the tool did not run.
    InvalidArguments,
    /// Refused by policy, a hook or an approver; the tool did not run.
    Denied,
    /// Over a rate limit, concurrency cap or quota; the tool did not run.
    RateLimited,
    /// The deadline passed.
    TimedOut,
    /// The caller cancelled.
    Cancelled,
    /// The server was not connected or the connection broke.
    UpstreamDown,
    /// The server answered with a protocol error or an unreadable result.
    UpstreamError,
    /// The server asked the client for input; the call goes on when it is sent again.
    InputRequired,
    /// The gateway could not keep the call's audit record (the ledger's shared store is
    /// away, `storage.ledger_unavailable = "refuse"`); the tool did not run.
    Unavailable,
}

impl CallStatus {
    /// Every status, in the order the docs list them.
    pub const ALL: [Self; 12] = [
        Self::Ok,
        Self::ToolError,
        Self::UnknownTool,
        Self::InvalidArguments,
        Self::Denied,
        Self::RateLimited,
        Self::TimedOut,
        Self::Cancelled,
        Self::UpstreamDown,
        Self::UpstreamError,
        Self::InputRequired,
        Self::Unavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::Denied => "denied",
            Self::RateLimited => "rate_limited",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::UpstreamDown => "upstream_down",
            Self::UpstreamError => "upstream_error",
            Self::InputRequired => "input_required",
            Self::Unavailable => "unavailable",
        }
    }
}

/// A call's arguments as a recorder keeps them (the audit ledger: never the arguments
/// themselves, which may hold secrets).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedArguments {
    /// Hex SHA-256 of the arguments' JSON as called (keys in their given order), so identical
    /// calls match.
    pub digest: String,
    /// The arguments with secrets replaced.
    pub redacted: std::sync::Arc<serde_json::Value>,
}

/// What is recorded about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Sortable unique id (a ULID), also in the result's `_meta`.
    pub call_id: String,
    /// The name the caller used.
    pub name: String,
    /// The (server, upstream tool name) it resolved to, if it resolved.
    pub target: Option<(ServerId, String)>,
    pub agent: Option<String>,
    /// Who the agent's OAuth token named (subject, client), never the token.
    pub principal: Option<crate::context::Principal>,
    pub session: Option<String>,
    /// The tier the request chose, if any.
    pub tier: Option<String>,
    /// The arguments as the recorder keeps them, when it keeps them (see
    /// [`Recorder::capture_arguments`]).
    pub arguments: Option<RecordedArguments>,
    pub started: SystemTime,
    pub duration: Duration,
    pub status: CallStatus,
    pub cost: f64,
    /// The approval decision, when the call needed one.
    pub approval: Option<String>,
    /// The error text the caller saw, for failed calls.
    pub error: Option<String>,
    /// Bytes of the result's text, when there was a result.
    pub result_bytes: Option<usize>,
    /// Served from the result cache.
    pub cached: bool,
    /// The trace the call ran in (32 hex digits), when it had one.
    pub trace_id: Option<String>,
}

/// What a [`ChangeRecord`]'s `outcome` may be.
pub const CHANGE_OUTCOMES: [&str; 3] = ["applied", "refused", "failed"];

/// One change to the running configuration (a server added, removed, enabled, disabled,
/// restarted, or its settings changed by a reload), as the audit ledger keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    /// A ULID, like a call id.
    pub change_id: String,
    pub at: SystemTime,
    /// The surface it came through: `cli`, `admin`, `library`, `file`, `reload`.
    pub surface: String,
    /// Who asked, when the surface knows (an operator name, an agent).
    pub actor: Option<String>,
    /// `add`, `remove`, `enable`, `disable`, `restart`, `update`.
    pub action: String,
    pub server: String,
    /// The server's entry before and after, with secret values redacted.
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    /// `applied`, `refused` or `failed` ([`CHANGE_OUTCOMES`]).
    pub outcome: String,
    pub error: Option<String>,
}

impl ChangeRecord {
    /// A change made now (a fresh id), with no entries and no error yet.
    pub fn now(
        surface: &str,
        actor: Option<&str>,
        action: &str,
        server: &str,
        outcome: &str,
    ) -> Self {
        let at = SystemTime::now();
        Self {
            change_id: crate::call_id::new_call_id(at),
            at,
            surface: surface.to_owned(),
            actor: actor.map(str::to_owned),
            action: action.to_owned(),
            server: server.to_owned(),
            before: None,
            after: None,
            outcome: outcome.to_owned(),
            error: None,
        }
    }
}

/// Receives every call record. Must not block: the ledger queues to its writer task.
pub trait Recorder: Send + Sync {
    fn record(&self, record: &CallRecord);

    /// Records a configuration change. The default writes it to the log.
    fn record_change(&self, change: &ChangeRecord) {
        tracing::info!(
            target: "switchboard::config",
            change_id = %change.change_id,
            surface = %change.surface,
            actor = change.actor.as_deref().unwrap_or(""),
            action = %change.action,
            server = %change.server,
            outcome = %change.outcome,
            error = change.error.as_deref().unwrap_or(""),
            "configuration change"
        );
    }

    /// Why no call may run now, when the recorder cannot keep the records it owes (the audit
    /// ledger's shared store is away and the deployment refuses calls then). The default:
    /// never.
    fn unavailable(&self) -> Option<String> {
        None
    }

    /// What records should carry of the call's arguments, taken before the arguments go
    /// upstream (so the call's own arguments are never copied for the record). The default:
    /// nothing.
    fn capture_arguments(
        &self,
        _arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<RecordedArguments> {
        None
    }

    /// Writes the recorder's own metrics (the ledger's append time and queue), when the
    /// gateway is scraped. The default has none.
    fn write_metrics(&self, _out: &mut crate::metrics::Exposition) {}
}

/// Writes each call as one structured `tracing` line at debug level (target
/// `switchboard::call`; `--log switchboard::call=debug` shows them). Writing a line per call at
/// info level cost measurable latency on the hot path; the audit ledger is the durable record.
#[derive(Debug, Default)]
pub struct LogRecorder;

impl Recorder for LogRecorder {
    fn record(&self, record: &CallRecord) {
        let (server, tool) = match &record.target {
            Some((server, tool)) => (server.as_str(), tool.as_str()),
            None => ("", ""),
        };
        tracing::debug!(
            target: "switchboard::call",
            id = %record.call_id,
            name = %record.name,
            server,
            tool,
            agent = record.agent.as_deref().unwrap_or(""),
            status = record.status.as_str(),
            micros = record.duration.as_micros() as u64,
            "call"
        );
    }
}
