//! A request becomes a queued operation: the agent's quota and open operations admit it,
//! the server id it adds is reserved, the secrets given with it are screened and written
//! away, and it is kept (on PostgreSQL, admitted in the transaction that inserts it) before
//! it joins the priority queue.

use std::time::SystemTime;

use tokio_util::sync::CancellationToken;

use super::{
    Active, Manager, ManagerError, OPEN_PER_AGENT, Operation, Queued, Request, inputs, lock,
    now_ms, postgres, work,
};

impl Manager {
    /// Whether `agent` may queue an operation of `kind` now: its quota has room left and it
    /// has fewer than [`OPEN_PER_AGENT`] operations open.
    pub(crate) async fn admit(&self, agent: Option<&str>, kind: &str) -> Result<(), ManagerError> {
        let host = self.host().ok_or(ManagerError::Gone)?;
        let Some(agent) = agent else {
            return Ok(());
        };
        let governance = host.inner.pipeline.governance();
        if let Err(refusal) = governance.limits.admit(&[], Some(agent)).await {
            return Err(ManagerError::Refused(format!(
                "agent '{agent}' cannot pay for a {kind} operation: {refusal}"
            )));
        }
        // With the replicas sharing their operations, every replica's as this one last read
        // them (the count that decides is taken on PostgreSQL: `keep_new`).
        let open = match &self.shared.postgres {
            Some(shared) => shared.open_of(agent),
            None => lock(&self.shared.active)
                .values()
                .filter(|active| active.operation.request.agent.as_deref() == Some(agent))
                .count(),
        };
        if open >= OPEN_PER_AGENT {
            return Err(too_many(agent, open, self.shared.postgres.is_some()));
        }
        Ok(())
    }

    /// Keeps a new operation where operations are kept. On PostgreSQL an agent's, and one
    /// that adds a server (`adds`), is admitted there, in the transaction that inserts it,
    /// only while the agent has fewer than [`OPEN_PER_AGENT`] open and no operation adds
    /// that server, on all the replicas (`postgres::admission`).
    async fn keep_new(
        &self,
        operation: &Operation,
        adds: Option<&str>,
    ) -> Result<(), ManagerError> {
        let agent = operation.request.agent.as_deref();
        let Some(shared) = self
            .shared
            .postgres
            .as_ref()
            .filter(|_| agent.is_some() || adds.is_some())
        else {
            return Ok(self.with_store(|store| store.save(operation))?);
        };
        match shared.admit(operation, agent, OPEN_PER_AGENT, adds).await? {
            None => Ok(()),
            Some(postgres::Refusal::TooMany(open)) => {
                Err(too_many(agent.unwrap_or_default(), open, true))
            }
            Some(postgres::Refusal::Adding {
                server,
                id,
                replica,
            }) => Err(ManagerError::Refused(format!(
                "{} (operation {id}, on replica {replica})",
                adding_already(&server)
            ))),
        }
    }

    /// Queues an operation and returns its id at once. A model's request is refused when its
    /// agent's quota has no room left or it has too many operations open; a request naming a
    /// server id the config could not hold, or one another operation is adding, is refused;
    /// every request once the Host was shut down is [`ManagerError::Gone`].
    pub async fn queue(&self, request: Request) -> Result<String, ManagerError> {
        if self
            .shared
            .stopping
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Err(ManagerError::Gone);
        }
        self.admit(request.agent.as_deref(), request.work.kind())
            .await?;
        // Held until the operation is among the active ones, which then count it.
        let _slot = self.hold_slot(request.agent.as_deref())?;
        // Values given with an install are screened before anything is kept: a secret goes
        // to the secrets file — once the request is admitted — never into the operation.
        let (request, screened) = work::screen_values(self, request)
            .await
            .map_err(ManagerError::Refused)?;
        let adds = request.work.adds();
        if let Some(server) = request
            .work
            .server()
            .filter(|_| adds.is_none())
            .or(adds.as_deref())
            && !valid_server_id(server)
        {
            return Err(ManagerError::Refused(format!(
                "'{server}' is not a server id: 1-64 characters of A-Z a-z 0-9 _ -"
            )));
        }
        if let Some(server) = &adds
            && !lock(&self.shared.reserved).insert(server.clone())
        {
            return Err(ManagerError::Refused(adding_already(server)));
        }
        let unreserve = || {
            if let Some(server) = &adds {
                lock(&self.shared.reserved).remove(server);
            }
        };
        // The secrets given are this server's: a configured server of that id keeps its own.
        if let (Some(server), Some(_)) = (&adds, &screened)
            && self
                .host()
                .and_then(|host| host.config())
                .is_some_and(|config| config.server(server).is_some())
        {
            unreserve();
            return Err(ManagerError::Refused(format!(
                "a server named '{server}' is already configured; ask again with another server name"
            )));
        }
        let written = match screened.map(inputs::Screened::keep).transpose() {
            Ok(kept) => kept.map(|(written, _)| written).unwrap_or_default(),
            Err(error) => {
                unreserve();
                return Err(ManagerError::Refused(error));
            }
        };
        let id = switchboard_core::call_id::new_call_id(SystemTime::now());
        let mut operation = Operation::queued(id.clone(), request, now_ms());
        operation.replica = self.replica();
        operation.secrets.clone_from(&written);
        if let Err(error) = self.keep_new(&operation, adds.as_deref()).await {
            unreserve();
            inputs::forget_secrets(&written);
            return Err(error);
        }
        let priority = operation.request.priority;
        lock(&self.shared.active).insert(
            id.clone(),
            Active {
                operation,
                cancel: CancellationToken::new(),
                cancel_reason: None,
                inputs: None,
            },
        );
        if self
            .shared
            .stopping
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            // The gateway began stopping while this was being queued, after it cancelled the
            // work it had: this operation is cancelled before anything can start it.
            let _ = self.cancel(&id, "the gateway is shutting down");
            return Err(ManagerError::Gone);
        }
        {
            let mut queue = lock(&self.shared.queue);
            queue.sequence += 1;
            let sequence = queue.sequence;
            queue.waiting.push(Queued {
                priority,
                sequence,
                id: id.clone(),
            });
        }
        self.bump();
        self.pump();
        self.queued_everywhere().await;
        Ok(id)
    }
}

/// Why a second operation adding server `server` is refused while one is open.
fn adding_already(server: &str) -> String {
    format!("another operation is adding a server named '{server}' already")
}

/// The refusal of an agent's operation when it has `open` already (`across`: counted on
/// every replica of the deployment).
pub(super) fn too_many(agent: &str, open: usize, across: bool) -> ManagerError {
    let on = if across {
        " on the deployment's replicas"
    } else {
        ""
    };
    ManagerError::Refused(format!(
        "agent '{agent}' has {open} operations open already{on} (at most {OPEN_PER_AGENT}); wait for one to end or cancel one"
    ))
}

/// Whether `id` can be a server id (the config's rule: 1–64 characters of `A-Z a-z 0-9 _ -`).
/// Server ids name directories of the manager's, so nothing else may pass.
pub fn valid_server_id(id: &str) -> bool {
    switchboard_core::config::is_valid_id(id)
}
