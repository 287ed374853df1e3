//! [`SharedTasks`]: the MCP tasks of every replica, readable by all of them through Redis, so
//! that a client behind a load balancer may ask any replica about a task another one runs.
//!
//! The replica that runs a task (its owner) writes the task's record at creation and at
//! every change of its status: `switchboard:{deployment}:task:<owner digest>:<task id>`, a
//! hash of `status`, `replica` (the owner's name on the event bus) and `record` (the task as
//! JSON: status, message, timestamps, TTL, poll interval, and once it ended its result or
//! error), expiring with the task's TTL. The owner digest is the SHA-256 of the caller
//! (agent, session, subject: `TaskOwner`), so a caller only ever finds its own tasks — as
//! strict as the owner check of the task store. `tasks/list` reads the caller's sorted set
//! `…:tasks:<owner digest>` (task ids by creation time): nothing is scanned.
//!
//! A record never moves out of a terminal status (the write script refuses), and every read
//! checks that the owner of a task still working lives — its heartbeat key is there and its
//! channel has a subscriber (a killed process loses its subscription at once) — and if not
//! marks the task `failed` in the same script, saying the replica that ran it is gone: every
//! replica then answers the same. An owner with a heartbeat but no subscriber may be
//! subscribing again (its connection was lost, Redis restarted): its task is failed only
//! once reads have found it so for [`RESUBSCRIBE_GRACE`] on the Redis clock (the grace the
//! answers routed to a replica get), and answered as it stands meanwhile. An owner with no
//! heartbeat at all gets [`UNBEATEN_GRACE`] the same way: a Redis restart or failover loses
//! every heartbeat key while the replicas live, and the owner's next beat finds its tasks
//! still working. The owner's write renews its heartbeat too, so a record written just after
//! a restart does not make it look gone. `tasks/cancel` on another replica is published to the
//! owner's own channel ([`TaskCommand`]), in the script that checks it lives.
//!
//! Each write also publishes [`SharedEvent::TaskChanged`] on the event bus (the task's fields
//! without its result), which wakes the replicas that wait on it and feeds their clients'
//! `notifications/tasks/status`.
//!
//! Commands are bounded (`shared::bounded`); what an outage means is the caller's choice
//! (`[shared] redis_unavailable`, see `crate::tasks::shared`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use switchboard_core::limits::WhenUnreachable;
use switchboard_core::task::{TaskEnd, TaskOwner, TaskStatus, TaskView};

use super::bounded::Bounded;
use super::events::{EventBus, HEARTBEAT_EVERY, HEARTBEAT_LIFE, RESUBSCRIBE_GRACE, SharedEvent};
use super::limiter::SharedError;

/// How long reads give an owner with no heartbeat before they fail its tasks: its key may
/// have been lost (a Redis restart or failover, an eviction) while it lives, and its next
/// beat — one [`HEARTBEAT_EVERY`] while its subscription held, the first of a new one within
/// [`RESUBSCRIBE_GRACE`] — comes within this. A machine gone silent has no heartbeat
/// [`HEARTBEAT_LIFE`] after its last beat, and its tasks fail this much later.
pub const UNBEATEN_GRACE: Duration = HEARTBEAT_EVERY.saturating_add(RESUBSCRIBE_GRACE);

/// A command to the replica that runs a task, sent on its own channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "task_command", rename_all = "snake_case")]
pub enum TaskCommand {
    /// The task's client cancelled it through another replica. `owner`: the digest of the
    /// task's owner, which the owner replica checks against the task it holds.
    Cancel { task: String, owner: String },
    /// The task's client fetched its result through another replica: the owner may let it
    /// make room for a new task, as if fetched there.
    Fetched { task: String, owner: String },
    /// The task's client answered its questions through another replica (2026-07-28
    /// `tasks/update`): the answers, by question key.
    Answer {
        task: String,
        owner: String,
        responses: Map<String, Value>,
    },
    /// The task's client answered one question relayed by another replica (a 2025-11-25
    /// `tasks/result` there): its result, or the error it answered.
    Reply {
        task: String,
        owner: String,
        key: String,
        reply: Result<Value, RecordError>,
    },
    /// An operator cancelled the task through another replica's console (`by`: who).
    OperatorCancel {
        task: String,
        owner: String,
        by: String,
    },
}

