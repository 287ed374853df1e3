//! The life of an operation inside the manager: started when a slot frees up (`pump`,
//! `run`), its steps, waits and result recorded and saved at every change, ended once
//! (`finish`: state, energy charged to the agent, a message, and — when it did not succeed —
//! the secrets given for it removed) — and the manager's own
//! resources: the database (opened on first use, owned through a lock), the installs it
//! keeps, the registry client for the settings now, and the background chores it runs
//! (`every`).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;
use switchboard_core::config::ManagerConfig;
use tokio::sync::mpsc;

use super::{
    Active, FINISHED_KEPT, Installed, MESSAGES_KEPT, Manager, Message, MessageKind, State, Step,
    StoreError, Waiting, energy, lock, now_ms, store, work,
};

impl Manager {
    /// Makes this process the database's owner (a lock beside it), unless another process
    /// (the gateway, for a CLI command's Host) owns it. Only the owner marks what the last
    /// run left unfinished as failed.
    pub(super) fn claim(&self) -> bool {
        let mut claim = lock(&self.shared.claim);
        if claim.is_none() {
            *claim = store::claim(&self.shared.database);
        }
        claim.is_some()
    }

    /// Runs `f` on where operations are kept: PostgreSQL when the replicas share them, else
    /// the SQLite file (opened on first use).
    pub(super) fn with_store<T>(
        &self,
        f: impl FnOnce(&dyn store::OperationStore) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &self.shared.postgres {
            Some(shared) => f(shared.as_ref()),
            None => self.with_sqlite(|store| f(store)),
        }
    }

