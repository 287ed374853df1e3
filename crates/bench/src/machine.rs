//! What the machine does besides the benchmark: how its idle cores sleep, and, on request,
//! other work competing for its cores.
//!
//! Both move sequential latency more than most code changes do. On a virtual machine whose
//! idle cores halt at once (no guest halt polling), every wake-up of a process on an idle
//! core is a VM exit, so each extra process hop of a gateway costs one; a busy machine
//! instead puts the client, the gateway and the upstream on the same cores, where how they
//! share a core decides the tail. Reports name the first, and `bench latency --busy-threads`
//! produces the second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// How this machine's idle cores sleep, as one line for a report; `None` where Linux's
/// cpuidle files are absent.
pub fn idle_config() -> Option<String> {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|text| text.trim().to_owned())
    };
    let driver = read("/sys/devices/system/cpu/cpuidle/current_driver")?;
    let mut line = format!("idle cores: cpuidle driver {driver}");
    if let Some(poll_ns) = read("/sys/module/haltpoll/parameters/guest_halt_poll_ns") {
        line.push_str(&format!(", guest_halt_poll_ns {poll_ns}"));
        if poll_ns == "0" {
            line.push_str(" (an idle core halts at once: waking a process on it is a VM exit)");
        }
    }
    Some(line)
}

/// Threads spinning on the CPU until dropped: other work on the machine.
pub struct CpuLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl CpuLoad {
    pub fn start(threads: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n = std::hint::black_box(n.wrapping_add(1));
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_spins_until_dropped() {
        // utime of this process, in clock ticks (10 ms).
        let spent = || {
            std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|stat| {
                    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
                    fields.get(11)?.parse::<u64>().ok()
                })
                .expect("utime in /proc/self/stat")
        };
        let load = CpuLoad::start(1);
        let before = spent();
        std::thread::sleep(std::time::Duration::from_millis(400));
        let during = spent() - before;
        drop(load);
        assert!(
            during >= 10,
            "a spinning thread spends most of 400 ms on the CPU, got {during} ticks"
        );
    }
}
