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
use tokio_util::sync::CancellationToken;

use super::in_flight::{AnswerFromTask, CallInFlight};
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

/// A request answered by [`stream_answer`].
pub(super) struct StreamedCall {
    pub(super) id: RequestId,
    pub(super) method: String,
    pub(super) params: Option<Value>,
    pub(super) token: Option<Value>,
    pub(super) modern: bool,
    /// The caller's trace context from the HTTP headers.
    pub(super) trace: Option<switchboard_core::trace::TraceContext>,
    /// Fires when the drain timeout of a shutdown passes ([`super::health`]).
    pub(super) abandoning: CancellationToken,
}

/// What a call still running at the drain timeout needs: its id for the error, and its
/// cancellation.
struct Abandon {
    abandoning: CancellationToken,
    cancel: CancellationToken,
    id: RequestId,
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
/// holds a stream it can close to cancel. The call runs on the request's own task (and then
/// the stream's); dropping the handler or the stream (the client went away) cancels it
/// ([`CallInFlight`]).
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
        trace,
        abandoning,
    } = call;
    let abandon = Abandon {
        abandoning,
        cancel: cancel.clone(),
        id: id.clone(),
    };
    let opens_at_once = token.is_some() || method == "subscriptions/listen";
    // What the call sends before its answer, as JSON-RPC lines.
    let (before_tx, before) = mpsc::unbounded_channel::<String>();
    let mut ctx = CallContext {
        cancel: cancel.clone(),
        trace,
        ..CallContext::default()
    };
    if let Some(token) = token {
        let progress_out = before_tx.clone();
        ctx.progress = Some(ProgressSink::new(move |progress| {
            let _ = progress_out.send(progress_notification(&token, &progress).to_line());
        }));
    }
    let notify: Notifier = Arc::new(move |message: Message| {
        let _ = before_tx.send(message.to_line());
    });
    if let Some(session) = &session {
        ctx.caller = Some(session.relay.caller(notify.clone()));
    }
    let mut call = CallInFlight::new(
        async move {
            let answer = dispatcher
                .handle_streaming(id.clone(), &method, params, ctx, Some(notify))
                .await;
            forget_request(session.as_deref(), &id);
            answer
        },
        cancel,
    );
    let mut before = Before {
        lines: before,
        open: true,
    };
    let mut first = None;
    if !opens_at_once {
        let commit = tokio::time::sleep(SSE_COMMIT_AFTER);
        tokio::pin!(commit);
        loop {
            tokio::select! {
                biased;
                answer = &mut call => {
                    if before.lines.is_empty() {
                        let status = answer_status(modern, &answer);
                        return (status, [(header::CONTENT_TYPE, "application/json")], answer.to_bytes())
                            .into_response();
                    }
                    // Messages sent on the call's last turn go first, on a stream.
                    let stream = AnswerStream::answered(before, answer.to_line());
                    return sse_response(Body::from_stream(stream.into_stream()));
                }
                line = before.lines.recv(), if before.open => match line {
                    Some(line) => {
                        first = Some(line);
                        break;
                    }
                    None => before.open = false,
                },
                () = &mut commit => break,
                () = abandon.abandoning.cancelled() => {
                    abandon.cancel.cancel();
                    let answer = super::health::shutting_down(abandon.id);
                    return (answer_status(modern, &answer), [(header::CONTENT_TYPE, "application/json")], answer.to_bytes())
                        .into_response();
                }
            }
        }
    }
    // Once the stream is open the call finishes on a task of its own: hyper polls a body only
    // as fast as the client reads, and a client that stops reading must not stall the call.
    let stream = AnswerStream::coming(before, call.on_own_task(), abandon);
    let first = futures::stream::iter(first.map(sse_event));
    sse_response(Body::from_stream(first.chain(stream.into_stream())))
}

/// What the call sends before its answer, as JSON-RPC lines.
struct Before {
    lines: mpsc::UnboundedReceiver<String>,
    /// Whether a line may still come.
    open: bool,
}

/// A call's answer as an SSE stream: what the call sends before its answer, in order, then
/// the answer, with keep-alive comments while it is quiet.
struct AnswerStream {
    before: Before,
    /// The answer, once the call gave it, until it is sent after what came before it.
    answer: Option<String>,
    /// The call's answer to come from its task; `None` once it came.
    coming: Option<AnswerFromTask<Message>>,
    /// Started when the stream first waits.
    keep_alive: Option<tokio::time::Interval>,
    /// How the call is cut off at a shutdown's drain timeout (while it is still coming).
    abandon: Option<Abandon>,
}

impl AnswerStream {
    fn answered(before: Before, answer: String) -> Self {
        Self {
            before,
            answer: Some(answer),
            coming: None,
            keep_alive: None,
            abandon: None,
        }
    }

    fn coming(before: Before, coming: AnswerFromTask<Message>, abandon: Abandon) -> Self {
        Self {
            before,
            answer: None,
            coming: Some(coming),
            keep_alive: None,
            abandon: Some(abandon),
        }
    }

    fn into_stream(self) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send {
        futures::stream::unfold(self, |mut stream| async move {
            let chunk = stream.next_chunk().await?;
            Some((chunk, stream))
        })
    }

    /// The next chunk of the stream, or `None` once the answer has been sent.
    async fn next_chunk(&mut self) -> Option<Result<Bytes, Infallible>> {
        loop {
            if let Ok(line) = self.before.lines.try_recv() {
                return Some(sse_event(line));
            }
            if let Some(answer) = self.answer.take() {
                return Some(sse_event(answer));
            }
            let coming = self.coming.as_mut()?;
            let keep_alive = self.keep_alive.get_or_insert_with(|| {
                let first = tokio::time::Instant::now() + KEEP_ALIVE_EVERY;
                tokio::time::interval_at(first, KEEP_ALIVE_EVERY)
            });
            tokio::select! {
                biased;
                answer = coming.answer() => {
                    self.coming = None;
                    // No answer: the call's task ended without one (it panicked).
                    self.answer = Some(answer?.to_line());
                }
                line = self.before.lines.recv(), if self.before.open => match line {
                    Some(line) => return Some(sse_event(line)),
                    None => self.before.open = false,
                },
                _ = keep_alive.tick() => return Some(Ok(Bytes::from_static(KEEP_ALIVE))),
                () = abandoned(self.abandon.as_ref()) => {
                    // The call goes on being cancelled on its task; the client hears why.
                    self.coming = None;
                    if let Some(abandon) = self.abandon.take() {
                        abandon.cancel.cancel();
                        self.answer = Some(super::health::shutting_down(abandon.id).to_line());
                    }
                }
            }
        }
    }
}

/// Resolves when the drain timeout passed, never without an [`Abandon`].
async fn abandoned(abandon: Option<&Abandon>) {
    match abandon {
        Some(abandon) => abandon.abandoning.cancelled().await,
        None => std::future::pending().await,
    }
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
