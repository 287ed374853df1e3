//! Tasks: a `tools/call` a client starts now and comes back for (MCP 2025-11-25 tasks,
//! the 2026-07-28 tasks extension). These are the types every side shares — who owns a task,
//! the states it goes through, how it ended, and the snapshot a front serializes in either
//! era's shape. The store and the runner live in the `switchboard` crate.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::CallContext;

/// The extension id of the 2026-07-28 tasks extension, in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that ties a 2025-11-25 message to its task.
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// The longest any task's call may run, whatever its TTL says (a week); the runner cancels
/// it at its TTL before that.
pub const TASK_CALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    Working,
    /// Waiting for an answer: the client's (an elicitation the tool asked) or an operator's
    /// (an approval).
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    /// The status as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Completed, failed and cancelled tasks never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// Who a task belongs to: the agent, the client session when there is one (a stateless
/// 2026-07-28 request has none, so its tasks are the agent's), and the subject of the OAuth
/// token when the agent's token was one (so two users an identity map sends to one agent do
/// not share tasks). Nobody else can see, fetch or cancel it — to them it does not exist.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TaskOwner {
    pub agent: Option<String>,
    pub session: Option<String>,
    pub subject: Option<String>,
}

impl TaskOwner {
    /// The owner of a task started by this call.
    pub fn of(ctx: &CallContext) -> Self {
        Self {
            agent: ctx.agent.clone(),
            session: ctx.session.clone(),
            subject: ctx
                .principal
                .as_ref()
                .and_then(|principal| principal.subject.clone()),
        }
    }
}

/// What a tool declares of tasks (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Never run as a task (the default when a tool declares nothing).
    Forbidden,
    Optional,
    /// Only ever run as a task.
    Required,
}

impl TaskSupport {
    /// A tool definition's declaration (`execution.taskSupport`), `Forbidden` without one.
    pub fn of(definition: &crate::ToolDefinition) -> Self {
        match definition
            .extra
            .get("execution")
            .and_then(|execution| execution.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("optional") => Self::Optional,
            Some("required") => Self::Required,
            _ => Self::Forbidden,
        }
    }
}

/// How a task ended, when it did not end cancelled.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    /// The tool's result (`isError` set when the tool itself failed), as it would have been
    /// answered to `tools/call`.
    Completed(Value),
    /// A protocol-level failure: the JSON-RPC error the call would have been answered.
    Failed {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

/// One task as a front shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub id: String,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub created_at: SystemTime,
    pub updated_at: SystemTime,
    /// How long the task is kept after it was created; `None`: until the gateway stops.
    pub ttl: Option<Duration>,
    /// How often the client should poll.
    pub poll_interval: Duration,
    /// Set once the task completed or failed.
    pub end: Option<TaskEnd>,
    /// The questions waiting for the client's answer, by key (`input_required`).
    pub input_requests: Map<String, Value>,
}

/// How starting a call whose server decides about tasks ended: the server made it a task
/// (the gateway's task follows it), or it answered at once — a result, or a question for the
/// client first (`input_required`).
#[derive(Debug)]
pub enum StartedTask {
    Task(TaskView),
    Answered(Result<crate::ToolOutcome, crate::pipeline::CallError>),
}

/// Why a task could not be started or reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TaskError {
    /// No visible tool has this name (the same answer as for a synchronous call).
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// No task of this caller has this id: it never existed, belongs to someone else, expired,
    /// or was lost when the gateway restarted.
    #[error(
        "no task '{0}' for this caller (it may have expired, or been lost when the gateway restarted)"
    )]
    UnknownTask(String),
    /// The caller holds as many tasks as it may.
    #[error("too many tasks: this caller already holds {0}; fetch or cancel some first")]
    TooMany(usize),
    /// The agent holds as many tasks as it may, all its sessions together.
    #[error(
        "too many tasks: agent '{agent}' already holds {limit} across its sessions \
         ([gateway.tasks] max_per_agent); fetch or cancel some first"
    )]
    AgentFull { agent: String, limit: usize },
    /// The gateway holds as many tasks as it may, all callers together.
    #[error("the gateway holds as many tasks as it may ({0}); try again later")]
    Full(usize),
    /// `tasks/cancel` of a task that already ended (the 2025-11-25 era refuses it).
    #[error("task '{0}' already ended ({1}) and cannot be cancelled")]
    Terminal(String, &'static str),
    /// The tasks the replicas share cannot be reached now (`[shared] redis` down and
    /// `redis_unavailable = "fail_closed"`, or the replica running the task did not answer).
    #[error("{0}")]
    Unavailable(String),
    /// A relayed task's server could not be reached, or refused.
    #[error("{message}")]
    Upstream {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}
