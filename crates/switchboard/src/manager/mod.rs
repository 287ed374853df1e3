//! The server manager: a worker that finds, installs, vets and adds MCP servers in the
//! background — the "MCP sub-agent" of the Effort-Regulation design — while calls through
//! the gateway go on. The model reaches it through the `manager` built-in's tools
//! ([`tools`]), the operator through `switchboard install` / `operations` and the admin
//! endpoint, a program through [`Manager`] itself.
//!
//! Every piece of work is an [`Operation`] (a ULID, a priority, a state, progress with a
//! message per step, the energy it consumed, a result or a readable error), queued in
//! priority order and run on its own task, at most `[manager] max_concurrent` at once; any
//! can be cancelled, and a cancelled install leaves nothing behind. Operations are kept in
//! SQLite ([`store`]), so their history survives a restart — or, with `[storage] url`, on
//! PostgreSQL (`postgres`), where every replica of a deployment lists and follows every
//! replica's operations, and those of a replica that died are marked failed by another.
//!
//! Code map: [`operation`] (the vocabulary), `error` ([`ManagerError`]), `queueing` (a
//! request admitted, screened, kept and queued: [`Manager::queue`]), [`store`] (the database, and the
//! `OperationStore` seam), `postgres` (the store the replicas share), [`energy`] (costs and
//! the drain), `lifecycle` (an operation from start to end, saved at every step), `work`
//! (what each kind of operation does; an install in `work::install`), [`listing`] (a registry
//! listing as the operator sees it, and one exact version looked up for a dry run), `vet` (probation before a server's
//! tools reach a model), `inputs` (a server's required inputs, secrets kept out of the
//! ledger), `retention` (finished operations pruned), [`tools`] (the built-in provider).

pub mod energy;
mod error;
mod inputs;
mod lifecycle;
pub mod listing;
mod open_slots;
pub mod operation;
pub(crate) mod postgres;
mod queueing;
mod replicas;
mod retention;
pub mod store;
pub mod tools;
mod vet;
mod work;

use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use switchboard_core::config::ManagerConfig;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::host::{Host, Inner};
pub use energy::Drain;
pub use error::ManagerError;
pub use operation::{
    Activation, Message, MessageKind, Modification, Operation, Priority, Request, Requester, State,
    Step, Waiting, Work,
};
pub use postgres::{HEARTBEAT, LEASE, PRUNE_EVERY};
use queueing::too_many;
pub use queueing::valid_server_id;
pub use store::{Installed, RETENTION, Retention, StoreError};
pub use vet::VetReport;
pub use work::server_id_for;

/// Where the running Host's manager is found by the built-in provider, which is built before
/// the Host it belongs to.
pub(crate) type ManagerSlot = Arc<OnceLock<Manager>>;

/// The manager of one Host. Cheap to clone.
#[derive(Clone)]
pub struct Manager {
    shared: Arc<Shared>,
}

struct Shared {
    host: Weak<Inner>,
    database: PathBuf,
    /// The store the replicas share, with `[storage] url` (then `database` is not used).
    postgres: Option<Arc<postgres::SharedOperations>>,
    max_concurrent: usize,
    store: Mutex<Option<store::Store>>,
    /// Operations of this run that are not over, with what drives them.
    active: Mutex<BTreeMap<String, Active>>,
    queue: Mutex<Queue>,
    messages: Mutex<VecDeque<Message>>,
    meter: energy::Meter,
    /// Bumped at every change of any operation (waiters and progress streams follow it).
    changed: watch::Sender<u64>,
    registry: Mutex<Option<(String, switchboard_registry::Registry)>>,
    /// Server ids an open operation is adding (released when it ends).
    reserved: Mutex<std::collections::HashSet<String>>,
    /// Per agent, operations being queued but not yet `active`: counted with those, so two
    /// requests at once cannot both take an agent's last slot (`open_slots`).
    queuing: Mutex<HashMap<String, usize>>,
    /// Installs of other replicas this replica tried to copy: (server, installing operation).
    replicated: Mutex<std::collections::HashSet<(String, String)>>,
    /// Set when the gateway stops: nothing new is queued on its own from then on.
    stopping: std::sync::atomic::AtomicBool,
    /// Set when the Host runs the shared configuration (a gateway serving, not a command):
    /// packages other replicas installed are installed here too.
    replicating: std::sync::atomic::AtomicBool,
    /// The lock that makes this process the database's owner, once it is.
    claim: Mutex<Option<store::Claim>>,
    /// Operations of this run that ended, newest last (the history beyond is in the store).
    finished: Mutex<VecDeque<Operation>>,
}

