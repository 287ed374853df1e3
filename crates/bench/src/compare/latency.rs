//! Side by side, in one run: the echo tool called directly and through gateways — Switchboard
//! and the peers — for stdio → stdio, HTTP → stdio and HTTP → HTTP. Latency is measured
//! with sequential calls alternating between the targets, so drift on this machine hits every
//! target alike (in an order that rotates every round), and reported as a difference to
//! direct, in three passes: alternating call by call ("spaced": a target's process has slept
//! while the others answered, a millisecond or so); alternating in blocks of [`BLOCK`] calls
//! ("back to back": a target's calls follow each other at once); and with the whole machine
//! left idle before every call ("sparse", [`SparsePass`]: an agent's calls separated by model
//! time, which find the caches cold and every core asleep). Throughput is in
//! [`crate::throughput`]; the run as a whole is [`super`].

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::cpu;
use crate::peers::{self, Peer, PeerUpstream};
use crate::report::Percentiles;
use crate::scenarios::Binaries;
use crate::targets::{self, Endpoint, Lineup, Spawned};

/// One target of a comparison.
struct Target {
    name: String,
    endpoint: Endpoint,
    samples: Vec<Duration>,
    /// The server-side processes of the calls (with their children), for CPU per call.
    servers: Vec<u32>,
    /// It takes one call in this many rounds (a slow peer's; see `PeerGateway::stride`).
    stride: usize,
}

impl Target {
    /// Whether it takes a call in round `round`.
    fn calls_in(&self, round: usize) -> bool {
        round.is_multiple_of(self.stride)
    }
}

/// A measured target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetResult {
    pub target: String,
    pub latency: Percentiles,
    /// p50 minus the direct p50, in µs (absent for direct itself).
    pub added_p50_us: Option<f64>,
    /// Latency of the same number of calls made back to back, in blocks of [`BLOCK`].
    pub back_to_back: Percentiles,
    /// Its p50 minus the direct one's, in µs (absent for direct itself).
    pub back_to_back_added_p50_us: Option<f64>,
    /// Latency of calls made after the machine sat idle for the sparse pass's gap (absent
    /// when the pass made no calls).
    pub sparse: Option<Percentiles>,
    /// Its p50 minus the direct one's, in µs (absent for direct itself).
    pub sparse_added_p50_us: Option<f64>,
    /// The sparse pass's samples, in µs, sorted (for its CDF plot).
    #[serde(skip)]
    pub sparse_samples_us: Vec<f64>,
    /// CPU time the server side spent per call (the gateway, its upstream and their children),
    /// in µs: unlike latency, it hardly moves with the load of the machine.
    pub server_cpu_us: Option<f64>,
    /// Every sample, in µs, sorted (for the CDF plots).
    #[serde(skip)]
    pub samples_us: Vec<f64>,
}

/// One scenario's targets.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub calls: usize,
    /// The sparse pass's idle time before each call, in ms (absent when it made no calls).
    pub sparse_gap_ms: Option<u64>,
    pub targets: Vec<TargetResult>,
    /// Peers that could not be measured, and why.
    pub missing: Vec<String>,
}

/// Calls per target in a row in the back-to-back pass.
pub const BLOCK: usize = 100;

/// The sparse pass: `calls` rounds in which every target in turn is called after `gap` of
/// nothing (the client sleeps too), so each call finds the machine idle.
#[derive(Debug, Clone, Copy)]
pub struct SparsePass {
    pub calls: usize,
    pub gap: Duration,
}

/// How many calls each latency pass makes of every target.
#[derive(Debug, Clone, Copy)]
pub struct Passes {
    /// Calls of the spaced pass, and as many of the back-to-back one.
    pub calls: usize,
    pub sparse: SparsePass,
}

/// The order of the targets in round `round`: rotated by one each round, so that no target
/// is always called right after the same other one (a call that follows another gateway's
/// finds more of the kernel's paths warm, which moved a sparse call's p50 by up to 28 µs).
fn in_turn(count: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |k| (round + k) % count)
}

