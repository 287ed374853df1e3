//! An agent's open operations are at most [`OPEN_PER_AGENT`]: a request takes a slot while
//! its operation is being queued (screened, kept), counted with the active operations in one
//! step, so two requests of one agent at once cannot both take its last slot. On PostgreSQL
//! the count that decides is taken there, in the transaction that inserts
//! (`postgres::admission`), and no slot is held here.

use std::sync::Arc;

use super::{Manager, ManagerError, OPEN_PER_AGENT, Shared, lock, too_many};

impl Manager {
    /// Takes one of `agent`'s open slots while its operation is being queued, counting the
    /// active operations and those being queued in one step. On PostgreSQL the count that
    /// decides is taken there, in the transaction that inserts (`keep_new`): nothing here.
    pub(super) fn hold_slot(&self, agent: Option<&str>) -> Result<Option<OpenSlot>, ManagerError> {
        let Some(agent) = agent.filter(|_| self.shared.postgres.is_none()) else {
            return Ok(None);
        };
        let active = lock(&self.shared.active);
        let mut queuing = lock(&self.shared.queuing);
        let open = active
            .values()
            .filter(|active| active.operation.request.agent.as_deref() == Some(agent))
            .count()
            + queuing.get(agent).copied().unwrap_or(0);
        if open >= OPEN_PER_AGENT {
            return Err(too_many(agent, open, false));
        }
        *queuing.entry(agent.to_owned()).or_default() += 1;
        Ok(Some(OpenSlot {
            shared: self.shared.clone(),
            agent: agent.to_owned(),
        }))
    }
}

/// One of an agent's open slots, taken while its operation is queued; given back on drop.
pub(super) struct OpenSlot {
    shared: Arc<Shared>,
    agent: String,
}

impl Drop for OpenSlot {
    fn drop(&mut self) {
        let mut queuing = lock(&self.shared.queuing);
        if let Some(count) = queuing.get_mut(&self.agent) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                queuing.remove(&self.agent);
            }
        }
    }
}
