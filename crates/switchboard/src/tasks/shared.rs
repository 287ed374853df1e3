//! The Host's tasks across replicas (`[shared] redis`, [`crate::shared::SharedTasks`]): the
//! replica that runs a task mirrors each change of it to Redis (its first state before the
//! client is told the task exists, so any replica finds it at once); a task this replica
//! does not hold is looked for there — `tasks/get`, `tasks/list`, `tasks/result` (which
//! waits for a [`SharedEvent::TaskChanged`] of the task, polling every [`POLL_EVERY`]
//! behind it, and meanwhile asks the task's questions over its own stream, sending the
//! answers to the owner), `tasks/cancel` (sent to the owner's channel, then awaited) and
//! `tasks/update` (the answers sent to the owner's channel). A task whose
//! replica is gone is answered `failed` by every replica (the read script marks it).
//!
//! Redis unreachable: `[shared] redis_unavailable` decides. `fail_open` keeps each replica's
//! own tasks working (a task it starts is served by it alone; a task of another replica is
//! unknown here); `fail_closed` refuses to start a task others could not see, and answers a
//! question about a task not held here with an error naming Redis.
//!
//! Must never: answer a caller about a task of another caller (the records are keyed by the
//! owner's digest), or let a request wait on an unreachable Redis without a bound.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use switchboard_core::CallContext;
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::task::{TaskEnd, TaskError, TaskOwner, TaskStatus, TaskView};
use tokio::sync::broadcast;

use super::mirror::{Mirrored, PendingChange};
use crate::Host;
use crate::shared::SharedEvent;
use crate::shared::tasks::{
    Found, OperatorTask, SharedTasks, TaskCommand, WriteError, owner_digest,
};
use crate::shared::tasks::{Record, RecordError};

/// How often a replica waiting on another's task reads it, whatever the bus says: the bound
/// on noticing that the replica running it is gone.
pub const POLL_EVERY: Duration = Duration::from_millis(250);
/// How long `tasks/cancel` through another replica waits for the owner to end the task.
pub const CANCEL_WAIT: Duration = Duration::from_secs(2);
/// How often a waiter reads a task whose owner was found unheard (it is failed once the
/// grace is over, or heard again).
const UNHEARD_POLL: Duration = Duration::from_millis(100);
/// How many of the deployment's tasks the operator's listing reads from Redis.
pub const OPERATOR_LISTED: usize = 500;

impl Host {
    fn shared_tasks(&self) -> Option<&Arc<SharedTasks>> {
        self.inner.options.shared_tasks.as_ref()
    }

