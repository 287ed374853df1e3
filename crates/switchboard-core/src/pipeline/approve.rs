//! Stage: approval. A call the rules say needs approval waits for a [`Decision`] from the
//! approver (the calling client or an operator); a denial becomes a tool error the model can
//! read ("denied by operator: reason"), and an `input_required` decision is handed back to
//! the front, which asks the client and expects the call again with its answer.

use serde_json::{Map, Value};

use super::{CallError, CallStatus, Fate, Governance};
use crate::approval::{ApprovalRequest, Decision};
use crate::{CallContext, CatalogEntry, ToolOutcome};

/// `Ok(summary)` — go on (the summary is recorded; `None` when no approval was needed);
/// `Err(fate)` — stop here.
pub(crate) async fn approve(
    governance: &Governance,
    entry: &CatalogEntry,
    call_id: &str,
    arguments: &Map<String, Value>,
    ctx: &CallContext,
) -> Result<Option<String>, (Fate, String)> {
    let Some(reason) = governance.approvals.reason(entry, ctx.agent.as_deref()) else {
        return Ok(None);
    };
    let Some(approver) = &governance.approver else {
        let text = format!(
            "tool '{}' needs approval ({reason}), but no approval channel is configured",
            entry.exposed
        );
        return Err((
            Fate::new(Ok(ToolOutcome::error(text)), CallStatus::Denied),
            "denied: no approval channel".to_owned(),
        ));
    };
    let request = ApprovalRequest {
        call_id: call_id.to_owned(),
        agent: ctx.agent.clone(),
        tool: entry.exposed.clone(),
        server: entry.spec.server.as_str().to_owned(),
        arguments: arguments.clone(),
        reason,
    };
    let decision = approver.decide(&request, ctx).await;
    let summary = decision.summary();
    match decision {
        Decision::Approved { .. } => Ok(Some(summary)),
        Decision::Denied { by, reason, .. } => {
            let text = format!("denied by {by}: {reason}");
            Err((
                Fate::new(Ok(ToolOutcome::error(text)), CallStatus::Denied),
                summary,
            ))
        }
        Decision::InputRequired {
            input_requests,
            request_state,
        } => Err((
            Fate::new(
                Err(CallError::InputRequired {
                    input_requests,
                    request_state: Some(request_state),
                }),
                CallStatus::Denied,
            ),
            summary,
        )),
    }
}
