//! Calls waiting for an operator: listed, approved or denied through the admin endpoint and
//! the console; the operator's time-boxed grants ("approve this agent's calls of this tool
//! for N minutes"), which answer later calls without asking anyone; and how long approval
//! decisions took (the metrics' approval wait, whoever decided). Every change of the queue
//! bumps a version that the console's live page follows.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_core::metrics::{Histogram, HistogramSnapshot};
use tokio::sync::{oneshot, watch};

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
    /// The latency tier the call runs in, if it has one.
    pub tier: Option<String>,
    /// Seconds since the epoch.
    pub since: u64,
    pub expires_in_ms: u64,
}

/// An operator's standing approval of one agent's calls of one tool, until it expires.
#[derive(Debug, Clone, Serialize)]
pub struct Grant {
    pub agent: Option<String>,
    /// The exposed tool name.
    pub tool: String,
    /// Who granted it.
    pub by: String,
    /// How long it was granted for, in minutes.
    pub minutes: u64,
    pub expires_in_ms: u64,
}

struct Granted {
    by: String,
    minutes: u64,
    until: tokio::time::Instant,
}

struct Waiting {
    request: ApprovalRequest,
    tier: Option<String>,
    since: SystemTime,
    deadline: tokio::time::Instant,
    answer: oneshot::Sender<Decision>,
}

/// The operator queue.
pub struct PendingApprovals {
    waiting: Mutex<BTreeMap<String, Waiting>>,
    /// Keyed by (agent, exposed tool name).
    grants: Mutex<HashMap<(Option<String>, String), Granted>>,
    /// Bumped whenever a call joins or leaves the queue, or a grant is made.
    changes: watch::Sender<u64>,
    /// Time to a decision: approved, denied.
    waited: [Histogram; 2],
}

impl Default for PendingApprovals {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            grants: Mutex::default(),
            changes: watch::Sender::new(0),
            waited: Default::default(),
        }
    }
}

/// Why an operator's answer was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no pending approval with id '{0}' (it may have been answered or timed out)")]
pub struct NotPending(pub String);

impl PendingApprovals {
    /// Queues a request and waits for an operator, at most `timeout`.
    pub async fn ask(&self, request: ApprovalRequest, timeout: Duration) -> Decision {
        self.ask_in_tier(request, None, timeout).await
    }

