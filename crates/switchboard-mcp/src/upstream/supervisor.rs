//! Keeping one upstream connected: connect with a deadline, publish its tools, follow its
//! `list_changed` notifications, notice when it dies, and reconnect with exponential backoff
//! and jitter — without ever blocking anyone else.
//!
//! The supervisor's only outputs are a [`ServerStatus`] (read by listings and `status`) and
//! the current [`Upstream`] (read by the pipeline); both are swapped whole.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rand::Rng;
use serde_json::Value;
use switchboard_core::ServerId;
use switchboard_core::catalog::ListedTool;
use switchboard_core::upstream::{ToolProvider, Upstream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::{RpcClient, ServerEvent};
use super::http;
use super::inprocess::InProcess;
use super::session::{
    EraChoice, Extras, Negotiated, list_prompts, list_resources, list_tools, negotiate,
};
use super::stdio::{self, StdioCommand};
use super::transport::{Opened, TransportError};
use crate::era::Era;

/// Where a server lives.
#[derive(Clone)]
pub enum Endpoint {
    Stdio(StdioCommand),
    StreamableHttp {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
    InProcess(Arc<dyn ToolProvider>),
}

impl Endpoint {
    pub fn transport_label(&self) -> &'static str {
        match self {
            Self::Stdio(_) => "stdio",
            Self::StreamableHttp { .. } => "streamable-http",
            Self::Sse { .. } => "sse",
            Self::InProcess(_) => "in-process",
        }
    }
}

/// Everything needed to run one upstream.
#[derive(Clone)]
pub struct UpstreamSpec {
    pub id: ServerId,
    pub endpoint: Endpoint,
    pub era: EraChoice,
    pub connect_timeout: Duration,
    pub discover_timeout: Duration,
    pub max_message_bytes: usize,
}

/// Connection state of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Up,
    Down,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

/// What is known about one server right now.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub state: ServerState,
    pub era: Option<Era>,
    pub tools: Arc<[ListedTool]>,
    /// Why the server is down (or why it last went down).
    pub error: Option<String>,
    pub server_info: Value,
    /// What the server said it can do (`initialize` / `server/discover`).
    pub capabilities: Value,
    /// Its prompts, resources and resource templates.
    pub extras: Extras,
    /// Failed connection attempts since the last success.
    pub failures: u32,
    /// Whether the first connection attempt has finished (either way).
    pub settled: bool,
}

impl ServerStatus {
    fn starting() -> Self {
        Self {
            state: ServerState::Starting,
            era: None,
            tools: Arc::from([]),
            error: None,
            server_info: Value::Null,
            capabilities: Value::Null,
            extras: Extras::default(),
            failures: 0,
            settled: false,
        }
    }
}

/// Who hears about a supervised server: every status change, and resource updates.
pub trait SupervisorObserver: Send + Sync {
    /// The server's status changed (state, tools, prompts, resources).
    fn status_changed(&self, server: &ServerId);
    /// The server said a subscribed resource changed.
    fn resource_updated(&self, _server: &ServerId, _uri: &str) {}
}

type OnChange = Arc<dyn SupervisorObserver>;