struct Active {
    operation: Operation,
    cancel: CancellationToken,
    /// Why it was cancelled, once it was.
    cancel_reason: Option<String>,
    /// Where values for its inputs go while it waits for them.
    inputs: Option<mpsc::UnboundedSender<BTreeMap<String, String>>>,
}

#[derive(Default)]
struct Queue {
    waiting: BinaryHeap<Queued>,
    running: usize,
    sequence: u64,
}

#[derive(PartialEq, Eq)]
struct Queued {
    priority: Priority,
    sequence: u64,
    id: String,
}

impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Highest priority first, then the oldest.
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.sequence.cmp(&self.sequence))
    }
}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

const MESSAGES_KEPT: usize = 1000;
const FINISHED_KEPT: usize = 200;
/// Operations one agent may have queued or running at once.
pub const OPEN_PER_AGENT: usize = 4;
/// How long a stopping gateway waits for cancelled operations to clean up.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

pub(crate) fn now_ms() -> u64 {
    crate::fleet::unix_ms()
}

impl Manager {
    /// The manager of the Host behind `host`; its database is opened now only if it exists
    /// (then the operations the last run left unfinished are marked failed). With `shared`
    /// (`[storage] url`), operations and installs are kept there instead.
    pub(crate) fn start(
        host: Weak<Inner>,
        config: &ManagerConfig,
        database: PathBuf,
        shared: Option<Arc<postgres::SharedOperations>>,
    ) -> Self {
        let (changed, _) = watch::channel(0);
        let manager = Self {
            shared: Arc::new(Shared {
                host,
                database,
                postgres: shared,
                max_concurrent: config.max_concurrent.max(1),
                store: Mutex::new(None),
                active: Mutex::default(),
                queue: Mutex::default(),
                messages: Mutex::default(),
                meter: energy::Meter::default(),
                changed,
                registry: Mutex::new(None),
                reserved: Mutex::default(),
                queuing: Mutex::default(),
                replicated: Mutex::default(),
                stopping: std::sync::atomic::AtomicBool::new(false),
                replicating: std::sync::atomic::AtomicBool::new(false),
                claim: Mutex::new(None),
                finished: Mutex::default(),
            }),
        };
        if manager.shared.postgres.is_none() && manager.shared.database.exists() && manager.claim()
        {
            match manager.with_sqlite(|store| store.fail_interrupted(now_ms())) {
                Ok(interrupted) if interrupted.is_empty() => {}
                Ok(interrupted) => {
                    tracing::warn!(
                        count = interrupted.len(),
                        "operations left unfinished by the last run were marked failed"
                    );
                    // They installed nothing: the secrets given for them go, as in `finish`.
                    for operation in &interrupted {
                        inputs::forget_secrets(&operation.secrets);
                    }
                }
                Err(error) => tracing::error!("{error}"),
            }
        }
        if manager.shared.postgres.is_some() {
            manager.follow_replicas();
        } else {
            manager.prune_in_background();
        }
        manager
    }

    /// Where the operations are kept (unless they are on PostgreSQL: [`Manager::shared`]).
    pub fn database(&self) -> &std::path::Path {
        &self.shared.database
    }

    /// Whether the operations are on PostgreSQL, shared by the replicas of a deployment.
    pub fn shared(&self) -> bool {
        self.shared.postgres.is_some()
    }

