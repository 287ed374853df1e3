//! The Streamable HTTP front, both eras on one endpoint (`/mcp`).
//!
//! * Legacy (≤ 2025-11-25): `initialize` opens a session (`Mcp-Session-Id`, its state sealed
//!   with the key ring: [`sessions`], so any replica sharing the ring serves it); later
//!   requests must name it (400 without, 404 for an unknown, expired or foreign one); GET
//!   opens the session's notification stream; DELETE ends it; `notifications/cancelled`
//!   cancels a call of the session; an answer to a request relayed mid-call is matched on
//!   the replica that asked, routed there from another ([`owners`]).
//! * Modern (2026-07-28): stateless; each request first passes the envelope checks
//!   ([`super::envelope`]: `_meta`, the version and routing headers, the version itself), each
//!   refusal a 400. Closing the response stream cancels the call.
//!
//! Every request first passes the `guard` module: the DNS-rebinding guard (an `Origin` or
//! `Host` that is not allowed gets 403) and bearer tokens — static ones, or OAuth access
//! tokens, whose protected resource metadata the `resource` module serves. Bodies over the message limit get
//! 413. How a call's answer goes back —
//! plain JSON, or an SSE stream when progress or a relayed message comes first — is
//! the `answer` module. `/livez` and `/readyz` and the drain on shutdown are [`health`]. How
//! connections are let in and bounded (a cap, a header timeout) is [`connections`].

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::Value;
use switchboard_core::trace::TraceContext;
use switchboard_core::{CallContext, Caller};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

mod answer;
mod connections;
mod guard;
pub mod health;
mod in_flight;
pub mod owners;
mod posted;
mod resource;
pub mod sessions;
mod workers;

use self::answer::{
    KEEP_ALIVE, KEEP_ALIVE_EVERY, StreamedCall, answer_status, sse_event, sse_response,
    stream_answer,
};
pub use self::connections::{ConnectionLimits, serve_router};
pub use self::guard::Authenticator;
use self::guard::{Authenticated, authenticate};
pub use self::health::Lifecycle;
use self::in_flight::CallInFlight;
pub use self::owners::{AnswerRoutes, RoutedAnswer, Undeliverable};
use self::posted::Posted;
use self::sessions::{Asker, Session, SessionTable};
pub use self::sessions::{EndedAnswer, EndedSessions, EndedUnavailable, LocalEndedSessions};
use super::dispatch::{Dispatcher, progress_token};
use super::envelope;
use super::request_params::{invalid_initialize, params_by_position};
use super::subscriptions::SubscriptionChange;
use crate::era::META_LOG_LEVEL;
use crate::jsonrpc::{Message, RequestId, code, params_meta};
use crate::oauth::OAuthVerifier;
use crate::routing_headers;
use crate::seal::Keys;

const SESSION_HEADER: &str = "mcp-session-id";

/// Options of the HTTP front.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub max_message_bytes: usize,
    /// Extra allowed `Origin` values (exact, e.g. `https://app.example.com`); loopback origins
    /// are always allowed.
    pub allowed_origins: Vec<String>,
    /// Extra allowed `Host` names; loopback names are always allowed.
    pub allowed_hosts: Vec<String>,
    /// Whether the `Host` header is checked (on when bound to loopback).
    pub check_host: bool,
    /// When set, every request needs `Authorization: Bearer TOKEN`, and the token decides the
    /// agent; without it, 401 with `WWW-Authenticate`.
    pub auth: Option<Arc<dyn Authenticator>>,
    /// When set, OAuth access tokens are accepted too (or alone, without `auth`): the front
    /// is an OAuth 2.1 resource server and serves its metadata (RFC 9728) under
    /// `/.well-known/oauth-protected-resource` ([`resource`]).
    pub oauth: Option<Arc<OAuthVerifier>>,
    /// Threads that serve the connections, each a current-thread runtime of its own
    /// ([`workers`]); 0 or 1 serves them on the caller's runtime.
    pub connection_workers: usize,
    /// How many connections are served at once, and how long each may take to send a
    /// request's headers ([`connections`]).
    pub connections: ConnectionLimits,
    /// The key ring that seals session ids (the deployment's, so that every replica
    /// serves every session, or one random key of this process).
    pub keys: Arc<dyn Keys>,
    /// Draining on shutdown ([`health`]); `serve` starts it when `shutdown` fires.
    pub lifecycle: Lifecycle,
    /// Where sessions ended by DELETE are remembered ([`LocalEndedSessions`]: this
    /// process only; a store the replicas share ends them on every replica).
    pub ended_sessions: Arc<dyn EndedSessions>,
    /// How answers to relayed requests reach the replica that asked, when the client POSTs
    /// them to another ([`owners`]); none: matched on the replica that took them only.
    pub answer_routes: Option<Arc<dyn AnswerRoutes>>,
}

