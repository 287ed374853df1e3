//! A cgroup `pids.max` for a sandboxed server run as root, where `RLIMIT_NPROC` does not
//! bind: the launcher moves itself into `switchboard/<its pid>` under the pids controller
//! (cgroup v1's `pids` hierarchy, or cgroup v2 with `pids` enabled below the root) before it
//! execs, so the server and everything it forks share the limit. Groups are removed when
//! empty: each launcher removes its empty siblings as it starts (a group still in use
//! refuses removal), so at most the groups of servers that ended since linger.

use std::io;
use std::path::{Path, PathBuf};

/// The cgroup v1 pids hierarchy, then the cgroup v2 root.
const V1: &str = "/sys/fs/cgroup/pids";
const V2: &str = "/sys/fs/cgroup";
/// Our groups' parent, below the hierarchy's root.
const PARENT: &str = "switchboard";

/// Where the server groups are made, when a pids controller is mounted.
pub(super) fn hierarchy() -> Option<PathBuf> {
    if Path::new(V1).join("pids.max").exists() || Path::new(V1).join("cgroup.procs").exists() {
        return Some(PathBuf::from(V1));
    }
    let controllers = std::fs::read_to_string(Path::new(V2).join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "pids")
        .then(|| PathBuf::from(V2))
}

/// Puts this process in a group of its own holding at most `max` processes; returns it.
pub(super) fn confine(max: u64) -> io::Result<PathBuf> {
    let root = hierarchy()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no pids cgroup controller"))?;
    let v2 = root == Path::new(V2);
    let parent = root.join(PARENT);
    if v2 {
        // The controller must be handed down to each level that holds our groups.
        std::fs::write(root.join("cgroup.subtree_control"), "+pids")?;
    }
    std::fs::create_dir_all(&parent)?;
    if v2 {
        std::fs::write(parent.join("cgroup.subtree_control"), "+pids")?;
    }
    remove_empty_groups(&parent);
    let group = parent.join(std::process::id().to_string());
    std::fs::create_dir_all(&group)?;
    std::fs::write(group.join("pids.max"), max.to_string())?;
    std::fs::write(group.join("cgroup.procs"), std::process::id().to_string())?;
    Ok(group)
}

/// Removes the groups of servers that ended (a populated group refuses).
fn remove_empty_groups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}
