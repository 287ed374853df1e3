//! What a replica's manager does about the other replicas of its deployment (`[storage]
//! url`): it finds an operation another replica queued a moment ago, before its mirror has
//! it (`status_anywhere`), wakes its waiters when their rows arrive (`next_change`), asks
//! the replica that runs an operation to cancel it (`cancel_anywhere`) and cancels its own
//! when asked. And in a gateway that follows the shared configuration (`Host::manage`, not a
//! CLI command's Host), every [`HEARTBEAT`] it looks for a server that the running
//! configuration has as a stdio command, that another replica installed, and whose
//! directory this replica lacks, and queues a `replicate` operation of its own for it
//! (`work::replicate`); a directory it has gets the `TMPDIR` and `HOME` the entry names,
//! should it lack them (a copy made before installs had a `HOME`). Each install is tried once
//! per replica run, so a failed attempt stays in the shared list with its reason instead of
//! being repeated every second; a restart of the replica, or a new install of the server,
//! tries again.

use std::sync::atomic::Ordering;
use std::time::Duration;

use switchboard_core::config::Transport;
use tokio::sync::watch;

use super::postgres::HEARTBEAT;
use super::{Manager, ManagerError, Operation, Priority, Request, Requester, Work, lock};

/// How long queueing waits for the new operation to reach PostgreSQL before it returns.
const QUEUED_EVERYWHERE: Duration = Duration::from_secs(5);

/// How long a cancellation asked of another replica waits for it to be done.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

impl Manager {
    /// An operation by id, as [`Manager::status`], but one this replica's mirror has not
    /// caught up with yet is read from PostgreSQL: an id handed out by any replica is found
    /// by every other at once.
    pub async fn status_anywhere(&self, id: &str) -> Result<Operation, ManagerError> {
        match (self.status(id), &self.shared.postgres) {
            (Err(ManagerError::NotFound(_)), Some(shared)) => shared
                .fetch(id)
                .await?
                .ok_or_else(|| ManagerError::NotFound(id.to_owned())),
            (status, _) => status,
        }
    }

    /// Cancels an operation, as [`Manager::cancel`]; one that runs on another replica is
    /// cancelled by that replica, asked through PostgreSQL, and returned once it is over (or
    /// as it is after a few seconds).
    pub async fn cancel_anywhere(&self, id: &str, reason: &str) -> Result<Operation, ManagerError> {
        let (replica, shared) = match (self.cancel(id, reason), &self.shared.postgres) {
            (Err(ManagerError::Elsewhere { replica, .. }), Some(shared)) => (replica, shared),
            (done, _) => return done,
        };
        let reason = format!(
            "{} (asked through replica {})",
            if reason.trim().is_empty() {
                "no reason given"
            } else {
                reason.trim()
            },
            shared.replica()
        );
        if shared.request_cancel(id, &reason).await? {
            tracing::info!(
                id,
                replica,
                "asked replica {replica} to cancel operation {id}"
            );
        }
        self.wait(id, CANCEL_WAIT, |_| {}).await
    }

    /// Waits until a new operation is on PostgreSQL (its id is about to be handed out).
    pub(super) async fn queued_everywhere(&self) {
        if let Some(shared) = &self.shared.postgres
            && !shared.flush(QUEUED_EVERYWHERE).await
        {
            tracing::warn!(
                "a queued operation is not on PostgreSQL yet: other replicas show it once it is"
            );
        }
    }

    /// What wakes a waiter: a change here, and rows of other replicas arriving.
    pub(super) fn changes(&self) -> (watch::Receiver<u64>, Option<watch::Receiver<u64>>) {
        (
            self.shared.changed.subscribe(),
            self.shared
                .postgres
                .as_ref()
                .map(|shared| shared.arrivals()),
        )
    }
}

/// Waits for the next change of either kind until `deadline`; false when none came.
pub(super) async fn next_change(
    (changed, arrived): &mut (watch::Receiver<u64>, Option<watch::Receiver<u64>>),
    deadline: tokio::time::Instant,
) -> bool {
    let arrival = async {
        match arrived {
            Some(arrived) => arrived.changed().await.is_ok(),
            None => std::future::pending().await,
        }
    };
    let waiting = async {
        tokio::select! {
            ok = changed.changed() => ok.is_ok(),
            ok = arrival => ok,
        }
    };
    tokio::time::timeout_at(deadline, waiting)
        .await
        .unwrap_or(false)
}

impl Manager {
    /// From now on installs here the packages other replicas installed that this replica's
    /// configuration runs (called when the Host follows the shared configuration: a serving
    /// gateway, not a command that reads operations).
    pub(crate) fn replicate_installs(&self) {
        self.shared.replicating.store(true, Ordering::Relaxed);
    }

    /// Every [`HEARTBEAT`], for as long as the manager lives: cancels what other replicas
    /// asked to cancel, and (once [`Manager::replicate_installs`] was called) looks for
    /// installs this replica lacks.
    pub(super) fn follow_replicas(&self) {
        self.every(HEARTBEAT, |manager| async move {
            manager.cancel_as_asked();
            if manager.shared.replicating.load(Ordering::Relaxed) {
                manager.replicate_missing().await;
            }
        });
    }

    /// Cancels the operations of this replica that another replica was asked to cancel.
    fn cancel_as_asked(&self) {
        let Some(shared) = &self.shared.postgres else {
            return;
        };
        for (id, reason) in shared.cancel_requests() {
            match self.cancel(&id, &reason) {
                Ok(_) => tracing::info!(id, "operation {id} cancelled: {reason}"),
                Err(error) => {
                    tracing::info!(id, "a cancellation asked through another replica: {error}")
                }
            }
        }
    }

    /// Queues a `replicate` operation for each install this replica lacks and has not tried.
    async fn replicate_missing(&self) {
        let Some(shared) = &self.shared.postgres else {
            return;
        };
        let Some(config) = self.host().and_then(|host| host.config()) else {
            return;
        };
        let Ok(installs) = self.with_store(|store| store.installs()) else {
            return;
        };
        for installed in installs {
            let elsewhere = installed
                .replica
                .as_deref()
                .is_some_and(|replica| replica != shared.replica());
            let runs_here = config
                .server(&installed.server)
                .is_some_and(|server| matches!(server.transport, Transport::Stdio { .. }));
            if elsewhere
                && runs_here
                && let Err(reason) = super::work::complete_private_dirs(&config.manager, &installed)
            {
                tracing::debug!(server = installed.server, "{reason}");
            }
            if !elsewhere || !runs_here || installed.dir.exists() {
                continue;
            }
            let attempt = (installed.server.clone(), installed.operation.clone());
            if !lock(&self.shared.replicated).insert(attempt) {
                continue;
            }
            let mut request = Request::new(Work::Replicate {
                server: installed.server.clone(),
            });
            request.priority = Priority::High;
            request.by = Requester::Operator;
            request.purpose = Some(format!(
                "'{}' runs here through the shared configuration; its package was installed on replica {}",
                installed.server,
                installed.replica.as_deref().unwrap_or_default()
            ));
            match self.queue(request).await {
                Ok(id) => tracing::info!(
                    server = installed.server,
                    id,
                    "installing '{}' on this replica too",
                    installed.server
                ),
                Err(error) => tracing::warn!(
                    server = installed.server,
                    "cannot install '{}' on this replica: {error}",
                    installed.server
                ),
            }
        }
    }
}
