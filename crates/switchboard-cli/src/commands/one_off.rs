//! A Host for one command — `call`, `tools`, `tools search`, a local `status`, `calibrate` —
//! started as `serve` starts its Host (the same ledger, latency stats, operations database
//! and traces) and closed as `serve` closes it on a clean stop: [`OneOffHost::close`] stops
//! the servers, saves the latency stats and sends the queued spans (`Host::shutdown`), then
//! writes the ledger's last rows and removes this process's journal ([`close_ledger`]).
//! A command that started one closes it on every path, its errors and SIGINT/SIGTERM
//! included ([`super::stop_signals`]); a journal is left only when the rows could not be
//! written, for the next start to replay. [`HostWithLedger`] is the same Host and ledger
//! without the signals, for the manager's local Host.

use std::path::Path;
use std::time::Duration;

use switchboard::{Host, HostOptions};
use switchboard_core::config::Config;
use switchboard_ledger::Ledger;
use tokio_util::sync::CancellationToken;

use super::stop_signals::{Interrupted, StopSignals};

/// How long a stopping command or gateway waits for the ledger's last rows to be written.
pub const LEDGER_FLUSH_PATIENCE: Duration = Duration::from_secs(10);

/// A Host of this process and the ledger it records to (if any), which it owns.
pub struct HostWithLedger {
    host: Host,
    ledger: Option<Ledger>,
}

/// The Host's own methods, used as on any Host; closing is [`HostWithLedger::close`].
impl std::ops::Deref for HostWithLedger {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}

impl HostWithLedger {
    /// A Host on `config` recording to `ledger` (`options.recorder` is expected to be it).
    /// When the Host cannot be built, the ledger is closed before the error is returned.
    pub async fn build(
        config: &Config,
        options: HostOptions,
        ledger: Option<Ledger>,
    ) -> anyhow::Result<Self> {
        match Host::from_config_with(config, options) {
            Ok(host) => Ok(Self { host, ledger }),
            Err(error) => {
                if let Some(ledger) = ledger {
                    close_ledger(ledger).await;
                }
                Err(error.into())
            }
        }
    }

    /// Stops the Host and closes its ledger, as `serve` does on a clean stop.
    pub async fn close(self) {
        self.host.shutdown().await;
        if let Some(ledger) = self.ledger {
            close_ledger(ledger).await;
        }
    }
}

/// A one-off command's Host, its ledger, and the signals that stop the command.
pub struct OneOffHost {
    host: HostWithLedger,
    stop: StopSignals,
}

/// The Host's own methods, used as on any Host; closing is [`OneOffHost::close`].
impl std::ops::Deref for OneOffHost {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}

impl OneOffHost {
    /// Stops the Host and closes its ledger, as `serve` does on a clean stop; then the
    /// signal that stopped the command, if one did, as the error the command ends with.
    pub async fn close(self) -> Result<(), Interrupted> {
        self.host.close().await;
        match self.stop.received() {
            Some(stopped) => Err(stopped),
            None => Ok(()),
        }
    }

    /// Cancelled at the first SIGINT or SIGTERM: the `CallContext::cancel` of the command's
    /// calls, which the pipeline then ends and records as cancelled.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.token()
    }

    /// What `work` gives, unless SIGINT or SIGTERM comes first (`work` is then dropped).
    pub async fn unless_stopped<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, Interrupted> {
        self.stop.unless_stopped(work).await
    }
}

/// Loads the config, starts a Host and waits for every server's first connection attempt
/// (SIGINT and SIGTERM, handled from the start, cut that wait short and close the Host).
/// An `agent` the config does not define is refused before anything starts.
pub async fn start_host(
    explicit: Option<&Path>,
    agent: Option<&str>,
) -> anyhow::Result<OneOffHost> {
    start(explicit, agent, |_| {}, None).await
}

/// [`start_host`] for a call of `tool`: it waits only for the servers that could own the
/// tool (`Host::ready_for_tool`), so a server that hangs at start holds up only its own
/// calls, and for every server when the name could be anyone's.
pub async fn start_host_for_tool(
    explicit: Option<&Path>,
    agent: Option<&str>,
    tool: &str,
) -> anyhow::Result<OneOffHost> {
    start(explicit, agent, |_| {}, Some(tool)).await
}

/// [`start_host`] on the config as `adjust` changes it (a command line's word over the file,
/// as `serve` lays its flags over it).
pub async fn start_host_with(
    explicit: Option<&Path>,
    agent: Option<&str>,
    adjust: impl FnOnce(&mut Config),
) -> anyhow::Result<OneOffHost> {
    start(explicit, agent, adjust, None).await
}

/// Starts the Host and waits for the servers that could own `tool`, or for every server.
async fn start(
    explicit: Option<&Path>,
    agent: Option<&str>,
    adjust: impl FnOnce(&mut Config),
    tool: Option<&str>,
) -> anyhow::Result<OneOffHost> {
    let stop = StopSignals::install();
    let mut config = super::load_config(explicit)?;
    adjust(&mut config);
    super::check_agent(&config, agent)?;
    let ledger = super::audit::open_ledger(&config)?;
    let options = HostOptions {
        recorder: std::sync::Arc::new(ledger.clone()),
        latency_database: super::audit::latency_path(&config),
        manager_database: super::manager::database_path(&config),
        sandbox_launcher: std::env::current_exe().ok(),
        ..HostOptions::default()
    };
    let host = OneOffHost {
        host: HostWithLedger::build(&config, options, Some(ledger)).await?,
        stop,
    };
    let ready = async {
        match tool {
            Some(tool) => host.ready_for_tool(tool).await,
            None => host.ready().await,
        }
    };
    if let Err(stopped) = host.unless_stopped(ready).await {
        let _ = host.close().await;
        return Err(stopped.into());
    }
    Ok(host)
}

/// Writes the ledger's last rows (waiting [`LEDGER_FLUSH_PATIENCE`] at most) and removes this
/// process's journal once every row is on record. A shared store may be unreachable: what
/// does not get there stays in the journal, replayed by the next gateway or command that
/// starts here, and a warning says so.
pub async fn close_ledger(ledger: Ledger) {
    // The wait blocks: off the runtime's threads, which the ledger's store may need.
    let closing = tokio::task::spawn_blocking(move || ledger.close_within(LEDGER_FLUSH_PATIENCE));
    if !matches!(closing.await, Ok(true)) {
        tracing::warn!(
            "the ledger's last rows were not written within {LEDGER_FLUSH_PATIENCE:?}; they stay in its journal for the next start"
        );
    }
}
