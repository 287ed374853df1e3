//! Keeping one server connected: one [`instance`] worker per process it runs — one, or a
//! pool of `instances` stdio processes —, each connecting, listing and reconnecting with
//! backoff on its own, so one dying never takes the others down.
//!
//! The supervisor's outputs are a [`ServerStatus`] (read by listings and `status`; for a pool,
//! [`pool::combined`] of its instances') and, per call, the [`Upstream`] of an instance that is
//! up ([`Supervisor::upstream_for_call`]: the one with the fewest calls in flight).

mod instance;
mod pool;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU8;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_core::ServerId;
use switchboard_core::catalog::ListedTool;
use switchboard_core::upstream::{ToolProvider, Upstream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use self::instance::{Slot, Worker};
pub use self::pool::InstanceCall;
use super::client::RpcClient;
use super::session::{EraChoice, Extras};
use super::stdio::StdioCommand;
use crate::era::Era;

/// Where a server lives.
#[derive(Clone)]
pub enum Endpoint {
    Stdio(StdioCommand),
    StreamableHttp {
        url: String,
        headers: BTreeMap<String, String>,
        /// The tokens the server gets (`[servers.ID.auth]`).
        credentials: Option<Arc<crate::upstream::http::UpstreamCredentials>>,
        /// Its own CA and client certificate (`[servers.ID.tls]`).
        tls: Option<crate::upstream::http::TlsFiles>,
        /// Every connection held to public addresses (`[servers.ID] public_only`).
        public_only: bool,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
        /// Its own CA and client certificate (`[servers.ID.tls]`).
        tls: Option<crate::upstream::http::TlsFiles>,
        /// Every connection held to public addresses (`[servers.ID] public_only`).
        public_only: bool,
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
    /// How many processes of a stdio server run side by side, each with its own session.
    /// Other endpoints run one whatever this says.
    pub instances: NonZeroU8,
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

/// How many instances of a server run, and how many of them are up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct InstanceCount {
    pub up: u8,
    pub configured: u8,
}

/// What is known about one server right now.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub state: ServerState,
    pub era: Option<Era>,
    pub tools: Arc<[ListedTool]>,
    /// Why the server is down (or why it last went down; for a pool that is up, why one of
    /// its instances is down).
    pub error: Option<String>,
    pub server_info: Value,
    /// What the server said it can do (`initialize` / `server/discover`).
    pub capabilities: Value,
    /// Its prompts, resources and resource templates.
    pub extras: Extras,
    /// Failed connection attempts since the last success.
    pub failures: u32,
    /// Whether the first connection attempt has finished (either way; for a pool, every
    /// instance's).
    pub settled: bool,
    /// Its instances: configured, and up now.
    pub instances: InstanceCount,
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
            instances: InstanceCount {
                up: 0,
                configured: 1,
            },
        }
    }
}

/// Who hears about a supervised server: every status change, and resource updates.
pub trait SupervisorObserver: Send + Sync {
    /// The server's status changed (state, tools, prompts, resources); for a pool, one
    /// instance's did.
    fn status_changed(&self, server: &ServerId);
    /// The server said a subscribed resource changed.
    fn resource_updated(&self, _server: &ServerId, _uri: &str) {}
}

type OnChange = Arc<dyn SupervisorObserver>;