    /// Mirrors this replica's tasks to Redis and follows the commands other replicas send
    /// about them, until the Host goes. Without `[shared] redis`, nothing.
    pub(crate) fn share_tasks(&self) {
        let Some(shared) = self.shared_tasks().cloned() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (sender, changes) = tokio::sync::mpsc::unbounded_channel::<Arc<PendingChange>>();
        self.inner.tasks.mirror_to(sender);
        let weak = Arc::downgrade(&self.inner);
        runtime.spawn(mirror(changes, shared.clone(), weak));
        let mut commands = shared.bus().task_commands();
        let weak = Arc::downgrade(&self.inner);
        runtime.spawn(async move {
            loop {
                let command = match commands.recv().await {
                    Ok(command) => command,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                let (TaskCommand::Cancel { task, owner }
                | TaskCommand::Fetched { task, owner }
                | TaskCommand::Answer { task, owner, .. }
                | TaskCommand::Reply { task, owner, .. }
                | TaskCommand::OperatorCancel { task, owner, .. }) = &command;
                let held = inner.tasks.get_any(task);
                let Some(task) = held.filter(|t| &owner_digest(&t.owner) == owner) else {
                    continue;
                };
                match command {
                    TaskCommand::Cancel { .. } => {
                        let _ = super::cancel(&task, "cancelled by the client".to_owned());
                    }
                    TaskCommand::OperatorCancel { by, .. } => {
                        let _ = super::cancel(&task, format!("cancelled by an operator ({by})"));
                    }
                    TaskCommand::Fetched { .. } => task.mark_fetched(),
                    TaskCommand::Answer { responses, .. } => task.answer(&responses),
                    TaskCommand::Reply { key, reply, .. } => {
                        let reply = reply.map_err(|error| switchboard_core::CallerError {
                            code: error.code,
                            message: error.message,
                            data: error.data,
                        });
                        task.reply_to(&key, reply);
                    }
                }
            }
        });
    }

    /// Writes a new task's first state where every replica finds it, before its client
    /// hears of it. Redis down: `fail_closed` refuses the task (the caller forgets it),
    /// `fail_open` keeps it to this replica.
    pub(super) async fn share_new_task(&self, task: &super::Task) -> Result<(), TaskError> {
        let Some(shared) = self.shared_tasks() else {
            return Ok(());
        };
        match task.mirror_now().await {
            Err(error) if shared.policy() == WhenUnreachable::FailClosed => Err(error),
            _ => Ok(()),
        }
    }

    /// The caller's task `id` from this replica, else from Redis (`with_result`: its result
    /// or error included).
    pub async fn find_task(
        &self,
        owner: &TaskOwner,
        id: &str,
        with_result: bool,
    ) -> Result<TaskView, TaskError> {
        let local = match with_result {
            true => self.task_status(owner, id),
            false => self.task_summary(owner, id),
        };
        match (local, self.shared_tasks()) {
            (Err(TaskError::UnknownTask(_)), Some(shared)) => {
                let Found {
                    mut view, replica, ..
                } = remote(shared, owner, id).await?;
                if with_result && view.status.is_terminal() {
                    shared.tell_fetched(&replica, owner, id);
                }
                if !with_result {
                    view.end = None;
                    view.input_requests.clear();
                }
                Ok(view)
            }
            (local, _) => local,
        }
    }

    /// Waits until the caller's task `id` ends, here or on another replica.
    pub async fn await_task(&self, ctx: &CallContext, id: &str) -> Result<TaskView, TaskError> {
        let local = self.task_result(ctx, id).await;
        let (Err(TaskError::UnknownTask(_)), Some(shared)) = (&local, self.shared_tasks()) else {
            return local;
        };
        let owner = TaskOwner::of(ctx);
        let mut events = shared.bus().subscribe();
        let mut relayed: HashSet<String> = HashSet::new();
        let mut answers = futures::stream::FuturesUnordered::new();
        loop {
            let Found {
                view,
                replica,
                unheard,
                ..
            } = remote(shared, &owner, id).await?;
            if view.status.is_terminal() {
                shared.tell_fetched(&replica, &owner, id);
                return Ok(view);
            }
            // The task's questions go to this request's caller when it can answer them, as
            // on the owner; the answers go to the owner.
            if let Some(channel) = &ctx.caller {
                for (key, request) in &view.input_requests {
                    let (method, params) = super::tagged(request, id);
                    if relayed.contains(key) || !channel.supports(&method) {
                        continue;
                    }
                    relayed.insert(key.clone());
                    let (channel, key) = (channel.clone(), key.clone());
                    answers.push(async move { (key, channel.request(&method, params).await) });
                }
            }
            tokio::select! {
                () = changed(&mut events, id) => {}
                () = tokio::time::sleep(if unheard { UNHEARD_POLL } else { POLL_EVERY }) => {}
                () = ctx.cancel.cancelled() => return Ok(view),
                Some((key, reply)) = futures::StreamExt::next(&mut answers) => {
                    let reply = reply.map_err(|error| RecordError {
                        code: error.code,
                        message: error.message,
                        data: error.data,
                    });
                    let reply = TaskCommand::Reply {
                        task: id.to_owned(),
                        owner: owner_digest(&owner),
                        key,
                        reply,
                    };
                    if let Err(why) = shared.send(&owner, id, &reply).await {
                        tracing::warn!(target: "switchboard::shared", "an answer to task {id}'s question did not reach its replica: {why}");
                    }
                }
            }
        }
    }

    /// Cancels the caller's task `id`, here or through the replica that runs it (then waits,
    /// at most [`CANCEL_WAIT`], for it to say the task ended).
    pub async fn cancel_any_task(
        &self,
        owner: &TaskOwner,
        id: &str,
    ) -> Result<TaskView, TaskError> {
        let local = self.cancel_task(owner, id);
        let (Err(TaskError::UnknownTask(_)), Some(shared)) = (&local, self.shared_tasks()) else {
            return local;
        };
        let events = shared.bus().subscribe();
        let found = match shared.cancel(owner, id).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err(TaskError::UnknownTask(id.to_owned())),
            Err(why) => return Err(unreachable(shared, id, &why)),
        };
        until_cancelled(shared, events, &owner_digest(owner), id, found).await
    }

