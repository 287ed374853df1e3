//! A child's process group, signalled whole: the one implementation of the gateway's stdio
//! servers and command hooks (`switchboard_mcp::upstream::process_group`, which adds the
//! reaper), the installer's steps (`switchboard_registry`) and the music players
//! (`switchboard_tools`). Everything a child starts (an `npx` wrapper's node, npm's lifecycle
//! scripts, mpv's downloader) is in its group, so it goes with it.
//!
//! The crates that start children start them with `process_group(0)`, so that the group's id
//! is the child's pid, and hand that pid here. Signals are sent with `killpg`: no `unsafe`,
//! nothing run between fork and exec.
//!
//! Must never: start a process (this crate opens none), nor signal a group once its owner
//! said its leader was reaped ([`ProcessGroup::forget`]: the id may belong to another
//! process by then).

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group a started child leads; killed (SIGKILL) when dropped, unless forgotten.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// The group led by the child whose pid is `pid` (a `Child::id()`), started with
    /// `process_group(0)`. A child already reaped (no pid) gives a group that signals nothing.
    pub fn led_by(pid: Option<u32>) -> Self {
        Self {
            pgid: pid.and_then(group_id),
        }
    }

    /// The group's id (its leader's pid), while it is held.
    pub fn id(&self) -> Option<u32> {
        self.pgid.and_then(|pgid| u32::try_from(pgid.as_raw()).ok())
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.signal(Signal::SIGTERM);
    }

    /// Kills every process of the group (SIGKILL).
    pub fn kill(&self) {
        self.signal(Signal::SIGKILL);
    }

    /// Lets go of the group without signalling it (its leader was reaped, so its id may be
    /// reused): nothing is signalled from now on, the drop included. Returns the id it had.
    pub fn forget(&mut self) -> Option<u32> {
        let id = self.id();
        self.pgid = None;
        id
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
    }
}

/// Kills the process group `pgid` (SIGKILL) from anywhere, e.g. a `Drop` with no runtime
/// that kept only the id.
pub fn kill_group(pgid: u32) {
    if let Some(pgid) = group_id(pgid) {
        // ESRCH (already gone) is the expected case.
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// The group id a child's pid names, if it can name a child's group at all: 0 would be the
/// caller's own group and 1 init's, so neither is ever signalled (nor an id past `i32`).
fn group_id(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|pid| *pid > 1)
        .map(Pid::from_raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child in a group of its own, with a grandchild: both go with the group.
    fn spawn_group() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .expect("sh")
    }

    #[test]
    fn the_callers_own_group_and_inits_are_never_named() {
        assert!(ProcessGroup::led_by(Some(0)).id().is_none());
        assert!(ProcessGroup::led_by(Some(1)).id().is_none());
        assert!(ProcessGroup::led_by(Some(u32::MAX)).id().is_none());
        assert_eq!(ProcessGroup::led_by(Some(4242)).forget(), Some(4242));
        // Would SIGKILL this test's own group if 0 were taken for a group id.
        kill_group(0);
    }

    #[test]
    fn a_dropped_group_is_killed_and_a_forgotten_one_is_not() {
        let mut child = spawn_group();
        let group = ProcessGroup::led_by(Some(child.id()));
        assert_eq!(group.id(), Some(child.id()));
        drop(group);
        let status = child.wait().expect("wait");
        assert!(!status.success(), "killed: {status:?}");

        let mut child = spawn_group();
        let mut group = ProcessGroup::led_by(Some(child.id()));
        assert_eq!(group.forget(), Some(child.id()));
        drop(group);
        assert!(matches!(child.try_wait(), Ok(None)), "still running");
        kill_group(child.id());
        let status = child.wait().expect("wait");
        assert!(!status.success(), "killed by id: {status:?}");
    }

    #[test]
    fn a_group_of_no_child_signals_nothing() {
        let group = ProcessGroup::led_by(None);
        assert_eq!(group.id(), None);
        group.terminate();
        group.kill();
    }
}
