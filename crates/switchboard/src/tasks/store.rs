//! The tasks the gateway holds: one map from task id to task, each task owned by one caller
//! (`TaskOwner`), bounded per caller, per agent and in all (`bounds`), dropped when its TTL has passed. A task's state changes
//! under its own lock and is announced on a watch channel (for `tasks/result`, which waits)
//! and on the store's broadcast (for `notifications/tasks/status`).
//! Its bounds are in `settings`; a change on its way to the replicas' shared store, in `mirror`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use rand::Rng;
use serde_json::{Map, Value};
use switchboard_core::clock::Clock;
use switchboard_core::task::{TaskEnd, TaskError, TaskOwner, TaskStatus, TaskView};
use tokio::sync::{broadcast, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::mirror::{Mirror, Mirrored, PendingChange};
use super::settings::TaskSettings;
use crate::shared::limiter::COMMAND_TIMEOUT;

/// What the client answered a question: its result, or the error it answered.
pub type Reply = Result<Value, switchboard_core::CallerError>;

/// A question a running task waits on, and where its answer goes.
struct PendingInput {
    request: Value,
    reply: Option<oneshot::Sender<Reply>>,
}

/// Where a task's work is done when the gateway relays it: the server and the server's own id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamTask {
    pub server: switchboard_core::ServerId,
    pub id: String,
}

struct TaskState {
    status: TaskStatus,
    message: Option<String>,
    updated_at: SystemTime,
    end: Option<TaskEnd>,
    inputs: BTreeMap<String, PendingInput>,
    next_input: u64,
    /// The result was handed to the client at least once.
    fetched: bool,
}

/// One task.
pub struct Task {
    pub id: String,
    pub owner: TaskOwner,
    /// The tool's exposed name.
    pub tool: String,
    created_at: SystemTime,
    pub(super) created: Instant,
    ttl: Option<Duration>,
    poll_interval: Duration,
    /// Cancels the task's call.
    pub cancel: CancellationToken,
    /// Set when the task is relayed to a server that runs tasks itself.
    pub upstream: Option<UpstreamTask>,
    state: Mutex<TaskState>,
    changed: watch::Sender<u64>,
    events: broadcast::Sender<(TaskOwner, TaskView)>,
    mirror: Option<Mirror>,
    /// This task's change waiting for the mirror.
    pending: Arc<PendingChange>,
    /// The store's clock: its wall time stamps each change.
    clock: Arc<dyn Clock>,
}

impl Task {
    fn lock(&self) -> MutexGuard<'_, TaskState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The task as a front shows it.
    pub fn view(&self) -> TaskView {
        let state = self.lock();
        self.view_of(&state)
    }

    fn view_of(&self, state: &TaskState) -> TaskView {
        TaskView {
            end: state.end.clone(),
            input_requests: state
                .inputs
                .iter()
                .filter(|(_, input)| input.reply.is_some())
                .map(|(key, input)| (key.clone(), input.request.clone()))
                .collect(),
            ..self.summary_of(state)
        }
    }

    /// The task's fields without its result and questions.
    fn summary_of(&self, state: &TaskState) -> TaskView {
        TaskView {
            id: self.id.clone(),
            status: state.status,
            status_message: state.message.clone(),
            created_at: self.created_at,
            updated_at: state.updated_at,
            ttl: self.ttl,
            poll_interval: self.poll_interval,
            end: None,
            input_requests: Map::new(),
        }
    }

    /// Changes the status (never out of a terminal one) and announces it.
    pub fn set_status(&self, status: TaskStatus, message: Option<String>) {
        let mut state = self.lock();
        if state.status.is_terminal() || (state.status == status && state.message == message) {
            return;
        }
        state.status = status;
        state.message = message;
        self.announce(&mut state);
    }

    /// Ends the task, unless it already ended (cancelled first, say): whether it did.
    pub fn finish(
        &self,
        end: Option<TaskEnd>,
        status: TaskStatus,
        message: Option<String>,
    ) -> bool {
        let mut state = self.lock();
        if state.status.is_terminal() {
            return false;
        }
        state.status = status;
        state.message = message;
        state.end = end;
        state.inputs.clear();
        self.announce(&mut state);
        true
    }