/// A task as the replicas share it (the JSON of its record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub tool: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    pub poll_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordError>,
    /// The questions waiting for the client's answer, by key (`input_required`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_requests: Map<String, Value>,
}

/// The most a task's record may hold in Redis: a larger result is kept by its replica alone,
/// and the record says so ([`too_large_result`]).
pub const MAX_SHARED_RECORD: usize = 4 * 1024 * 1024;

/// What other replicas read for a result over [`MAX_SHARED_RECORD`]: a tool error saying
/// where the result is.
fn too_large_result(bytes: usize, replica: &str) -> Value {
    serde_json::json!({
        "content": [{"type": "text", "text": format!(
            "the task's result ({bytes} bytes) is larger than the {} MiB replicas share: the replica that ran it ({replica}) holds it",
            MAX_SHARED_RECORD / (1024 * 1024)
        )}],
        "isError": true,
    })
}

/// How a task failed, as its record keeps it (and an error a client answered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// What a read found: the task, and whether its owner was sent a command.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub view: TaskView,
    /// The replica that ran it.
    pub replica: String,
    /// A cancel was delivered to the owner (only [`SharedTasks::cancel`] sets it).
    pub asked: bool,
    /// Its owner is not found alive (a heartbeat but no subscription, or no heartbeat):
    /// subscribing again, its heartbeat lost with Redis, or dead — the task is failed once
    /// that lasted the grace, so a waiter reads it again soon.
    pub unheard: bool,
}

/// How a task's record and its wire types are written and read.
impl Record {
    /// The record of `view` (its result included when it has one).
    pub fn of(tool: &str, view: &TaskView) -> Self {
        let (result, error) = match &view.end {
            Some(TaskEnd::Completed(result)) => (Some(result.clone()), None),
            Some(TaskEnd::Failed {
                code,
                message,
                data,
            }) => (
                None,
                Some(RecordError {
                    code: *code,
                    message: message.clone(),
                    data: data.clone(),
                }),
            ),
            None => (None, None),
        };
        Self {
            id: view.id.clone(),
            tool: tool.to_owned(),
            status: view.status.as_str().to_owned(),
            message: view.status_message.clone(),
            created_ms: millis(view.created_at),
            updated_ms: millis(view.updated_at),
            ttl_ms: view.ttl.map(duration_ms),
            poll_ms: duration_ms(view.poll_interval),
            result,
            error,
            input_requests: view.input_requests.clone(),
        }
    }

    /// The task as a front shows it; `None` for a status this version does not know.
    pub fn view(&self) -> Option<TaskView> {
        let end = match (&self.result, &self.error) {
            (Some(result), _) => Some(TaskEnd::Completed(result.clone())),
            (None, Some(error)) => Some(TaskEnd::Failed {
                code: error.code,
                message: error.message.clone(),
                data: error.data.clone(),
            }),
            (None, None) => None,
        };
        Some(TaskView {
            id: self.id.clone(),
            status: status_of(&self.status)?,
            status_message: self.message.clone(),
            created_at: UNIX_EPOCH + Duration::from_millis(self.created_ms),
            updated_at: UNIX_EPOCH + Duration::from_millis(self.updated_ms),
            ttl: self.ttl_ms.map(Duration::from_millis),
            poll_interval: Duration::from_millis(self.poll_ms),
            end,
            input_requests: self.input_requests.clone(),
        })
    }
}

/// The status a record spells.
pub fn status_of(status: &str) -> Option<TaskStatus> {
    Some(match status {
        "working" => TaskStatus::Working,
        "input_required" => TaskStatus::InputRequired,
        "completed" => TaskStatus::Completed,
        "failed" => TaskStatus::Failed,
        "cancelled" => TaskStatus::Cancelled,
        _ => return None,
    })
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, duration_ms)
}

