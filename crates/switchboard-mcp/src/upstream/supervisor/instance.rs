//! One instance of a supervised server — the only one, or one process of a pool: connect with
//! a deadline, publish its tools, follow its `list_changed` notifications, notice when it
//! dies, and reconnect with exponential backoff and jitter, without ever blocking anyone else
//! (the other instances of its pool included).
//!
//! Its outputs are its own [`ServerStatus`] and its [`Slot`] (the connected upstream and
//! client, whether it is up, the calls in flight on it), which the [`super::Supervisor`]
//! reads; both are swapped whole.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};
use switchboard_core::catalog::ListedTool;
use switchboard_core::upstream::Upstream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Endpoint, OnChange, ServerState, ServerStatus, UpstreamSpec};
use crate::era::Era;
use crate::upstream::client::{RpcClient, ServerEvent};
use crate::upstream::http;
use crate::upstream::inprocess::InProcess;
use crate::upstream::session::{
    Extras, Negotiated, list_prompts, list_resources, list_tools, negotiate,
};
use crate::upstream::stdio;
use crate::upstream::transport::{Opened, TransportError};

const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// What the supervisor reads of one instance.
pub(super) struct Slot {
    pub(super) status: watch::Receiver<ServerStatus>,
    current: RwLock<Option<Arc<dyn Upstream>>>,
    client: RwLock<Option<Arc<RpcClient>>>,
    /// Whether `current` holds an upstream: read by every call's choice of instance without
    /// taking the lock.
    up: AtomicBool,
    /// Calls on this instance now (counted for pools only, by [`super::InstanceCall`]).
    pub(super) in_flight: AtomicUsize,
}

impl Slot {
    pub(super) fn new(status: watch::Receiver<ServerStatus>) -> Self {
        Self {
            status,
            current: RwLock::new(None),
            client: RwLock::new(None),
            up: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
        }
    }

    pub(super) fn upstream(&self) -> Option<Arc<dyn Upstream>> {
        self.current.read().ok().and_then(|slot| slot.clone())
    }

    pub(super) fn client(&self) -> Option<Arc<RpcClient>> {
        self.client.read().ok().and_then(|slot| slot.clone())
    }

    pub(super) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    pub(super) fn set_current(&self, upstream: Option<Arc<dyn Upstream>>) {
        if let Ok(mut slot) = self.current.write() {
            self.up.store(upstream.is_some(), Ordering::Release);
            *slot = upstream;
        }
    }

    fn set_client(&self, client: Option<Arc<RpcClient>>) {
        if let Ok(mut slot) = self.client.write() {
            *slot = client;
        }
    }

    fn take_client(&self) -> Option<Arc<RpcClient>> {
        self.client.write().ok().and_then(|mut slot| slot.take())
    }
}

