//! A child's process group, killed whole: when its owner says so, and at the latest when it
//! is dropped. While it lives the group is listed with the [`reaper`], so it is killed even
//! if this process dies first. Stdio servers run in one, and so do the Host's command hooks:
//! everything a child starts (an `npx` wrapper's node, a `sh` hook's `curl`) goes with it.
//!
//! The child must have been started with `process_group(0)`, so that the group's id is its
//! pid. The signalling is `switchboard_core::process_group`'s; this adds the reaper.

use super::reaper;

/// The process group of a started child; killed (SIGKILL) and released from the reaper when
/// dropped.
pub struct ProcessGroup {
    group: switchboard_core::process_group::ProcessGroup,
}

impl ProcessGroup {
    /// The group led by `child`, which was started with `process_group(0)`. A child already
    /// reaped (no id) gives a group that signals nothing.
    pub fn of(child: &tokio::process::Child) -> Self {
        let group = switchboard_core::process_group::ProcessGroup::led_by(child.id());
        if let Some(pgid) = group.id().and_then(|id| i32::try_from(id).ok()) {
            reaper::adopt(pgid);
        }
        Self { group }
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.group.terminate();
    }

    /// Kills every process of the group (SIGKILL).
    pub fn kill(&self) {
        self.group.kill();
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.group.kill();
        if let Some(pgid) = self.group.forget().and_then(|id| i32::try_from(id).ok()) {
            reaper::release(pgid);
        }
    }
}
