//! Where the manager commands send their work: the gateway that runs the config (its admin
//! endpoint), else a Host of this process built as `serve` builds one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use switchboard::manager::{ManagerError, Operation, Priority, Request, Requester, State, Work};
use switchboard::{HostOptions, LiveOptions, Manager};

use super::super::one_off::HostWithLedger;
use crate::admin::client::AdminClient;

/// Where the manager commands send their work.
pub(crate) enum Target {
    /// The gateway that runs the config, through its admin endpoint.
    Gateway(AdminClient),
    /// A Host of this process (no gateway runs the config).
    Local(Local),
}

pub(crate) struct Local {
    /// With [`Use::Change`], the ledger it records to, closed with it on every path.
    host: HostWithLedger,
    manager: Manager,
    /// The config file changes are written to.
    file: Option<PathBuf>,
}

/// What a local Host is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Reading operations or searching: no server is started, nothing is written.
    Read,
    /// Installing: the config's servers run and the file is changed.
    Change,
}

impl Target {
    /// The gateway running `config`, else (unless `refuse_local` says why not) a Host of this
    /// process on it.
    pub(crate) async fn open(
        config: Option<&Path>,
        admin_file: Option<&Path>,
        purpose: Use,
        refuse_local: Option<&str>,
    ) -> anyhow::Result<Self> {
        match AdminClient::for_config(admin_file, config) {
            Ok(admin) => Ok(Self::Gateway(admin)),
            Err(why) => {
                if let Some(refusal) = refuse_local {
                    bail!("{refusal}: {why:#}");
                }
                tracing::debug!("no gateway: {why:#}");
                Ok(Self::Local(Local::start(config, purpose).await?))
            }
        }
    }

    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Self::Local(_))
    }

    /// The config file a local Host writes to.
    pub(crate) fn local_file(&self) -> Option<&Path> {
        match self {
            Self::Local(local) => local.file.as_deref(),
            Self::Gateway(_) => None,
        }
    }

    pub(crate) async fn close(self) {
        if let Self::Local(local) = self {
            local.host.close().await;
        }
    }

    pub(crate) async fn queue(&self, request: Request) -> anyhow::Result<String> {
        match self {
            Self::Gateway(admin) => admin.queue_operation(&request).await,
            Self::Local(local) => Ok(local.manager.queue(request).await?),
        }
    }

    pub(crate) async fn status(&self, id: &str) -> anyhow::Result<Operation> {
        match self {
            Self::Gateway(admin) => admin.operation(id, None, None).await,
            Self::Local(local) => Ok(local.manager.status_anywhere(id).await?),
        }
    }

    /// The operation once it is over, has more than `seen` steps, or `timeout` passed.
    pub(crate) async fn next(
        &self,
        id: &str,
        seen: usize,
        timeout: Duration,
    ) -> anyhow::Result<Operation> {
        match self {
            Self::Gateway(admin) => admin.operation(id, Some(timeout), Some(seen)).await,
            Self::Local(local) => {
                Ok(
                    crate::admin::operations::wait_for_step(&local.manager, id, timeout, seen)
                        .await?,
                )
            }
        }
    }

    /// The operation once it is over, or `timeout` passed.
    pub(crate) async fn wait(&self, id: &str, timeout: Duration) -> anyhow::Result<Operation> {
        match self {
            Self::Gateway(admin) => admin.operation(id, Some(timeout), None).await,
            Self::Local(local) => Ok(local.manager.wait(id, timeout, |_| {}).await?),
        }
    }

    pub(crate) async fn list(
        &self,
        state: Option<State>,
        limit: usize,
    ) -> anyhow::Result<Vec<Operation>> {
        match self {
            Self::Gateway(admin) => admin.operations(state, limit).await,
            Self::Local(local) => Ok(local.manager.list(state, limit)?),
        }
    }

    pub(crate) async fn cancel(&self, id: &str, reason: Option<&str>) -> anyhow::Result<Operation> {
        match self {
            Self::Gateway(admin) => admin.cancel_operation(id, reason).await,
            Self::Local(local) => Ok(local
                .manager
                .cancel_anywhere(id, reason.unwrap_or("cancelled by the operator"))
                .await?),
        }
    }

    /// Gives a waiting operation values for its inputs. An operation that has just started
    /// waiting may not take them yet for a moment: that is retried for up to 2 s.
    pub(crate) async fn input(
        &self,
        id: &str,
        values: &BTreeMap<String, String>,
    ) -> anyhow::Result<Operation> {
        let mut tries = 0;
        loop {
            let given = match self {
                Self::Gateway(admin) => admin.operation_input(id, values).await,
                Self::Local(local) => local
                    .manager
                    .input(id, values.clone())
                    .map_err(anyhow::Error::from),
            };
            match given {
                Err(error) if is_not_waiting(&error) && tries < 20 => {
                    let operation = self.status(id).await?;
                    if !matches!(
                        operation.waiting,
                        Some(switchboard::manager::Waiting::Input { .. })
                    ) {
                        return Err(error);
                    }
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
    }

    /// Searches the registries and waits for the answer (60 s at most).
    pub(crate) async fn search(&self, query: &str, limit: usize) -> anyhow::Result<Operation> {
        match self {
            Self::Gateway(admin) => admin.registry_search(query, limit).await,
            Self::Local(local) => {
                let mut request = Request::new(Work::Search {
                    query: query.to_owned(),
                    limit,
                });
                request.by = Requester::Operator;
                request.priority = Priority::High;
                let id = local.manager.queue(request).await?;
                Ok(local
                    .manager
                    .wait(&id, Duration::from_secs(60), |_| {})
                    .await?)
            }
        }
    }
}

fn is_not_waiting(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<ManagerError>()
        .is_some_and(|e| e.code() == "not_waiting")
        || error.to_string().ends_with("[not_waiting]")
}

impl Local {
    /// A Host on the config, as `serve` would build it (the same ledger, pins and operations
    /// database); for [`Use::Read`] without its servers.
    async fn start(config: Option<&Path>, purpose: Use) -> anyhow::Result<Self> {
        let mut loaded = match purpose {
            Use::Read => super::super::load_config_for_reading(config)?,
            Use::Change => super::super::load_config(config)?,
        };
        let mut options = HostOptions {
            manager_database: super::database_path(&loaded),
            sandbox_launcher: std::env::current_exe().ok(),
            ..HostOptions::default()
        };
        let mut ledger = None;
        match purpose {
            Use::Read => loaded.servers.clear(),
            Use::Change => {
                let opened = super::super::audit::open_ledger(&loaded)?;
                options.recorder = Arc::new(opened.clone());
                options.latency_database = super::super::audit::latency_path(&loaded);
                ledger = Some(opened);
            }
        }
        let file = loaded
            .source
            .clone()
            .or_else(super::super::user_config_file);
        let host = HostWithLedger::build(&loaded, options, ledger).await?;
        host.set_live_options(LiveOptions {
            read_only: purpose == Use::Read,
            default_file: if loaded.source.is_none() {
                super::super::user_config_file()
            } else {
                None
            },
            ..LiveOptions::default()
        });
        if purpose == Use::Change {
            host.ready().await;
        }
        let Some(manager) = host.manager() else {
            host.close().await;
            bail!("this Host runs no server manager");
        };
        // With `[storage] url`, what the replicas did is read before anything is shown.
        manager.synced(Duration::from_secs(10)).await;
        Ok(Self {
            host,
            manager,
            file,
        })
    }
}