struct HttpState {
    dispatcher: Dispatcher,
    options: HttpOptions,
    sessions: SessionTable,
}

impl axum::extract::FromRef<Arc<HttpState>> for posted::PostLimits {
    fn from_ref(state: &Arc<HttpState>) -> Self {
        Self {
            body_timeout: state.options.connections.header_timeout,
            max_body_bytes: state.options.max_message_bytes,
        }
    }
}

/// Serves until `shutdown` fires; in-flight requests are then given a grace period by the
/// caller's runtime shutdown.
pub async fn serve(
    dispatcher: Dispatcher,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let workers = options.connection_workers;
    let lifecycle = options.lifecycle.clone();
    let draining = shutdown.clone();
    tokio::spawn(async move {
        draining.cancelled().await;
        lifecycle.drain();
    });
    let limits = options.connections;
    let app = router(dispatcher, options);
    if workers > 1 {
        return workers::serve(app, listener, workers, limits, shutdown).await;
    }
    serve_router(app, listener, limits, shutdown).await
}

/// The axum router of the front (exposed for tests and embedding).
pub fn router(dispatcher: Dispatcher, options: HttpOptions) -> Router {
    let limit = options.max_message_bytes;
    let state = Arc::new(HttpState {
        dispatcher: dispatcher.over_tcp(),
        sessions: SessionTable::of(&options),
        options,
    });
    owners::start_following(&state);
    let router = if state.options.oauth.is_some() {
        resource::routes()
    } else {
        Router::new()
    };
    router
        .route("/livez", get(health::livez))
        .route("/readyz", get(health::readyz))
        .route(
            "/mcp",
            post(handle_post).get(handle_get).delete(handle_delete),
        )
        .route(
            "/mcp/agents/{agent}",
            post(handle_agent_post)
                .get(handle_agent_get)
                .delete(handle_agent_delete),
        )
        .route(
            "/mcp/tiers/{tier}",
            post(handle_tier_post)
                .get(handle_tier_get)
                .delete(handle_delete),
        )
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

fn rpc_response(status: StatusCode, message: &Message) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        message.to_line(),
    )
        .into_response()
}

fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_owned(),
    )
        .into_response()
}

async fn handle_agent_post(
    state: State<Arc<HttpState>>,
    Path(agent): Path<String>,
    Posted { uri, headers, body }: Posted,
) -> Response {
    post_as(state, uri, headers, body, Some(agent)).await
}

/// The header that picks a latency tier for one request.
const TIER_HEADER: &str = "switchboard-tier";

async fn handle_tier_post(
    state: State<Arc<HttpState>>,
    Path(tier): Path<String>,
    Posted {
        uri,
        mut headers,
        body,
    }: Posted,
) -> Response {
    match HeaderValue::from_str(&tier) {
        Ok(value) => {
            headers.insert(TIER_HEADER, value);
            post_as(state, uri, headers, body, None).await
        }
        Err(_) => plain(StatusCode::NOT_FOUND, "unknown tier"),
    }
}

async fn handle_tier_get(
    state: State<Arc<HttpState>>,
    uri: Uri,
    Path(tier): Path<String>,
    mut headers: HeaderMap,
) -> Response {
    match HeaderValue::from_str(&tier) {
        Ok(value) => {
            headers.insert(TIER_HEADER, value);
            get_as(state, uri, headers, None).await
        }
        Err(_) => plain(StatusCode::NOT_FOUND, "unknown tier"),
    }
}

async fn handle_agent_get(
    state: State<Arc<HttpState>>,
    uri: Uri,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    get_as(state, uri, headers, Some(agent)).await
}

