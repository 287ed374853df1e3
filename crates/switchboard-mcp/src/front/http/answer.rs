//! How a call's answer goes back over HTTP: as plain JSON when nothing comes before the
//! result, else as an SSE stream of what comes first (progress, relayed requests, log
//! messages) and then the result; when such a stream opens, its keep-alives, and which HTTP
//! status a JSON answer carries in each era.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;
use switchboard_core::{CallContext, ProgressSink};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{Session, forget_request};
use crate::front::dispatch::{Dispatcher, Notifier, progress_notification};
use crate::jsonrpc::{Message, RequestId, code};

/// How often an open SSE stream with nothing to say carries a keep-alive comment, so
/// proxies do not time it out.
pub(super) const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(15);

/// How long a call's answer may keep its headers waiting for its first message before the
/// stream opens anyway: one keep-alive interval.
const SSE_COMMIT_AFTER: Duration = KEEP_ALIVE_EVERY;

/// The SSE comment that keeps an idle stream open through proxies.
pub(super) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// What a streamed call sends, in order: notifications and relayed requests, then its answer.
enum Event {
    Before(String),
    Answer(String, StatusCode),
}

/// A request answered by [`stream_answer`].
pub(super) struct StreamedCall {
    pub(super) id: RequestId,
    pub(super) method: String,
    pub(super) params: Option<Value>,
    pub(super) token: Option<Value>,
    pub(super) modern: bool,
}

/// The HTTP status of an answer sent as JSON: in the 2026-07-28 era a method the gateway does
/// not serve is 404 and a client capability the request needed but did not declare is 400;
/// anything else, errors of the call included, is 200.
pub(super) fn answer_status(modern: bool, answer: &Message) -> StatusCode {
    match answer {
        Message::Error { error, .. } if modern => match error.code {
            code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            code::MISSING_REQUIRED_CLIENT_CAPABILITY => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    }
}

/// Answers a call that may send messages before its result: as plain JSON when the result
/// comes first, else as an SSE stream of those messages and then the result. The headers wait
/// for the first message, or [`SSE_COMMIT_AFTER`] of silence, after which the stream opens and
/// carries a keep-alive comment every [`KEEP_ALIVE_EVERY`] so proxies do not time it out. A call that
/// asked for progress, and a listening subscription, get their stream at once, so the client
/// holds a stream it can close to cancel. Dropping the handler or the stream (the client went
/// away) cancels the call.
pub(super) async fn stream_answer(
    dispatcher: Dispatcher,
    session: Option<Arc<Session>>,
    call: StreamedCall,
    cancel: CancellationToken,
) -> Response {
    let StreamedCall {
        id,
        method,
        params,
        token,
        modern,
    } = call;
    let opens_at_once = token.is_some() || method == "subscriptions/listen";
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let mut ctx = CallContext {
        cancel: cancel.clone(),
        ..CallContext::default()
    };
    if let Some(token) = token {
        let progress_out = events_tx.clone();
        ctx.progress = Some(ProgressSink::new(move |progress| {
            let line = progress_notification(&token, &progress).to_line();
            let _ = progress_out.send(Event::Before(line));
        }));
    }
    let notify_out = events_tx.clone();
    let notify: Notifier = Arc::new(move |message: Message| {
        let _ = notify_out.send(Event::Before(message.to_line()));
    });
    if let Some(session) = &session {
        ctx.caller = Some(session.relay.caller(notify.clone()));
    }
    tokio::spawn(async move {
        let answer = dispatcher
            .handle_streaming(id.clone(), &method, params, ctx, Some(notify))
            .await;
        forget_request(session.as_deref(), &id);
        let status = answer_status(modern, &answer);
        let _ = events_tx.send(Event::Answer(answer.to_line(), status));
    });
    let guard: DropGuard = cancel.drop_guard();
    let first = if opens_at_once {
        None
    } else {
        match tokio::time::timeout(SSE_COMMIT_AFTER, events.recv()).await {
            Ok(Some(Event::Answer(line, status))) => {
                guard.disarm();
                return (status, [(header::CONTENT_TYPE, "application/json")], line)
                    .into_response();
            }
            Ok(Some(Event::Before(line))) => Some(line),
            Ok(None) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            Err(_silence) => None,
        }
    };
    let opening = futures::stream::iter(first.map(sse_event));
    let keep_alive = tokio::time::interval_at(
        tokio::time::Instant::now() + KEEP_ALIVE_EVERY,
        KEEP_ALIVE_EVERY,
    );
    let state = (events, keep_alive, guard);
    let rest = futures::stream::unfold(state, |(mut events, mut keep_alive, guard)| async move {
        let chunk = tokio::select! {
            event = events.recv() => match event? {
                Event::Before(line) | Event::Answer(line, _) => sse_event(line),
            },
            _ = keep_alive.tick() => Ok(Bytes::from_static(KEEP_ALIVE)),
        };
        Some((chunk, (events, keep_alive, guard)))
    });
    sse_response(Body::from_stream(opening.chain(rest)))
}

/// One JSON-RPC message as an SSE `message` event.
pub(super) fn sse_event(line: String) -> Result<Bytes, Infallible> {
    Ok(Bytes::from(format!("event: message\ndata: {line}\n\n")))
}

pub(super) fn sse_response(body: Body) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