    /// Every task of the deployment an operator may see (the console), newest first: this
    /// replica's, and with `[shared] redis` the others' (at most [`OPERATOR_LISTED`]); when
    /// Redis cannot be read, this replica's with why the others are missing.
    pub async fn operator_tasks_everywhere(&self) -> (Vec<OperatorTask>, Option<String>) {
        let mut tasks: Vec<OperatorTask> = self
            .operator_tasks()
            .into_iter()
            .map(|(owner, tool, view)| OperatorTask {
                owner,
                tool,
                view,
                replica: None,
            })
            .collect();
        let Some(shared) = self.shared_tasks() else {
            return (tasks, None);
        };
        let missing = match shared.all(OPERATOR_LISTED).await {
            Ok(others) => {
                let held: HashSet<String> = tasks.iter().map(|t| t.view.id.clone()).collect();
                tasks.extend(others.into_iter().filter(|t| !held.contains(&t.view.id)));
                None
            }
            Err(why) => Some(format!(
                "the other replicas' tasks cannot be read now ({why})"
            )),
        };
        for task in &mut tasks {
            task.view.end = None;
            task.view.input_requests.clear();
        }
        tasks.sort_by(|a, b| (b.view.created_at, &b.view.id).cmp(&(a.view.created_at, &a.view.id)));
        (tasks, missing)
    }

    /// An operator cancels task `id`, whoever started it and whichever replica runs it (then
    /// waits, at most [`CANCEL_WAIT`], for that replica to say it ended).
    pub async fn cancel_task_as_operator_anywhere(
        &self,
        id: &str,
        by: &str,
    ) -> Result<TaskView, TaskError> {
        let local = self.cancel_task_as_operator(id, by);
        let (Err(TaskError::UnknownTask(_)), Some(shared)) = (&local, self.shared_tasks()) else {
            return local;
        };
        let events = shared.bus().subscribe();
        let (digest, found) = match shared.cancel_as_operator(id, by).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err(TaskError::UnknownTask(id.to_owned())),
            Err(why) => return Err(unreachable(shared, id, &why)),
        };
        until_cancelled(shared, events, &digest, id, found).await
    }
}

/// Waits, at most [`CANCEL_WAIT`], until the replica asked to cancel task `id` (of the caller
/// whose digest is `digest`) says it is cancelled.
async fn until_cancelled(
    shared: &SharedTasks,
    mut events: broadcast::Receiver<SharedEvent>,
    digest: &str,
    id: &str,
    found: Found,
) -> Result<TaskView, TaskError> {
    if !found.asked && found.view.status.is_terminal() {
        return Err(ended(found.view));
    }
    if !found.asked {
        return Err(TaskError::Unavailable(format!(
            "replica {} runs task '{id}' but cannot hear the cancel now (it may be subscribing to Redis again); send it again",
            found.replica
        )));
    }
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let view = remote_of(shared, digest, id).await?.view;
        if view.status == TaskStatus::Cancelled {
            return Ok(TaskView { end: None, ..view });
        }
        if view.status.is_terminal() {
            return Err(ended(view));
        }
        tokio::select! {
            () = changed(&mut events, id) => {}
            () = tokio::time::sleep(POLL_EVERY) => {}
            () = tokio::time::sleep_until(deadline) => {
                return Err(TaskError::Unavailable(format!(
                    "replica {} was asked to cancel task '{id}' but did not end it within {} s",
                    found.replica,
                    CANCEL_WAIT.as_secs()
                )));
            }
        }
    }
}