/// Adds the liveness check's arguments (`scripts::READ_FN`'s `grace`, `unbeaten` and
/// `stale`) to a script's invocation.
fn liveness(invocation: &mut redis::ScriptInvocation<'_>) {
    invocation
        .arg(duration_ms(RESUBSCRIBE_GRACE))
        .arg(duration_ms(UNBEATEN_GRACE))
        .arg(duration_ms(HEARTBEAT_LIFE));
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The digest that keys a caller's tasks: SHA-256 (hex) of its agent, session and subject.
pub fn owner_digest(owner: &TaskOwner) -> String {
    let mut hasher = Sha256::new();
    for part in [&owner.agent, &owner.session, &owner.subject] {
        match part {
            Some(value) => {
                hasher.update([1]);
                hasher.update(u64::try_from(value.len()).unwrap_or(u64::MAX).to_be_bytes());
                hasher.update(value.as_bytes());
            }
            None => hasher.update([0]),
        }
    }
    switchboard_core::hex::encode(&hasher.finalize())
}

/// The tasks of a deployment's replicas in Redis. Cheap to share (`Arc`).
pub struct SharedTasks {
    redis: std::sync::Arc<Bounded>,
    policy: WhenUnreachable,
    bus: EventBus,
    /// `switchboard:{deployment}:`.
    prefix: String,
    read: redis::Script,
    list: redis::Script,
    send: redis::Script,
    write: redis::Script,
    all: redis::Script,
}

impl std::fmt::Debug for SharedTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTasks")
            .field("target", &self.redis.target())
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Why the owner's write was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Another replica ended the task first (it found this replica gone).
    #[error("the task already ended in redis")]
    Ended,
    /// Redis did not answer (why).
    #[error("{0}")]
    Unreachable(String),
}

impl SharedTasks {
    /// Tasks in the Redis at `url`, keys namespaced by `deployment`; `bus` names this replica
    /// and carries the events. Connects lazily; needs a tokio runtime.
    pub fn connect(
        url: &str,
        deployment: &str,
        policy: WhenUnreachable,
        bus: EventBus,
    ) -> Result<Self, SharedError> {
        let script = |body: &str| redis::Script::new(&format!("{READ_FN}\n{body}"));
        Ok(Self {
            redis: std::sync::Arc::new(Bounded::connect(
                url,
                "tasks",
                "tasks of other replicas cannot be reached (shared.redis_unavailable decides what their clients are told)".to_owned(),
            )?),
            policy,
            bus,
            prefix: format!("switchboard:{{{deployment}}}:"),
            read: script(READ),
            list: script(LIST),
            send: script(SEND),
            all: script(operator::ALL),
            write: redis::Script::new(WRITE),
        })
    }

    /// What a client is told while Redis does not answer (`[shared] redis_unavailable`).
    pub fn policy(&self) -> WhenUnreachable {
        self.policy
    }

    /// This replica's name on the bus.
    pub fn replica(&self) -> &str {
        use switchboard_mcp::front::http::AnswerRoutes;
        self.bus.replica()
    }

    /// The event bus (for waiting on [`SharedEvent::TaskChanged`]).
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    fn owner_prefix(&self, digest: &str) -> String {
        format!("{}task:{digest}:", self.prefix)
    }

    fn set_key(&self, digest: &str) -> String {
        format!("{}tasks:{digest}", self.prefix)
    }

    /// The deployment's set of every task (`<digest>:<id>` by creation), for the operator.
    fn all_key(&self) -> String {
        format!("{}tasks-all", self.prefix)
    }

    /// The key that names the caller (its digest) of task `id`, for the operator.
    fn id_key(&self, id: &str) -> String {
        format!("{}task-of:{id}", self.prefix)
    }

