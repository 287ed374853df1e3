//! The stdio front: one client on stdin/stdout, newline-delimited JSON-RPC.
//!
//! Requests run concurrently (each in its own task); answers and notifications go through one
//! writer task that flushes once per burst. `notifications/cancelled` cancels the named call,
//! which cancels it upstream. A line over the message limit is answered with an error to the
//! request it was ([`crate::framing`]). When stdin closes, in-flight calls get a grace period,
//! what is left to write a moment more, then the front returns; a `subscriptions/listen`
//! stream, which would never end, ends at once.
//!
//! A client that stops reading its output is not buffered for without end: at most
//! `max_owed_answers` ([`MAX_OWED_ANSWERS`] by default) answers are owed to it at once, past
//! that its requests wait for room, at most [`MAX_WAITING_REQUESTS`] of them, and past those
//! are refused at once (`stdio_outbox` has the rules, and which notifications may be
//! dropped). A line that cannot be read is answered like a refusal, owing nothing. Its input is read on whatever is owed — its responses and notifications are
//! handled at once, since the calls holding the owed answers may be waiting on them — and
//! waits only while it leaves too many refusals unread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_core::{CallContext, ProgressSink};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio_util::sync::CancellationToken;

use super::dispatch::{Dispatcher, Notifier, RequestEra, progress_notification, progress_token};
use super::relay::Relay;
use super::stdio_outbox::Outbox;
pub use super::stdio_outbox::{MAX_OWED_ANSWERS, MAX_WAITING_REQUESTS, REFUSAL_BUDGET_BYTES};
use super::subscriptions::{ResourceSubscriptions, SubscriptionChange};
use crate::framing::{Unread, read_bounded_line};
use crate::jsonrpc::{Message, RequestId, code};

/// Options of the stdio front.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    pub max_message_bytes: usize,
    /// How long in-flight calls may run after stdin closes or shutdown is requested.
    pub grace: Duration,
    /// How many answers the client may be owed at once before its requests wait
    /// ([`MAX_OWED_ANSWERS`] unless a test needs fewer; at least 1).
    pub max_owed_answers: usize,
}

type InFlight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