impl Host {
    /// Hands the client's answers to the caller's task `id`, here or on the replica that
    /// runs it (2026-07-28 `tasks/update`).
    pub async fn update_any_task(
        &self,
        owner: &TaskOwner,
        id: &str,
        responses: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), TaskError> {
        let local = self.update_task(owner, id, &responses);
        let (Err(TaskError::UnknownTask(_)), Some(shared)) = (&local, self.shared_tasks()) else {
            return local;
        };
        let answer = TaskCommand::Answer {
            task: id.to_owned(),
            owner: owner_digest(owner),
            responses,
        };
        match shared.send(owner, id, &answer).await {
            Ok(Some(found)) if found.asked || found.view.status.is_terminal() => Ok(()),
            Ok(Some(found)) => Err(TaskError::Unavailable(format!(
                "replica {} runs task '{id}' but did not hear the answers; send them again",
                found.replica
            ))),
            Ok(None) => Err(TaskError::UnknownTask(id.to_owned())),
            Err(why) => Err(unreachable(shared, id, &why)),
        }
    }

    /// The caller's tasks on every replica, newest first.
    pub async fn list_all_tasks(&self, owner: &TaskOwner) -> Result<Vec<TaskView>, TaskError> {
        let mut tasks = self.list_tasks(owner);
        let Some(shared) = self.shared_tasks() else {
            return Ok(tasks);
        };
        match shared.list(owner).await {
            Ok(others) => {
                let held: HashSet<String> = tasks.iter().map(|task| task.id.clone()).collect();
                tasks.extend(others.into_iter().filter(|task| !held.contains(&task.id)));
                for task in &mut tasks {
                    task.end = None;
                    task.input_requests.clear();
                }
                tasks.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
                Ok(tasks)
            }
            Err(_) if shared.policy() == WhenUnreachable::FailOpen => Ok(tasks),
            Err(why) => Err(TaskError::Unavailable(format!(
                "the tasks of the other replicas cannot be listed now ({why}; shared.redis_unavailable = \"fail_closed\")"
            ))),
        }
    }
}

/// Passes on a task's change another replica announced to `tasks`' listeners.
pub(crate) fn relay_change(tasks: &super::TaskStore, event: &SharedEvent) {
    {
        let SharedEvent::TaskChanged {
            agent,
            session,
            subject,
            record,
            ..
        } = event
        else {
            return;
        };
        let Some(view) = serde_json::from_str::<Record>(record)
            .ok()
            .and_then(|record| record.view())
        else {
            return;
        };
        let owner = TaskOwner {
            agent: agent.clone(),
            session: session.clone(),
            subject: subject.clone(),
        };
        tasks.relay(owner, view);
    }
}

