//! Calls waiting for an operator: listed, approved or denied through the admin endpoint and
//! the console; the operator's time-boxed grants ("approve this agent's calls of this tool
//! for N minutes"), which answer later calls without asking anyone; and how long approval
//! decisions took (the metrics' approval wait, whoever decided). Every change of the queue
//! bumps a version that the console's live page follows.
//!
//! With `[storage] url` ([`PendingApprovals::on_postgres`]) the queue and the grants live in
//! PostgreSQL (`super::postgres`), shared by every replica: this type then keeps only the
//! answer channels of the calls waiting on this replica and a mirror of the deployment's
//! queue and grants, re-read when a replica notifies, after a reconnect, and every 500 ms.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_core::approval::{ApprovalRequest, Decision};
use switchboard_core::metrics::{Histogram, HistogramSnapshot};
use tokio::sync::{oneshot, watch};

use super::postgres::{ApprovalStore, Snapshot, Verdict};

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
    /// The deployment's queue on PostgreSQL, and what was last read of it.
    shared: Option<Shared>,
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
            shared: None,
            waiting: Mutex::default(),
            grants: Mutex::default(),
            changes: watch::Sender::new(0),
            waited: Default::default(),
        }
    }
}

struct Shared {
    store: Arc<ApprovalStore>,
    mirror: Mutex<Snapshot>,
    /// Held from a read to its mirror being replaced, so that of two re-reads (the
    /// follower's and an operator's answer here) the older never replaces the newer.
    refreshing: tokio::sync::Mutex<()>,
    /// Wakes the follower to re-read the store now.
    wake: Arc<tokio::sync::Notify>,
}

/// Why an operator's answer was not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    #[error("no pending approval with id '{0}' (it may have been answered or timed out)")]
    NotPending(String),
    /// Another operator (perhaps through another replica) answered first.
    #[error("approval '{id}' was already decided ({state} by '{by}'): this answer was not taken")]
    AlreadyDecided {
        id: String,
        state: String,
        by: String,
    },
    /// The shared store (PostgreSQL) did not answer; nothing was decided.
    #[error("the shared approvals store failed: {0}")]
    Store(String),
}

impl AnswerError {
    fn not_pending(id: &str) -> Self {
        Self::NotPending(id.to_owned())
    }
}