    /// Writes the owner's task (`view`, with its result once it ended), unless it already
    /// ended in Redis; tells the other replicas it changed. A task whose TTL has passed is
    /// not written.
    pub async fn write(
        &self,
        owner: &TaskOwner,
        tool: &str,
        view: &TaskView,
    ) -> Result<(), WriteError> {
        let digest = owner_digest(owner);
        let record = Record::of(tool, view);
        let life = match view.ttl {
            Some(ttl) => {
                let lived = SystemTime::now()
                    .duration_since(view.created_at)
                    .unwrap_or_default();
                match ttl.checked_sub(lived) {
                    Some(left) if !left.is_zero() => duration_ms(left).max(1),
                    _ => return Ok(()),
                }
            }
            None => duration_ms(switchboard_core::task::TASK_CALL_LIMIT),
        };
        let mut json =
            serde_json::to_string(&record).map_err(|e| WriteError::Unreachable(e.to_string()))?;
        if json.len() > MAX_SHARED_RECORD {
            // Over what replicas share: the others read that it ended, and why its result is
            // not here; the replica that ran it still has the result whole.
            let kept = Record {
                result: record
                    .result
                    .as_ref()
                    .map(|_| too_large_result(json.len(), self.replica())),
                input_requests: Map::new(),
                ..record.clone()
            };
            json =
                serde_json::to_string(&kept).map_err(|e| WriteError::Unreachable(e.to_string()))?;
        }
        let summary = Record {
            result: None,
            error: None,
            input_requests: Map::new(),
            ..record.clone()
        };
        let event = SharedEvent::TaskChanged {
            task: view.id.clone(),
            agent: owner.agent.clone(),
            session: owner.session.clone(),
            subject: owner.subject.clone(),
            record: serde_json::to_string(&summary).unwrap_or_default(),
        };
        let payload = self.bus.payload(event).unwrap_or_default();
        let mut invocation = self.write.prepare_invoke();
        invocation
            .key(format!("{}{}", self.owner_prefix(&digest), view.id))
            .key(self.set_key(&digest))
            .key(format!("{}alive:{}", self.prefix, self.replica()))
            .key(self.all_key())
            .key(self.id_key(&view.id))
            .arg(&record.status)
            .arg(self.replica())
            .arg(json)
            .arg(life)
            .arg(record.created_ms)
            .arg(&view.id)
            .arg(self.bus.channel())
            .arg(payload)
            .arg(life)
            .arg(duration_ms(HEARTBEAT_LIFE))
            .arg(serde_json::to_string(&Caller::of(owner)).unwrap_or_default())
            .arg(&digest)
            .arg(operator::KEPT);
        let written: i64 = self
            .redis
            .invoke(invocation)
            .await
            .map_err(WriteError::Unreachable)?;
        if written == 0 {
            return Err(WriteError::Ended);
        }
        Ok(())
    }

    /// The caller's task `id` as Redis has it (`None`: no such task of this caller), marked
    /// failed first when the replica that ran it is gone.
    pub async fn get(&self, owner: &TaskOwner, id: &str) -> Result<Option<Found>, String> {
        self.get_of(&owner_digest(owner), id).await
    }

    /// [`SharedTasks::get`] of the caller whose digest is `digest`.
    pub(crate) async fn get_of(&self, digest: &str, id: &str) -> Result<Option<Found>, String> {
        let mut invocation = self.read.prepare_invoke();
        invocation
            .key(format!("{}{id}", self.owner_prefix(digest)))
            .arg(&self.prefix);
        liveness(&mut invocation);
        let found: Option<Fields> = self.redis.invoke(invocation).await?;
        Ok(found.and_then(Fields::found))
    }

    /// The caller's tasks in Redis, newest first.
    pub async fn list(&self, owner: &TaskOwner) -> Result<Vec<TaskView>, String> {
        let digest = owner_digest(owner);
        let owner_prefix = self.owner_prefix(&digest);
        let mut invocation = self.list.prepare_invoke();
        invocation
            .key(self.set_key(&digest))
            .arg(&self.prefix)
            .arg(&owner_prefix);
        liveness(&mut invocation);
        let found: Vec<Fields> = self.redis.invoke(invocation).await?;
        Ok(found
            .into_iter()
            .filter_map(|fields| fields.found().map(|found| found.view))
            .collect())
    }

    /// Asks the replica that runs the caller's task `id` to cancel it: the task as it stood
    /// (`None`: no such task), with [`Found::asked`] set when its owner heard the command.
    pub async fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<Option<Found>, String> {
        let command = TaskCommand::Cancel {
            task: id.to_owned(),
            owner: owner_digest(owner),
        };
        self.send(owner, id, &command).await
    }