    /// [`Self::ask`] for a call that runs in `tier` (shown to the operator).
    pub async fn ask_in_tier(
        &self,
        request: ApprovalRequest,
        tier: Option<String>,
        timeout: Duration,
    ) -> Decision {
        let (answer, decision) = oneshot::channel();
        let id = request.call_id.clone();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(
                id.clone(),
                Waiting {
                    request,
                    tier,
                    since: SystemTime::now(),
                    deadline: tokio::time::Instant::now() + timeout,
                    answer,
                },
            );
        }
        self.changed();
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
        let removed = self
            .waiting
            .lock()
            .is_ok_and(|mut waiting| waiting.remove(id).is_some());
        if removed {
            self.changed();
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|version| *version += 1);
    }

    /// Follows changes of the queue and the grants: the value is only a version.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
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
                        tier: w.tier.clone(),
                        since: w
                            .since
                            .duration_since(SystemTime::UNIX_EPOCH)
                            .map_or(0, |d| d.as_secs()),
                        expires_in_ms: duration_ms(w.deadline.saturating_duration_since(now)),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Approves the waiting call `id` and, for `minutes`, every later call of the same tool
    /// by the same agent (see [`Self::granted`]).
    pub fn approve_for(&self, id: &str, minutes: u64, by: &str) -> Result<Grant, NotPending> {
        let waiting = self.take(id)?;
        let agent = waiting.request.agent.clone();
        let tool = waiting.request.tool.clone();
        let until = tokio::time::Instant::now() + Duration::from_secs(minutes.saturating_mul(60));
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(
                (agent.clone(), tool.clone()),
                Granted {
                    by: by.to_owned(),
                    minutes,
                    until,
                },
            );
        }
        self.changed();
        let decision = Decision::Approved {
            by: by.to_owned(),
            channel: format!("operator (granted for {minutes} min)"),
        };
        waiting
            .answer
            .send(decision)
            .map_err(|_| NotPending(id.to_owned()))?;
        Ok(Grant {
            agent,
            tool,
            by: by.to_owned(),
            minutes,
            expires_in_ms: duration_ms(
                until.saturating_duration_since(tokio::time::Instant::now()),
            ),
        })
    }

    /// The decision of a standing grant for `agent`'s calls of `tool`, if one is in force.
    pub fn granted(&self, agent: Option<&str>, tool: &str) -> Option<Decision> {
        let now = tokio::time::Instant::now();
        let mut grants = self.grants.lock().ok()?;
        grants.retain(|_, grant| grant.until > now);
        let grant = grants.get(&(agent.map(str::to_owned), tool.to_owned()))?;
        Some(Decision::Approved {
            by: grant.by.clone(),
            channel: format!("operator grant ({} min)", grant.minutes),
        })
    }

    /// The grants in force.
    pub fn grants(&self) -> Vec<Grant> {
        let now = tokio::time::Instant::now();
        let Ok(mut grants) = self.grants.lock() else {
            return Vec::new();
        };
        grants.retain(|_, grant| grant.until > now);
        let mut listed: Vec<Grant> = grants
            .iter()
            .map(|((agent, tool), grant)| Grant {
                agent: agent.clone(),
                tool: tool.clone(),
                by: grant.by.clone(),
                minutes: grant.minutes,
                expires_in_ms: duration_ms(grant.until.saturating_duration_since(now)),
            })
            .collect();
        listed.sort_by(|a, b| (&a.agent, &a.tool).cmp(&(&b.agent, &b.tool)));
        listed
    }

    /// Ends a grant before its time; whether there was one.
    pub fn revoke_grant(&self, agent: Option<&str>, tool: &str) -> bool {
        let removed = self.grants.lock().is_ok_and(|mut grants| {
            grants
                .remove(&(agent.map(str::to_owned), tool.to_owned()))
                .is_some()
        });
        if removed {
            self.changed();
        }
        removed
    }

    fn take(&self, id: &str) -> Result<Waiting, NotPending> {
        let taken = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.remove(id))
            .ok_or_else(|| NotPending(id.to_owned()))?;
        self.changed();
        Ok(taken)
    }

    /// An operator's answer.
    pub fn answer(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        reason: Option<&str>,
    ) -> Result<(), NotPending> {
        let waiting = self.take(id)?;
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

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn request(id: &str, agent: &str, tool: &str) -> ApprovalRequest {
        ApprovalRequest {
            call_id: id.to_owned(),
            agent: Some(agent.to_owned()),
            tool: tool.to_owned(),
            server: "t".to_owned(),
            arguments: Map::new(),
            reason: "this agent's calls need approval".to_owned(),
        }
    }

    /// A queue with qa's call `c1` of `t__delete` (tier fast) waiting in it, and its wait.
    async fn one_waiting() -> (Arc<PendingApprovals>, tokio::task::JoinHandle<Decision>) {
        let queue = Arc::new(PendingApprovals::default());
        let mut changes = queue.subscribe();
        let asked = tokio::spawn({
            let queue = queue.clone();
            async move {
                queue
                    .ask_in_tier(
                        request("c1", "qa", "t__delete"),
                        Some("fast".into()),
                        Duration::from_secs(60),
                    )
                    .await
            }
        });
        changes.changed().await.expect("the queue changed");
        (queue, asked)
    }

    #[tokio::test(start_paused = true)]
    async fn a_grant_answers_the_same_agent_and_tool_until_it_expires() {
        let (queue, asked) = one_waiting().await;
        let listed = queue.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].tier.as_deref(), Some("fast"));
        let grant = queue.approve_for("c1", 10, "alice").expect("waiting");
        assert_eq!((grant.minutes, grant.by.as_str()), (10, "alice"));
        match asked.await.expect("join") {
            Decision::Approved { by, channel } => {
                assert_eq!(by, "alice");
                assert!(channel.contains("10 min"), "{channel}");
            }
            other => panic!("not approved: {other:?}"),
        }
        assert!(queue.list().is_empty());
        assert!(queue.granted(Some("qa"), "t__delete").is_some());
        assert!(queue.granted(Some("npc"), "t__delete").is_none(), "agent");
        assert!(queue.granted(Some("qa"), "t__other").is_none(), "tool");
        assert!(queue.granted(None, "t__delete").is_none(), "no agent");
        assert_eq!(queue.grants().len(), 1);
        tokio::time::advance(Duration::from_secs(9 * 60)).await;
        assert!(queue.granted(Some("qa"), "t__delete").is_some());
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(queue.granted(Some("qa"), "t__delete").is_none(), "expired");
        assert!(queue.grants().is_empty());
        assert!(queue.approve_for("c1", 10, "alice").is_err(), "answered");
    }

    #[tokio::test(start_paused = true)]
    async fn a_revoked_grant_asks_again() {
        let (queue, asked) = one_waiting().await;
        queue.approve_for("c1", 5, "alice").expect("waiting");
        asked.await.expect("join");
        assert!(queue.revoke_grant(Some("qa"), "t__delete"));
        assert!(!queue.revoke_grant(Some("qa"), "t__delete"));
        assert!(queue.granted(Some("qa"), "t__delete").is_none());
    }
}
