//! HTTP → stdio with a pool of stdio servers: Switchboard in front of the echo fixture with
//! `instances = N` in its `[servers.echo]` entry (N stdio processes of the one server, calls
//! spread over them), for each N of `--instances`, beside the floor, whose one pipe caps it.
//! The key is written only for N > 1, so N = 1 runs on a gateway that predates it; a gateway
//! that refuses the key is noted, not fatal. Every gateway runs at once, unpinned, and the
//! targets alternate in the rounds of [`crate::throughput::rounds`]. The server side of a
//! call is the gateway and every process below it (its stdio servers); after the run the
//! table says how many echo servers were running below it, which shows whether the pool was
//! there.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;

use crate::cpu;
use crate::peers::{self, Peer, PeerUpstream};
use crate::targets::{self, Lineup, Spawned};
use crate::throughput::{self, HttpTarget, Load};

/// One target of the instances table.
#[derive(Debug, Clone, Serialize)]
pub struct InstancesRow {
    pub target: String,
    /// `instances` of Switchboard's echo server (absent for the floor).
    pub instances: Option<usize>,
    pub calls_per_second: f64,
    /// CPU per call of the gateway and every process below it, in µs.
    pub server_cpu_us: f64,
    /// Echo servers running below the gateway after the run (N for a working pool).
    pub echo_servers: usize,
}

/// The instances run.
#[derive(Debug, Clone, Serialize)]
pub struct Instances {
    pub concurrency: usize,
    pub rows: Vec<InstancesRow>,
    /// Targets that could not be measured, and why.
    pub missing: Vec<String>,
}

/// The `[servers.echo]` body of the echo fixture with `count` instances (the key left out for
/// one, which every gateway understands).
fn upstream_with_instances(stdio_upstream: &str, count: usize) -> String {
    if count > 1 {
        format!("{stdio_upstream}\ninstances = {count}")
    } else {
        stdio_upstream.to_owned()
    }
}

/// How many processes below `root` run `program` (a gateway may also start helpers of its
/// own, which are not servers).
fn running_below(root: u32, program: &Path) -> usize {
    cpu::tree(root)
        .into_iter()
        .filter(|&pid| pid != root)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                cmdline.split(|&byte| byte == 0).next() == Some(program.as_os_str().as_bytes())
            })
        })
        .count()
}

/// Measures the floor and Switchboard with each of `counts` instances, alternating.
pub fn measure(
    lineup: &Lineup<'_>,
    counts: &[usize],
    concurrency: usize,
    seconds: f64,
) -> anyhow::Result<Instances> {
    let bins = lineup.bins;
    let dir = tempfile::tempdir()?;
    let mut keep: Vec<Spawned> = Vec::new();
    let mut targets = Vec::new();
    let mut counted = Vec::new();
    let mut missing = Vec::new();
    match peers::floor(bins, &PeerUpstream::Stdio, dir.path())? {
        Ok(floor) => {
            targets.push(HttpTarget {
                name: Peer::BareForwarder.label().to_owned(),
                url: floor.url,
                tool: floor.tool.to_owned(),
                servers: vec![floor.process.pid()],
            });
            counted.push(None);
            keep.push(floor.process);
        }
        Err(reason) => missing.push(reason),
    }
    let stdio = targets::stdio_upstream(bins);
    for &count in counts {
        let label = format!("switchboard, instances = {count}");
        let upstream = upstream_with_instances(&stdio, count);
        match targets::switchboard_http(bins, dir.path(), &upstream) {
            Ok((process, url)) => {
                targets.push(HttpTarget {
                    name: label,
                    url,
                    tool: "echo__echo".to_owned(),
                    servers: vec![process.pid()],
                });
                counted.push(Some(count));
                keep.push(process);
            }
            Err(error) => missing.push(format!("{label}: {error:#}")),
        }
    }
    let load = Load {
        concurrency,
        seconds,
        client_cores: None,
    };
    let outcomes = throughput::rounds(&targets, &load);
    let mut rows = Vec::new();
    for ((target, instances), outcome) in targets.iter().zip(counted).zip(outcomes) {
        match outcome {
            Ok(measured) => rows.push(InstancesRow {
                target: target.name.clone(),
                instances,
                calls_per_second: measured.per_second,
                server_cpu_us: measured.cpu.server_us,
                echo_servers: target
                    .servers
                    .first()
                    .map_or(0, |&pid| running_below(pid, &bins.fixture)),
            }),
            Err(reason) => missing.push(reason),
        }
    }
    drop(keep);
    Ok(Instances {
        concurrency,
        rows,
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::upstream_with_instances;

    #[test]
    fn the_key_is_written_only_for_a_pool() {
        let echo = "command = \"fixture\"\nargs = [\"echo\"]";
        assert_eq!(upstream_with_instances(echo, 1), echo);
        assert_eq!(
            upstream_with_instances(echo, 4),
            format!("{echo}\ninstances = 4")
        );
    }
}
