//! The servers a Host runs right now, each pinned to one generation of its settings, and the
//! life of a server's connection after it leaves the fleet: calls already on it finish there
//! (they hold a [`Lease`]), new calls cannot find it, and once it is idle — or its drain time
//! is up — it is closed (a stdio child's process group killed).
//!
//! The fleet is an immutable snapshot swapped whole by a reload, like the catalog: a call
//! that resolved its server keeps the connection it found even if the server is replaced a
//! moment later.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use switchboard_core::ServerId;
use switchboard_core::upstream::UpstreamError;
use switchboard_mcp::upstream::{InstanceCall, Supervisor};
use tokio::sync::Notify;

use crate::host::ServerPlan;

/// One connection to a server (one supervisor), shared by every generation of the server's
/// settings that did not need a new connection.
pub(crate) struct Connection {
    pub(crate) supervisor: Arc<Supervisor>,
    in_flight: AtomicUsize,
    idle: Notify,
    /// Set when the connection's drain ran out of time: calls still on it were cut off.
    cut_off: AtomicBool,
    /// Set when the drain starts: a call that leased it after that lets go and looks again.
    retiring: AtomicBool,
    /// Why the connection left the fleet ("removed", "replaced"), once it has.
    retired: Mutex<Option<&'static str>>,
    /// This server's own budgets of retries and hedges: a failing server spends what its own
    /// calls earn, never what a busy healthy one does.
    pub(crate) retries: switchboard_budget::ExtraRequestBudget,
    pub(crate) hedges: switchboard_budget::ExtraRequestBudget,
}

impl Connection {
    pub(crate) fn new(supervisor: Arc<Supervisor>) -> Arc<Self> {
        Arc::new(Self {
            supervisor,
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            cut_off: AtomicBool::new(false),
            retiring: AtomicBool::new(false),
            retired: Mutex::new(None),
            retries: switchboard_budget::ExtraRequestBudget::retries(),
            hedges: switchboard_budget::ExtraRequestBudget::hedges(),
        })
    }

    /// Counts a call (or forwarded request) on this connection until the lease drops.
    pub(crate) fn lease(self: &Arc<Self>) -> Lease {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Lease {
            connection: self.clone(),
            instance: None,
        }
    }

    /// Calls on this connection now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Whether its drain has started. Read after taking a lease (the drain sets it before it
    /// counts the leases), so a lease either is counted by the drain or sees this.
    pub(crate) fn retiring(&self) -> bool {
        self.retiring.load(Ordering::SeqCst)
    }

    /// Waits until no call is on this connection.
    async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Takes the connection out of service: waits up to `timeout` for its calls to finish,
    /// cuts off the rest (they get a readable error), then closes it. Returns how many calls
    /// were cut off.
    pub(crate) async fn drain(&self, why: &'static str, timeout: Duration) -> usize {
        if let Ok(mut retired) = self.retired.lock() {
            *retired = Some(why);
        }
        self.retiring.store(true, Ordering::SeqCst);
        let cut_off = match tokio::time::timeout(timeout, self.idle()).await {
            Ok(()) => 0,
            Err(_) => {
                self.cut_off.store(true, Ordering::Release);
                self.in_flight()
            }
        };
        if cut_off > 0 {
            tracing::warn!(server = %self.supervisor.id(), calls = cut_off, "server {why}: {cut_off} call(s) still running after the {} s drain were cancelled", timeout.as_secs());
        }
        self.supervisor.stop().await;
        cut_off
    }
}

/// A call's hold on a connection: while any lease lives, a draining connection stays open.
pub(crate) struct Lease {
    connection: Arc<Connection>,
    /// For a pooled server, the call's count on the instance it went to.
    instance: Option<InstanceCall>,
}

impl Lease {
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// Holds the call's count on the instance of a pool it went to, for as long as the lease.
    pub(crate) fn on_instance(mut self, instance: Option<InstanceCall>) -> Self {
        self.instance = instance;
        self
    }

