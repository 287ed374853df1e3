//! What the operator (the console) sees of the deployment's tasks: every replica's, not only
//! the tasks of the replica it asks. Each owner's write also puts the task in the deployment's
//! sorted set `…:tasks-all` (`<caller digest>:<task id>` by creation, expiring like the
//! callers' sets, the newest [`KEPT`] kept) and names its caller under `…:task-of:<task id>` (expiring with the task),
//! and keeps the caller's names (agent, session, subject: what the events already carry) in
//! the record. [`SharedTasks::all`] reads the newest records through the same liveness check
//! as every read; [`SharedTasks::cancel_as_operator`] sends the owner
//! [`TaskCommand::OperatorCancel`] on its channel, as a client's cancel is sent.
//!
//! Must never: let a client reach this (only the admin side calls it), or `SCAN`/`KEYS`.

use serde::{Deserialize, Serialize};
use switchboard_core::task::{TaskOwner, TaskView};

use super::{Fields, Found, Record, SharedTasks, TaskCommand, liveness};

/// How many of the deployment's newest tasks its set keeps (the write trims the rest): a
/// bound on what a deployment that never opens the console holds for it.
pub const KEPT: usize = 10_000;

/// `KEYS[1]` the deployment's set; `ARGV[1]` the prefix, `ARGV[2]` to `ARGV[4]` as `READ`'s,
/// `ARGV[5]` how many. The newest records with their caller appended; entries whose record
/// expired leave the set.
pub(super) const ALL: &str = r"
local out = {}
for _, member in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[5]) - 1)) do
  local key = ARGV[1] .. 'task:' .. member
  local found = read(key, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]))
  if found then
    found[7] = redis.call('HGET', key, 'owner') or false
    out[#out + 1] = found
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return out
";

/// The caller of a task as the record keeps it for the operator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Caller {
    pub fn of(owner: &TaskOwner) -> Self {
        Self {
            agent: owner.agent.clone(),
            session: owner.session.clone(),
            subject: owner.subject.clone(),
        }
    }

    fn owner(self) -> TaskOwner {
        TaskOwner {
            agent: self.agent,
            session: self.session,
            subject: self.subject,
        }
    }
}

/// A task as the operator sees it: its caller, tool, state and the replica that runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorTask {
    pub owner: TaskOwner,
    pub tool: String,
    pub view: TaskView,
    /// The replica that runs it (`None`: this one).
    pub replica: Option<String>,
}

impl SharedTasks {
    /// The deployment's newest `limit` tasks, newest first (a task whose replica is gone is
    /// failed first, as on any read).
    pub async fn all(&self, limit: usize) -> Result<Vec<OperatorTask>, String> {
        let mut invocation = self.all.prepare_invoke();
        invocation.key(self.all_key()).arg(&self.prefix);
        liveness(&mut invocation);
        invocation.arg(limit.max(1));
        let rows: Vec<Fields> = self.redis.invoke(invocation).await?;
        Ok(rows
            .into_iter()
            .filter_map(|fields| {
                let caller: Caller = serde_json::from_str(fields.caller.as_deref()?).ok()?;
                let tool = serde_json::from_str::<Record>(&fields.record).ok()?.tool;
                let found = fields.found()?;
                Some(OperatorTask {
                    owner: caller.owner(),
                    tool,
                    view: found.view,
                    replica: Some(found.replica),
                })
            })
            .collect())
    }

    /// Asks the replica that runs task `id` to cancel it for an operator (`by`): its
    /// caller's digest and the task as it stood (`None`: no such task), with
    /// [`Found::asked`] set when its owner heard the command.
    pub async fn cancel_as_operator(
        &self,
        id: &str,
        by: &str,
    ) -> Result<Option<(String, Found)>, String> {
        let mut get = redis::cmd("GET");
        get.arg(self.id_key(id));
        let Some(digest) = self.redis.query::<Option<String>>(get).await? else {
            return Ok(None);
        };
        let command = TaskCommand::OperatorCancel {
            task: id.to_owned(),
            owner: digest.clone(),
            by: by.to_owned(),
        };
        let found = self.send_to(&digest, id, &command).await?;
        Ok(found.map(|found| (digest, found)))
    }
}
