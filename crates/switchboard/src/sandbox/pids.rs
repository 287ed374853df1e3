//! A cgroup `pids.max` for a sandboxed server run as root, where `RLIMIT_NPROC` does not
//! bind: the launcher moves itself into a group of its own, `switchboard-<its pid>`, made
//! below the pids cgroup it is in (cgroup v1's `pids` hierarchy, or cgroup v2), before it
//! execs, so the server and everything it forks share the limit — and stay under any limit
//! of the gateway's own group. Groups are removed when empty: each launcher removes its
//! empty siblings as it starts (a group still in use refuses removal), so at most the groups
//! of servers that ended since linger.
//!
//! On cgroup v2 a group that holds processes (the gateway's, unless it is the root) cannot
//! hand controllers down, so there the confinement fails and the launcher says so.

use std::io;
use std::path::{Path, PathBuf};

/// The cgroup v1 pids hierarchy, then the cgroup v2 root.
const V1: &str = "/sys/fs/cgroup/pids";
const V2: &str = "/sys/fs/cgroup";
/// The prefix of our groups' names.
const PREFIX: &str = "switchboard-";

/// The mounted pids hierarchy and whether it is cgroup v2.
pub(super) fn hierarchy() -> Option<(PathBuf, bool)> {
    if Path::new(V1).join("cgroup.procs").exists() {
        return Some((PathBuf::from(V1), false));
    }
    let controllers = std::fs::read_to_string(Path::new(V2).join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "pids")
        .then(|| (PathBuf::from(V2), true))
}

/// Whether a launcher started by this process can make its group: on cgroup v1 below any
/// group, on v2 only below the root (a populated group cannot hand the controller down).
pub(super) fn usable() -> bool {
    hierarchy().is_some_and(|(_, v2)| own_group(v2).is_some_and(|own| !v2 || own == "/"))
}

/// This process's group in the pids hierarchy, from `/proc/self/cgroup`.
fn own_group(v2: bool) -> Option<String> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    table.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = if v2 {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == "pids")
        };
        wanted.then(|| path.to_owned())
    })
}

/// Puts this process in a group of its own holding at most `max` processes; returns it.
pub(super) fn confine(max: u64) -> io::Result<PathBuf> {
    let missing = |what: &str| io::Error::new(io::ErrorKind::NotFound, what.to_owned());
    let (root, v2) = hierarchy().ok_or_else(|| missing("no pids cgroup controller"))?;
    let own = own_group(v2).ok_or_else(|| missing("no pids cgroup in /proc/self/cgroup"))?;
    let parent = root.join(own.trim_start_matches('/'));
    if v2 {
        // The controller must be handed down to the groups below; refused (EBUSY) where the
        // parent holds processes and is not the root.
        std::fs::write(parent.join("cgroup.subtree_control"), "+pids")?;
    }
    remove_empty_groups(&parent);
    let group = parent.join(format!("{PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&group)?;
    std::fs::write(group.join("pids.max"), max.to_string())?;
    std::fs::write(group.join("cgroup.procs"), std::process::id().to_string())?;
    Ok(group)
}

/// Removes the groups of servers that ended (a populated group refuses). A group whose
/// launcher still lives is left alone even when empty: it may be between making its group
/// and moving into it, and removing it then would leave its server unbounded.
fn remove_empty_groups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok() && Path::new("/proc").join(pid).exists();
        if !alive && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two servers starting at once: one launcher's clean-up must not remove the group the
    /// other just made and has not moved into yet (security review).
    #[test]
    fn only_the_groups_of_ended_launchers_are_removed() {
        let parent = tempfile::tempdir().expect("tempdir");
        let live = parent
            .path()
            .join(format!("{PREFIX}{}", std::process::id()));
        let ended = parent.path().join(format!("{PREFIX}4294967295"));
        let foreign = parent.path().join("system.slice");
        for dir in [&live, &ended, &foreign] {
            std::fs::create_dir(dir).expect("mkdir");
        }
        remove_empty_groups(parent.path());
        assert!(live.exists(), "a live launcher's group stays");
        assert!(!ended.exists(), "an ended launcher's group goes");
        assert!(foreign.exists(), "groups not ours stay");
    }
}