/// A running supervisor of one upstream.
pub struct Supervisor {
    id: ServerId,
    status: watch::Receiver<ServerStatus>,
    current: Arc<RwLock<Option<Arc<dyn Upstream>>>>,
    client: Arc<RwLock<Option<Arc<RpcClient>>>>,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// A supervisor nobody holds any more stops its worker, which closes the connection (and
/// kills a child's process group): one abandoned half-way — a change whose caller went away
/// while the server started — leaves nothing running.
impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Supervisor {
    /// Starts supervising; `on_change` hears of every status change.
    pub fn start(spec: UpstreamSpec, on_change: OnChange) -> Arc<Self> {
        let (status_tx, status) = watch::channel(ServerStatus::starting());
        let current = Arc::new(RwLock::new(None));
        let client = Arc::new(RwLock::new(None));
        let stop = CancellationToken::new();
        let id = spec.id.clone();
        let worker = Worker {
            spec,
            status: status_tx,
            current: current.clone(),
            client: client.clone(),
            stop: stop.clone(),
            on_change,
        };
        let task = tokio::spawn(worker.run());
        Arc::new(Self {
            id,
            status,
            current,
            client,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    pub fn id(&self) -> &ServerId {
        &self.id
    }

    pub fn status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }

    /// The connected upstream, if the server is up.
    pub fn upstream(&self) -> Option<Arc<dyn Upstream>> {
        self.current.read().ok().and_then(|slot| slot.clone())
    }

    /// The JSON-RPC connection, when the server is an MCP server and up (for requests other
    /// than tool calls: prompts, resources).
    pub fn client(&self) -> Option<Arc<RpcClient>> {
        self.client.read().ok().and_then(|slot| slot.clone())
    }

    /// Waits until the first connection attempt has finished, successfully or not.
    pub async fn settled(&self) {
        let mut status = self.status.clone();
        let _ = status.wait_for(|status| status.settled).await;
    }

    /// Stops supervising and closes the connection (killing a child's process group).
    pub async fn stop(&self) {
        self.stop.cancel();
        let task = self.task.lock().ok().and_then(|mut task| task.take());
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

struct Worker {
    spec: UpstreamSpec,
    status: watch::Sender<ServerStatus>,
    current: Arc<RwLock<Option<Arc<dyn Upstream>>>>,
    client: Arc<RwLock<Option<Arc<RpcClient>>>>,
    stop: CancellationToken,
    on_change: OnChange,
}

impl Worker {
    async fn run(self) {
        if let Endpoint::InProcess(provider) = &self.spec.endpoint {
            let tools: Arc<[ListedTool]> = provider
                .tools()
                .into_iter()
                .map(ListedTool::compile)
                .collect();
            self.set_current(Some(Arc::new(InProcess::new(provider.clone()))));
            self.publish(|status| {
                *status = ServerStatus {
                    state: ServerState::Up,
                    era: None,
                    tools,
                    error: None,
                    server_info: serde_json::json!({"name": provider.name()}),
                    capabilities: serde_json::json!({"tools": {}}),
                    extras: Extras::default(),
                    failures: 0,
                    settled: true,
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
            self.set_current(None);
            if started.elapsed() >= STABLE_AFTER {
                failures = 0;
            }
            failures = failures.saturating_add(1);
            tracing::warn!(target: "switchboard::upstream", server = %self.spec.id, "server is down: {reason}");
            self.publish(|status| {
                status.state = ServerState::Down;
                status.tools = Arc::from([]);
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
        let opened = match tokio::time::timeout_at(deadline, open(&self.spec)).await {
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
        let client = RpcClient::start(self.spec.id.clone(), opened, events_tx);
        let handshake = async {
            let negotiated = negotiate(&client, self.spec.era, self.spec.discover_timeout).await?;
            let tools = list_tools(&client).await?;
            let prompts = list_prompts(&client, &negotiated.capabilities).await;
            let (resources, resource_templates) =
                list_resources(&client, &negotiated.capabilities).await;
            Ok::<_, String>((
                negotiated,
                tools,
                Extras {
                    prompts,
                    resources,
                    resource_templates,
                },
            ))
        };
        let (negotiated, tools, extras) = match tokio::time::timeout_at(deadline, handshake).await {
            Ok(Ok(ready)) => ready,
            Ok(Err(reason)) => return Some(self.fail(&client, reason).await),
            Err(_) => {
                let reason = format!(
                    "timed out after {} ms waiting for the server to initialize",
                    self.spec.connect_timeout.as_millis()
                );
                return Some(self.fail(&client, reason).await);
            }
        };
        tracing::info!(target: "switchboard::upstream", server = %self.spec.id, era = negotiated.era.label(), version = negotiated.era.version(), tools = tools.len(), "connected");
        self.set_current(Some(client.clone()));
        self.set_client(Some(client.clone()));
        self.publish(|status| {
            *status = ServerStatus {
                state: ServerState::Up,
                era: Some(negotiated.era.clone()),
                tools: tools.into_iter().map(ListedTool::compile).collect(),
                error: None,
                server_info: negotiated.server_info.clone(),
                capabilities: negotiated.capabilities.clone(),
                extras,
                failures: 0,
                settled: true,
            };
        });
        // Modern servers send list changes only on a subscription stream; legacy ones send them
        // unasked. The stream lives as long as the connection.
        let listen = listen_for_changes(&client, &negotiated);
        tokio::pin!(listen);
        let mut listening = true;
        loop {
            tokio::select! {
                () = &mut listen, if listening => listening = false,
                () = self.stop.cancelled() => {
                    self.set_current(None);
                    self.set_client(None);
                    client.close().await;
                    return None;
                }
                reason = client.closed() => {
                    self.set_client(None);
                    client.close().await;
                    return Some(reason);
                }
                Some(event) = events.recv() => self.refresh(&client, &negotiated.capabilities, event).await,
            }
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
                    tracing::warn!(target: "switchboard::upstream", server = %self.spec.id, "refreshing tools failed: {reason}")
                }
            },
            ServerEvent::PromptsChanged => {
                let prompts = list_prompts(client, capabilities).await;
                self.publish(|status| status.extras.prompts = prompts);
            }
            ServerEvent::ResourcesChanged => {
                let (resources, templates) = list_resources(client, capabilities).await;
                self.publish(|status| {
                    status.extras.resources = resources;
                    status.extras.resource_templates = templates;
                });
            }
        }
    }

    /// Takes the published connection out of service and closes it.
    async fn close_published(&self) {
        self.set_current(None);
        let client = self.client.write().ok().and_then(|mut slot| slot.take());
        if let Some(client) = client {
            client.close().await;
        }
    }

    fn set_client(&self, client: Option<Arc<RpcClient>>) {
        if let Ok(mut slot) = self.client.write() {
            *slot = client;
        }
    }

    async fn fail(&self, client: &RpcClient, reason: String) -> String {
        let reason = match client_diagnostics(client) {
            Some(extra) => format!("{reason}; {extra}"),
            None => reason,
        };
        client.close().await;
        reason
    }

    fn set_current(&self, upstream: Option<Arc<dyn Upstream>>) {
        if let Ok(mut slot) = self.current.write() {
            *slot = upstream;
        }
    }

    fn publish(&self, change: impl FnOnce(&mut ServerStatus)) {
        self.status.send_modify(change);
        self.on_change.status_changed(&self.spec.id);
    }
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
        tracing::info!(target: "switchboard::upstream", server = %client.server(), "subscriptions/listen ended: {error}");
    }
}

fn client_diagnostics(client: &RpcClient) -> Option<String> {
    client.transport_diagnostics()
}

async fn open(spec: &UpstreamSpec) -> Result<Opened, TransportError> {
    match &spec.endpoint {
        Endpoint::Stdio(command) => stdio::spawn(spec.id.as_str(), command),
        Endpoint::StreamableHttp { url, headers } => {
            http::open_streamable_http(spec.id.as_str(), url, headers, spec.max_message_bytes)
        }
        Endpoint::Sse { url, headers } => {
            http::open_legacy_sse(spec.id.as_str(), url, headers, spec.max_message_bytes).await
        }
        Endpoint::InProcess(_) => Err(TransportError::new("in-process servers have no transport")),
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
