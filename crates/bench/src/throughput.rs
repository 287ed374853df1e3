//! Throughput side by side: calls per second of direct, Switchboard and the peers over HTTP
//! at concurrency C (one keep-alive connection and session per worker), in rounds that
//! alternate the targets, reported as a ratio to direct with the CPU time per call of the
//! client and of the server side.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::cpu;
use crate::peers::{self, Peer, PeerUpstream};
use crate::scenarios::Binaries;
use crate::targets::{self, Endpoint};

/// Calls per second of one HTTP target at `concurrency`, for `duration`.
fn calls_per_second(
    url: &str,
    tool: &str,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<Rate> {
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        workers.push(Endpoint::http(url, tool)?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let client_before = cpu::own();
    let handles: Vec<_> = workers
        .into_iter()
        .map(|mut endpoint| {
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || -> anyhow::Result<()> {
                while !stop.load(Ordering::Relaxed) {
                    endpoint.call()?;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    // A worker whose call failed stopped early: the rate would be wrong, so the run fails.
    for handle in handles {
        handle
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")))
            .with_context(|| format!("{url} at concurrency {concurrency}"))?;
    }
    let calls = done.load(Ordering::Relaxed);
    Ok(Rate {
        calls,
        per_second: calls as f64 / started.elapsed().as_secs_f64(),
        client_cpu: cpu::own().saturating_sub(client_before),
    })
}

/// What one throughput measurement counted.
struct Rate {
    calls: u64,
    per_second: f64,
    /// CPU time the load generator spent meanwhile.
    client_cpu: Duration,
}

/// CPU time per call of one throughput target, in µs, over all rounds at one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct CpuPerCall {
    pub target: String,
    /// The load generator (HTTP client) per call.
    pub client_us: f64,
    /// The server side per call: the gateway, the upstream it calls, and their children.
    pub server_us: f64,
    /// Calls per second that much CPU allows on this machine's cores, if nothing else ran.
    pub ceiling_per_second: f64,
}

fn cpu_per_call(target: &str, calls: u64, client: Duration, server: Duration) -> CpuPerCall {
    let client_us = cpu::per_call_us(client, calls);
    let server_us = cpu::per_call_us(server, calls);
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    CpuPerCall {
        target: target.to_owned(),
        client_us,
        server_us,
        ceiling_per_second: cores * 1e6 / (client_us + server_us).max(f64::MIN_POSITIVE),
    }
}

/// Throughput over HTTP at one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    pub scenario: String,
    pub concurrency: usize,
    /// (target, calls per second, ratio to direct).
    pub targets: Vec<(String, f64, f64)>,
    /// CPU time per call of each target, same order.
    pub cpu: Vec<CpuPerCall>,
    pub missing: Vec<String>,
}

/// HTTP → HTTP throughput, direct vs Switchboard (and peers in front of the stdio fixture,
/// HTTP → stdio), at each concurrency; rounds alternate the targets.
pub fn measure(
    bins: &Binaries,
    concurrencies: &[usize],
    seconds: f64,
    with_peers: bool,
) -> anyhow::Result<Vec<Throughput>> {
    let dir = tempfile::tempdir()?;
    let (fixture, fixture_url) = targets::http_fixture(bins)?;
    let (gateway, gateway_url) = targets::switchboard_http(
        bins,
        dir.path(),
        &format!("url = {}", serde_json::json!(fixture_url)),
    )?;
    let (stdio_gateway, stdio_gateway_url) =
        targets::switchboard_http(bins, dir.path(), &targets::stdio_upstream(bins))?;
    // Each target with the processes a call passes through on the server side.
    let mut urls = vec![
        (
            "direct (HTTP fixture)".to_owned(),
            fixture_url,
            "echo",
            vec![fixture.pid()],
        ),
        (
            "switchboard HTTP → HTTP".to_owned(),
            gateway_url,
            "echo__echo",
            vec![gateway.pid(), fixture.pid()],
        ),
        (
            "switchboard HTTP → stdio".to_owned(),
            stdio_gateway_url,
            "echo__echo",
            vec![stdio_gateway.pid()],
        ),
    ];
    let fixture_pid = fixture.pid();
    let mut keep = vec![fixture, gateway, stdio_gateway];
    let mut missing = Vec::new();
    if with_peers {
        for peer in Peer::ALL {
            let upstreams = [
                ("HTTP → HTTP", PeerUpstream::Http(&urls[0].1.clone())),
                ("HTTP → stdio", PeerUpstream::Stdio),
            ];
            for (label, upstream) in &upstreams {
                match peers::peer_http(bins, peer, upstream, dir.path())? {
                    Ok(gateway) => {
                        let mut pids = vec![gateway.process.pid()];
                        if matches!(upstream, PeerUpstream::Http(_)) {
                            pids.push(fixture_pid);
                        }
                        keep.push(gateway.process);
                        urls.push((
                            format!("{} {label}", peer.label()),
                            gateway.url,
                            gateway.tool,
                            pids,
                        ));
                    }
                    Err(reason) => missing.push(reason),
                }
            }
        }
    }
    let per_round = Duration::from_secs_f64(seconds / 2.0);
    let mut results = Vec::new();
    for &concurrency in concurrencies {
        let mut totals = vec![0.0; urls.len()];
        let mut spent = vec![(0u64, Duration::ZERO, Duration::ZERO); urls.len()];
        for _round in 0..2 {
            for (index, (name, url, tool, pids)) in urls.iter().enumerate() {
                let server_before = cpu::trees(pids);
                match calls_per_second(url, tool, concurrency, per_round) {
                    Ok(rate) => {
                        totals[index] += rate.per_second / 2.0;
                        let (calls, client, server) = &mut spent[index];
                        *calls += rate.calls;
                        *client += rate.client_cpu;
                        *server += cpu::trees(pids).saturating_sub(server_before);
                    }
                    Err(error) => missing.push(format!("{name} at c={concurrency}: {error:#}")),
                }
            }
        }
        let direct = totals
            .first()
            .copied()
            .unwrap_or(0.0)
            .max(f64::MIN_POSITIVE);
        results.push(Throughput {
            scenario: "tools/call echo over HTTP".to_owned(),
            concurrency,
            targets: urls
                .iter()
                .zip(&totals)
                .map(|((name, _, _, _), rate)| (name.clone(), *rate, rate / direct))
                .collect(),
            cpu: urls
                .iter()
                .zip(&spent)
                .map(|((name, _, _, _), (calls, client, server))| {
                    cpu_per_call(name, *calls, *client, *server)
                })
                .collect(),
            missing: missing.clone(),
        });
    }
    drop(keep);
    Ok(results)
}
