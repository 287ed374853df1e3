//! Calls of 2026-07-28 clients that wait on the client's answer.
//!
//! That era asks a client only by answering the call with `input_required`, and the client
//! sends the call again with its answers. A 2025-era upstream asks instead in the middle of
//! the call (`elicitation/create`, `sampling/createMessage`, `roots/list`) and waits for the
//! answer before it finishes. The gateway bridges the two: the call runs on a task of its
//! own, and when the upstream asks, the call is parked here under a fresh `requestState`,
//! the client is answered `input_required` with the questions (keys `input-1`, `input-2`, …),
//! and the retried call — same tool, same agent, that `requestState` — hands the answers to
//! the waiting upstream and waits for the call again, round after round.
//!
//! A parked call that is not resumed within its wait is dropped: its questions are answered
//! with an error, so the upstream finishes (and the call reaches the ledger) without the
//! client. The state is this gateway's: a retried call that reaches another instance is told
//! the state is unknown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde_json::{Map, Value, json};
use switchboard_core::CallerError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{RpcError, code};

/// The prefix of the `requestState` of a parked call (never that of an upstream or an
/// approval).
const STATE_PREFIX: &str = "switchboard-parked-";

/// How long a parked call waits for the client's answers.
pub const INPUT_WAIT: Duration = Duration::from_secs(300);

/// A question the upstream asked during the call, and where its answer goes.
pub struct Ask {
    pub method: String,
    pub params: Value,
    pub answer: oneshot::Sender<Result<Value, CallerError>>,
}

/// A call running on its own task: its handle, the token that cancels it, and the questions
/// it asks.
pub struct RunningCall<T> {
    pub task: JoinHandle<T>,
    pub cancel: CancellationToken,
    pub asks: mpsc::UnboundedReceiver<Ask>,
}

/// How a running call settled for the request waiting on it.
pub enum Settled<T> {
    /// The call's own answer.
    Answered(T),
    /// The call is parked: the request is answered with this `input_required` result.
    Asked(Value),
    /// The request went away first; the call was cancelled.
    Cancelled,
    /// The call's task ended without an answer.
    Lost,
}

struct Parked<T> {
    tool: String,
    agent: Option<String>,
    call: RunningCall<T>,
    /// Question key → where its answer goes.
    questions: Vec<(String, oneshot::Sender<Result<Value, CallerError>>)>,
}

/// The parked calls of one gateway.
pub struct ParkedCalls<T> {
    calls: Mutex<HashMap<String, Parked<T>>>,
    wait: Duration,
}