/// Serves one client until `input` ends or `shutdown` fires.
pub async fn serve(
    dispatcher: Dispatcher,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
    options: StdioOptions,
    shutdown: CancellationToken,
) {
    // One connection is one session.
    let dispatcher = match dispatcher.session() {
        Some(_) => dispatcher,
        None => {
            static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            dispatcher.for_session(Some(format!("stdio-{}-{n}", std::process::id())))
        }
    };
    let (out_tx, writer) = Outbox::new(options.max_owed_answers);
    let mut claims = out_tx.claims();
    let writer = tokio::spawn(writer.run(output));
    let in_flight: InFlight = Arc::default();
    let relay = Arc::new(Relay::default());
    let tasks = tokio_util::task::TaskTracker::new();
    let initialized = CancellationToken::new();
    // Set once the client has listed tools: from then on every change must be announced.
    let listed = CancellationToken::new();
    // Subscribed now, before anything can change, so no change is missed however late the
    // announcing task first runs.
    let version = dispatcher.backend().listing_version(&dispatcher.caller());
    tasks.spawn(announce_changes(
        version,
        dispatcher.clone(),
        out_tx.clone(),
        (initialized.clone(), listed.clone()),
        shutdown.clone(),
    ));
    if let Some(lists) = dispatcher.backend().lists_version() {
        tasks.spawn(announce_list_changes(
            lists,
            dispatcher.clone(),
            out_tx.clone(),
            initialized.clone(),
            shutdown.clone(),
        ));
    }
    let subscriptions = Arc::new(ResourceSubscriptions::default());
    let updates = subscriptions
        .clone()
        .updates(dispatcher.backend().clone(), dispatcher.caller());
    tasks.spawn(forward_updates(updates, out_tx.clone(), shutdown.clone()));
    if let Some(events) = dispatcher.backend().task_events() {
        let owner = switchboard_core::task::TaskOwner {
            agent: dispatcher.agent.clone(),
            session: dispatcher.session().map(str::to_owned),
            subject: None,
        };
        // A 2025-11-25 client initializes; a 2026-07-28 one never does.
        let legacy = initialized.clone();
        let era = move || match legacy.is_cancelled() {
            true => crate::front::dispatch::RequestEra::Legacy,
            false => crate::front::dispatch::RequestEra::Modern,
        };
        let statuses = crate::front::tasks::status_notifications(events, owner, era);
        tasks.spawn(forward_updates(statuses, out_tx.clone(), shutdown.clone()));
    }

    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        let read = tokio::select! {
            () = shutdown.cancelled() => break,
            read = read_bounded_line(&mut reader, &mut line, options.max_message_bytes) => read,
        };
        let parsed = match read {
            Ok(0) => break,
            Ok(_) => {
                let bytes = line.trim_ascii();
                if bytes.is_empty() {
                    continue;
                }
                Message::parse(bytes).map_err(|malformed| Message::Error {
                    id: malformed.id,
                    error: malformed.error,
                })
            }
            // Answered to the request it was, when its id could be read from its start: the
            // client need not wait for it.
            Err(Unread::TooLarge(id)) => Err(Message::error(
                id,
                code::INVALID_REQUEST,
                format!(
                    "message exceeds the {}-byte limit",
                    options.max_message_bytes
                ),
            )),
            Err(Unread::Failed(_)) => break,
        };
        // Only a request claims an owed answer; the rest is handled at once. An unreadable
        // line is answered like a refusal, at once under the refusal budget: it never holds a
        // slot, nor a place in line, that a request needs.
        let message = match parsed {
            Ok(message) => message,
            Err(error) => {
                if !unless_stopping(&shutdown, out_tx.refuse(error.to_line())).await {
                    break;
                }
                continue;
            }
        };
        match message {
            Message::Request { id, method, params } => {
                let claim = match claims.claim(line.len()) {
                    Ok(claim) => claim,
                    Err(refused) => {
                        let refusal = refused.answer(id).to_line();
                        if !unless_stopping(&shutdown, out_tx.refuse(refusal)).await {
                            break;
                        }
                        continue;
                    }
                };
                // A listening subscription never ends by itself: it ends with the input (or a
                // shutdown) rather than hold the front for the grace period calls get.
                let cancel = if method == "subscriptions/listen" {
                    shutdown.child_token()
                } else {
                    CancellationToken::new()
                };
                if let Ok(mut map) = in_flight.lock() {
                    map.insert(id.clone(), cancel.clone());
                }
                let mut ctx = CallContext {
                    cancel,
                    ..CallContext::default()
                };
                if let Some(token) = progress_token(params.as_ref()) {
                    let out = out_tx.clone();
                    ctx.progress = Some(ProgressSink::new(move |progress| {
                        out.report(progress_notification(&token, &progress).to_line());
                    }));
                }
                let notify_out = out_tx.clone();
                let notify: Notifier = Arc::new(move |message: Message| {
                    notify_out.relay(&message);
                });
                if method == "initialize" {
                    relay.remember_capabilities(params.as_ref());
                }
                if method == "tools/list" {
                    listed.cancel();
                }
                let subscription = SubscriptionChange::of(&method, params.as_ref());
                let subscriptions = subscriptions.clone();
                // Legacy clients can be asked things mid-call; modern ones answer input_required.
                if RequestEra::of(params.as_ref()) == RequestEra::Legacy {
                    ctx.caller = Some(relay.caller(notify.clone()));
                }
                let dispatcher = dispatcher.clone();
                let out = out_tx.clone();
                let in_flight = in_flight.clone();
                // Boxed, the call's large future is moved into its task once, not several
                // times on the way (docs/bench/history.md, "Boxed before spawning").
                tasks.spawn(Box::pin(async move {
                    let cancel = ctx.cancel.clone();
                    // A request cancelled while its answer waits to be owed never runs; one
                    // owed at once runs as before, and its cancellation reaches the backend.
                    let Some(owed) = claim.owed(&cancel).await else {
                        if let Ok(mut map) = in_flight.lock() {
                            map.remove(&id);
                        }
                        return;
                    };
                    let answer = dispatcher
                        .handle_streaming(id.clone(), &method, params, ctx, Some(notify))
                        .await;
                    if let Some(change) = &subscription {
                        subscriptions.apply(change, &answer);
                    }
                    if let Ok(mut map) = in_flight.lock() {
                        map.remove(&id);
                    }
                    // A cancelled request gets no answer (the client has moved on).
                    if !cancel.is_cancelled() {
                        out.answer(answer.to_line(), owed);
                    }
                }));
            }
            Message::Notification { method, params } => match method.as_str() {
                "notifications/initialized" => initialized.cancel(),
                "notifications/cancelled" => cancel_request(&in_flight, params.as_ref()),
                _ => {}
            },
            answer @ (Message::Response { .. } | Message::Error { .. }) => {
                relay.complete(&answer);
            }
            Message::PreparedResponse { .. } => {}
        }
    }
    // Input is over: the client can answer nothing more (a call waiting on its answer to a
    // relayed question ends now), stop announcing changes, and give in-flight calls their
    // grace period.
    relay.close();
    shutdown.cancel();
    tasks.close();
    if tokio::time::timeout(options.grace, tasks.wait())
        .await
        .is_err()
    {
        let pending: Vec<_> = in_flight
            .lock()
            .map(|map| map.values().cloned().collect())
            .unwrap_or_default();
        for cancel in pending {
            cancel.cancel();
        }
    }
    drop(out_tx);
    // What is left to say is written, for a little while: a call parked on the client
    // (holding a sender) or a client that no longer reads stdout must not keep the gateway
    // from stopping.
    let mut writer = writer;
    if tokio::time::timeout(LAST_WORDS, &mut writer).await.is_err() {
        writer.abort();
    }
    if let Some(session) = dispatcher.session() {
        dispatcher.backend().session_closed(session);
    }
}