    /// Sends `command` to the owner of the caller's task `id` if it lives and the task works
    /// (a [`TaskCommand`] whose `owner` is [`owner_digest`] of `owner`): the task as it stood
    /// (`None`: no such task), with [`Found::asked`] set when its owner heard the command.
    pub async fn send(
        &self,
        owner: &TaskOwner,
        id: &str,
        command: &TaskCommand,
    ) -> Result<Option<Found>, String> {
        self.send_to(&owner_digest(owner), id, command).await
    }

    /// [`SharedTasks::send`] to the task of the caller whose digest is `digest`.
    pub(crate) async fn send_to(
        &self,
        digest: &str,
        id: &str,
        command: &TaskCommand,
    ) -> Result<Option<Found>, String> {
        let command = serde_json::to_string(command).map_err(|error| error.to_string())?;
        let mut invocation = self.send.prepare_invoke();
        invocation
            .key(format!("{}{id}", self.owner_prefix(digest)))
            .arg(&self.prefix)
            .arg(command);
        liveness(&mut invocation);
        let found: Option<Fields> = self.redis.invoke(invocation).await?;
        Ok(found.and_then(Fields::found))
    }
}

impl SharedTasks {
    /// Tells `replica` (the owner of the caller's task `id`) that its client has the result;
    /// in the background, at most once (a lost note only keeps the task until its TTL).
    pub fn tell_fetched(&self, replica: &str, owner: &TaskOwner, id: &str) {
        let command = TaskCommand::Fetched {
            task: id.to_owned(),
            owner: owner_digest(owner),
        };
        let Ok(payload) = serde_json::to_string(&command) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut command = redis::cmd("PUBLISH");
        command
            .arg(format!("{}replica:{replica}", self.prefix))
            .arg(payload);
        let redis = self.redis.clone();
        runtime.spawn(async move {
            let _ = redis.query::<i64>(command).await;
        });
    }
}

/// A record as the scripts return it: status, record JSON, why its owner is gone and since
/// when (ms), the owner, and what the script did (`asked`, `ended`, `unheard`).
/// The operator's listing adds the caller (JSON of `operator::Caller`).
struct Fields {
    status: String,
    record: String,
    gone: Option<String>,
    gone_ms: Option<u64>,
    replica: String,
    state: String,
    caller: Option<String>,
}

impl redis::FromRedisValue for Fields {
    fn from_redis_value(value: redis::Value) -> Result<Self, redis::ParsingError> {
        let mut items: Vec<redis::Value> = redis::FromRedisValue::from_redis_value(value)?;
        let caller = match items.len() {
            7 => items
                .pop()
                .map(Option::<String>::from_redis_value)
                .transpose()?
                .flatten(),
            _ => None,
        };
        let (status, record, gone, gone_ms, replica, state): (
            String,
            String,
            Option<String>,
            Option<String>,
            String,
            String,
        ) = redis::FromRedisValue::from_redis_value(redis::Value::Array(items))?;
        Ok(Self {
            status,
            record,
            gone,
            gone_ms: gone_ms.and_then(|ms| ms.parse().ok()),
            replica,
            state,
            caller,
        })
    }
}

impl Fields {
    fn found(self) -> Option<Found> {
        let record: Record = serde_json::from_str(&self.record).ok()?;
        let mut view = record.view()?;
        view.status = status_of(&self.status)?;
        if let Some(why) = self.gone {
            view.status_message = Some(why.clone());
            view.end = Some(TaskEnd::Failed {
                code: -32603,
                message: why,
                data: None,
            });
            if let Some(ms) = self.gone_ms {
                view.updated_at = UNIX_EPOCH + Duration::from_millis(ms);
            }
        }
        Some(Found {
            view,
            replica: self.replica,
            asked: self.state == "asked",
            unheard: self.state == "waiting",
        })
    }
}

mod operator;
mod scripts;
pub use operator::{Caller, OperatorTask};
use scripts::{LIST, READ, READ_FN, SEND, WRITE};

#[cfg(test)]
mod tests;
