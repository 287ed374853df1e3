//! Landlock: the file-system and network rules the launcher puts on itself before it execs
//! the server, and a probe of what the running kernel supports (for `status`), which creates
//! rulesets but never restricts the gateway.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus,
};

/// The newest Landlock ABI these rules are written for; older kernels enforce what they can.
const ABI_WANTED: ABI = ABI::V5;

/// System paths every sandboxed server may read (and execute from).
pub const SYSTEM_READ: [&str; 11] = [
    "/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/opt", "/sys", "/dev", "/run",
];

/// Of `/proc`, only the server's own entry (`/proc/self` is opened by the launcher, whose
/// process the server becomes) and the system-wide files: not the whole of it, where a
/// server run as root could read the gateway's `environ` (Landlock's ptrace scoping yields
/// to `CAP_SYS_PTRACE`). A server's children do not see their own entries.
const PROC_READ: [&str; 10] = [
    "/proc/self",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
    "/proc/pressure",
];

/// Device files every process expects to write.
const DEVICE_WRITE: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/full"];

/// What Landlock this kernel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelSupport {
    /// File-system rules (Linux 5.13+, enabled at boot).
    pub landlock_fs: bool,
    /// TCP bind/connect rules (Linux 6.7+).
    pub landlock_net: bool,
    /// A pids cgroup controller is mounted (what bounds processes under root).
    pub pids_cgroup: bool,
}

impl KernelSupport {
    /// Asks the kernel by creating (and dropping) rulesets that require each feature.
    pub fn probe() -> Self {
        let fs = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(Ruleset::create)
            .is_ok();
        let net = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::ConnectTcp)
            .and_then(Ruleset::create)
            .is_ok();
        Self {
            landlock_fs: fs,
            landlock_net: net,
            pids_cgroup: super::pids::usable(),
        }
    }
}

/// How much of the rules the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforced {
    Fully,
    Partly,
    Not,
}

/// Restricts this process (and what it execs) to reading the system paths and `read`,
/// writing `write`, and — with `no_tcp` — making no TCP connection or bind. Paths that do
/// not exist are skipped.
pub(super) fn restrict(
    read: &[PathBuf],
    write: &[PathBuf],
    no_tcp: bool,
) -> Result<Enforced, RulesetError> {
    let abi = ABI_WANTED;
    let read_access = AccessFs::from_read(abi);
    let all_access = AccessFs::from_all(abi);
    let mut ruleset = Ruleset::default().handle_access(all_access)?;
    if no_tcp {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = ruleset.create()?;
    let system = SYSTEM_READ.iter().chain(&PROC_READ).map(PathBuf::from);
    for path in system.chain(read.iter().cloned()) {
        if let Some(rule) = beneath(&path, read_access) {
            created = created.add_rule(rule)?;
        }
    }
    let devices = DEVICE_WRITE.iter().map(PathBuf::from);
    for path in write.iter().cloned().chain(devices) {
        if let Some(rule) = beneath(&path, all_access) {
            created = created.add_rule(rule)?;
        }
    }
    let status = created.restrict_self()?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforced::Fully,
        RulesetStatus::PartiallyEnforced => Enforced::Partly,
        RulesetStatus::NotEnforced => Enforced::Not,
    })
}

/// A rule for `path`, with only the file rights when it is not a directory; `None` when it
/// cannot be opened.
fn beneath(path: &Path, access: landlock::BitFlags<AccessFs>) -> Option<PathBeneath<PathFd>> {
    let is_dir = path.metadata().ok()?.is_dir();
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(ABI_WANTED)
    };
    Some(PathBeneath::new(PathFd::new(path).ok()?, access))
}