/// Keeps one instance connected.
pub(super) struct Worker {
    pub(super) spec: UpstreamSpec,
    /// Its name in logs and in its child's stderr lines: the server id, and `#N` (1-based)
    /// for an instance of a pool.
    pub(super) label: String,
    pub(super) status: watch::Sender<ServerStatus>,
    pub(super) slot: Arc<Slot>,
    pub(super) stop: CancellationToken,
    pub(super) on_change: OnChange,
    /// The supervisor's resource subscriptions, sent again on each new connection.
    pub(super) subscribed: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

impl Worker {
    pub(super) async fn run(self) {
        if let Endpoint::InProcess(provider) = &self.spec.endpoint {
            let tools: Arc<[ListedTool]> = provider
                .tools()
                .into_iter()
                .map(ListedTool::compile)
                .collect();
            self.slot
                .set_current(Some(Arc::new(InProcess::new(provider.clone()))));
            self.publish(|status| {
                *status = ServerStatus {
                    state: ServerState::Up,
                    tools,
                    server_info: serde_json::json!({"name": provider.name()}),
                    capabilities: serde_json::json!({"tools": {}}),
                    settled: true,
                    ..ServerStatus::starting()
                };
            });
            return;
        }
        let mut failures: u32 = 0;
        loop {
            let started = Instant::now();
            let outcome = tokio::select! {
                () = self.stop.cancelled() => {
                    // The connection's own select may not have seen the stop: close what
                    // it published, so the child's process group dies now, not whenever
                    // the last holder of the client lets go.
                    self.close_published().await;
                    return;
                }
                outcome = self.connect_and_serve() => outcome,
            };
            let Some(reason) = outcome else { return };
            self.slot.set_current(None);
            if started.elapsed() >= STABLE_AFTER {
                failures = 0;
            }
            failures = failures.saturating_add(1);
            tracing::warn!(target: "switchboard::upstream", server = %self.label, "server is down: {reason}");
            self.publish(|status| {
                status.state = ServerState::Down;
                status.tools = Arc::from([]);
                // Its prompts and resources go with its tools (announced as changed).
                status.extras = Extras::default();
                status.error = Some(reason);
                status.failures = failures;
                status.settled = true;
            });
            let delay = backoff(failures);
            tokio::select! {
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            self.publish(|status| status.state = ServerState::Starting);
        }
    }

    /// One connection's life. Returns why it ended, or `None` when stopped.
    async fn connect_and_serve(&self) -> Option<String> {
        let deadline = Instant::now() + self.spec.connect_timeout;
        let opened = match tokio::time::timeout_at(deadline, self.open()).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => return Some(error.0),
            Err(_) => {
                return Some(format!(
                    "timed out after {} ms connecting",
                    self.spec.connect_timeout.as_millis()
                ));
            }
        };
        let (events_tx, mut events) = mpsc::unbounded_channel();
        let client = RpcClient::start(self.spec.id.clone(), &self.label, opened, events_tx);
        // Until the client is published, stopping mid-handshake (this future dropped) closes
        // it: nobody else could, and its child would outlive the supervisor.
        let unpublished = Unpublished(Some(client.clone()));
        let handshake = async {
            let negotiated = negotiate(&client, self.spec.era, self.spec.discover_timeout).await?;
            let tools = list_tools(&client).await?;
            Ok::<_, String>((negotiated, tools))
        };
        let (negotiated, tools) = match tokio::time::timeout_at(deadline, handshake).await {
            Ok(Ok(ready)) => ready,
            Ok(Err(reason)) => {
                unpublished.disarm();
                return Some(fail(&client, reason).await);
            }
            Err(_) => {
                unpublished.disarm();
                let reason = format!(
                    "timed out after {} ms waiting for the server to initialize",
                    self.spec.connect_timeout.as_millis()
                );
                return Some(fail(&client, reason).await);
            }
        };
        tracing::info!(target: "switchboard::upstream", server = %self.label, era = negotiated.era.label(), version = negotiated.era.version(), tools = tools.len(), "connected");
        self.slot.set_current(Some(client.clone()));
        self.slot.set_client(Some(client.clone()));
        unpublished.disarm();
        // Its tools serve at once; it is settled (a first listing waits for that) once its
        // prompts and resources are listed too.
        self.publish(|status| {
            *status = ServerStatus {
                state: ServerState::Up,
                era: Some(negotiated.era.clone()),
                tools: tools.into_iter().map(ListedTool::compile).collect(),
                server_info: negotiated.server_info.clone(),
                capabilities: negotiated.capabilities.clone(),
                ..ServerStatus::starting()
            };
        });
        // Prompts and resources have their own bound: a slow or failing listing of them leaves
        // them empty (logged), never the server down with its tools. Subscriptions are sent
        // again meanwhile; a change the server announces in between waits in the events.
        let (extras, resubscribed) = tokio::join!(
            Extras::list(
                &client,
                &negotiated.capabilities,
                self.spec.discover_timeout
            ),
            self.subscribe_again(&client)
        );
        self.publish(|status| {
            status.extras = extras;
            status.settled = true;
        });
        // Only now that its resources are published: a subscriber that reads at once is
        // routed to this server, not to another whose template overlaps the URI.
        self.report_updated(&resubscribed);
        // Modern servers send list changes only on a subscription stream; legacy ones send them
        // unasked. The stream lives as long as the connection.
        let listen = listen_for_changes(&client, &negotiated);
        tokio::pin!(listen);
        let mut listening = true;
        loop {
            tokio::select! {
                () = &mut listen, if listening => listening = false,
                () = self.stop.cancelled() => {
                    self.slot.set_current(None);
                    self.slot.set_client(None);
                    client.close().await;
                    return None;
                }
                reason = client.closed() => {
                    // Out of the choice of instances at once, before the close is awaited.
                    self.slot.set_current(None);
                    self.slot.set_client(None);
                    client.close().await;
                    return Some(reason);
                }
                Some(event) = events.recv() => {
                    // What queued meanwhile, each change once: a server that announces a
                    // change many times is listed again once.
                    let mut pending = vec![event];
                    while let Ok(more) = events.try_recv() {
                        if !pending.contains(&more) {
                            pending.push(more);
                        }
                    }
                    for event in pending {
                        let refreshing = self.refresh(&client, &negotiated.capabilities, event);
                        // Bounded: a server that announces a change and never lists it must
                        // not stall this loop (its stop, its close, later changes).
                        if tokio::time::timeout(self.spec.connect_timeout, refreshing).await.is_err() {
                            tracing::warn!(
                                target: "switchboard::upstream",
                                server = %self.label,
                                "a list change was not listed within {} ms; the last listing stays",
                                self.spec.connect_timeout.as_millis()
                            );
                        }
                    }
                }
            }
        }
    }

