//! One Streamable HTTP exchange: a POST and whatever comes back (JSON, an SSE stream, 202 or
//! an HTTP failure), plus the legacy session's GET stream of server-initiated messages.
//!
//! A legacy-era response stream that ends before the answer is resumed with a GET carrying
//! `Last-Event-ID` when the server gave its events ids; otherwise the request gets an error
//! answer, so no caller waits for an answer that cannot come.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use super::client::{Response, http_client};
use super::headers::SESSION_ID;
use super::sse::SseParser;
use super::streamable::Shared;
use super::{failed_request, snippet};
use crate::jsonrpc::{Message, RequestId};
use crate::upstream::transport::{Inbound, OnBehalf};

/// Reconnections in a row that bring no event before a stream is given up.
const MAX_RECONNECTS: u32 = 5;
/// The wait before reconnecting when the server did not set `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry:` honoured.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How long the rest of a stream is read after the answer. Servers end the stream right
/// after it, and read to its end the connection goes back to the pool; dropped, it closes.
const DRAIN_AFTER_ANSWER: Duration = Duration::from_secs(1);

/// What a GET for an event stream got.
enum Opened {
    Stream(Response),
    /// The server offers no stream (405, or another refusal of the request itself).
    NotOffered,
    /// Busy, failing or unreachable for now (429, 5xx, a network error): ask again after
    /// `after` (the server's `Retry-After`, at most [`MAX_RETRY`]).
    Later {
        reason: String,
        after: Duration,
    },
    /// The session is gone (404 to a request that named one): a new one must be started.
    Expired(String),
}

/// The wait a `Retry-After` of delta-seconds asks for (at most [`MAX_RETRY`]), else
/// [`DEFAULT_RETRY`].
fn retry_after(response: &Response) -> Duration {
    response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map_or(DEFAULT_RETRY, |seconds| {
            Duration::from_secs(seconds).min(MAX_RETRY)
        })
}

/// How reading a stream ended.
enum StreamEnd {
    /// The answer to the request arrived (the rest of the stream is not needed).
    Answered,
    /// The stream ended or broke; `progressed` when it delivered at least one event.
    Ended { reason: String, progressed: bool },
    /// Fatal for the stream: a message over the limit, or nobody listens any more.
    Failed(Option<String>),
}

impl Shared {
    async fn deliver(&self, message: Message) -> bool {
        self.inbound.send(Inbound::Message(message)).await.is_ok()
    }

    /// Delivers a message that came first on its response (nothing of that response went
    /// on the channel before it, so it overtakes nothing): an answer goes straight to the
    /// request waiting for it, on this thread; anything else on the channel.
    async fn deliver_first(&self, message: Message, of: Option<&RequestId>) -> bool {
        match self.answers.hand_over(message) {
            None => true,
            Some(message) => self.deliver_on(message, of).await,
        }
    }

    /// Delivers a message that came on the response stream of request `of`, if any.
    async fn deliver_on(&self, message: Message, of: Option<&RequestId>) -> bool {
        let inbound = match of {
            Some(of) => Inbound::OnStream {
                message,
                of: of.clone(),
            },
            None => Inbound::Message(message),
        };
        self.inbound.send(inbound).await.is_ok()
    }

    async fn fail(&self, id: Option<&RequestId>, reason: String) {
        match id {
            Some(id) => {
                self.deliver(failed_request(id, reason)).await;
            }
            None => {
                tracing::warn!(target: "switchboard::upstream", server = %self.server, "{reason}")
            }
        }
    }

    /// Puts the token the server gets in `headers` (a new one when `refused`: the server
    /// answered 401 to the one `headers` carry), if it has `[servers.ID.auth]`: the gateway's
    /// own, or the caller's exchanged.
    async fn authorize(
        &self,
        headers: &mut HeaderMap,
        on_behalf: &OnBehalf,
        refused: bool,
    ) -> Result<(), String> {
        let Some(credentials) = &self.credentials else {
            return Ok(());
        };
        let refused = refused
            .then(|| headers.get(http::header::AUTHORIZATION).cloned())
            .flatten();
        let token = credentials
            .authorization(on_behalf, refused.as_ref())
            .await
            .map_err(|error| format!("server {}: {}", self.url, error.0))?;
        match token {
            Some(token) => headers.insert(http::header::AUTHORIZATION, token),
            None => headers.remove(http::header::AUTHORIZATION),
        };
        Ok(())
    }