    pub(super) fn with_sqlite<T>(
        &self,
        f: impl FnOnce(&store::Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut slot = lock(&self.shared.store);
        if slot.is_none() {
            *slot = Some(store::Store::open(&self.shared.database)?);
            drop(slot);
            self.claim();
            slot = lock(&self.shared.store);
        }
        match slot.as_ref() {
            Some(store) => f(store),
            None => Err(StoreError {
                path: self.shared.database.display().to_string(),
                reason: "not open".to_owned(),
            }),
        }
    }

    /// Starts queued operations while fewer than `max_concurrent` run.
    pub(super) fn pump(&self) {
        loop {
            let next = {
                let mut queue = lock(&self.shared.queue);
                if queue.running >= self.shared.max_concurrent {
                    return;
                }
                let Some(next) = queue.waiting.pop() else {
                    return;
                };
                queue.running += 1;
                next
            };
            let manager = self.clone();
            tokio::spawn(async move {
                // A panic in the work must neither stall the queue nor leave the operation
                // open: it ends failed, and the slot frees.
                let run = std::panic::AssertUnwindSafe(manager.run(&next.id));
                if futures::FutureExt::catch_unwind(run).await.is_err() {
                    tracing::error!(id = next.id, "an operation's work panicked");
                    manager.finish(
                        &next.id,
                        0.0,
                        Err(work::WorkError::Failed(
                            "internal error: the operation's work panicked (see the gateway's log)"
                                .to_owned(),
                        )),
                    );
                }
                lock(&manager.shared.queue).running -= 1;
                manager.pump();
            });
        }
    }

    pub(super) async fn run(&self, id: &str) {
        let started = Instant::now();
        let Some((request, cancel)) = self.update(id, |active| {
            if active.operation.state != State::Queued {
                return None;
            }
            active.operation.state = State::InProgress;
            active.operation.started_ms = Some(now_ms());
            Some((active.operation.request.clone(), active.cancel.clone()))
        }) else {
            return;
        };
        self.step(id, 1, "started");
        let outcome = work::run(self, id, &request, &cancel).await;
        let costs = self
            .host()
            .and_then(|host| host.config())
            .map(|config| config.manager.energy)
            .unwrap_or_default();
        let energy = energy::cost(&costs, request.work.kind(), started.elapsed());
        if let Some(host) = self.host() {
            host.inner
                .pipeline
                .governance()
                .limits
                .charge(request.agent.as_deref(), energy);
        }
        self.shared.meter.add(request.agent.as_deref(), energy);
        self.finish(id, energy, outcome);
    }

    pub(super) fn finish(&self, id: &str, energy: f64, outcome: Result<Value, work::WorkError>) {
        let Some(active) = lock(&self.shared.active).remove(id) else {
            return;
        };
        if let Some(server) = match &active.operation.request.work {
            super::Work::Install { name, server, .. } => {
                Some(server.clone().unwrap_or_else(|| super::server_id_for(name)))
            }
            super::Work::Add { server, .. } => Some(server.clone()),
            _ => None,
        } {
            lock(&self.shared.reserved).remove(&server);
        }
        let mut operation = active.operation;
        if outcome.is_err() {
            // Nothing was installed: the secrets given for it go with it, so that no later
            // request under the same server id — maybe for another package — finds them.
            super::inputs::forget_secrets(&operation.secrets);
        }
        let at_ms = now_ms();
        operation.energy = energy;
        operation.waiting = None;
        operation.finished_ms = Some(at_ms);
        let (kind, text) = match outcome {
            Ok(result) => {
                operation.state = State::Completed;
                operation.progress = 100;
                operation.message = "completed".to_owned();
                operation.result = Some(result);
                (
                    MessageKind::Completed,
                    format!("{} completed", operation.kind),
                )
            }
            Err(work::WorkError::Cancelled) => {
                let reason = active
                    .cancel_reason
                    .unwrap_or_else(|| "cancelled".to_owned());
                operation.state = State::Cancelled;
                operation.message = format!("cancelled: {reason}");
                operation.error = Some(format!("cancelled: {reason}"));
                (MessageKind::Cancelled, operation.message.clone())
            }
            Err(work::WorkError::Failed(reason)) => {
                operation.state = State::Failed;
                operation.message = reason.clone();
                operation.error = Some(reason.clone());
                (
                    MessageKind::Failed,
                    format!("{} failed: {reason}", operation.kind),
                )
            }
        };
        operation.steps.push(Step {
            at_ms,
            progress: operation.progress,
            message: operation.message.clone(),
        });
        tracing::info!(
            id,
            kind = operation.kind,
            state = operation.state.as_str(),
            energy,
            "operation ended"
        );
        if let Err(error) = self.with_store(|store| store.save(&operation)) {
            tracing::error!("{error}");
        }
        self.message(id, kind, text);
        {
            let mut finished = lock(&self.shared.finished);
            finished.push_back(operation);
            while finished.len() > FINISHED_KEPT {
                finished.pop_front();
            }
        }
        self.bump();
    }

    /// Changes an operation that is not over yet.
    pub(super) fn update<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Active) -> Option<T>,
    ) -> Option<T> {
        lock(&self.shared.active).get_mut(id).and_then(f)
    }

    pub(super) fn save_active(&self, id: &str) {
        let Some(operation) = self.update(id, |active| Some(active.operation.clone())) else {
            return;
        };
        if let Err(error) = self.with_store(|store| store.save(&operation)) {
            tracing::error!("{error}");
        }
        self.bump();
    }

    /// Records a step of an operation's progress.
    pub(crate) fn step(&self, id: &str, progress: u8, message: &str) {
        let updated = self.update(id, |active| {
            let operation = &mut active.operation;
            operation.progress = progress.clamp(operation.progress, 100);
            operation.message = message.to_owned();
            operation.steps.push(Step {
                at_ms: now_ms(),
                progress: operation.progress,
                message: message.to_owned(),
            });
            Some(())
        });
        if updated.is_some() {
            tracing::debug!(id, progress, message, "operation step");
            self.message(id, MessageKind::Status, format!("{progress}% {message}"));
            self.save_active(id);
        }
    }

    /// Keeps what a failing operation found (a probation report) as its result.
    pub(crate) fn set_result(&self, id: &str, result: Value) {
        self.update(id, |active| {
            active.operation.result = Some(result);
            Some(())
        });
        self.save_active(id);
    }

    pub(crate) fn set_waiting(&self, id: &str, waiting: Option<Waiting>) {
        self.update(id, |active| {
            active.operation.waiting = waiting;
            Some(())
        });
        self.save_active(id);
    }

    /// Notes that the secrets under `keys` were given for operation `id` (written to the
    /// secrets file for it): its install may use them, and they go if it does not install.
    pub(crate) fn own_secrets(&self, id: &str, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        self.update(id, |active| {
            let owned = &mut active.operation.secrets;
            for key in keys {
                if !owned.contains(key) {
                    owned.push(key.clone());
                }
            }
            Some(())
        });
        self.save_active(id);
    }

    /// The secrets-file keys written for operation `id` so far.
    pub(crate) fn owned_secrets(&self, id: &str) -> Vec<String> {
        self.update(id, |active| Some(active.operation.secrets.clone()))
            .unwrap_or_default()
    }

    /// Opens the channel the operator's input values come through.
    pub(crate) fn input_channel(
        &self,
        id: &str,
    ) -> Option<mpsc::UnboundedReceiver<BTreeMap<String, String>>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.update(id, |active| {
            active.inputs = Some(sender);
            Some(())
        })?;
        Some(receiver)
    }

    pub(super) fn message(&self, id: &str, kind: MessageKind, text: String) {
        let mut messages = lock(&self.shared.messages);
        messages.push_back(Message {
            operation: id.to_owned(),
            kind,
            text,
            at_ms: now_ms(),
        });
        while messages.len() > MESSAGES_KEPT {
            messages.pop_front();
        }
    }

    pub(crate) fn tools_available(&self, id: &str, text: String) {
        self.message(id, MessageKind::ToolsAvailable, text);
    }

    pub(super) fn bump(&self) {
        self.shared.changed.send_modify(|n| *n += 1);
    }

    pub(crate) fn installed_server(&self, server: &str) -> Result<Option<Installed>, StoreError> {
        if !self.kept() {
            return Ok(None);
        }
        self.with_store(|store| store.install_of(server))
    }

    pub(crate) fn record_install(&self, installed: &Installed) -> Result<(), StoreError> {
        self.with_store(|store| store.record_install(installed))
    }

    pub(crate) fn forget_install(&self, server: &str) -> Result<(), StoreError> {
        self.with_store(|store| store.forget_install(server))
    }

    /// The registry client for the manager's settings now (kept while they stay the same,
    /// so its cache is).
    pub(crate) fn registry(&self, config: &ManagerConfig) -> switchboard_registry::Registry {
        let key = format!(
            "{:?}|{:?}|{:?}",
            config.registries, config.catalogs, config.registry_ttl
        );
        let mut slot = lock(&self.shared.registry);
        if let Some((cached, registry)) = slot.as_ref()
            && *cached == key
        {
            return registry.clone();
        }
        let registry = switchboard_registry::Registry::new(switchboard_registry::Sources {
            registries: config.registries.clone(),
            catalogs: config.catalogs.clone(),
            ttl: config.registry_ttl,
        });
        *slot = Some((key, registry.clone()));
        registry
    }
}

impl Manager {
    /// Runs `chore` every `period` (the first time one period from now) for as long as the
    /// manager lives and the gateway is not stopping; nothing without a Tokio runtime.
    pub(super) fn every<F, Chore>(&self, period: std::time::Duration, chore: F)
    where
        F: Fn(Manager) -> Chore + Send + 'static,
        Chore: std::future::Future<Output = ()> + Send,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = std::sync::Arc::downgrade(&self.shared);
        runtime.spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                if shared.stopping.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                chore(Manager { shared }).await;
            }
        });
    }
}