    /// The error a call gets when its connection was closed under it at the end of a drain
    /// (instead of the transport's "connection closed").
    pub(crate) fn explain(&self, error: UpstreamError) -> UpstreamError {
        if !self.connection.cut_off.load(Ordering::Acquire) {
            return error;
        }
        let why = self
            .connection
            .retired
            .lock()
            .ok()
            .and_then(|why| *why)
            .unwrap_or("removed");
        let server = self.connection.supervisor.id().clone();
        UpstreamError::Unavailable {
            reason: format!(
                "the server was {why} while this call was in flight, and the call was cancelled when the drain time ran out"
            ),
            server,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.connection.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.connection.idle.notify_waiters();
        }
    }
}

/// Which surface made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The config the gateway started with.
    Startup,
    /// `switchboard servers ...` and other operator commands.
    Cli,
    /// The admin endpoint, called directly.
    Admin,
    /// A program embedding the Host.
    Library,
    /// A hand edit of the config file, noticed by the watcher.
    File,
    /// `switchboard reload`, SIGHUP.
    Reload,
    /// The server manager (`switchboard::manager`), for whoever asked it.
    Manager,
    /// Another replica's change to the managed configuration on PostgreSQL.
    Replica,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Cli => "cli",
            Self::Admin => "admin",
            Self::Library => "library",
            Self::File => "file",
            Self::Reload => "reload",
            Self::Manager => "manager",
            Self::Replica => "replica",
        }
    }
}

/// When and through which surface a server's settings last changed.
#[derive(Debug, Clone, Serialize)]
pub struct Stamp {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    pub by: Surface,
}

impl Stamp {
    pub fn now(by: Surface) -> Self {
        Self {
            at_ms: unix_ms(),
            by,
        }
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One server of the fleet at one generation of its settings.
pub(crate) struct Member {
    pub(crate) plan: ServerPlan,
    pub(crate) connection: Arc<Connection>,
    /// Counts the changes applied to this server since the gateway started (1 at start).
    pub(crate) generation: u64,
    pub(crate) changed: Stamp,
}

impl Member {
    pub(crate) fn id(&self) -> &ServerId {
        &self.plan.spec.id
    }

    pub(crate) fn supervisor(&self) -> &Arc<Supervisor> {
        &self.connection.supervisor
    }
}

/// The servers in service, in config order.
#[derive(Default)]
pub(crate) struct Fleet {
    pub(crate) members: Vec<Arc<Member>>,
}

impl Fleet {
    pub(crate) fn find(&self, server: &ServerId) -> Option<&Arc<Member>> {
        self.members.iter().find(|member| member.id() == server)
    }

    pub(crate) fn find_id(&self, server: &str) -> Option<&Arc<Member>> {
        self.members
            .iter()
            .find(|member| member.id().as_str() == server)
    }
}

/// A connection out of service, still finishing its calls.
pub(crate) struct Draining {
    pub(crate) connection: Arc<Connection>,
    pub(crate) why: &'static str,
    pub(crate) since: Stamp,
}

/// The connections being drained, for `status` and for shutdown.
#[derive(Default)]
pub(crate) struct DrainList {
    list: Mutex<Vec<Arc<Draining>>>,
}

impl DrainList {
    /// Drains `connection` on a task of its own; it leaves the list when closed.
    pub(crate) fn start(
        self: &Arc<Self>,
        connection: Arc<Connection>,
        why: &'static str,
        by: Surface,
        timeout: Duration,
    ) {
        let draining = Arc::new(Draining {
            connection,
            why,
            since: Stamp::now(by),
        });
        if let Ok(mut list) = self.list.lock() {
            list.push(draining.clone());
        }
        let me = self.clone();
        tokio::spawn(async move {
            draining.connection.drain(draining.why, timeout).await;
            if let Ok(mut list) = me.list.lock() {
                list.retain(|other| !Arc::ptr_eq(other, &draining));
            }
        });
    }

    pub(crate) fn snapshot(&self) -> Vec<Arc<Draining>> {
        self.list
            .lock()
            .map(|list| list.clone())
            .unwrap_or_default()
    }

    /// Closes every connection still draining, at once (shutdown).
    pub(crate) async fn close_all(&self) {
        let all = self.snapshot();
        futures::future::join_all(all.iter().map(|d| d.connection.supervisor.stop())).await;
    }
}
