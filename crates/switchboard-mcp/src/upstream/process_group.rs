//! A child's process group, killed whole: when its owner says so, and at the latest when it
//! is dropped. While it lives the group is listed with the [`reaper`], so it is killed even
//! if this process dies first. Stdio servers run in one, and so do the Host's command hooks:
//! everything a child starts (an `npx` wrapper's node, a `sh` hook's `curl`) goes with it.
//!
//! The child must have been started with `process_group(0)`, so that the group's id is its
//! pid. Signals are sent with `killpg`: no `unsafe`, nothing run between fork and exec.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::reaper;

/// The process group of a started child; killed (SIGKILL) and released from the reaper when
/// dropped.
pub struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// The group led by `child`, which was started with `process_group(0)`. A child already
    /// reaped (no id) gives a group that signals nothing.
    pub fn of(child: &tokio::process::Child) -> Self {
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        if let Some(pgid) = pgid {
            reaper::adopt(pgid);
        }
        Self {
            pgid: pgid.map(Pid::from_raw),
        }
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.signal(Signal::SIGTERM);
    }

    /// Kills every process of the group (SIGKILL).
    pub fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (already gone) is the expected case after a clean exit.
            let _ = killpg(pgid, signal);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
        if let Some(pgid) = self.pgid {
            reaper::release(pgid.as_raw());
        }
    }
}