impl PendingApprovals {
    /// A queue shared by every replica through the PostgreSQL at `url` (`[storage] url`),
    /// followed from now on; needs a Tokio runtime.
    pub fn on_postgres(url: &str) -> Result<Arc<Self>, String> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err("the shared approvals queue needs a Tokio runtime".to_owned());
        }
        let store = ApprovalStore::new(url)?;
        let wake = Arc::new(tokio::sync::Notify::new());
        let queue = Arc::new(Self {
            shared: Some(Shared {
                store: Arc::new(store),
                mirror: Mutex::new(Snapshot::default()),
                refreshing: tokio::sync::Mutex::new(()),
                wake: wake.clone(),
            }),
            ..Self::default()
        });
        ApprovalStore::follow(Arc::downgrade(&queue), url.to_owned(), wake);
        Ok(queue)
    }

    /// Re-reads the shared store: the mirror every listing shows, and the decisions of the
    /// calls waiting here, which are answered.
    pub(crate) async fn refresh(&self) {
        let Some(shared) = &self.shared else { return };
        let _reading = shared.refreshing.lock().await;
        let waiting: Vec<String> = self
            .waiting
            .lock()
            .map(|w| w.keys().cloned().collect())
            .unwrap_or_default();
        let snapshot = match shared.store.read(&waiting).await {
            Ok(snapshot) => snapshot,
            Err(error) => {
                tracing::warn!(target: "switchboard::approvals", "approvals: {error}");
                return;
            }
        };
        for (id, decision) in &snapshot.decided {
            if let Ok(waiting) = self.take(id) {
                let _ = waiting.answer.send(decision.clone());
            }
        }
        let changed = shared.mirror.lock().is_ok_and(|mut mirror| {
            let before = mirror.shape();
            *mirror = snapshot;
            before != mirror.shape()
        });
        if changed {
            self.changed();
        }
    }

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
        if let Some(shared) = &self.shared
            && let Err(error) = shared
                .store
                .insert(&request, tier.as_deref(), timeout)
                .await
        {
            tracing::warn!(target: "switchboard::approvals", id, "approvals: {error}");
            return Decision::Denied {
                by: "gateway".to_owned(),
                channel: "operator".to_owned(),
                reason: format!("the shared approvals store failed: {error}"),
            };
        }
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
        if let Some(shared) = &self.shared {
            shared.wake.notify_one();
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
            _ => self.expired(&id).await.unwrap_or_else(|| Decision::Denied {
                by: "timeout".to_owned(),
                channel: "operator".to_owned(),
                reason: format!("no operator answered within {} s", timeout.as_secs()),
            }),
        }
    }

    /// Closes a shared approval whose wait timed out; the decision an operator made just
    /// before, if one did (it wins: the row was decided once, and that is what happened).
    async fn expired(&self, id: &str) -> Option<Decision> {
        let shared = self.shared.as_ref()?;
        let _ = self.take(id);
        match shared.store.close(id, "expired").await {
            Ok(decided) => decided,
            Err(error) => {
                tracing::warn!(target: "switchboard::approvals", id, "approvals: {error}");
                None
            }
        }
    }

    /// Calls waiting now (with a shared store: in the whole deployment, as last read).
    pub fn len(&self) -> usize {
        if let Some(shared) = &self.shared {
            return shared.mirror.lock().map_or(0, |m| m.pending.len());
        }
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
            // The asker gave up before any decision: the row is closed so no replica lists
            // it any more (a decision that won the race stays as it was).
            if let Some(shared) = &self.shared
                && let Ok(runtime) = tokio::runtime::Handle::try_current()
            {
                let (store, id) = (shared.store.clone(), id.to_owned());
                runtime.spawn(async move {
                    if let Err(error) = store.close(&id, "withdrawn").await {
                        tracing::warn!(target: "switchboard::approvals", id, "approvals: {error}");
                    }
                });
            }
        }
    }

    fn changed(&self) {
        self.changes.send_modify(|version| *version += 1);
    }

    /// Whether the queue is the deployment's (PostgreSQL), where operators of any replica
    /// answer, rather than this process's own.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// Follows changes of the queue and the grants: the value is only a version.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The calls waiting (with a shared store: in the whole deployment, as last read).
    pub fn list(&self) -> Vec<PendingApproval> {
        if let Some(shared) = &self.shared {
            return shared
                .mirror
                .lock()
                .map(|m| m.pending.clone())
                .unwrap_or_default();
        }
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
    pub async fn approve_for(
        &self,
        id: &str,
        minutes: u64,
        by: &str,
    ) -> Result<Grant, AnswerError> {
        if let Some(shared) = &self.shared {
            let verdict = Verdict {
                approve: true,
                by,
                reason: None,
                grant_minutes: Some(minutes),
            };
            let grant = shared.store.decide(id, &verdict).await?;
            self.refresh().await;
            return Ok(grant);
        }
        let waiting = self.take(id)?;
        let agent = waiting.request.agent.clone();
        let tool = waiting.request.tool.clone();
        let until = tokio::time::Instant::now() + Duration::from_secs(minutes.saturating_mul(60));
        let decision = Decision::Approved {
            by: by.to_owned(),
            channel: format!("operator (granted for {minutes} min)"),
        };
        // The call first: one that stopped waiting (timed out, or its caller went) a moment
        // ago is no longer pending, and the operator is told so with no grant in force.
        waiting
            .answer
            .send(decision)
            .map_err(|_| AnswerError::not_pending(id))?;
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
        if let Some(shared) = &self.shared {
            let mirror = shared.mirror.lock().ok()?;
            let (grant, _) = mirror.grants.iter().find(|(grant, until)| {
                *until > now && grant.agent.as_deref() == agent && grant.tool == tool
            })?;
            return Some(Decision::Approved {
                by: grant.by.clone(),
                channel: format!("operator grant ({} min)", grant.minutes),
            });
        }
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
        if let Some(shared) = &self.shared {
            return shared
                .mirror
                .lock()
                .map(|m| {
                    m.grants
                        .iter()
                        .filter(|(_, until)| *until > now)
                        .map(|(grant, until)| Grant {
                            expires_in_ms: duration_ms(until.saturating_duration_since(now)),
                            ..grant.clone()
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
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
    pub async fn revoke_grant(&self, agent: Option<&str>, tool: &str) -> Result<bool, AnswerError> {
        if let Some(shared) = &self.shared {
            let ended = shared
                .store
                .revoke_grant(agent, tool)
                .await
                .map_err(AnswerError::Store)?;
            self.refresh().await;
            return Ok(ended);
        }
        let removed = self.grants.lock().is_ok_and(|mut grants| {
            grants
                .remove(&(agent.map(str::to_owned), tool.to_owned()))
                .is_some()
        });
        if removed {
            self.changed();
        }
        Ok(removed)
    }

    fn take(&self, id: &str) -> Result<Waiting, AnswerError> {
        let taken = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut waiting| waiting.remove(id))
            .ok_or_else(|| AnswerError::not_pending(id))?;
        self.changed();
        Ok(taken)
    }

    /// An operator's answer: with a shared store taken once in the whole deployment
    /// ([`AnswerError::AlreadyDecided`] for the second), and the waiting call answered on
    /// whichever replica it waits.
    pub async fn answer(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        reason: Option<&str>,
    ) -> Result<(), AnswerError> {
        if let Some(shared) = &self.shared {
            let verdict = Verdict {
                approve,
                by,
                reason,
                grant_minutes: None,
            };
            shared.store.decide(id, &verdict).await?;
            self.refresh().await;
            return Ok(());
        }
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
            .map_err(|_| AnswerError::not_pending(id))
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

    /// A call that stopped waiting just before the operator's grant (its wait dropped, the
    /// queue not yet told) is not pending: the operator hears so, and no grant is made.
    #[tokio::test(start_paused = true)]
    async fn a_grant_for_a_call_that_stopped_waiting_grants_nothing() {
        let queue = PendingApprovals::default();
        let (answer, gone) = tokio::sync::oneshot::channel();
        drop(gone);
        if let Ok(mut waiting) = queue.waiting.lock() {
            waiting.insert(
                "c1".to_owned(),
                Waiting {
                    request: request("c1", "qa", "t__delete"),
                    tier: None,
                    since: SystemTime::now(),
                    deadline: tokio::time::Instant::now() + Duration::from_secs(60),
                    answer,
                },
            );
        }
        assert!(queue.approve_for("c1", 10, "alice").await.is_err());
        assert!(queue.grants().is_empty(), "no grant in force");
        assert!(queue.granted(Some("qa"), "t__delete").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_grant_answers_the_same_agent_and_tool_until_it_expires() {
        let (queue, asked) = one_waiting().await;
        let listed = queue.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].tier.as_deref(), Some("fast"));
        let grant = queue.approve_for("c1", 10, "alice").await.expect("waiting");
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
        assert!(
            queue.approve_for("c1", 10, "alice").await.is_err(),
            "answered"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_revoked_grant_asks_again() {
        let (queue, asked) = one_waiting().await;
        queue.approve_for("c1", 5, "alice").await.expect("waiting");
        asked.await.expect("join");
        assert_eq!(queue.revoke_grant(Some("qa"), "t__delete").await, Ok(true));
        assert_eq!(queue.revoke_grant(Some("qa"), "t__delete").await, Ok(false));
        assert!(queue.granted(Some("qa"), "t__delete").is_none());
    }
}
