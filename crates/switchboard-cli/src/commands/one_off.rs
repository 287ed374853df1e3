//! A Host for one command — `call`, `tools`, `tools search`, a local `status`, `calibrate` —
//! started as `serve` starts its Host (the same ledger, latency stats, operations database
//! and traces) and closed as `serve` closes it on a clean stop: [`OneOffHost::close`] stops
//! the servers, saves the latency stats and sends the queued spans (`Host::shutdown`), then
//! writes the ledger's last rows and removes this process's journal ([`close_ledger`]).
//! A command that started one closes it on every path, its errors included; a journal is
//! left only when the rows could not be written, for the next start to replay.

use std::path::Path;
use std::time::Duration;

use switchboard::Host;
use switchboard_ledger::Ledger;

/// How long a stopping command or gateway waits for the ledger's last rows to be written.
pub const LEDGER_FLUSH_PATIENCE: Duration = Duration::from_secs(10);

/// A Host of this process and the ledger it records to, which it owns.
pub struct OneOffHost {
    host: Host,
    ledger: Ledger,
}

/// The Host's own methods, used as on any Host; closing is [`OneOffHost::close`].
impl std::ops::Deref for OneOffHost {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}

impl OneOffHost {
    /// Stops the Host and closes its ledger, as `serve` does on a clean stop.
    pub async fn close(self) {
        self.host.shutdown().await;
        close_ledger(self.ledger).await;
    }
}

/// Loads the config, starts a Host and waits for every server's first connection attempt.
/// An `agent` the config does not define is refused before anything starts.
pub async fn start_host(
    explicit: Option<&Path>,
    agent: Option<&str>,
) -> anyhow::Result<OneOffHost> {
    let config = super::load_config(explicit)?;
    super::check_agent(&config, agent)?;
    let ledger = super::audit::open_ledger(&config)?;
    let options = switchboard::HostOptions {
        recorder: std::sync::Arc::new(ledger.clone()),
        latency_database: super::audit::latency_path(&config),
        manager_database: super::manager::database_path(&config),
        sandbox_launcher: std::env::current_exe().ok(),
        ..switchboard::HostOptions::default()
    };
    let host = match Host::from_config_with(&config, options) {
        Ok(host) => host,
        Err(error) => {
            close_ledger(ledger).await;
            return Err(error.into());
        }
    };
    host.ready().await;
    Ok(OneOffHost { host, ledger })
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
