//! Throughput side by side: calls per second of direct, Switchboard (this build and
//! `--against`'s) and the peers over HTTP at concurrency C (one keep-alive connection, session
//! and client thread per worker), in rounds that alternate the targets, reported as a ratio to
//! direct with the CPU time per call of the client and of the server side. [`rounds`] is the
//! measurement itself, which the scaling and instances tables reuse.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::affinity;
use crate::cpu;
use crate::peers::{self, Peer, PeerUpstream};
use crate::targets::{self, Endpoint, Lineup, Spawned};

/// Calls per second of one HTTP target under `load`, for `duration`.
fn calls_per_second(target: &HttpTarget, load: &Load, duration: Duration) -> anyhow::Result<Rate> {
    let mut workers = Vec::with_capacity(load.concurrency);
    for _ in 0..load.concurrency {
        workers.push(Endpoint::http(&target.url, &target.tool)?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let client_before = cpu::own();
    let handles: Vec<_> = workers
        .into_iter()
        .map(|mut endpoint| {
            let (stop, done) = (stop.clone(), done.clone());
            let cores = load.client_cores.clone();
            std::thread::spawn(move || -> anyhow::Result<()> {
                if let Some(cores) = &cores {
                    affinity::pin_current_thread(cores)?;
                }
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
            .with_context(|| format!("{} at concurrency {}", target.url, load.concurrency))?;
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

/// One HTTP target of a throughput run.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub name: String,
    pub url: String,
    /// The echo tool's name there.
    pub tool: String,
    /// The server-side processes of its calls (each with its children), for CPU per call.
    pub servers: Vec<u32>,
}

/// How the targets are loaded.
pub struct Load {
    /// Client threads, each with its connection and session.
    pub concurrency: usize,
    /// Seconds per target, split over two alternating rounds.
    pub seconds: f64,
    /// Where the client threads run (`None`: wherever the kernel puts them).
    pub client_cores: Option<affinity::Cores>,
}

/// What the rounds measured of one target.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Mean calls per second over the rounds.
    pub per_second: f64,
    pub cpu: CpuPerCall,
}

/// Two rounds over `targets`, each target loaded for half of `load.seconds` in turn; for
/// each target, in order, what it sustained, or why it could not be measured.
pub fn rounds(targets: &[HttpTarget], load: &Load) -> Vec<Result<Measured, String>> {
    let per_round = Duration::from_secs_f64(load.seconds / 2.0);
    let mut totals = vec![0.0; targets.len()];
    let mut spent = vec![(0u64, Duration::ZERO, Duration::ZERO); targets.len()];
    let mut failed: Vec<Option<String>> = vec![None; targets.len()];
    for _round in 0..2 {
        for (index, target) in targets.iter().enumerate() {
            if failed[index].is_some() {
                continue;
            }
            let server_before = cpu::trees(&target.servers);
            match calls_per_second(target, load, per_round) {
                Ok(rate) => {
                    totals[index] += rate.per_second / 2.0;
                    let (calls, client, server) = &mut spent[index];
                    *calls += rate.calls;
                    *client += rate.client_cpu;
                    *server += cpu::trees(&target.servers).saturating_sub(server_before);
                }
                Err(error) => {
                    failed[index] = Some(format!(
                        "{} at c={}: {error:#}",
                        target.name, load.concurrency
                    ));
                }
            }
        }
    }
    targets
        .iter()
        .zip(totals)
        .zip(spent)
        .zip(failed)
        .map(
            |(((target, per_second), (calls, client, server)), failed)| match failed {
                Some(reason) => Err(reason),
                None => Ok(Measured {
                    per_second,
                    cpu: cpu_per_call(&target.name, calls, client, server),
                }),
            },
        )
        .collect()
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

/// Direct, every build of Switchboard in `lineup` (HTTP → HTTP and HTTP → stdio) and the
/// peers (both ways) at each concurrency, rounds alternating the targets; each concurrency's
/// figures handed to `measured` as soon as they are in.
pub fn measure(
    lineup: &Lineup<'_>,
    concurrencies: &[usize],
    seconds: f64,
    measured: &mut dyn FnMut(&Throughput),
) -> anyhow::Result<Vec<Throughput>> {
    let bins = lineup.bins;
    let dir = tempfile::tempdir()?;
    let (fixture, fixture_url) = targets::http_fixture(bins)?;
    let fixture_pid = fixture.pid();
    let mut keep: Vec<Spawned> = vec![fixture];
    let mut targets = vec![HttpTarget {
        name: "direct (HTTP fixture)".to_owned(),
        url: fixture_url.clone(),
        tool: "echo".to_owned(),
        servers: vec![fixture_pid],
    }];
    let http_upstream = format!("url = {}", serde_json::json!(fixture_url));
    let stdio_upstream = targets::stdio_upstream(bins);
    for (build, label) in lineup.switchboards() {
        for (way, upstream, fixture) in [
            ("HTTP → HTTP", &http_upstream, Some(fixture_pid)),
            ("HTTP → stdio", &stdio_upstream, None),
        ] {
            let (gateway, url) = targets::switchboard_http(build, dir.path(), upstream)?;
            let mut servers = vec![gateway.pid()];
            servers.extend(fixture);
            targets.push(HttpTarget {
                name: format!("{label} {way}"),
                url,
                tool: "echo__echo".to_owned(),
                servers,
            });
            keep.push(gateway);
        }
    }
    let mut missing = Vec::new();
    if let Some(peers_dir) = &lineup.peers {
        for peer in Peer::ALL {
            let upstreams = [
                ("HTTP → HTTP", PeerUpstream::Http(&fixture_url)),
                ("HTTP → stdio", PeerUpstream::Stdio),
            ];
            for (way, upstream) in &upstreams {
                match peers::peer_http(bins, peers_dir, peer, upstream, dir.path())? {
                    Ok(gateway) => {
                        let mut servers = vec![gateway.process.pid()];
                        if matches!(upstream, PeerUpstream::Http(_)) {
                            servers.push(fixture_pid);
                        }
                        targets.push(HttpTarget {
                            name: format!("{} {way}", peer.label()),
                            url: gateway.url,
                            tool: gateway.tool.to_owned(),
                            servers,
                        });
                        keep.push(gateway.process);
                    }
                    // A peer that is not there is so for both ways: one note.
                    Err(reason) if !missing.contains(&reason) => missing.push(reason),
                    Err(_) => {}
                }
            }
        }
    }
    let mut results = Vec::new();
    for &concurrency in concurrencies {
        let load = Load {
            concurrency,
            seconds,
            client_cores: None,
        };
        let mut run = Throughput {
            scenario: "tools/call echo over HTTP".to_owned(),
            concurrency,
            targets: Vec::new(),
            cpu: Vec::new(),
            missing: missing.clone(),
        };
        let outcomes = rounds(&targets, &load);
        let direct = match outcomes.first() {
            Some(Ok(direct)) => direct.per_second.max(f64::MIN_POSITIVE),
            _ => f64::MIN_POSITIVE,
        };
        for (target, outcome) in targets.iter().zip(outcomes) {
            match outcome {
                Ok(measured) => {
                    let rate = measured.per_second;
                    run.targets.push((target.name.clone(), rate, rate / direct));
                    run.cpu.push(measured.cpu);
                }
                Err(reason) => run.missing.push(reason),
            }
        }
        measured(&run);
        results.push(run);
    }
    drop(keep);
    Ok(results)
}
