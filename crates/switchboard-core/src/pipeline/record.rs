//! The last stage: one record per call that reached the pipeline, whatever its fate.
//!
//! [`Recorder`] is the seam the audit ledger implements; until then [`LogRecorder`] writes one
//! structured log line per call.

use std::time::{Duration, SystemTime};

use super::CallError;
use crate::{ServerId, ToolOutcome};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    Ok,
    ToolError,
    UnknownTool,
    UpstreamError,
    Cancelled,
}

impl CallStatus {
    pub fn of(result: &Result<ToolOutcome, CallError>) -> Self {
        match result {
            Ok(outcome) if outcome.is_error => Self::ToolError,
            Ok(_) => Self::Ok,
            Err(CallError::UnknownTool { .. }) => Self::UnknownTool,
            Err(CallError::Upstream { .. }) => Self::UpstreamError,
            Err(CallError::Cancelled) => Self::Cancelled,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::UnknownTool => "unknown_tool",
            Self::UpstreamError => "upstream_error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What is recorded about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The name the caller used.
    pub name: String,
    /// The (server, upstream tool name) it resolved to, if it resolved.
    pub target: Option<(ServerId, String)>,
    pub agent: Option<String>,
    pub started: SystemTime,
    pub duration: Duration,
    pub status: CallStatus,
}

/// Receives every call record. Must not block: the ledger queues to its writer task.
pub trait Recorder: Send + Sync {
    fn record(&self, record: &CallRecord);
}

/// Writes each call as one structured `tracing` line at info level (target `switchboard::call`).
#[derive(Debug, Default)]
pub struct LogRecorder;

impl Recorder for LogRecorder {
    fn record(&self, record: &CallRecord) {
        let (server, tool) = match &record.target {
            Some((server, tool)) => (server.as_str(), tool.as_str()),
            None => ("", ""),
        };
        tracing::info!(
            target: "switchboard::call",
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