    /// Waits (at most `within`) until the operations the replicas share were read once (at
    /// once when they are not shared).
    pub async fn synced(&self, within: Duration) {
        if let Some(shared) = &self.shared.postgres {
            shared.synced(within).await;
        }
    }

    /// This replica's name when the replicas share their operations.
    pub(crate) fn replica(&self) -> Option<String> {
        self.shared
            .postgres
            .as_ref()
            .map(|shared| shared.replica().to_owned())
    }

    /// Whether anything is kept yet: always on PostgreSQL; the SQLite file once it exists.
    fn kept(&self) -> bool {
        self.shared.postgres.is_some() || self.shared.database.exists()
    }

    /// The error for an operation that is open on another replica, if `id` is one.
    fn elsewhere(&self, id: &str) -> Option<ManagerError> {
        self.shared.postgres.as_ref()?;
        let operation = self.status(id).ok()?;
        let replica = operation.replica.filter(|_| !operation.state.is_final())?;
        Some(ManagerError::Elsewhere {
            id: id.to_owned(),
            replica,
        })
    }

    pub(crate) fn host(&self) -> Option<Host> {
        self.shared.host.upgrade().map(|inner| Host { inner })
    }

    /// An operation, by id: this run's, else the database's.
    pub fn status(&self, id: &str) -> Result<Operation, ManagerError> {
        if let Some(operation) = self.update(id, |active| Some(active.operation.clone())) {
            return Ok(operation);
        }
        if let Some(operation) = lock(&self.shared.finished).iter().find(|o| o.id == id) {
            return Ok(operation.clone());
        }
        if !self.kept() {
            return Err(ManagerError::NotFound(id.to_owned()));
        }
        self.with_store(|store| store.get(id))?
            .ok_or_else(|| ManagerError::NotFound(id.to_owned()))
    }

    /// The newest operations first (at most `limit`), optionally in one state.
    pub fn list(&self, state: Option<State>, limit: usize) -> Result<Vec<Operation>, ManagerError> {
        let mut operations: Vec<Operation> = lock(&self.shared.active)
            .values()
            .map(|active| active.operation.clone())
            .collect();
        if self.kept() {
            let stored = self.with_store(|store| store.recent(limit.max(1) * 2 + 50))?;
            for operation in stored {
                if !operations.iter().any(|o| o.id == operation.id) {
                    operations.push(operation);
                }
            }
        }
        operations.retain(|o| state.is_none_or(|s| o.state == s));
        operations.sort_by(|a, b| b.id.cmp(&a.id));
        operations.truncate(limit);
        Ok(operations)
    }

    /// Cancels an operation: a queued one at once; a running one stops at its next step and
    /// undoes what it did (an install's directory, its processes, its config entry).
    pub fn cancel(&self, id: &str, reason: &str) -> Result<Operation, ManagerError> {
        let reason = if reason.trim().is_empty() {
            "no reason given".to_owned()
        } else {
            reason.trim().to_owned()
        };
        let state = self.update(id, |active| {
            active.cancel_reason.get_or_insert(reason.clone());
            active.cancel.cancel();
            let state = active.operation.state;
            if state == State::Queued {
                // Decided here, under the lock `run` takes to start it: it never starts.
                active.operation.state = State::Cancelled;
            }
            Some(state)
        });
        match state {
            Some(State::Queued) => {
                lock(&self.shared.queue).waiting.retain(|q| q.id != id);
                self.finish(id, 0.0, Err(work::WorkError::Cancelled));
            }
            Some(_) => {}
            None => {
                if let Some(elsewhere) = self.elsewhere(id) {
                    return Err(elsewhere);
                }
                let operation = self.status(id)?;
                return Err(ManagerError::Finished {
                    id: id.to_owned(),
                    state: operation.state.as_str(),
                });
            }
        }
        self.status(id)
    }

    /// Cancels every operation not over yet (the gateway is stopping) and waits a little
    /// for them to undo what they did; whatever is still running after that is marked
    /// failed at the next start.
    pub async fn shutdown(&self) {
        self.shared
            .stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.stop_work().await;
        // On PostgreSQL: what was saved goes out, and the heartbeat goes away (another
        // replica fails at once whatever is still open).
        if let Some(shared) = &self.shared.postgres
            && !shared.close(SHUTDOWN_WAIT).await
        {
            tracing::warn!("the last changes of operations did not reach PostgreSQL");
        }
    }