/// Calls every target `calls` times after a warm-up, one call each in turn; then `calls`
/// times more, [`BLOCK`] calls each in turn; then the sparse pass, the order rotating every
/// round ([`in_turn`]). A target with a stride of k takes part in one round in k, and makes
/// [`BLOCK`] / k calls of each block.
fn measure(
    scenario: &str,
    mut targets: Vec<Target>,
    passes: Passes,
    missing: Vec<String>,
) -> anyhow::Result<Comparison> {
    let Passes {
        calls,
        sparse: sparse_pass,
    } = passes;
    let count = targets.len();
    for round in 0..calls.min(200) {
        for target in targets.iter_mut().filter(|t| t.calls_in(round)) {
            target.endpoint.call()?;
        }
    }
    let started: Vec<Duration> = targets.iter().map(|t| cpu::trees(&t.servers)).collect();
    for round in 0..calls {
        for index in in_turn(count, round) {
            let target = &mut targets[index];
            if target.calls_in(round) {
                let elapsed = target.endpoint.call()?;
                target.samples.push(elapsed);
            }
        }
    }
    let spent: Vec<Duration> = targets
        .iter()
        .zip(started)
        .map(|(t, started)| cpu::trees(&t.servers).saturating_sub(started))
        .collect();
    let mut back_to_back: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); count];
    for block in 0..calls.div_ceil(BLOCK) {
        let size = BLOCK.min(calls - block * BLOCK);
        for index in in_turn(count, block) {
            let target = &mut targets[index];
            for _ in 0..size.div_ceil(target.stride) {
                back_to_back[index].push(target.endpoint.call()?);
            }
        }
    }
    let mut sparse: Vec<Vec<Duration>> = vec![Vec::new(); count];
    for round in 0..sparse_pass.calls {
        for index in in_turn(count, round) {
            let target = &mut targets[index];
            if target.calls_in(round) {
                std::thread::sleep(sparse_pass.gap);
                sparse[index].push(target.endpoint.call()?);
            }
        }
    }
    let mut results: Vec<TargetResult> = targets
        .into_iter()
        .zip(spent)
        .zip(back_to_back)
        .zip(sparse)
        .map(|(((mut target, spent), mut back_to_back), mut sparse)| {
            let latency = Percentiles::of(&mut target.samples);
            let made = target.samples.len() as u64;
            let server_cpu_us = (!target.servers.is_empty()).then(|| cpu::per_call_us(spent, made));
            TargetResult {
                server_cpu_us,
                target: target.name,
                samples_us: micros(&target.samples),
                latency,
                added_p50_us: None,
                back_to_back: Percentiles::of(&mut back_to_back),
                back_to_back_added_p50_us: None,
                sparse: (sparse_pass.calls > 0).then(|| Percentiles::of(&mut sparse)),
                sparse_added_p50_us: None,
                sparse_samples_us: micros(&sparse),
            }
        })
        .collect();
    let direct = results
        .first()
        .map(|r| {
            let sparse = r.sparse.as_ref().map(|s| s.p50_us);
            (r.latency.p50_us, r.back_to_back.p50_us, sparse)
        })
        .unwrap_or_default();
    for result in results.iter_mut().skip(1) {
        result.added_p50_us = Some(result.latency.p50_us - direct.0);
        result.back_to_back_added_p50_us = Some(result.back_to_back.p50_us - direct.1);
        result.sparse_added_p50_us = result
            .sparse
            .as_ref()
            .zip(direct.2)
            .map(|(sparse, direct)| sparse.p50_us - direct);
    }
    Ok(Comparison {
        scenario: scenario.to_owned(),
        calls,
        sparse_gap_ms: (sparse_pass.calls > 0).then_some(sparse_pass.gap.as_millis() as u64),
        targets: results,
        missing,
    })
}

/// Samples in µs, in their order (sorted, once `Percentiles::of` has seen them).
fn micros(samples: &[Duration]) -> Vec<f64> {
    samples.iter().map(|d| d.as_secs_f64() * 1e6).collect()
}

/// A target; a stdio endpoint's server side is its own child, an HTTP one's is `servers`.
fn target(name: &str, endpoint: Endpoint, mut servers: Vec<u32>) -> Target {
    servers.extend(endpoint.child_pid());
    Target {
        name: name.to_owned(),
        endpoint,
        samples: Vec::new(),
        servers,
        stride: 1,
    }
}

fn direct_stdio(bins: &Binaries) -> anyhow::Result<Target> {
    let mut command = Command::new(&bins.fixture);
    command.arg("echo");
    Ok(target(
        "direct (stdio fixture)",
        Endpoint::stdio(command, "echo")?,
        Vec::new(),
    ))
}