    async fn open(&self) -> Result<Opened, TransportError> {
        let spec = &self.spec;
        match &spec.endpoint {
            Endpoint::Stdio(command) => stdio::spawn(&self.label, command),
            Endpoint::StreamableHttp {
                url,
                headers,
                credentials,
                tls,
                public_only,
            } => http::open_streamable_http(
                &self.label,
                url,
                headers,
                credentials.clone(),
                tls.as_ref(),
                *public_only,
                spec.max_message_bytes,
            ),
            Endpoint::Sse {
                url,
                headers,
                tls,
                public_only,
            } => {
                http::open_legacy_sse(
                    &self.label,
                    url,
                    headers,
                    tls.as_ref(),
                    *public_only,
                    spec.max_message_bytes,
                )
                .await
            }
            Endpoint::InProcess(_) => {
                Err(TransportError::new("in-process servers have no transport"))
            }
        }
    }

    /// Subscribes a new connection to the resources the server was subscribed to through
    /// the last one (a restart loses a server's subscriptions), each within the discover
    /// timeout; a refusal is logged and the URI forgotten. Returns the URIs it was subscribed
    /// to, for [`Worker::report_updated`].
    async fn subscribe_again(&self, client: &RpcClient) -> Vec<String> {
        let uris: Vec<String> = self
            .subscribed
            .lock()
            .map(|uris| uris.iter().cloned().collect())
            .unwrap_or_default();
        for uri in &uris {
            let request = client.request("resources/subscribe", Some(json!({"uri": uri})));
            match tokio::time::timeout(self.spec.discover_timeout, request).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(target: "switchboard::upstream", server = %self.label, "subscribing again to {uri} failed: {error}");
                    if let Ok(mut subscribed) = self.subscribed.lock() {
                        subscribed.remove(uri);
                    }
                }
                Err(_) => {
                    tracing::warn!(target: "switchboard::upstream", server = %self.label, "subscribing again to {uri} took over {} ms", self.spec.discover_timeout.as_millis());
                }
            }
        }
        uris
    }

    /// Reports each URI the server was subscribed to again updated, so their subscribers
    /// read them again: the new connection served reads before its subscriptions were back,
    /// and a change in between (or the restart itself) was announced to nobody. Called once
    /// the connection's resources are published.
    fn report_updated(&self, uris: &[String]) {
        for uri in uris {
            self.on_change.resource_updated(&self.spec.id, uri);
        }
    }

    /// Re-lists what a `list_changed` notification says has changed.
    async fn refresh(&self, client: &RpcClient, capabilities: &Value, event: ServerEvent) {
        match event {
            ServerEvent::ResourceUpdated(uri) => {
                self.on_change.resource_updated(&self.spec.id, &uri)
            }
            ServerEvent::ToolsChanged => match list_tools(client).await {
                Ok(tools) => self.publish(|status| {
                    status.tools = tools.into_iter().map(ListedTool::compile).collect()
                }),
                Err(reason) => {
                    tracing::warn!(target: "switchboard::upstream", server = %self.label, "refreshing tools failed: {reason}")
                }
            },
            // A listing that fails keeps the last one (logged), as tools do.
            ServerEvent::PromptsChanged => {
                if let Some(prompts) = list_prompts(client, capabilities).await {
                    self.publish(|status| status.extras.prompts = prompts);
                }
            }
            ServerEvent::ResourcesChanged => {
                let (resources, templates) = list_resources(client, capabilities).await;
                self.publish(|status| {
                    if let Some(resources) = resources {
                        status.extras.resources = resources;
                    }
                    if let Some(templates) = templates {
                        status.extras.resource_templates = templates;
                    }
                });
            }
        }
    }

    /// Takes the published connection out of service and closes it.
    async fn close_published(&self) {
        self.slot.set_current(None);
        if let Some(client) = self.slot.take_client() {
            client.close().await;
        }
    }

    fn publish(&self, change: impl FnOnce(&mut ServerStatus)) {
        self.status.send_modify(change);
        self.on_change.status_changed(&self.spec.id);
    }
}

