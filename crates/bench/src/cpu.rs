//! CPU time of processes, from `/proc`: what a call costs each side, whatever else the machine
//! is doing. Throughput on a machine with few cores is bounded by the CPU every call needs in
//! all the processes it passes through (the client included), so the throughput runs report it
//! per call, split into the client and the server side (a process and all its descendants).

use std::time::Duration;

/// `/proc` counts CPU time in USER_HZ ticks, 100 per second on Linux whatever the kernel's
/// own tick rate.
const TICKS_PER_SECOND: u64 = 100;

/// User + system CPU time of one process (all its threads), or `None` once it is gone.
fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = fields_after_name(&stat)?;
    // After the name: state is field 3 of stat(5), utime 14 and stime 15.
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// The fields after `pid (name)`; the name may hold spaces and parentheses.
fn fields_after_name(stat: &str) -> Option<Vec<&str>> {
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// The parent of `pid`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    fields_after_name(&stat)?.get(1)?.parse().ok()
}

/// `root` and every process below it.
pub fn tree(root: u32) -> Vec<u32> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut members = vec![root];
    let mut grew = true;
    while grew {
        grew = false;
        for pid in &all {
            if !members.contains(pid) && parent(*pid).is_some_and(|p| members.contains(&p)) {
                members.push(*pid);
                grew = true;
            }
        }
    }
    members
}

/// CPU time used so far by the processes rooted at `roots` (each with its descendants).
pub fn trees(roots: &[u32]) -> Duration {
    let mut pids: Vec<u32> = roots.iter().flat_map(|root| tree(*root)).collect();
    pids.sort_unstable();
    pids.dedup();
    ticks_to_duration(pids.into_iter().filter_map(process_ticks).sum())
}

/// CPU time used so far by this process (the load generator's workers).
pub fn own() -> Duration {
    ticks_to_duration(process_ticks(std::process::id()).unwrap_or(0))
}

/// `spent` over `calls`, in µs.
pub fn per_call_us(spent: Duration, calls: u64) -> f64 {
    spent.as_secs_f64() * 1e6 / calls.max(1) as f64
}

fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_counted_in_its_parents_tree() {
        let before = trees(&[std::process::id()]);
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .spawn()
            .expect("sh runs");
        // Wait until the loop has burnt some CPU, while the child is still alive.
        let started = std::time::Instant::now();
        let mut seen = Duration::ZERO;
        while started.elapsed() < Duration::from_secs(4) {
            seen = trees(&[std::process::id()]).saturating_sub(before);
            if seen >= Duration::from_millis(100) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            seen >= Duration::from_millis(100),
            "the child's CPU time was not counted: {seen:?}"
        );
    }

    #[test]
    fn names_with_spaces_and_parentheses_are_skipped_whole() {
        let stat = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1";
        let fields = fields_after_name(stat).expect("parses");
        assert_eq!(fields[0], "S");
        assert_eq!(fields[1], "7");
        assert_eq!(fields[11], "250");
        assert_eq!(fields[12], "30");
    }
}
