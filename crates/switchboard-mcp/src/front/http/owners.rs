//! Answers to relayed requests that reach a replica other than the one whose call asked
//! (issue 32, owner-bound streams). A 2025-era client answers a server request relayed
//! mid-call (sampling, elicitation, roots) with a POST of its own; behind a load balancer that
//! POST may land on any replica. The request's id names the replica that asked
//! (`sb-<replica>-N`, [`owner_of`]); another replica hands the answer to the [`AnswerRoutes`]
//! the deployment shares (Redis, in `switchboard::shared`), which delivers it to that replica
//! — or says at once that it is gone, and the client is told so (410) instead of its call
//! waiting for a timeout. Without [`AnswerRoutes`] an answer is matched on the replica that
//! took it only, as before.
//!
//! Must never: complete a request for another session, agent or route than the one whose
//! answer it is (the owner matches it only in the session it holds for that asker).

use std::sync::{Arc, Weak};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::sessions::{Asker, SessionTable};
use super::{HttpState, plain, rpc_response};
use crate::front::relay::owner_of;
use crate::jsonrpc::{Message, RequestId, code};

/// An answer on its way to the replica whose call asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedAnswer {
    /// The session's `Mcp-Session-Id`.
    pub session: String,
    /// Who answered, and on which endpoint: the owner matches the answer only for them.
    pub agent: Option<String>,
    pub subject: Option<String>,
    pub route: String,
    /// The client's JSON-RPC answer, as it sent it.
    pub answer: String,
}

/// Why an answer could not be handed to the replica that asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undeliverable {
    /// Nothing listens for the owner any more (its heartbeat expired, or it no longer
    /// subscribes): the call that asked ended with it.
    #[error(
        "the replica that asked this ({0}) is gone: the call it belonged to ended with it; call the tool again"
    )]
    OwnerGone(String),
    /// The store that carries answers between replicas did not answer.
    #[error(
        "the answer cannot be routed to the replica that asked ({owner}) now: {why}; retry later"
    )]
    Unreachable { owner: String, why: String },
}

/// Carries answers between the replicas of one deployment.
pub trait AnswerRoutes: Send + Sync + std::fmt::Debug {
    /// This replica's name, carried in the ids of the requests it relays.
    fn replica(&self) -> &str;
    /// Hands `answer` to the replica named `owner`, or says why it cannot, at once.
    fn deliver(
        &self,
        owner: &str,
        answer: RoutedAnswer,
    ) -> BoxFuture<'_, Result<(), Undeliverable>>;
    /// The answers other replicas route to this one, from now on.
    fn arrivals(&self) -> broadcast::Receiver<RoutedAnswer>;
}

/// Takes a client's answer to a relayed request: matched here when this replica asked (or
/// the id names none), else routed to the replica that did.
pub(super) async fn take_answer(
    state: &HttpState,
    session_id: Option<String>,
    asker: Asker<'_>,
    answer: Message,
) -> Response {
    let Some(session_id) = session_id else {
        return StatusCode::ACCEPTED.into_response();
    };
    let routes = state.options.answer_routes.as_ref();
    let owner = answer_id(&answer).and_then(owner_of);
    let (Some(routes), Some(owner)) = (routes, owner) else {
        return complete_here(&state.sessions, &session_id, asker, &answer);
    };
    if owner == routes.replica() {
        return complete_here(&state.sessions, &session_id, asker, &answer);
    }
    // Only a session this asker may use gets its answers carried.
    if let Err(refusal) = state.sessions.find(&session_id, asker).await {
        return plain(refusal.status(), &refusal.to_string());
    }
    let routed = RoutedAnswer {
        session: session_id,
        agent: asker.agent.map(str::to_owned),
        subject: asker.subject.map(str::to_owned),
        route: asker.route.to_owned(),
        answer: answer.to_line(),
    };
    match routes.deliver(owner, routed).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(why) => {
            let status = match why {
                Undeliverable::OwnerGone(_) => StatusCode::GONE,
                Undeliverable::Unreachable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            };
            rpc_response(
                status,
                &Message::error(None, code::INTERNAL_ERROR, why.to_string()),
            )
        }
    }
}

fn answer_id(answer: &Message) -> Option<&RequestId> {
    match answer {
        Message::Response { id, .. } => Some(id),
        Message::Error { id, .. } => id.as_ref(),
        _ => None,
    }
}

fn complete_here(
    sessions: &SessionTable,
    session_id: &str,
    asker: Asker<'_>,
    answer: &Message,
) -> Response {
    if let Some(session) = sessions.held(session_id, asker) {
        session.relay.complete(answer);
    }
    StatusCode::ACCEPTED.into_response()
}

/// Matches the answers other replicas route here, until the front goes.
pub(super) async fn follow_arrivals(
    state: Weak<HttpState>,
    mut arrivals: broadcast::Receiver<RoutedAnswer>,
) {
    loop {
        let routed = match arrivals.recv().await {
            Ok(routed) => routed,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "answers routed from other replicas were dropped: their calls wait for their timeout"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(state) = state.upgrade() else { return };
        arrived(&state.sessions, &routed);
    }
}

/// Completes the request `routed` answers, if the session it names is held here for the
/// same asker and the request still waits.
fn arrived(sessions: &SessionTable, routed: &RoutedAnswer) {
    let asker = Asker {
        agent: routed.agent.as_deref(),
        subject: routed.subject.as_deref(),
        route: &routed.route,
    };
    let Ok(answer) = Message::parse(routed.answer.as_bytes()) else {
        return;
    };
    let matched = sessions
        .held(&routed.session, asker)
        .is_some_and(|session| session.relay.complete(&answer));
    if !matched {
        tracing::debug!("an answer routed from another replica matched no waiting request");
    }
}

/// Spawns [`follow_arrivals`] for a front with routes, on the current runtime.
pub(super) fn start_following(state: &Arc<HttpState>) {
    let Some(routes) = &state.options.answer_routes else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(follow_arrivals(Arc::downgrade(state), routes.arrivals()));
}