/// Closes a connection whose handshake failed; the reason, with what the transport saw.
/// A client not published yet (see [`Instance::connect_and_serve`]): closed when dropped
/// armed.
struct Unpublished(Option<Arc<RpcClient>>);

impl Unpublished {
    /// Published, or closed otherwise: nothing to do when dropped.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Unpublished {
    fn drop(&mut self) {
        if let Some(client) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { client.close().await });
        }
    }
}

async fn fail(client: &RpcClient, reason: String) -> String {
    let reason = match client.transport_diagnostics() {
        Some(extra) => format!("{reason}; {extra}"),
        None => reason,
    };
    client.close().await;
    reason
}

/// Opens `subscriptions/listen` on a modern server that can announce list changes; the
/// notifications it streams reach the client's event channel like any others. Returns when
/// the subscription ends (or at once, when there is nothing to listen to).
async fn listen_for_changes(client: &RpcClient, negotiated: &Negotiated) {
    if negotiated.era != Era::Modern {
        return;
    }
    let announces = |key: &str| {
        negotiated
            .capabilities
            .get(key)
            .and_then(|c| c.get("listChanged"))
            .and_then(Value::as_bool)
            == Some(true)
    };
    let filter = serde_json::json!({
        "toolsListChanged": announces("tools"),
        "promptsListChanged": announces("prompts"),
        "resourcesListChanged": announces("resources"),
    });
    if !(announces("tools") || announces("prompts") || announces("resources")) {
        return;
    }
    if let Err(error) = client
        .request(
            "subscriptions/listen",
            Some(serde_json::json!({"notifications": filter})),
        )
        .await
    {
        tracing::info!(target: "switchboard::upstream", server = %client.label(), "subscriptions/listen ended: {error}");
    }
}

/// Exponential backoff with full jitter between half and all of the step.
fn backoff(failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(16);
    let step = BACKOFF_BASE.saturating_mul(1 << exponent).min(BACKOFF_MAX);
    let jitter = rand::rng().random_range(0.5..=1.0);
    step.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        for failures in 1..40 {
            let delay = backoff(failures);
            let step = BACKOFF_BASE
                .saturating_mul(1 << failures.saturating_sub(1).min(16))
                .min(BACKOFF_MAX);
            assert!(
                delay >= step / 2 && delay <= step,
                "{failures}: {delay:?} vs {step:?}"
            );
        }
        assert!(backoff(30) <= BACKOFF_MAX);
    }
}