    /// Stamps a change and announces it: to whoever waits on this task, and to the fronts
    /// (`notifications/tasks/status` carries the task's fields only, so the event leaves out
    /// the result and the questions rather than copy them).
    fn announce(&self, state: &mut TaskState) {
        state.updated_at = self.clock.wall();
        self.changed.send_modify(|version| *version += 1);
        if self.events.receiver_count() > 0 {
            let _ = self
                .events
                .send((self.owner.clone(), self.summary_of(state)));
        }
        self.mirror_state(state, None);
    }

    /// Hands the task's state to the mirror, if the store has one (`ack`: told how the
    /// write went; without a mirror, at once).
    fn mirror_state(&self, state: &TaskState, ack: Option<oneshot::Sender<Result<(), TaskError>>>) {
        let Some(mirror) = &self.mirror else {
            if let Some(ack) = ack {
                let _ = ack.send(Ok(()));
            }
            return;
        };
        let change = Mirrored {
            owner: self.owner.clone(),
            tool: self.tool.clone(),
            view: self.view_of(state),
            acks: ack.into_iter().collect(),
        };
        if self.pending.put(change) {
            let _ = mirror.send(self.pending.clone());
        }
    }

    /// Hands the task as it stands to the mirror and waits until it is written, at most
    /// [`COMMAND_TIMEOUT`] (the mirror may be busy with other tasks' writes): the other
    /// replicas can see it once this returns `Ok`.
    pub async fn mirror_now(&self) -> Result<(), TaskError> {
        let (ack, written) = oneshot::channel();
        {
            let state = self.lock();
            self.mirror_state(&state, Some(ack));
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, written).await {
            Ok(written) => written.unwrap_or(Ok(())),
            Err(_) => Err(TaskError::Unavailable(format!(
                "the task cannot be shared with the other replicas now (not written within {} ms)",
                COMMAND_TIMEOUT.as_millis()
            ))),
        }
    }

    /// A progress message of the task's call becomes its status message while it works.
    pub fn note_progress(&self, message: String) {
        let mut state = self.lock();
        if state.status == TaskStatus::Working && state.message.as_deref() != Some(&message) {
            state.message = Some(message);
            self.announce(&mut state);
        }
    }

    /// Parks a question for the client; the answer arrives through [`Task::answer`]. The task
    /// says `input_required` until every question is answered.
    pub fn ask(&self, request: Value) -> (String, oneshot::Receiver<Reply>) {
        let (reply, answer) = oneshot::channel();
        let mut state = self.lock();
        state.next_input += 1;
        let key = format!("input-{}", state.next_input);
        state.inputs.insert(
            key.clone(),
            PendingInput {
                request,
                reply: Some(reply),
            },
        );
        if !state.status.is_terminal() {
            state.status = TaskStatus::InputRequired;
            state.message = Some("waiting for the client's answer".to_owned());
            self.announce(&mut state);
        }
        (key, answer)
    }

    /// Delivers answers by key; unknown or already answered keys are ignored. The task goes
    /// back to `working` once nothing is left unanswered.
    pub fn answer(&self, responses: &Map<String, Value>) {
        let replies = responses
            .iter()
            .map(|(key, response)| (key.as_str(), Ok(response.clone())));
        self.reply(replies);
    }

    /// Delivers the client's answer to one question: a result, or the error it answered.
    pub fn reply_to(&self, key: &str, reply: Reply) {
        self.reply(std::iter::once((key, reply)));
    }

