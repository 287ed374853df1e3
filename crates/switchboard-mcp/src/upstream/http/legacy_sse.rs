//! The legacy HTTP+SSE client transport (protocol 2024-11-05): a GET opens an event stream
//! whose first `endpoint` event names where to POST messages; every answer and notification
//! arrives as a `message` event on that stream.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::client::{Response, Target, http_client};
use super::held_tasks::{HeldTasks, UNTRACKED_POST_TIMEOUT};
use super::sse::SseParser;
use super::{failed_request, header_map, snippet};
use crate::jsonrpc::Message;
use crate::upstream::transport::{Inbound, Opened, Transport, TransportError};

struct Inner {
    server: String,
    endpoint: Target,
    headers: HeaderMap,
    inbound: mpsc::Sender<Inbound>,
    reader: Mutex<Option<AbortHandle>>,
    /// The POSTs under way (each bounded by [`UNTRACKED_POST_TIMEOUT`]): closing stops them.
    posts: HeldTasks,
    closed: AtomicBool,
}

struct LegacySse(Arc<Inner>);

/// Aborts the stream reader unless disarmed.
struct AbortOnDrop(Option<AbortHandle>);

impl AbortOnDrop {
    fn disarm(mut self) -> Option<AbortHandle> {
        self.0.take()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.abort();
        }
    }
}

/// Opens the event stream and waits for the `endpoint` event (the caller bounds the wait).
/// `public_only` holds every connection to public addresses, the POST endpoint's included
/// (`super::public_only`).
pub async fn open_legacy_sse(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    tls: Option<&super::TlsFiles>,
    public_only: bool,
    max_message_bytes: usize,
) -> Result<Opened, TransportError> {
    let base = Target::parse(url)
        .and_then(|target| Ok(target.with_tls(super::tls::load(tls)?)))
        .map_err(TransportError::new)?
        .public_only(public_only);
    let headers = header_map(headers)?;
    let mut get_headers = headers.clone();
    get_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let response = http_client()
        .send(Method::GET, &base, get_headers, Bytes::new())
        .await
        .map_err(|error| TransportError::new(format!("cannot reach {url}: {error}")))?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await;
        return Err(TransportError::new(format!(
            "HTTP {status} from {url}{}",
            snippet(&body)
        )));
    }
    let (inbound_tx, inbound) = mpsc::channel(256);
    let (endpoint_tx, endpoint_rx) = oneshot::channel::<String>();
    let reader = tokio::spawn(read_events(
        server.to_owned(),
        response,
        inbound_tx.clone(),
        endpoint_tx,
        max_message_bytes,
    ));
    // Dropped (an error, or the caller's timeout) before the transport exists: stop reading.
    let reader = AbortOnDrop(Some(reader.abort_handle()));
    let endpoint = endpoint_rx.await.map_err(|_| {
        TransportError::new(format!(
            "{url} closed the event stream before sending its endpoint"
        ))
    })?;
    let endpoint = base
        .join(endpoint.trim())
        .map_err(|error| TransportError::new(format!("invalid endpoint '{endpoint}': {error}")))?;
    if endpoint.origin() != base.origin() {
        return Err(TransportError::new(format!(
            "the endpoint {endpoint} is not on the origin of {url}; refusing it"
        )));
    }
    let transport = Inner {
        server: server.to_owned(),
        endpoint,
        headers,
        inbound: inbound_tx,
        reader: Mutex::new(reader.disarm()),
        posts: HeldTasks::default(),
        closed: AtomicBool::new(false),
    };
    Ok(Opened {
        transport: Arc::new(LegacySse(Arc::new(transport))),
        inbound,
    })
}

async fn read_events(
    server: String,
    mut response: Response,
    inbound: mpsc::Sender<Inbound>,
    endpoint: oneshot::Sender<String>,
    max_bytes: usize,
) {
    let mut endpoint = Some(endpoint);
    let mut parser = SseParser::default();
    let reason = loop {
        let Some(chunk) = response.chunk().await else {
            break "the SSE stream ended".to_owned();
        };
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => break format!("the SSE stream broke: {error}"),
        };
        let Ok(events) = parser.feed(&chunk, max_bytes) else {
            break format!("the server sent a message over the {max_bytes}-byte limit");
        };
        for event in events {
            match event.kind.as_str() {
                "endpoint" => {
                    if let Some(endpoint) = endpoint.take() {
                        let _ = endpoint.send(event.data);
                    }
                }
                "message" => match Message::parse(event.data.as_bytes()) {
                    Ok(message) => {
                        if inbound.send(Inbound::Message(message)).await.is_err() {
                            return;
                        }
                    }
                    Err(malformed) => {
                        tracing::warn!(target: "switchboard::upstream", server = %server, "ignoring an invalid SSE message: {}", malformed.error.message)
                    }
                },
                _ => {}
            }
        }
    };
    let _ = inbound.send(Inbound::Closed(reason)).await;
}

impl Inner {
    /// POSTs one message; a refused request is answered with an error.
    async fn post(self: Arc<Self>, message: Message) {
        let id = match &message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let mut headers = self.headers.clone();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = Bytes::from(message.to_bytes());
        // Answers come on the event stream; the POST itself is answered at once (202), and
        // one that never is must not hold a task and a connection for the session's life.
        let posted = tokio::time::timeout(UNTRACKED_POST_TIMEOUT, async {
            let sent = http_client()
                .send(Method::POST, &self.endpoint, headers, body)
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    // Read to the end, so the connection goes back to the pool.
                    let _ = response.text().await;
                    None
                }
                Ok(response) => {
                    let status = response.status();
                    let body = response.text().await;
                    let endpoint = &self.endpoint;
                    Some(format!("HTTP {status} from {endpoint}{}", snippet(&body)))
                }
                Err(error) => Some(format!("cannot reach {}: {error}", self.endpoint)),
            }
        })
        .await;
        let failure = posted.unwrap_or_else(|_| {
            Some(format!(
                "{} did not answer the POST within {} s",
                self.endpoint,
                UNTRACKED_POST_TIMEOUT.as_secs()
            ))
        });
        match (failure, id) {
            (Some(reason), Some(id)) => {
                let _ = self
                    .inbound
                    .send(Inbound::Message(failed_request(&id, reason)))
                    .await;
            }
            (Some(reason), None) => {
                tracing::warn!(target: "switchboard::upstream", server = %self.server, "{reason}")
            }
            (None, _) => {}
        }
    }
}

impl Transport for LegacySse {
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if self.0.closed.load(Ordering::Relaxed) {
                return Err(TransportError::new("the SSE connection is closed"));
            }
            // Boxed for the same reason as Streamable HTTP's exchange: moved into its task once.
            let task = tokio::spawn(Box::pin(self.0.clone().post(message)));
            self.0.posts.hold(task.abort_handle());
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.0.closed.store(true, Ordering::Relaxed);
            if let Some(reader) = self.0.reader.lock().ok().and_then(|mut r| r.take()) {
                reader.abort();
            }
            self.0.posts.abort_all();
        })
    }
}