    async fn stop_work(&self) {
        let ids: Vec<String> = lock(&self.shared.active).keys().cloned().collect();
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            let _ = self.cancel(id, "the gateway is shutting down");
        }
        let mut changed = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_WAIT;
        while self.has_active_work() {
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                tracing::warn!("operations still running at shutdown are left to the next start");
                return;
            }
        }
    }

    /// Gives an operation that waits for input the values it asked for. Secret values are
    /// written to the gateway's secrets file at once and never kept with the operation.
    pub fn input(
        &self,
        id: &str,
        values: BTreeMap<String, String>,
    ) -> Result<Operation, ManagerError> {
        let sender = self.update(id, |active| {
            matches!(active.operation.waiting, Some(Waiting::Input { .. }))
                .then(|| active.inputs.clone())
                .flatten()
        });
        match sender {
            Some(sender) => {
                sender
                    .send(values)
                    .map_err(|_| ManagerError::NotWaiting(id.to_owned()))?;
                self.status(id)
            }
            None => {
                if let Some(elsewhere) = self.elsewhere(id) {
                    return Err(elsewhere);
                }
                self.status(id)?;
                Err(ManagerError::NotWaiting(id.to_owned()))
            }
        }
    }

    /// What happened since the last poll: progress, completions, failures, and "tools
    /// available" when a server was added.
    pub fn poll_messages(&self) -> Vec<Message> {
        lock(&self.shared.messages).drain(..).collect()
    }

    /// The energy the work consumed since this was last asked, per agent.
    pub fn energy_consumed_since_last(&self) -> Drain {
        self.shared.meter.drain()
    }

    /// Whether any operation is queued or running.
    pub fn has_active_work(&self) -> bool {
        !lock(&self.shared.active).is_empty()
    }

    /// The servers the manager installed.
    pub fn installed(&self) -> Result<Vec<Installed>, ManagerError> {
        if !self.kept() {
            return Ok(Vec::new());
        }
        Ok(self.with_store(|store| store.installs())?)
    }

    /// Waits until operation `id` is over (or `timeout` passes) and returns it as it is then;
    /// `on_change` sees each change on the way (for progress notifications).
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        on_change: impl FnMut(&Operation),
    ) -> Result<Operation, ManagerError> {
        self.wait_until(id, timeout, on_change, |operation| {
            operation.state.is_final()
        })
        .await
    }

    /// Like [`Manager::wait`], returning as soon as `done` holds of the operation.
    pub async fn wait_until(
        &self,
        id: &str,
        timeout: Duration,
        mut on_change: impl FnMut(&Operation),
        done: impl Fn(&Operation) -> bool,
    ) -> Result<Operation, ManagerError> {
        let mut changes = self.changes();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut operation = self.status_anywhere(id).await?;
        loop {
            on_change(&operation);
            if done(&operation) {
                return Ok(operation);
            }
            if !replicas::next_change(&mut changes, deadline).await {
                return self.status(id);
            }
            operation = self.status(id)?;
        }
    }
}

/// The operations database when none is configured: `operations.db` in the Switchboard data
/// directory (`$XDG_DATA_HOME/switchboard`, else `~/.local/share/switchboard`).
pub fn default_database_path() -> PathBuf {
    data_dir().join("operations.db")
}

/// Where installed servers live when `[manager] install_dir` is not set.
pub fn default_install_dir() -> PathBuf {
    data_dir().join("servers")
}

/// The data directory, else `./switchboard` when there is none.
fn data_dir() -> PathBuf {
    crate::data_dir::data_dir().unwrap_or_else(|| PathBuf::from(".").join("switchboard"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Host {
    /// The server manager of this Host.
    pub fn manager(&self) -> Option<Manager> {
        self.inner.manager.get().cloned()
    }
}
