//! SIGINT (Ctrl-C) and SIGTERM in a one-off command — `call`, `tools`, `status`,
//! `calibrate`. The first stops the work in flight: a call is cancelled as a gateway call is
//! when its client goes away (the pipeline records it `cancelled`), a calibration stops
//! probing. The command then closes its Host and ledger as on any other path and exits 130
//! (SIGINT) or 143 (SIGTERM), as a shell reports a process that signal ended. A second
//! signal exits at once, closing nothing (the journal stays for the next start to replay).
//!
//! Installed only by [`super::start_host`]: `serve` and `manager follow` handle the signals
//! themselves, and a command that installs these must watch [`StopSignals`], or the first
//! Ctrl-C would do nothing.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// The signal that stopped a command. As an error, what the command returns once it has
/// closed; `main` turns it into the exit status [`Interrupted::exit_status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    #[error("interrupted (SIGINT)")]
    Interrupt,
    #[error("terminated (SIGTERM)")]
    Terminate,
}

impl Interrupted {
    /// 128 plus the signal's number, as a shell reports a process the signal ended.
    pub fn exit_status(self) -> u8 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }
}

/// Whether, and by which signal, this command was asked to stop.
#[derive(Clone)]
pub struct StopSignals {
    stopped: CancellationToken,
    received: Arc<OnceLock<Interrupted>>,
}

impl StopSignals {
    /// Takes SIGINT and SIGTERM over from their default action (ending the process) and
    /// listens for them. Where the handlers cannot be installed, a warning says so and the
    /// signals keep their default action.
    pub fn install() -> Self {
        let watched = Self {
            stopped: CancellationToken::new(),
            received: Arc::new(OnceLock::new()),
        };
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(interrupt), Ok(terminate)) => {
                tokio::spawn(listen(interrupt, terminate, watched.clone()));
            }
            (Err(error), _) | (_, Err(error)) => tracing::warn!(
                "cannot handle SIGINT and SIGTERM ({error}): they end this command without closing its ledger"
            ),
        }
        watched
    }

    /// A token cancelled at the first signal: the `CallContext::cancel` of a call it stops.
    pub fn token(&self) -> CancellationToken {
        self.stopped.clone()
    }

    /// The signal received, if one was.
    pub fn received(&self) -> Option<Interrupted> {
        self.received.get().copied()
    }

    /// What `work` gives, unless a signal comes first (`work` is then dropped).
    pub async fn unless_stopped<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, Interrupted> {
        match switchboard_core::context::unless_cancelled(&self.stopped, work).await {
            Some(done) => Ok(done),
            None => Err(self.received().unwrap_or(Interrupted::Interrupt)),
        }
    }
}

/// Waits for the first signal (stopping the command), then for a second (exiting at once).
async fn listen(mut interrupt: Signal, mut terminate: Signal, watched: StopSignals) {
    let next = async |interrupt: &mut Signal, terminate: &mut Signal| {
        tokio::select! {
            _ = interrupt.recv() => Interrupted::Interrupt,
            _ = terminate.recv() => Interrupted::Terminate,
        }
    };
    let first = next(&mut interrupt, &mut terminate).await;
    let _ = watched.received.set(first);
    // Not `eprintln!`: a command whose stderr is closed still stops cleanly.
    let _ = writeln!(
        std::io::stderr(),
        "\nswitchboard: {first}: stopping (closing the ledger); again to quit at once"
    );
    watched.stopped.cancel();
    let second = next(&mut interrupt, &mut terminate).await;
    std::process::exit(i32::from(second.exit_status()));
}
