//! One row of the ledger.

use serde::{Deserialize, Serialize};

/// One call on record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The call id (a ULID, also in the result's `_meta`).
    pub call_id: String,
    /// When the call started, milliseconds since the Unix epoch.
    pub started_ms: i64,
    pub agent: Option<String>,
    /// The subject (`sub`) of the OAuth token the call came with. Left out of the row's JSON
    /// when absent, so rows written before it hash as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The OAuth client (`client_id`/`azp`) that presented that token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    pub session: Option<String>,
    pub tier: Option<String>,
    /// The name the caller used.
    pub exposed: String,
    /// The server and its own name of the tool, when the name resolved.
    pub server: Option<String>,
    pub tool: Option<String>,
    /// SHA-256 of the original arguments.
    pub args_digest: Option<String>,
    /// The arguments with secrets replaced.
    pub args_redacted: Option<std::sync::Arc<serde_json::Value>>,
    /// ok, tool_error, denied, rate_limited, timed_out, cancelled, upstream_down,
    /// upstream_error, unknown_tool, invalid_arguments, input_required.
    pub outcome: String,
    pub error: Option<String>,
    pub duration_us: i64,
    pub cost: f64,
    /// Who decided an approval, how, and what.
    pub approval: Option<String>,
    pub result_bytes: Option<i64>,
    pub cached: bool,
    /// The W3C trace id (32 hex digits) of the trace the call ran in, when it had one. Left
    /// out of the row's JSON when absent, like `subject`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl LedgerEntry {
    /// The fields the hash chain covers, in a fixed order.
    pub(crate) fn canonical(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