    /// One POST and whatever comes back.
    pub(super) async fn post(self: Arc<Self>, message: Message, on_behalf: OnBehalf) {
        let id = match &message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let is_initialize =
            matches!(&message, Message::Request { method, .. } if method == "initialize");
        let had_session = self.has_session();
        let mut headers = self.post_headers(&message);
        let body = Bytes::from(message.to_bytes());
        if let Err(reason) = self.authorize(&mut headers, &on_behalf, false).await {
            return self.fail(id.as_ref(), reason).await;
        }
        // Kept for the one retry only a server the gateway holds a token for can ask for: the
        // headers are otherwise moved, not copied, into the request.
        let retry = self.credentials.is_some().then(|| headers.clone());
        let mut sent = http_client()
            .send(Method::POST, &self.endpoint, headers, body.clone())
            .await;
        // A token the server refuses (revoked, or expired early) is renewed once.
        if let Some(mut headers) = retry
            && matches!(&sent, Ok(response) if response.status() == StatusCode::UNAUTHORIZED)
        {
            if let Err(reason) = self.authorize(&mut headers, &on_behalf, true).await {
                return self.fail(id.as_ref(), reason).await;
            }
            sent = http_client()
                .send(Method::POST, &self.endpoint, headers, body)
                .await;
        }
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                let reason = format!("cannot reach {}: {error}", self.url);
                return self.fail(id.as_ref(), reason).await;
            }
        };
        let status = response.status();
        if is_initialize
            && status.is_success()
            && let Some(session) = response.headers().get(SESSION_ID)
            // Copied out, so the id does not hold the whole response buffer it came in.
            && let Ok(session) = HeaderValue::from_bytes(session.as_bytes())
            && let Ok(mut slot) = self.session.write()
        {
            *slot = Some(session);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            let reason = format!("session expired (HTTP 404 from {})", self.url);
            let _ = self.inbound.send(Inbound::Closed(reason)).await;
            return;
        }
        if status == StatusCode::ACCEPTED {
            if let Some(id) = &id {
                tracing::debug!(target: "switchboard::upstream", server = %self.server, "request {id} was answered 202; expecting its answer on another stream");
            }
            return;
        }
        if !status.is_success() {
            let body = response.text().await;
            // A JSON-RPC error body answers the request (servers often leave its id null).
            if let (
                Some(id),
                Ok(Message::Error {
                    id: answered,
                    error,
                }),
            ) = (&id, Message::parse(body.as_bytes()))
            {
                let id = answered.unwrap_or_else(|| id.clone());
                self.deliver_first(
                    Message::Error {
                        id: Some(id),
                        error,
                    },
                    None,
                )
                .await;
                return;
            }
            let reason = format!("HTTP {status} from {}{}", self.url, snippet(&body));
            return self.fail(id.as_ref(), reason).await;
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(super::sse::is_event_stream);
        if is_sse {
            return self.answer_stream(response, id.as_ref()).await;
        }
        match response.read_limited(self.max_bytes).await {
            Ok(body) if body.iter().all(u8::is_ascii_whitespace) => {
                if let Some(id) = &id {
                    let reason = format!("{} answered request {id} with an empty body", self.url);
                    self.fail(Some(id), reason).await;
                }
            }
            Ok(body) => match Message::parse(&body) {
                Ok(answer) => {
                    self.deliver_first(answer, None).await;
                }
                Err(malformed) => {
                    let reason = format!(
                        "invalid answer from {}: {}",
                        self.url, malformed.error.message
                    );
                    self.fail(id.as_ref(), reason).await;
                }
            },
            Err(reason) => self.fail(id.as_ref(), reason).await,
        }
    }

    /// Reads a request's SSE answer, resuming it (legacy era) when it ends early.
    async fn answer_stream(&self, response: Response, id: Option<&RequestId>) {
        let mut parser = SseParser::default();
        let mut response = response;
        let mut idle_reconnects = 0;
        // Nothing of this request's stream went on the channel yet.
        let mut first = true;
        loop {
            let pumped = self.pump(&mut response, &mut parser, id, &mut first);
            let (reason, progressed) = match pumped.await {
                StreamEnd::Answered => {
                    // Anything after the answer is delivered like a notification.
                    let mut after = false;
                    let rest = self.pump(&mut response, &mut parser, None, &mut after);
                    let _ = tokio::time::timeout(DRAIN_AFTER_ANSWER, rest).await;
                    return;
                }
                StreamEnd::Failed(reason) => {
                    if let Some(reason) = reason {
                        self.fail(id, reason).await;
                    }
                    return;
                }
                StreamEnd::Ended { reason, progressed } => (reason, progressed),
            };
            let Some(request) = id else { return };
            idle_reconnects = if progressed { 0 } else { idle_reconnects + 1 };
            let resumable = !self.modern() && parser.last_event_id().is_some();
            if !resumable || idle_reconnects > MAX_RECONNECTS {
                let reason = format!("{reason} before the answer to request {request}");
                return self.fail(id, reason).await;
            }
            tokio::time::sleep(parser.retry().unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
            parser.reset_partial();
            response = loop {
                // Boxed: resuming is rare, and its future would otherwise make every call's
                // exchange future several kilobytes larger (moved as the call starts).
                match Box::pin(self.get_stream(parser.last_event_id())).await {
                    Opened::Stream(next) => break next,
                    Opened::NotOffered => {
                        let reason = format!("{} cannot resume the answer to {request}", self.url);
                        return self.fail(id, reason).await;
                    }
                    Opened::Expired(reason) => {
                        let _ = self.inbound.send(Inbound::Closed(reason)).await;
                        return;
                    }
                    Opened::Later { reason, after } => {
                        idle_reconnects += 1;
                        if idle_reconnects > MAX_RECONNECTS {
                            return self.fail(id, reason).await;
                        }
                        tokio::time::sleep(after).await;
                    }
                }
            };
        }
    }

    /// Delivers every message of an SSE stream until it ends or carries the answer to `id`;
    /// `first` while no message of the request's stream has been delivered (an answer then
    /// goes straight to its request).
    async fn pump(
        &self,
        response: &mut Response,
        parser: &mut SseParser,
        id: Option<&RequestId>,
        first: &mut bool,
    ) -> StreamEnd {
        let mut progressed = false;
        while let Some(chunk) = response.chunk().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    let reason = format!("the response stream from {} broke ({error})", self.url);
                    return StreamEnd::Ended { reason, progressed };
                }
            };
            let Ok(events) = parser.feed(&chunk, self.max_bytes) else {
                let limit = self.max_bytes;
                let reason = format!("{} sent a message over the {limit}-byte limit", self.url);
                return StreamEnd::Failed(Some(reason));
            };
            progressed |= !events.is_empty();
            // Events without data (resumability primers) carry no message.
            for event in events
                .into_iter()
                .filter(|e| e.kind == "message" && !e.data.trim().is_empty())
            {
                let message = match Message::parse(event.data.as_bytes()) {
                    Ok(message) => message,
                    Err(malformed) => {
                        tracing::warn!(target: "switchboard::upstream", server = %self.server, "ignoring an invalid SSE message: {}", malformed.error.message);
                        continue;
                    }
                };
                let answers = match (&message, id) {
                    (Message::Response { id: got, .. }, Some(id)) => got == id,
                    (Message::Error { id: Some(got), .. }, Some(id)) => got == id,
                    _ => false,
                };
                let delivered = if answers && *first {
                    self.deliver_first(message, id).await
                } else {
                    self.deliver_on(message, id).await
                };
                *first = false;
                if !delivered {
                    return StreamEnd::Failed(None);
                }
                if answers {
                    return StreamEnd::Answered;
                }
            }
        }
        let reason = format!("the response stream from {} ended", self.url);
        StreamEnd::Ended { reason, progressed }
    }

    /// A GET event stream (optionally resuming after `last_event_id`).
    async fn get_stream(&self, last_event_id: Option<&str>) -> Opened {
        let mut headers = self.base_headers();
        let had_session = headers.contains_key(SESSION_ID);
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(last) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.insert("last-event-id", last);
        }
        let response = match http_client()
            .send(Method::GET, &self.endpoint, headers, Bytes::new())
            .await
        {
            Ok(response) => response,
            Err(error) => {
                return Opened::Later {
                    reason: format!("cannot reach {}: {error}", self.url),
                    after: DEFAULT_RETRY,
                };
            }
        };
        let status = response.status();
        if status.is_success() {
            return Opened::Stream(response);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Opened::Expired(format!(
                "session expired (HTTP 404 from {} to GET)",
                self.url
            ));
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Opened::Later {
                reason: format!("GET {} answered HTTP {status}", self.url),
                after: retry_after(&response),
            };
        }
        if status != StatusCode::METHOD_NOT_ALLOWED {
            tracing::warn!(target: "switchboard::upstream", server = %self.server, "GET {} answered HTTP {status}: no event stream from it", self.url);
        }
        Opened::NotOffered
    }

    /// The legacy session's GET stream of server-initiated messages (405: not offered). It is
    /// reopened when it ends, until it stays empty several times in a row.
    pub(super) async fn listen(self: Arc<Self>) {
        let mut parser = SseParser::default();
        let mut idle_rounds = 0;
        while idle_rounds <= MAX_RECONNECTS {
            let mut response = match self.get_stream(parser.last_event_id()).await {
                Opened::Stream(response) => response,
                Opened::NotOffered => return,
                Opened::Expired(reason) => {
                    let _ = self.inbound.send(Inbound::Closed(reason)).await;
                    return;
                }
                Opened::Later { reason, after } => {
                    tracing::debug!(target: "switchboard::upstream", server = %self.server, "{reason}");
                    idle_rounds += 1;
                    tokio::time::sleep(after).await;
                    continue;
                }
            };
            match self
                .pump(&mut response, &mut parser, None, &mut false)
                .await
            {
                StreamEnd::Ended { progressed, .. } => {
                    idle_rounds = if progressed { 0 } else { idle_rounds + 1 };
                }
                StreamEnd::Failed(reason) => {
                    if let Some(reason) = reason {
                        tracing::warn!(target: "switchboard::upstream", server = %self.server, "dropping the notification stream: {reason}");
                    }
                    return;
                }
                StreamEnd::Answered => return,
            }
            parser.reset_partial();
            tokio::time::sleep(parser.retry().unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
        }
    }
}