async fn handle_agent_delete(
    state: State<Arc<HttpState>>,
    uri: Uri,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    delete_as(state, uri, headers, Some(agent)).await
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

async fn handle_post(
    state: State<Arc<HttpState>>,
    Posted { uri, headers, body }: Posted,
) -> Response {
    post_as(state, uri, headers, body, None).await
}

async fn post_as(
    State(state): State<Arc<HttpState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    endpoint_agent: Option<String>,
) -> Response {
    let Authenticated { agent, principal } =
        match authenticate(&state.options, &headers, &uri, endpoint_agent.as_deref()).await {
            Ok(authenticated) => authenticated,
            Err(refusal) => return refusal,
        };
    let message = match Message::parse(&body) {
        Ok(message) => message,
        Err(malformed) => {
            return rpc_response(
                StatusCode::BAD_REQUEST,
                &Message::Error {
                    id: malformed.id,
                    error: malformed.error,
                },
            );
        }
    };
    let session_id = header_str(&headers, SESSION_HEADER).map(str::to_owned);
    let asker = Asker::new(agent.as_deref(), principal.as_deref(), uri.path());
    let (id, method, params) = match message {
        Message::Request { id, method, params } => (id, method, params),
        Message::Notification { method, params } => {
            if method == "notifications/cancelled"
                && let Some(session) = session_id.and_then(|id| state.sessions.held(&id, asker))
            {
                cancel_in_session(&session, params.as_ref());
            }
            return StatusCode::ACCEPTED.into_response();
        }
        answer @ (Message::Response { .. } | Message::Error { .. }) => {
            return owners::take_answer(&state, session_id, asker, answer).await;
        }
        Message::PreparedResponse { .. } => return StatusCode::ACCEPTED.into_response(),
    };
    // An unknown tier would list no tools and call none, each "unknown": say why at once.
    if let Some(why) = header_str(&headers, TIER_HEADER)
        .and_then(|tier| state.dispatcher.backend().unknown_tier(tier))
    {
        return rpc_response(
            StatusCode::NOT_FOUND,
            &Message::error(Some(id), code::INVALID_REQUEST, why),
        );
    }
    // Params by position fit no MCP method: refused before a session opens or an envelope is
    // read from them.
    if let Some(error) = params_by_position(&method, params.as_ref()) {
        return rpc_response(
            StatusCode::BAD_REQUEST,
            &Message::Error {
                id: Some(id),
                error,
            },
        );
    }
    // `server/discover` is how a modern client starts, so it never needs a session.
    let modern = envelope::is_modern(&headers, &method, params.as_ref());
    let mut new_session = None;
    let session = if modern {
        let declared = match routing_headers::name_of(&method, params.as_ref()) {
            Some(tool) if method == "tools/call" => {
                let caller = Caller::new(agent.clone(), None).with_principal(principal.clone());
                state.dispatcher.backend().param_headers(&caller, tool)
            }
            _ => Arc::from([]),
        };
        if let Err(error) = envelope::check(&headers, &method, params.as_ref(), &declared) {
            let refusal = Message::Error {
                id: Some(id),
                error,
            };
            return rpc_response(StatusCode::BAD_REQUEST, &refusal);
        }
        None
    } else if method == "initialize" {
        // A refused initialize opens no session.
        if let Some(error) = invalid_initialize(params.as_ref()) {
            let refusal = Message::Error {
                id: Some(id),
                error,
            };
            return rpc_response(StatusCode::BAD_REQUEST, &refusal);
        }
        let (id, session) = state.sessions.start(asker, params.as_ref());
        new_session = Some(id);
        Some(session)
    } else {
        match session_id.clone() {
            None => {
                let error = Message::error(
                    Some(id),
                    code::INVALID_REQUEST,
                    "missing Mcp-Session-Id header: send initialize first (or use protocol version 2026-07-28)",
                );
                return rpc_response(StatusCode::BAD_REQUEST, &error);
            }
            Some(session_id) => match state.sessions.find(&session_id, asker).await {
                Ok(session) => Some(session),
                Err(refusal) => {
                    let error =
                        Message::error(Some(id), code::INVALID_REQUEST, refusal.to_string());
                    return rpc_response(refusal.status(), &error);
                }
            },
        }
    };
    let subscription = SubscriptionChange::of(&method, params.as_ref());
    let cancel = CancellationToken::new();
    if let Some(session) = &session
        && let Ok(mut map) = session.in_flight.lock()
    {
        map.insert(id.clone(), cancel.clone());
    }
    let token = progress_token(params.as_ref());
    // A legacy tool call may need to ask the client something (sampling, elicitation) or pass
    // on log messages — and so may `tasks/result`, which carries a task's questions — and a
    // modern one pass on log messages if it asked for them: that needs a stream.
    let streams = token.is_some()
        || method == "subscriptions/listen"
        || (session.is_some()
            && matches!(
                method.as_str(),
                "tools/call" | "prompts/get" | "resources/read" | "tasks/result"
            ))
        || (method == "tools/call"
            && params_meta(params.as_ref()).is_some_and(|meta| meta.contains_key(META_LOG_LEVEL)));
    // The session the Host keys state on: a legacy one this front opened or minted. A modern
    // request has none — an `Mcp-Session-Id` it carries is unchecked, and would let it reach
    // what another session keeps — so its state is its agent's.
    let checked_session = session.as_ref().and(session_id);
    let mut dispatcher = state
        .dispatcher
        .for_session(new_session.clone().or(checked_session));
    if agent.is_some() {
        dispatcher = dispatcher.for_agent(agent);
    }
    if principal.is_some() {
        dispatcher = dispatcher.for_principal(principal);
    }
    if let Some(tier) = header_str(&headers, TIER_HEADER) {
        dispatcher = dispatcher.for_tier(Some(tier.to_lowercase()));
    }
    // The caller's trace context, when `params._meta` carries none (the dispatcher reads that).
    let trace = TraceContext::extract(|name| header_str(&headers, name));
    let mut response = if streams {
        // A streamed answer is not seen here: the subscription counts from the request.
        if let Some(session) = &session {
            session.subscriptions.note(&method, params.as_ref());
        }
        let call = StreamedCall {
            id,
            method,
            params,
            token,
            modern,
            trace,
            abandoning: state.options.lifecycle.abandoning_here(),
        };
        stream_answer(dispatcher, session, call, cancel).await
    } else {
        let ctx = CallContext {
            cancel: cancel.clone(),
            trace,
            ..CallContext::default()
        };
        let request_id = id.clone();
        let mut call = CallInFlight::new(
            async move {
                let answer = dispatcher.handle(id.clone(), &method, params, ctx).await;
                if let (Some(session), Some(change)) = (&session, &subscription) {
                    session.subscriptions.apply(change, &answer);
                }
                forget_request(session.as_deref(), &id);
                answer
            },
            cancel.clone(),
        );
        let abandoning = state.options.lifecycle.abandoning_here();
        let answer = tokio::select! {
            answer = &mut call => answer,
            () = abandoning.cancelled() => {
                // The drain timeout passed: the call is cancelled (and, dropped, finishes
                // on a task of its own, so it reaches the ledger) and the client told why,
                // rather than cut off.
                cancel.cancel();
                health::shutting_down(request_id)
            }
        };
        rpc_response(answer_status(modern, &answer), &answer)
    };
    if let Some(session_id) = new_session
        && let Ok(value) = HeaderValue::from_str(&session_id)
    {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

fn forget_request(session: Option<&Session>, id: &RequestId) {
    if let Some(session) = session
        && let Ok(mut map) = session.in_flight.lock()
    {
        map.remove(id);
    }
}

fn cancel_in_session(session: &Session, params: Option<&Value>) {
    let Some(id) = params.and_then(|p| p.get("requestId")).cloned() else {
        return;
    };
    let Ok(id) = serde_json::from_value::<RequestId>(id) else {
        return;
    };
    let token = session
        .in_flight
        .lock()
        .ok()
        .and_then(|map| map.get(&id).cloned());
    if let Some(token) = token {
        token.cancel();
    }
}

/// GET opens a legacy session's stream of server notifications (`list_changed`).
async fn handle_get(state: State<Arc<HttpState>>, uri: Uri, headers: HeaderMap) -> Response {
    get_as(state, uri, headers, None).await
}

async fn get_as(
    State(state): State<Arc<HttpState>>,
    uri: Uri,
    headers: HeaderMap,
    endpoint_agent: Option<String>,
) -> Response {
    let (agent, principal) =
        match authenticate(&state.options, &headers, &uri, endpoint_agent.as_deref()).await {
            Ok(authenticated) => (authenticated.agent, authenticated.principal),
            Err(refusal) => return refusal,
        };
    let Some(session_id) = header_str(&headers, SESSION_HEADER) else {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET needs an Mcp-Session-Id (legacy sessions only)",
        );
    };
    let asker = Asker::new(agent.as_deref(), principal.as_deref(), uri.path());
    let session = match state.sessions.find(session_id, asker).await {
        Ok(session) => session,
        Err(refusal) => return plain(refusal.status(), &refusal.to_string()),
    };
    state.dispatcher.backend().settled().await;
    let mut scoped = state.dispatcher.for_session(Some(session_id.to_owned()));
    if agent.is_some() {
        scoped = scoped.for_agent(agent);
    }
    if let Some(tier) = header_str(&headers, TIER_HEADER) {
        if let Some(why) = state.dispatcher.backend().unknown_tier(tier) {
            return plain(StatusCode::NOT_FOUND, &why);
        }
        scoped = scoped.for_tier(Some(tier.to_lowercase()));
    }
    let caller = scoped.caller();
    state.dispatcher.backend().refresh_session(&caller).await;
    let updates = session
        .subscriptions
        .clone()
        .updates(state.dispatcher.backend().clone(), caller.clone())
        .map(|note| sse_event(note.to_line()));
    let mut version = state.dispatcher.backend().listing_version(&caller);
    version.mark_unchanged();
    let stream = futures::stream::unfold(version, |mut version| async move {
        version.changed().await.ok()?;
        let note = Message::notification("notifications/tools/list_changed", serde_json::json!({}));
        Some((sse_event(note.to_line()), version))
    });
    let keepalive = futures::stream::unfold((), |()| async {
        tokio::time::sleep(KEEP_ALIVE_EVERY).await;
        Some((Ok(Bytes::from_static(KEEP_ALIVE)), ()))
    });
    let lists = match state.dispatcher.backend().lists_version() {
        Some(mut lists) => {
            let seen = *lists.borrow_and_update();
            futures::stream::unfold((lists, seen), |(mut lists, mut seen)| async move {
                let methods =
                    crate::front::ListsVersion::next_change(&mut lists, &mut seen).await?;
                let notes: Vec<_> = methods
                    .into_iter()
                    .map(|method| {
                        sse_event(Message::notification(method, serde_json::json!({})).to_line())
                    })
                    .collect();
                Some((futures::stream::iter(notes), (lists, seen)))
            })
            .flatten()
            .boxed()
        }
        None => futures::stream::empty().boxed(),
    };
    let statuses = match state.dispatcher.backend().task_events() {
        Some(events) => {
            let owner = switchboard_core::task::TaskOwner {
                agent: caller.agent.clone(),
                session: caller.session.clone(),
                subject: principal.as_ref().and_then(|p| p.subject.clone()),
            };
            crate::front::tasks::status_notifications(events, owner, || {
                crate::front::dispatch::RequestEra::Legacy
            })
            .map(|note| sse_event(note.to_line()))
            .boxed()
        }
        None => futures::stream::empty().boxed(),
    };
    let events = futures::stream::select(
        futures::stream::select(futures::stream::select(stream, updates), lists),
        futures::stream::select(keepalive, statuses),
    );
    // On shutdown the stream ends with a `retry:` hint: the client reconnects, to another
    // replica behind the load balancer.
    let draining = state.options.lifecycle.draining().clone().cancelled_owned();
    let events = events
        .take_until(draining)
        .chain(futures::stream::once(async {
            Ok::<_, std::convert::Infallible>(health::retry_event())
        }));
    sse_response(Body::from_stream(events.boxed()))
}

/// DELETE ends a legacy session.
async fn handle_delete(state: State<Arc<HttpState>>, uri: Uri, headers: HeaderMap) -> Response {
    delete_as(state, uri, headers, None).await
}

async fn delete_as(
    State(state): State<Arc<HttpState>>,
    uri: Uri,
    headers: HeaderMap,
    endpoint_agent: Option<String>,
) -> Response {
    let Authenticated { agent, principal } =
        match authenticate(&state.options, &headers, &uri, endpoint_agent.as_deref()).await {
            Ok(authenticated) => authenticated,
            Err(refusal) => return refusal,
        };
    let Some(session_id) = header_str(&headers, SESSION_HEADER) else {
        return plain(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id header");
    };
    let asker = Asker::new(agent.as_deref(), principal.as_deref(), uri.path());
    match state.sessions.end(session_id, asker).await {
        Ok(session) => {
            let pending: Vec<_> = session
                .in_flight
                .lock()
                .map(|map| map.values().cloned().collect())
                .unwrap_or_default();
            for cancel in pending {
                cancel.cancel();
            }
            state.dispatcher.backend().session_closed(session_id);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refusal) => plain(refusal.status(), &refusal.to_string()),
    }
}
