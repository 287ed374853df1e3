//! Which cores the processes of a scaling run may use: the gateway under test gets the first N
//! cores this process may run on, and the load generator's threads and the upstream fixture get
//! the others, so the gateway's cores are its own. With N = all of them, nothing is pinned.
//!
//! Pinning goes through `sched_setaffinity` (nix's safe wrapper), never `taskset`: a process
//! inherits the mask of the thread that forks it, so a gateway is started from a thread pinned
//! for that moment ([`PinnedThread`]); the processes it starts afterwards (its stdio upstream)
//! are moved off its cores once running ([`move_descendants`]). It never touches a process
//! it did not start.

use anyhow::{Context, bail};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// CPU ids, in ascending order.
pub type Cores = Vec<usize>;

/// The cores this process may run on (its affinity mask, which `taskset` or a cgroup may
/// narrow).
pub fn allowed() -> anyhow::Result<Cores> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
    Ok((0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect())
}

/// Where a gateway given `gateway_cores` of `allowed` runs, and where everything else does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The gateway's cores; `None` when it has every core (nothing is pinned).
    pub gateway: Option<Cores>,
    /// The client's and the upstream fixture's cores; `None` when nothing is pinned.
    pub rest: Option<Cores>,
}

impl Placement {
    /// The gateway on the first `count` of `allowed`, the rest on the others; `None` when
    /// `count` is 0 or more than there are.
    pub fn split(allowed: &[usize], count: usize) -> Option<Self> {
        if count == 0 || count > allowed.len() {
            return None;
        }
        if count == allowed.len() {
            return Some(Self {
                gateway: None,
                rest: None,
            });
        }
        let (gateway, rest) = allowed.split_at(count);
        Some(Self {
            gateway: Some(gateway.to_vec()),
            rest: Some(rest.to_vec()),
        })
    }
}

/// `cores` as the kernel's mask.
fn mask(cores: &[usize]) -> anyhow::Result<CpuSet> {
    if cores.is_empty() {
        bail!("an empty set of cores");
    }
    let mut set = CpuSet::new();
    for &cpu in cores {
        set.set(cpu)
            .with_context(|| format!("core {cpu} is beyond what a CPU mask holds"))?;
    }
    Ok(set)
}

/// Pins the calling thread to `cores`.
pub fn pin_current_thread(cores: &[usize]) -> anyhow::Result<()> {
    sched_setaffinity(Pid::from_raw(0), &mask(cores)?)
        .with_context(|| format!("pin a thread to cores {}", list(cores)))
}

/// The calling thread pinned to some cores until dropped, when its mask is put back: the
/// processes it starts meanwhile inherit the pin.
pub struct PinnedThread {
    before: Option<CpuSet>,
}

impl PinnedThread {
    /// Pins the calling thread to `cores`; `None` pins nothing.
    pub fn to(cores: Option<&[usize]>) -> anyhow::Result<Self> {
        let Some(cores) = cores else {
            return Ok(Self { before: None });
        };
        let before = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
        pin_current_thread(cores)?;
        Ok(Self {
            before: Some(before),
        })
    }
}

impl Drop for PinnedThread {
    fn drop(&mut self) {
        if let Some(before) = &self.before {
            // Nothing to do if it fails: the thread stays on the narrower set of cores.
            let _ = sched_setaffinity(Pid::from_raw(0), before);
        }
    }
}

/// Moves every thread of every process below `root` (not `root` itself) to `cores`: the
/// stdio upstream a gateway started on its own cores goes where the other fixtures are.
/// Returns how many processes moved.
pub fn move_descendants(root: u32, cores: &[usize]) -> anyhow::Result<usize> {
    let set = mask(cores)?;
    let mut moved = 0;
    for pid in crate::cpu::tree(root)
        .into_iter()
        .filter(|&pid| pid != root)
    {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue; // it ended meanwhile
        };
        for task in tasks.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok()) {
            // A thread that ended meanwhile is no error.
            let _ = sched_setaffinity(Pid::from_raw(task), &set);
        }
        moved += 1;
    }
    Ok(moved)
}

/// `cores` the way `taskset -c` writes them: `0-3,8`.
pub fn list(cores: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &cpu in cores {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == cpu => *end = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    runs.iter()
        .map(|&(start, end)| {
            if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_gets_the_first_cores_and_the_rest_the_others() {
        let allowed = [0, 1, 2, 3, 4, 5];
        assert_eq!(
            Placement::split(&allowed, 2),
            Some(Placement {
                gateway: Some(vec![0, 1]),
                rest: Some(vec![2, 3, 4, 5]),
            })
        );
    }

    #[test]
    fn every_core_pins_nothing_and_too_many_is_refused() {
        let allowed = [0, 2, 4, 6];
        assert_eq!(
            Placement::split(&allowed, 4),
            Some(Placement {
                gateway: None,
                rest: None
            })
        );
        assert_eq!(Placement::split(&allowed, 5), None);
        assert_eq!(Placement::split(&allowed, 0), None);
        // A process already narrowed to some cores splits those, not 0..N.
        assert_eq!(
            Placement::split(&allowed, 1).and_then(|p| p.gateway),
            Some(vec![0])
        );
        assert_eq!(
            Placement::split(&allowed, 3).and_then(|p| p.rest),
            Some(vec![6])
        );
    }

    #[test]
    fn core_lists_read_like_taskset() {
        assert_eq!(list(&[0, 1, 2, 3]), "0-3");
        assert_eq!(list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(list(&[5]), "5");
        assert_eq!(list(&[]), "");
    }

    #[test]
    fn masks_hold_their_cores_and_refuse_none() {
        let set = mask(&[0, 3]).expect("a mask");
        assert_eq!(set.is_set(0), Ok(true));
        assert_eq!(set.is_set(1), Ok(false));
        assert_eq!(set.is_set(3), Ok(true));
        assert!(mask(&[]).is_err());
        assert!(mask(&[CpuSet::count()]).is_err());
    }

    #[test]
    fn a_pinned_thread_gets_its_mask_back() {
        let before = allowed().expect("the mask");
        let first = before[0];
        std::thread::spawn(move || {
            {
                let _pinned = PinnedThread::to(Some(&[first])).expect("pin");
                assert_eq!(allowed().expect("mask"), vec![first]);
            }
            assert_eq!(allowed().expect("mask"), before);
        })
        .join()
        .expect("the thread");
    }
}