/// Starts the peers installed in `peers_dir` in front of `upstream`; keeps their processes
/// alive in `keep`. `upstream_pid` is the HTTP fixture behind them, if any (a stdio one is
/// their child).
fn peers(
    bins: &Binaries,
    peers_dir: &Path,
    upstream: &PeerUpstream<'_>,
    upstream_pid: Option<u32>,
    dir: &Path,
    keep: &mut Vec<Spawned>,
) -> anyhow::Result<(Vec<Target>, Vec<String>)> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for peer in Peer::ALL {
        match peers::peer_http(bins, peers_dir, peer, upstream, dir)? {
            Ok(gateway) => match Endpoint::http(&gateway.url, gateway.tool) {
                Ok(endpoint) => {
                    let mut servers = vec![gateway.process.pid()];
                    servers.extend(upstream_pid);
                    keep.push(gateway.process);
                    found.push(Target {
                        stride: gateway.stride,
                        ..target(peer.label(), endpoint, servers)
                    });
                }
                Err(error) => missing.push(format!("{}: {error:#}", peer.label())),
            },
            Err(reason) => missing.push(reason),
        }
    }
    Ok((found, missing))
}

/// An HTTP gateway of `bins` in front of `upstream` (a server's TOML), kept alive in `keep`;
/// its server side is the gateway and, for an HTTP upstream, `upstream_pid`.
fn http_gateway(
    bins: &Binaries,
    name: &str,
    dir: &Path,
    upstream: &str,
    upstream_pid: Option<u32>,
    keep: &mut Vec<Spawned>,
) -> anyhow::Result<Target> {
    let (process, url) = targets::switchboard_http(bins, dir, upstream)?;
    let mut servers = vec![process.pid()];
    servers.extend(upstream_pid);
    keep.push(process);
    Ok(target(name, Endpoint::http(&url, "echo__echo")?, servers))
}

/// The three latency scenarios, each handed to `measured` as soon as it is measured: direct,
/// every build of Switchboard in `lineup` (this one and `--against`'s), and the peers.
pub fn latency(
    lineup: &Lineup<'_>,
    passes: Passes,
    measured: &mut dyn FnMut(&Comparison),
) -> anyhow::Result<Vec<Comparison>> {
    let bins = lineup.bins;
    let dir = tempfile::tempdir()?;
    let mut keep = Vec::new();
    let mut results = Vec::new();
    let mut done = |comparison: Comparison| {
        measured(&comparison);
        results.push(comparison);
    };

    // stdio → stdio
    let mut stdio_stdio = vec![direct_stdio(bins)?];
    for (build, label) in lineup.switchboards() {
        let gateway = crate::scenarios::gateway_over_stdio_fixture(build, dir.path())?;
        stdio_stdio.push(target(
            label,
            Endpoint::stdio(gateway, "echo__echo")?,
            Vec::new(),
        ));
    }
    done(measure("stdio → stdio", stdio_stdio, passes, Vec::new())?);

    // HTTP → stdio
    let upstream = targets::stdio_upstream(bins);
    let mut http_stdio = vec![direct_stdio(bins)?];
    for (build, label) in lineup.switchboards() {
        http_stdio.push(http_gateway(
            build,
            label,
            dir.path(),
            &upstream,
            None,
            &mut keep,
        )?);
    }
    let mut missing = Vec::new();
    if let Some(peers_dir) = &lineup.peers {
        let (found, absent) = peers(
            bins,
            peers_dir,
            &PeerUpstream::Stdio,
            None,
            dir.path(),
            &mut keep,
        )?;
        http_stdio.extend(found);
        missing = absent;
    }
    done(measure("HTTP → stdio", http_stdio, passes, missing)?);

    // HTTP → HTTP
    let (fixture, fixture_url) = targets::http_fixture(bins)?;
    let fixture_pid = fixture.pid();
    keep.push(fixture);
    let upstream = format!("url = {}", serde_json::json!(fixture_url));
    let mut http_http = vec![target(
        "direct (HTTP fixture)",
        Endpoint::http(&fixture_url, "echo")?,
        vec![fixture_pid],
    )];
    for (build, label) in lineup.switchboards() {
        http_http.push(http_gateway(
            build,
            label,
            dir.path(),
            &upstream,
            Some(fixture_pid),
            &mut keep,
        )?);
    }
    let mut missing = Vec::new();
    if let Some(peers_dir) = &lineup.peers {
        let upstream = PeerUpstream::Http(&fixture_url);
        let (found, absent) = peers(
            bins,
            peers_dir,
            &upstream,
            Some(fixture_pid),
            dir.path(),
            &mut keep,
        )?;
        http_http.extend(found);
        missing = absent;
    }
    done(measure("HTTP → HTTP", http_http, passes, missing)?);
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::in_turn;

    #[test]
    fn every_target_is_called_once_a_round_and_leads_in_turn() {
        let rounds: Vec<Vec<usize>> = (0..4).map(|round| in_turn(3, round).collect()).collect();
        assert_eq!(rounds, [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]);
    }
}