impl<T: Send + 'static> ParkedCalls<T> {
    pub fn new(wait: Duration) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::default(),
            wait,
        })
    }

    /// Whether `state` names a parked call (of this or another instance).
    pub fn owns(state: &str) -> bool {
        state.starts_with(STATE_PREFIX)
    }

    /// Waits for `call`'s answer, unless the upstream asks something first (then the call
    /// is parked and the `input_required` result comes back) or `request` is cancelled.
    pub async fn settle(
        self: &Arc<Self>,
        tool: &str,
        agent: Option<&str>,
        mut call: RunningCall<T>,
        request: &CancellationToken,
    ) -> Settled<T> {
        tokio::select! {
            joined = &mut call.task => match joined {
                Ok(answer) => Settled::Answered(answer),
                Err(_) => Settled::Lost,
            },
            Some(first) = call.asks.recv() => {
                let mut asks = vec![first];
                while let Ok(more) = call.asks.try_recv() {
                    asks.push(more);
                }
                Settled::Asked(self.park(tool, agent, call, asks))
            }
            () = request.cancelled() => {
                call.cancel.cancel();
                Settled::Cancelled
            }
        }
    }

    fn park(
        self: &Arc<Self>,
        tool: &str,
        agent: Option<&str>,
        call: RunningCall<T>,
        asks: Vec<Ask>,
    ) -> Value {
        let state = format!("{STATE_PREFIX}{:032x}", rand::rng().random::<u128>());
        let mut requests = Map::new();
        let mut questions = Vec::with_capacity(asks.len());
        for (index, ask) in asks.into_iter().enumerate() {
            let key = format!("input-{}", index + 1);
            requests.insert(
                key.clone(),
                json!({"method": ask.method, "params": ask.params}),
            );
            questions.push((key, ask.answer));
        }
        let parked = Parked {
            tool: tool.to_owned(),
            agent: agent.map(str::to_owned),
            call,
            questions,
        };
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(state.clone(), parked);
        }
        // Unanswered past the wait: dropped, which answers its questions with an error.
        let registry = Arc::downgrade(self);
        let expiring = state.clone();
        let wait = self.wait;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(registry) = registry.upgrade()
                && let Ok(mut calls) = registry.calls.lock()
            {
                calls.remove(&expiring);
            }
        });
        json!({
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": state,
        })
    }

    /// Takes the call parked under `state`, hands it the client's `responses` (a question
    /// without one is answered with an error) and returns it running.
    pub fn resume(
        &self,
        state: &str,
        tool: &str,
        agent: Option<&str>,
        responses: Option<&Value>,
    ) -> Result<RunningCall<T>, RpcError> {
        let parked = self.calls.lock().ok().and_then(|mut calls| {
            let found = calls.get(state)?;
            (found.tool == tool && found.agent.as_deref() == agent)
                .then(|| calls.remove(state))
                .flatten()
        });
        let Some(parked) = parked else {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                format!(
                    "requestState '{state}' names no call of tool '{tool}' waiting for input here: \
                     it was answered already, waited longer than {} s, or another gateway \
                     instance holds it; call the tool again",
                    self.wait.as_secs()
                ),
            ));
        };
        for (key, answer) in parked.questions {
            let given = responses
                .and_then(|r| r.get(&key))
                .cloned()
                .ok_or_else(|| CallerError {
                    code: code::INVALID_PARAMS,
                    message: format!("the client sent no answer for '{key}' in inputResponses"),
                    data: None,
                });
            let _ = answer.send(given);
        }
        Ok(parked.call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that asks one question and answers with what it was told.
    fn asking_call() -> RunningCall<Result<Value, CallerError>> {
        let (asks_tx, asks) = mpsc::unbounded_channel();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(async move {
            let (answer, answered) = oneshot::channel();
            let ask = Ask {
                method: "elicitation/create".into(),
                params: json!({"message": "Name?"}),
                answer,
            };
            let _ = asks_tx.send(ask);
            answered.await.unwrap_or_else(|_| {
                Err(CallerError {
                    code: 0,
                    message: "dropped".into(),
                    data: None,
                })
            })
        });
        RunningCall { task, cancel, asks }
    }

    #[tokio::test]
    async fn a_call_that_asks_is_parked_and_resumed_with_the_answer() {
        let parked = ParkedCalls::new(INPUT_WAIT);
        let request = CancellationToken::new();
        let Settled::Asked(asked) = parked.settle("t", Some("a"), asking_call(), &request).await
        else {
            panic!("expected the call to ask");
        };
        assert_eq!(asked["resultType"], "input_required");
        assert_eq!(
            asked["inputRequests"]["input-1"]["method"],
            "elicitation/create"
        );
        let state = asked["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(ParkedCalls::<()>::owns(&state), "{state}");

        let wrong_tool = parked.resume(&state, "other", Some("a"), None);
        assert!(wrong_tool.is_err(), "another tool may not resume it");
        let wrong_agent = parked.resume(&state, "t", Some("b"), None);
        assert!(wrong_agent.is_err(), "another agent may not resume it");

        let answers = json!({"input-1": {"action": "accept", "content": {"name": "Ada"}}});
        let call = parked
            .resume(&state, "t", Some("a"), Some(&answers))
            .expect("resumed");
        let Settled::Answered(Ok(answer)) = parked.settle("t", Some("a"), call, &request).await
        else {
            panic!("expected the answer");
        };
        assert_eq!(answer["content"]["name"], "Ada");
        let again = parked.resume(&state, "t", Some("a"), Some(&answers));
        let error = again.err().map(|e| e.message).unwrap_or_default();
        assert!(error.contains("answered already"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_call_is_dropped_after_its_wait_and_its_question_fails() {
        let parked = ParkedCalls::new(Duration::from_secs(5));
        let request = CancellationToken::new();
        let call = asking_call();
        let Settled::Asked(asked) = parked.settle("t", None, call, &request).await else {
            panic!("expected the call to ask");
        };
        let state = asked["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert!(parked.resume(&state, "t", None, None).is_err());
    }

    #[tokio::test]
    async fn a_missing_answer_fails_that_question_only() {
        let parked = ParkedCalls::new(INPUT_WAIT);
        let request = CancellationToken::new();
        let Settled::Asked(asked) = parked.settle("t", None, asking_call(), &request).await else {
            panic!("expected the call to ask");
        };
        let state = asked["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let call = parked
            .resume(&state, "t", None, Some(&json!({})))
            .expect("resumed");
        let Settled::Answered(Err(error)) = parked.settle("t", None, call, &request).await else {
            panic!("expected the question to fail");
        };
        assert!(
            error.message.contains("no answer for 'input-1'"),
            "{}",
            error.message
        );
    }
}