/// A running supervisor of one upstream (one process, or a pool of them).
pub struct Supervisor {
    id: ServerId,
    /// The resource URIs the server is subscribed to through this gateway, sent again each
    /// time an instance (re)connects ([`Supervisor::note_subscription`]).
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    /// One per process, in order: instance 1 first.
    instances: Box<[Arc<Slot>]>,
    /// Where the next call's look for the least busy instance starts, so ties go round.
    cursor: AtomicUsize,
    stop: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// A supervisor nobody holds any more stops its workers, which close their connections (and
/// kill each child's process group): one abandoned half-way — a change whose caller went
/// away while the server started — leaves nothing running.
impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Supervisor {
    /// Starts supervising; `on_change` hears of every status change of every instance.
    pub fn start(spec: UpstreamSpec, on_change: OnChange) -> Arc<Self> {
        let count = match spec.endpoint {
            Endpoint::Stdio(_) => spec.instances.get(),
            _ => 1,
        };
        let stop = CancellationToken::new();
        let subscribed = Arc::new(Mutex::new(BTreeSet::new()));
        let mut instances = Vec::with_capacity(usize::from(count));
        let mut tasks = Vec::with_capacity(usize::from(count));
        for index in 1..=count {
            let (status_tx, status_rx) = watch::channel(ServerStatus::starting());
            let slot = Arc::new(Slot::new(status_rx));
            let label = if count == 1 {
                spec.id.to_string()
            } else {
                format!("{}#{index}", spec.id)
            };
            let worker = Worker {
                spec: spec.clone(),
                label,
                status: status_tx,
                slot: slot.clone(),
                stop: stop.clone(),
                on_change: on_change.clone(),
                subscribed: subscribed.clone(),
            };
            tasks.push(tokio::spawn(worker.run()));
            instances.push(slot);
        }
        Arc::new(Self {
            id: spec.id,
            subscribed,
            instances: instances.into_boxed_slice(),
            cursor: AtomicUsize::new(0),
            stop,
            tasks: Mutex::new(tasks),
        })
    }

    pub fn id(&self) -> &ServerId {
        &self.id
    }

    /// Notes that the server is (`true`) or no longer is subscribed to `uri`: a connection
    /// that replaces a lost one subscribes again to every URI noted (for a pool, each
    /// instance does as it connects).
    pub fn note_subscription(&self, uri: &str, subscribed: bool) {
        let mut uris = self
            .subscribed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if subscribed {
            uris.insert(uri.to_owned());
        } else {
            uris.remove(uri);
        }
    }

    /// How many instances it runs (1 unless it is a pool).
    pub fn instances(&self) -> usize {
        self.instances.len()
    }

    pub fn status(&self) -> ServerStatus {
        match &*self.instances {
            [only] => {
                let mut status = only.status.borrow().clone();
                status.instances.up = u8::from(status.state == ServerState::Up);
                status
            }
            pool => pool::combined(pool),
        }
    }

    /// The connected upstream, if the server is up: for a pool, the instance with the fewest
    /// calls in flight (probes and other requests outside the pipeline, which are not counted).
    pub fn upstream(&self) -> Option<Arc<dyn Upstream>> {
        match &*self.instances {
            [only] => only.upstream(),
            pool => pool::choose(pool, &self.cursor).map(|(upstream, _)| upstream),
        }
    }

    /// The upstream a call goes to, and — for a pool — its count on the instance chosen, to
    /// hold until the call ends: the instance that is up with the fewest calls in flight, ties
    /// taken in turn. Everything the server sends back during the call (progress, its own
    /// requests, log messages) comes from that instance's session, and goes to this call's
    /// caller; a cancellation goes to the same instance.
    pub fn upstream_for_call(&self) -> Option<(Arc<dyn Upstream>, Option<InstanceCall>)> {
        match &*self.instances {
            [only] => only.upstream().map(|upstream| (upstream, None)),
            pool => pool::choose(pool, &self.cursor).map(|(upstream, call)| (upstream, Some(call))),
        }
    }

    /// The JSON-RPC connection, when the server is an MCP server and up (for requests other
    /// than tool calls: prompts, resources): for a pool, the first instance that is up, the
    /// one its prompts and resources are listed from.
    pub fn client(&self) -> Option<Arc<RpcClient>> {
        self.instances.iter().find_map(|slot| slot.client())
    }

    /// Whether [`Supervisor::settled`] would return at once: every instance's connection
    /// attempt has finished, successfully or not.
    pub fn is_settled(&self) -> bool {
        self.instances
            .iter()
            .all(|slot| slot.status.borrow().settled)
    }

    /// Waits until the first connection attempt has finished, successfully or not (for a
    /// pool, every instance's first attempt; they run in parallel).
    pub async fn settled(&self) {
        let waits = self.instances.iter().map(|slot| {
            let mut status = slot.status.clone();
            async move {
                let _ = status.wait_for(|status| status.settled).await;
            }
        });
        futures::future::join_all(waits).await;
    }

    /// Stops supervising and closes the connections (killing each child's process group).
    pub async fn stop(&self) {
        self.stop.cancel();
        let tasks = self
            .tasks
            .lock()
            .map(|mut tasks| std::mem::take(&mut *tasks))
            .unwrap_or_default();
        futures::future::join_all(tasks).await;
    }
}