    fn reply<'k>(&self, replies: impl Iterator<Item = (&'k str, Reply)>) {
        let mut state = self.lock();
        let mut delivered = false;
        for (key, reply) in replies {
            if let Some(sender) = state
                .inputs
                .get_mut(key)
                .and_then(|input| input.reply.take())
            {
                let _ = sender.send(reply);
                delivered = true;
            }
        }
        state.inputs.retain(|_, input| input.reply.is_some());
        if delivered && state.inputs.is_empty() && state.status == TaskStatus::InputRequired {
            state.status = TaskStatus::Working;
            state.message = None;
            self.announce(&mut state);
        }
    }

    /// Forgets a question nobody will answer any more (its asker gave up).
    pub fn withdraw(&self, key: &str) {
        let mut state = self.lock();
        if state.inputs.remove(key).is_some()
            && state.inputs.is_empty()
            && state.status == TaskStatus::InputRequired
        {
            state.status = TaskStatus::Working;
            state.message = None;
            self.announce(&mut state);
        }
    }

    /// The questions not yet answered, with their keys.
    pub fn open_questions(&self) -> Vec<(String, Value)> {
        self.lock()
            .inputs
            .iter()
            .filter(|(_, input)| input.reply.is_some())
            .map(|(key, input)| (key.clone(), input.request.clone()))
            .collect()
    }

    /// Waits for the next change of the task.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Notes that the client has the result.
    pub fn mark_fetched(&self) {
        self.lock().fetched = true;
    }

    fn expired(&self, now: Instant) -> bool {
        self.ttl
            .is_some_and(|ttl| now.saturating_duration_since(self.created) >= ttl)
    }

    /// Whether the task can make room for a new one: it ended and its client has what it
    /// needs of it (the result fetched, or the task cancelled).
    pub(super) fn evictable(&self) -> bool {
        let state = self.lock();
        state.status.is_terminal() && (state.fetched || state.status == TaskStatus::Cancelled)
    }

    /// The task without its result and questions (a listing, a notification).
    pub fn summary(&self) -> TaskView {
        let state = self.lock();
        self.summary_of(&state)
    }

    /// The TTL the task was given.
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }
}

/// Every task the gateway holds.
pub struct TaskStore {
    tasks: Mutex<HashMap<String, Arc<Task>>>,
    settings: TaskSettings,
    clock: Arc<dyn Clock>,
    events: broadcast::Sender<(TaskOwner, TaskView)>,
    last_sweep: Mutex<Instant>,
    mirror: Mutex<Option<Mirror>>,
}

impl TaskStore {
    pub fn new(settings: TaskSettings, clock: Arc<dyn Clock>) -> Self {
        let (events, _) = broadcast::channel(1024);
        let now = clock.now();
        Self {
            tasks: Mutex::default(),
            settings,
            clock,
            events,
            last_sweep: Mutex::new(now),
            mirror: Mutex::new(None),
        }
    }

    /// From now on, every change of the tasks made here goes to `mirror` too.
    pub fn mirror_to(&self, mirror: Mirror) {
        *self
            .mirror
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(mirror);
    }