/// Writes the changes of this replica's tasks to Redis, in order, until the store goes: the
/// latest change of each task when its turn comes (changes made meanwhile are folded into
/// it, `PendingChange`), so a burst of progress messages costs a few writes, not one each. A
/// change Redis did not take is written again every [`POLL_EVERY`] until it does (or a newer
/// one of the task replaces it), so a task that ended during an outage is seen ended once
/// Redis is back. And when the event bus subscribes again (Redis restarted, or the
/// connection was lost), the latest state of every task still working here is written
/// again: a Redis that restarted empty has the records back at once, not at each task's
/// next change.
async fn mirror(
    mut changes: tokio::sync::mpsc::UnboundedReceiver<Arc<PendingChange>>,
    writer: Arc<SharedTasks>,
    host: std::sync::Weak<crate::host::Inner>,
) {
    // Tasks whose first state was written (a task the client never got, such as a relayed
    // call answered at once, is never written; nor is one whose first write failed: it stays
    // its replica's own), with their latest change.
    let mut admitted: HashMap<String, Change> = HashMap::new();
    // The latest change of each task that Redis did not take.
    let mut unwritten: HashMap<String, Change> = HashMap::new();
    let mut epoch = writer.bus().epoch();
    // One timer for the whole loop: a sleep made anew each turn would never end while
    // changes come faster than it, and the retries and the rewrite would wait for a lull.
    let mut poll = tokio::time::interval(POLL_EVERY);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
            _ = poll.tick() => {
                // Subscribed again (epochs count subscriptions from 1): rewrite them all.
                let now = writer.bus().epoch();
                if now > 1 && now != epoch {
                    for (id, change) in &admitted {
                        unwritten.entry(id.clone()).or_insert_with(|| change.clone());
                    }
                }
                if now != 0 {
                    epoch = now;
                }
                let retried: Vec<(String, Change)> = unwritten.drain().collect();
                let mut down = false;
                for (id, change) in retried {
                    if down || matches!(write(&writer, &host, &change).await, Err(WriteError::Unreachable(_))) {
                        // Still down: this and the rest wait for the next round.
                        down = true;
                        unwritten.insert(id, change);
                    }
                }
                continue;
            }
        };
        let Some(pending) = change else {
            return;
        };
        let Some(Mirrored {
            owner,
            tool,
            view,
            acks,
        }) = pending.take()
        else {
            continue;
        };
        let id = view.id.clone();
        if acks.is_empty() && !admitted.contains_key(&id) {
            continue;
        }
        let terminal = view.status.is_terminal();
        let change = (owner, tool, view);
        let written = write(&writer, &host, &change).await;
        unwritten.remove(&id);
        match &written {
            Ok(()) if !terminal => {
                admitted.insert(id.clone(), change);
            }
            Err(WriteError::Unreachable(_)) if admitted.contains_key(&id) => {
                admitted.insert(id.clone(), change.clone());
                unwritten.insert(id.clone(), change);
            }
            _ => {}
        }
        if terminal {
            admitted.remove(&id);
        }
        for ack in acks {
            let _ = ack.send(written.clone().map_err(|error| {
                TaskError::Unavailable(format!(
                    "the task cannot be shared with the other replicas now ({error})"
                ))
            }));
        }
    }
}

/// A task's change to write: its owner, tool and state.
type Change = (TaskOwner, String, TaskView);

/// Writes one change; when another replica already ended the task (it found this replica
/// gone), the task ends so here too — the same answer everywhere — and its call stops.
async fn write(
    writer: &SharedTasks,
    host: &std::sync::Weak<crate::host::Inner>,
    (owner, tool, view): &Change,
) -> Result<(), WriteError> {
    let id = &view.id;
    match writer.write(owner, tool, view).await {
        Err(WriteError::Ended) => {
            if let Some(task) = host.upgrade().and_then(|inner| inner.tasks.get_any(id)) {
                let why = format!(
                    "the replica that ran this task ({}) is gone",
                    writer.replica()
                );
                let end = TaskEnd::Failed {
                    code: -32603,
                    message: why.clone(),
                    data: None,
                };
                task.finish(Some(end), TaskStatus::Failed, Some(why));
                task.cancel.cancel();
            }
            Ok(())
        }
        other => other,
    }
}

/// The caller's task `id` as Redis has it (with the replica that runs it).
async fn remote(shared: &SharedTasks, owner: &TaskOwner, id: &str) -> Result<Found, TaskError> {
    remote_of(shared, &owner_digest(owner), id).await
}

/// [`remote`] for the caller whose digest is `digest`.
async fn remote_of(shared: &SharedTasks, digest: &str, id: &str) -> Result<Found, TaskError> {
    match shared.get_of(digest, id).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(TaskError::UnknownTask(id.to_owned())),
        Err(why) => Err(unreachable(shared, id, &why)),
    }
}

/// What a client is told about a task not held here while Redis does not answer.
fn unreachable(shared: &SharedTasks, id: &str, why: &str) -> TaskError {
    match shared.policy() {
        WhenUnreachable::FailOpen => TaskError::UnknownTask(id.to_owned()),
        WhenUnreachable::FailClosed => TaskError::Unavailable(format!(
            "task '{id}' is not on this replica and the other replicas' tasks cannot be read now ({why}; shared.redis_unavailable = \"fail_closed\")"
        )),
    }
}

fn ended(view: TaskView) -> TaskError {
    TaskError::Terminal(view.id, view.status.as_str())
}

/// Returns once the bus says task `id` changed (or may have: some events were missed).
async fn changed(events: &mut broadcast::Receiver<SharedEvent>, id: &str) {
    loop {
        match events.recv().await {
            Ok(SharedEvent::TaskChanged { task, .. }) if task == id => return,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}
