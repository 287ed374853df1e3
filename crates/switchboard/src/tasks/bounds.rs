//! The task store's bounds: how many tasks one caller (agent + session), one agent (all its
//! sessions together) and all callers together may hold, and which task makes room for a
//! new one — the oldest whose client has what it needs of it (ended, and its result fetched
//! or the task cancelled), within the bound that is reached.
//!
//! The agent bound holds for named agents: anonymous callers have no identity to be fair
//! between, so they are bounded per caller and by the whole store only. Must never: drop a
//! task a client still needs to make room (the new one is refused instead).

use std::collections::HashMap;
use std::sync::Arc;

use switchboard_core::task::{TaskError, TaskOwner};

use super::settings::TaskSettings;
use super::store::Task;

/// Makes room in `tasks` for one more task of `owner`, evicting at most one task per bound
/// reached; refused, naming the bound, when a bound is reached and nothing in it can go.
pub(super) fn make_room(
    tasks: &mut HashMap<String, Arc<Task>>,
    owner: &TaskOwner,
    settings: &TaskSettings,
) -> Result<(), TaskError> {
    let caller = |task: &&Arc<Task>| &task.owner == owner;
    let held = tasks.values().filter(caller).count();
    make_room_within(tasks, caller, held, settings.max_per_caller)
        .ok_or(TaskError::TooMany(settings.max_per_caller))?;
    if let Some(agent) = owner.agent.as_deref() {
        let agents = |task: &&Arc<Task>| task.owner.agent.as_deref() == Some(agent);
        let held = tasks.values().filter(agents).count();
        make_room_within(tasks, agents, held, settings.max_per_agent).ok_or_else(|| {
            TaskError::AgentFull {
                agent: agent.to_owned(),
                limit: settings.max_per_agent,
            }
        })?;
    }
    let held = tasks.len();
    make_room_within(tasks, |_| true, held, settings.max_tasks)
        .ok_or(TaskError::Full(settings.max_tasks))
}

/// Makes room for one more among the tasks `within` selects (`held` of them), if they number
/// `limit` or more: `None` when none of them can go. Only a full bound scans for what can go.
fn make_room_within(
    tasks: &mut HashMap<String, Arc<Task>>,
    within: impl Fn(&&Arc<Task>) -> bool,
    held: usize,
    limit: usize,
) -> Option<()> {
    if held < limit {
        return Some(());
    }
    let oldest = tasks
        .values()
        .filter(within)
        .filter(|task| task.evictable())
        .min_by_key(|task| task.created)
        .map(|task| task.id.clone())?;
    tasks.remove(&oldest);
    Some(())
}