    /// Passes on a change of a task another replica runs to this store's listeners (the
    /// fronts' `notifications/tasks/status`).
    pub fn relay(&self, owner: TaskOwner, view: TaskView) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send((owner, view));
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Task>>> {
        self.tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The settings the store was made with.
    pub fn settings(&self) -> &TaskSettings {
        &self.settings
    }

    /// Every status change of every task, with its owner (fronts keep their own callers').
    pub fn events(&self) -> broadcast::Receiver<(TaskOwner, TaskView)> {
        self.events.subscribe()
    }

    /// Makes a task in state `working` for `owner`, with the TTL asked for (bounded by the
    /// settings). Refused when the owner holds as many tasks as it may and none of them can
    /// make room.
    pub fn create(
        &self,
        owner: TaskOwner,
        tool: &str,
        ttl: Option<Duration>,
        upstream: Option<UpstreamTask>,
    ) -> Result<Arc<Task>, TaskError> {
        self.sweep();
        // At least a second, so a client's `ttl: 0` cannot lose the result before it polls.
        let ttl = Some(
            ttl.unwrap_or(self.settings.default_ttl)
                .clamp(MIN_TTL, self.settings.max_ttl.max(MIN_TTL)),
        );
        let id = new_task_id();
        let now = self.clock.wall();
        let task = Arc::new(Task {
            id: id.clone(),
            owner,
            tool: tool.to_owned(),
            created_at: now,
            created: self.clock.now(),
            ttl,
            poll_interval: self.settings.poll_interval,
            cancel: CancellationToken::new(),
            upstream,
            state: Mutex::new(TaskState {
                status: TaskStatus::Working,
                message: None,
                updated_at: now,
                end: None,
                inputs: BTreeMap::new(),
                next_input: 0,
                fetched: false,
            }),
            changed: watch::channel(0).0,
            events: self.events.clone(),
            mirror: self
                .mirror
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
            pending: Arc::default(),
            clock: self.clock.clone(),
        });
        let mut tasks = self.map();
        super::bounds::make_room(&mut tasks, &task.owner, &self.settings)?;
        tasks.insert(id, task.clone());
        Ok(task)
    }

    /// The owner's task with this id; the same `None` for a task of someone else.
    pub fn get(&self, owner: &TaskOwner, id: &str) -> Option<Arc<Task>> {
        self.get_any(id).filter(|task| &task.owner == owner)
    }

    /// The task with this id, whoever owns it: for an operator.
    pub fn get_any(&self, id: &str) -> Option<Arc<Task>> {
        self.sweep();
        self.map().get(id).cloned()
    }

    /// The owner's tasks, newest first.
    pub fn list(&self, owner: &TaskOwner) -> Vec<Arc<Task>> {
        self.sweep();
        let mut tasks: Vec<Arc<Task>> = self
            .map()
            .values()
            .filter(|task| &task.owner == owner)
            .cloned()
            .collect();
        tasks.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
        tasks
    }

    /// Every task, newest first: the operator's view (the console).
    pub fn all(&self) -> Vec<Arc<Task>> {
        self.sweep();
        let mut tasks: Vec<Arc<Task>> = self.map().values().cloned().collect();
        tasks.sort_by(|a, b| b.created.cmp(&a.created).then(b.id.cmp(&a.id)));
        tasks
    }

    /// Forgets a task (one that never became the client's: its call answered at once).
    pub fn remove(&self, id: &str) {
        self.map().remove(id);
    }

    /// How many tasks the store holds.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether the store holds no task.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the tasks whose TTL has passed (cancelling those still running), at most once a
    /// second.
    pub fn sweep(&self) {
        let now = self.clock.now();
        {
            let mut last = self
                .last_sweep
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if now.saturating_duration_since(*last) < Duration::from_secs(1) {
                return;
            }
            *last = now;
        }
        self.drop_where(|task| task.expired(now), "its TTL passed");
    }

    /// Cancels and forgets the tasks of a session that ended (an HTTP session deleted, a
    /// stdio connection closed): nobody can reach them any more.
    pub fn close_session(&self, session: &str) {
        self.drop_where(
            |task| task.owner.session.as_deref() == Some(session),
            "its session ended",
        );
    }

    /// Cancels and forgets the tasks of a session another replica ended, known by the
    /// SHA-256 (hex) of its id (`SharedEvent::SessionEnded`).
    pub fn close_session_digest(&self, digest: &str) {
        use sha2::Digest;
        self.drop_where(
            |task| {
                task.owner.session.as_deref().is_some_and(|id| {
                    switchboard_core::hex::encode(&sha2::Sha256::digest(id.as_bytes())) == digest
                })
            },
            "its session ended",
        );
    }

    /// Forgets the tasks `doomed` picks; those still running are cancelled, saying `why`,
    /// which wakes whoever waits on them.
    fn drop_where(&self, doomed: impl Fn(&Task) -> bool, why: &str) {
        let dropped: Vec<Arc<Task>> = {
            let mut tasks = self.map();
            let ids: Vec<String> = tasks
                .values()
                .filter(|task| doomed(task))
                .map(|task| task.id.clone())
                .collect();
            ids.iter().filter_map(|id| tasks.remove(id)).collect()
        };
        for task in dropped {
            task.cancel.cancel();
            task.finish(None, TaskStatus::Cancelled, Some(why.to_owned()));
        }
    }

    /// Cancels every task still running (the gateway is stopping) and waits, at most
    /// `limit`, for their calls to end — so each is recorded in the ledger as cancelled.
    pub async fn cancel_all(&self, limit: Duration) {
        let running: Vec<Arc<Task>> = self
            .map()
            .values()
            .filter(|task| !task.summary().status.is_terminal())
            .cloned()
            .collect();
        for task in &running {
            task.cancel.cancel();
        }
        let ended = async {
            for task in &running {
                let mut changes = task.watch();
                while !task.lock().status.is_terminal() {
                    if changes.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(limit, ended).await;
    }
}

/// The shortest TTL a task gets.
const MIN_TTL: Duration = Duration::from_secs(1);

/// 128 random bits, hex: unguessable, so an id is no handle for anyone who was not told it.
fn new_task_id() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