fn cancel_request(in_flight: &InFlight, params: Option<&Value>) {
    let Some(id) = params.and_then(|p| p.get("requestId")).cloned() else {
        return;
    };
    let Ok(id) = serde_json::from_value::<RequestId>(id) else {
        return;
    };
    let token = in_flight.lock().ok().and_then(|map| map.get(&id).cloned());
    if let Some(token) = token {
        token.cancel();
    }
}

/// Writes notifications (resource updates, task statuses) until shutdown.
async fn forward_updates(
    updates: impl futures::Stream<Item = Message>,
    out: Outbox,
    shutdown: CancellationToken,
) {
    use futures::StreamExt;
    let mut updates = std::pin::pin!(updates);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            next = updates.next() => match next {
                Some(note) => if !announce(&out, note.to_line(), &shutdown).await { return },
                None => return,
            },
        }
    }
}

/// Sends `notifications/tools/list_changed` whenever the client's listing changes after it
/// finished initializing. Changes while servers start up are not announced unless the client
/// listed tools already (its first listing waits for start-up, so it sees them).
async fn announce_changes(
    mut version: tokio::sync::watch::Receiver<u64>,
    dispatcher: Dispatcher,
    out: Outbox,
    (initialized, listed): (CancellationToken, CancellationToken),
    shutdown: CancellationToken,
) {
    dispatcher.backend().settled().await;
    if !listed.is_cancelled() {
        version.mark_unchanged();
    }
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            changed = version.changed() => if changed.is_err() { return },
        }
        if initialized.is_cancelled() {
            let note =
                Message::notification("notifications/tools/list_changed", serde_json::json!({}));
            if !announce(&out, note.to_line(), &shutdown).await {
                return;
            }
        }
    }
}

/// Sends `notifications/prompts/list_changed` and `notifications/resources/list_changed`
/// when those lists change after start-up, once the client initialized (its first listing
/// waits for start-up, so it sees what servers bring then).
async fn announce_list_changes(
    mut lists: tokio::sync::watch::Receiver<crate::front::ListsVersion>,
    dispatcher: Dispatcher,
    out: Outbox,
    initialized: CancellationToken,
    shutdown: CancellationToken,
) {
    tokio::select! {
        () = shutdown.cancelled() => return,
        () = dispatcher.backend().settled() => {}
    }
    let mut seen = *lists.borrow_and_update();
    loop {
        let methods = tokio::select! {
            () = shutdown.cancelled() => return,
            methods = crate::front::ListsVersion::next_change(&mut lists, &mut seen) => methods,
        };
        let Some(methods) = methods else { return };
        if !initialized.is_cancelled() {
            continue;
        }
        for method in methods {
            let note = Message::notification(method, serde_json::json!({}));
            if !announce(&out, note.to_line(), &shutdown).await {
                return;
            }
        }
    }
}

/// Queues an announcement once the client has room for it. False when the client is gone or
/// the front is stopping.
async fn announce(out: &Outbox, line: String, shutdown: &CancellationToken) -> bool {
    unless_stopping(shutdown, out.announce(line)).await
}

/// What `queued` says (whether a line was queued), or false once the front is stopping.
async fn unless_stopping(
    shutdown: &CancellationToken,
    queued: impl std::future::Future<Output = bool>,
) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => false,
        sent = queued => sent,
    }
}

/// How long the answers left are written once input is over and the grace period is past.
const LAST_WORDS: std::time::Duration = std::time::Duration::from_secs(2);
