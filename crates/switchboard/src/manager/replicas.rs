//! What a replica's manager does about the installs of the other replicas of its deployment
//! (`[storage] url`): every [`HEARTBEAT`] it looks for a server that the running
//! configuration has as a stdio command, that another replica installed, and whose
//! directory this replica lacks, and queues a `replicate` operation of its own for it
//! (`work::replicate`). Each install is tried once per replica run, so a failed attempt
//! stays in the shared list with its reason instead of being repeated every second; a
//! restart of the replica, or a new install of the server, tries again.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use switchboard_core::config::Transport;

use super::postgres::HEARTBEAT;
use super::{Manager, Priority, Request, Requester, Work, lock};

impl Manager {
    /// Starts looking for installs this replica lacks, for as long as the manager lives.
    pub(super) fn follow_installs(&self) {
        let weak = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                let manager = Manager { shared };
                if manager.shared.stopping.load(Ordering::Relaxed) {
                    return;
                }
                manager.replicate_missing().await;
            }
        });
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
