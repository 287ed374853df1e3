//! Who approves calls, in order of preference:
//!
//! 1. the calling client, through MCP elicitation — `elicitation/create` on the legacy era
//!    (only if the client declared the capability), an `input_required` result with a sealed
//!    `requestState` on the 2026-07-28 era;
//! 2. an operator, through `switchboard approvals list|approve|deny` (the admin endpoint of
//!    the running gateway), who sees the pending calls in [`PendingApprovals`].
//!
//! No answer within the timeout (default 60 s) is a denial. An operator's grant in force for
//! the agent and tool ([`PendingApprovals::approve_for`]) answers before anyone is asked.

mod pending;
mod postgres;
mod seal;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use switchboard_core::approval::{ApprovalRequest, Approver, Decision};
use switchboard_core::{CallContext, ModernRequest};
use switchboard_mcp::seal::Keys;

pub use pending::{AnswerError, Grant, PendingApproval, PendingApprovals};
pub use seal::{MemoryNonces, NonceAnswer, Sealer, StateError, UsedNonces};

/// The key under which the approval question is asked in `inputRequests`.
use switchboard_core::approval::APPROVAL_INPUT_KEY as INPUT_KEY;

/// The gateway's approver.
pub struct Approvals {
    pub pending: Arc<PendingApprovals>,
    sealer: Sealer,
    timeout: Duration,
}

impl Approvals {
    /// `keys`: the key ring that seals `requestState` (the deployment's, shared by its
    /// replicas, or one random key of this process).
    pub fn new(keys: Arc<dyn Keys>, timeout: Duration) -> Self {
        Self::with_sealer(Sealer::new(keys), timeout)
    }

    /// With a sealer of the caller's (e.g. one whose used nonces the replicas share).
    pub fn with_sealer(sealer: Sealer, timeout: Duration) -> Self {
        Self {
            pending: Arc::new(PendingApprovals::default()),
            sealer,
            timeout,
        }
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "title": "Approve this call?"},
                "reason": {"type": "string", "title": "Reason (optional)"}
            },
            "required": ["approve"]
        })
    }

    /// Reads an elicitation answer (`{action, content: {approve, reason}}`).
    fn read_answer(answer: &Value, channel: &str) -> Decision {
        let by = "client".to_owned();
        let action = answer.get("action").and_then(Value::as_str).unwrap_or("");
        let content = answer.get("content");
        let approve = content
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool);
        let reason = content
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty());
        match (action, approve) {
            ("accept", Some(true)) => Decision::Approved {
                by,
                channel: channel.to_owned(),
            },
            ("accept", _) => Decision::Denied {
                by,
                channel: channel.to_owned(),
                reason: reason.unwrap_or("the user did not approve").to_owned(),
            },
            (other, _) => Decision::Denied {
                by,
                channel: channel.to_owned(),
                reason: match other {
                    "decline" => "the user declined".to_owned(),
                    "cancel" => "the user cancelled".to_owned(),
                    _ => "no usable answer".to_owned(),
                },
            },
        }
    }

    async fn ask_modern(&self, request: &ApprovalRequest, modern: &ModernRequest) -> Decision {
        let channel = "elicitation (input_required)";
        if let Some(state) = &modern.request_state {
            return match self.sealer.open(state, request).await {
                Err(problem) => Decision::Denied {
                    by: "gateway".to_owned(),
                    channel: channel.to_owned(),
                    reason: format!("the approval state was refused: {problem}"),
                },
                Ok(()) => match modern
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get(INPUT_KEY))
                {
                    Some(answer) => Self::read_answer(answer, channel),
                    None => Decision::Denied {
                        by: "gateway".to_owned(),
                        channel: channel.to_owned(),
                        reason: format!("inputResponses has no '{INPUT_KEY}' answer"),
                    },
                },
            };
        }
        Decision::InputRequired {
            input_requests: json!({
                INPUT_KEY: {
                    "method": "elicitation/create",
                    "params": {"message": request.message(), "requestedSchema": Self::schema()}
                }
            }),
            request_state: self.sealer.seal(request, self.timeout),
        }
    }
}

impl Approver for Approvals {
    fn decide<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            if let Some(granted) = self
                .pending
                .granted(request.agent.as_deref(), &request.tool)
            {
                return granted;
            }
            if let Some(modern) = ctx.modern.as_ref().filter(|m| m.elicitation) {
                return self.ask_modern(request, modern).await;
            }
            let started = tokio::time::Instant::now();
            let decision = self.wait_for_decision(request, ctx).await;
            self.pending.record_wait(&decision, started.elapsed());
            decision
        })
    }
}

impl Approvals {
    /// The client's answer through elicitation if it can, else an operator's; the call waits.
    async fn wait_for_decision(&self, request: &ApprovalRequest, ctx: &CallContext) -> Decision {
        if let Some(caller) = ctx
            .caller
            .as_ref()
            .filter(|c| c.supports("elicitation/create"))
        {
            let params = json!({"message": request.message(), "requestedSchema": Self::schema()});
            let asked = caller.request("elicitation/create", params);
            return match tokio::time::timeout(self.timeout, asked).await {
                Ok(Ok(answer)) => Self::read_answer(&answer, "elicitation"),
                Ok(Err(error)) => Decision::Denied {
                    by: "client".to_owned(),
                    channel: "elicitation".to_owned(),
                    reason: format!("the client could not answer: {}", error.message),
                },
                Err(_) => Decision::Denied {
                    by: "timeout".to_owned(),
                    channel: "elicitation".to_owned(),
                    reason: format!("no answer within {} s", self.timeout.as_secs()),
                },
            };
        }
        let caller = ctx.caller.as_ref();
        if let Some(caller) = caller {
            caller.waiting_on(Some("waiting for an operator to approve the call"));
        }
        let decision = self
            .pending
            .ask_in_tier(request.clone(), ctx.tier.clone(), self.timeout)
            .await;
        if let Some(caller) = caller {
            caller.waiting_on(None);
        }
        decision
    }
}
