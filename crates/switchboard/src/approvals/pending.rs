//! Calls waiting for an operator: listed, approved or denied through the admin endpoint; and
//! how long approval decisions took (the metrics' approval wait, whoever decided).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_core::metrics::{Histogram, HistogramSnapshot};
use tokio::sync::oneshot;

/// One call waiting for an operator, as `switchboard approvals list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApproval {
    /// The call id (also the approval's id).
    pub id: String,
    pub agent: Option<String>,
    pub tool: String,
    pub server: String,
    pub arguments: Map<String, Value>,
    pub reason: String,
    /// Seconds since the epoch.
    pub since: u64,
    pub expires_in_ms: u64,
}

struct Waiting {
    request: ApprovalRequest,
    since: SystemTime,
    deadline: tokio::time::Instant,
    answer: oneshot::Sender<Decision>,
}

/// The operator queue.
#[derive(Default)]
pub struct PendingApprovals {
    waiting: Mutex<BTreeMap<String, Waiting>>,
    /// Time to a decision: approved, denied.
    waited: [Histogram; 2],
}

/// Why an operator's answer was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no pending approval with id '{0}' (it may have been answered or timed out)")]
pub struct NotPending(pub String);

impl PendingApprovals {
    /// Queues a request and waits for an operator, at most `timeout`.
    pub async fn ask(&self, request: ApprovalRequest, timeout: Duration) -> Decision {
        let (answer, decision) = oneshot::channel();
        let id = request.call_id.clone();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(
                id.clone(),
                Waiting {
                    request,
                    since: SystemTime::now(),
                    deadline: tokio::time::Instant::now() + timeout,
                    answer,
                },
            );
        }
        tracing::info!(id, "call waiting for an operator's approval");
        // Whatever ends the wait — an answer, the timeout, or the asker giving up (a cancelled
        // operation, a dropped call) — the request leaves the queue.
        let _withdrawn = Withdraw {
            queue: self,
            id: &id,
        };
        let decided = tokio::time::timeout(timeout, decision).await;
        match decided {
            Ok(Ok(decision)) => decision,
            _ => Decision::Denied {
                by: "timeout".to_owned(),
                channel: "operator".to_owned(),
                reason: format!("no operator answered within {} s", timeout.as_secs()),
            },
        }
    }

    /// Calls waiting now.
    pub fn len(&self) -> usize {
        self.waiting.lock().map_or(0, |waiting| waiting.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts how long a call waited for `decision` (an `input_required` one waited for
    /// nothing and is not counted).
    pub(crate) fn record_wait(&self, decision: &Decision, waited: Duration) {
        let slot = match decision {
            Decision::Approved { .. } => 0,
            Decision::Denied { .. } => 1,
            Decision::InputRequired { .. } => return,
        };
        self.waited[slot].observe(waited);
    }

    /// The waits by decision, for the metrics.
    pub(crate) fn waits(&self) -> [(&'static str, HistogramSnapshot); 2] {
        [
            ("approved", self.waited[0].snapshot()),
            ("denied", self.waited[1].snapshot()),
        ]
    }

    /// Takes a request out of the queue (it is no longer waited for).
    fn withdraw(&self, id: &str) {
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.remove(id);
        }
    }

    pub fn list(&self) -> Vec<PendingApproval> {
        let now = tokio::time::Instant::now();
        self.waiting
            .lock()
            .map(|waiting| {
                waiting
                    .values()
                    .map(|w| PendingApproval {
                        id: w.request.call_id.clone(),
                        agent: w.request.agent.clone(),
                        tool: w.request.tool.clone(),
                        server: w.request.server.clone(),
                        arguments: w.request.arguments.clone(),
                        reason: w.request.reason.clone(),
                        since: w
                            .since
                            .duration_since(SystemTime::UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs()),
                        expires_in_ms: w.deadline.saturating_duration_since(now).as_millis() as u64,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// An operator's answer.
    pub fn answer(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        reason: Option<&str>,
    ) -> Result<(), NotPending> {
        let waiting = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.remove(id))
            .ok_or_else(|| NotPending(id.to_owned()))?;
        let decision = if approve {
            Decision::Approved {
                by: by.to_owned(),
                channel: "operator".to_owned(),
            }
        } else {
            Decision::Denied {
                by: by.to_owned(),
                channel: "operator".to_owned(),
                reason: reason.unwrap_or("no reason given").to_owned(),
            }
        };
        waiting
            .answer
            .send(decision)
            .map_err(|_| NotPending(id.to_owned()))
    }
}

/// Withdraws a request from the queue when its wait ends, however it ends.
struct Withdraw<'a> {
    queue: &'a PendingApprovals,
    id: &'a str,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.queue.withdraw(self.id);
    }
}
