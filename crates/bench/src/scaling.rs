//! Throughput against cores: for each N of `--cores`, HTTP → HTTP and HTTP → stdio through
//! the floor (`switchboard-fixture forward`), every build of Switchboard (`serve --threads
//! N`) and the Rust mcp-proxy when installed, each gateway pinned to the first N cores this
//! process may use ([`crate::affinity`]); the load generator's threads, the HTTP fixture and
//! the gateways' stdio upstreams run on the other cores (with N = all of them nothing is
//! pinned). Each N gets fresh processes; its targets alternate in the rounds of
//! [`crate::throughput::rounds`], and each is read against the floor at the same N.

use std::path::Path;

use serde::Serialize;

use crate::affinity::{self, PinnedThread, Placement};
use crate::peers::{self, Peer, PeerGateway, PeerUpstream};
use crate::targets::{self, Endpoint, Lineup, Spawned};
use crate::throughput::{self, HttpTarget, Load};

/// One target at one N.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingRow {
    /// "HTTP → HTTP" or "HTTP → stdio".
    pub scenario: String,
    pub target: String,
    pub calls_per_second: f64,
    /// Calls per second over the floor's at the same N (absent for the floor, or without one).
    pub to_floor: Option<f64>,
    /// CPU per call of the server side (the gateway and its children, and the HTTP fixture
    /// for HTTP → HTTP), in µs.
    pub server_cpu_us: f64,
    /// CPU per call of the load generator, in µs.
    pub client_cpu_us: f64,
}

/// Everything measured with the gateways on N cores.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingStep {
    pub cores: usize,
    /// The gateways' cores (`taskset -c` style), absent when nothing was pinned.
    pub gateway_cores: Option<String>,
    /// The client's and fixtures' cores, absent when nothing was pinned.
    pub other_cores: Option<String>,
    pub concurrency: usize,
    pub rows: Vec<ScalingRow>,
    /// Targets that could not be measured, and why.
    pub missing: Vec<String>,
}

/// The scaling run.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub concurrency: usize,
    pub steps: Vec<ScalingStep>,
    /// Core counts left out (more than this process may use).
    pub skipped: Vec<String>,
}

/// Measures each N of `core_counts` in turn, handing each step to `measured` as it is done.
pub fn measure(
    lineup: &Lineup<'_>,
    core_counts: &[usize],
    concurrency: usize,
    seconds: f64,
    measured: &mut dyn FnMut(&ScalingStep),
) -> anyhow::Result<Scaling> {
    let allowed = affinity::allowed()?;
    let mut scaling = Scaling {
        concurrency,
        steps: Vec::new(),
        skipped: Vec::new(),
    };
    for &count in core_counts {
        let Some(placement) = Placement::split(&allowed, count) else {
            scaling.skipped.push(format!(
                "{count} cores: this process may use {} (cores {})",
                allowed.len(),
                affinity::list(&allowed)
            ));
            continue;
        };
        let step = step(lineup, count, &placement, concurrency, seconds)?;
        measured(&step);
        scaling.steps.push(step);
    }
    Ok(scaling)
}

/// A gateway started for one step: its target, and its process (kept alive).
struct Started {
    target: HttpTarget,
    process: Spawned,
}

/// One scenario's upstream, as Switchboard's config and the peers see it.
struct Way<'a> {
    name: &'static str,
    switchboard: String,
    peer: PeerUpstream<'a>,
    /// The HTTP fixture behind it, part of every call's server side.
    fixture: Option<u32>,
}

fn step(
    lineup: &Lineup<'_>,
    count: usize,
    placement: &Placement,
    concurrency: usize,
    seconds: f64,
) -> anyhow::Result<ScalingStep> {
    let bins = lineup.bins;
    let dir = tempfile::tempdir()?;
    let (fixture, fixture_url) = {
        let _pinned = PinnedThread::to(placement.rest.as_deref())?;
        targets::http_fixture(bins)?
    };
    let ways = [
        Way {
            name: "HTTP → HTTP",
            switchboard: format!("url = {}", serde_json::json!(fixture_url)),
            peer: PeerUpstream::Http(&fixture_url),
            fixture: Some(fixture.pid()),
        },
        Way {
            name: "HTTP → stdio",
            switchboard: targets::stdio_upstream(bins),
            peer: PeerUpstream::Stdio,
            fixture: None,
        },
    ];
    let mut missing = Vec::new();
    let mut started: Vec<Vec<Started>> = Vec::new();
    {
        // Everything started here inherits the gateways' cores.
        let _pinned = PinnedThread::to(placement.gateway.as_deref())?;
        for way in &ways {
            started.push(gateways(lineup, count, way, dir.path(), &mut missing)?);
        }
    }
    if let Some(rest) = &placement.rest {
        for gateway in started.iter().flatten() {
            // The gateway's stdio upstream may start at its first call: make one, then move
            // what it started off the gateway's cores. (A gateway that fails it fails the
            // rounds too, which say why.)
            if let Ok(mut endpoint) = Endpoint::http(&gateway.target.url, &gateway.target.tool) {
                let _ = endpoint.call();
            }
            affinity::move_descendants(gateway.process.pid(), rest)?;
        }
    }
    let load = Load {
        concurrency,
        seconds,
        client_cores: placement.rest.clone(),
    };
    let mut rows = Vec::new();
    for (way, gateways) in ways.iter().zip(&started) {
        let targets: Vec<HttpTarget> = gateways.iter().map(|g| g.target.clone()).collect();
        let outcomes = throughput::rounds(&targets, &load);
        // The floor is first when it started.
        let floor = match (targets.first(), outcomes.first()) {
            (Some(first), Some(Ok(measured))) if first.name == Peer::BareForwarder.label() => {
                Some(measured.per_second.max(f64::MIN_POSITIVE))
            }
            _ => None,
        };
        for (target, outcome) in targets.iter().zip(outcomes) {
            match outcome {
                Ok(measured) => rows.push(ScalingRow {
                    scenario: way.name.to_owned(),
                    target: target.name.clone(),
                    calls_per_second: measured.per_second,
                    to_floor: floor
                        .filter(|_| target.name != Peer::BareForwarder.label())
                        .map(|floor| measured.per_second / floor),
                    server_cpu_us: measured.cpu.server_us,
                    client_cpu_us: measured.cpu.client_us,
                }),
                Err(reason) => missing.push(format!("{}: {reason}", way.name)),
            }
        }
    }
    drop(started);
    drop(fixture);
    Ok(ScalingStep {
        cores: count,
        gateway_cores: placement.gateway.as_deref().map(affinity::list),
        other_cores: placement.rest.as_deref().map(affinity::list),
        concurrency,
        rows,
        missing,
    })
}

/// The floor, every build of Switchboard on `count` runtime threads, and the Rust mcp-proxy
/// (when installed) in front of `way`'s upstream; what fails to start is noted in `missing`.
fn gateways(
    lineup: &Lineup<'_>,
    count: usize,
    way: &Way<'_>,
    dir: &Path,
    missing: &mut Vec<String>,
) -> anyhow::Result<Vec<Started>> {
    let bins = lineup.bins;
    let mut started = Vec::new();
    let floor = peers::floor(bins, &way.peer, dir)?;
    push_peer(&mut started, missing, way, Peer::BareForwarder, floor);
    let threads = ["--threads".to_owned(), count.to_string()];
    for (build, label) in lineup.switchboards() {
        match targets::switchboard_http_with(build, dir, &way.switchboard, &threads) {
            Ok((process, url)) => {
                let mut servers = vec![process.pid()];
                servers.extend(way.fixture);
                started.push(Started {
                    target: HttpTarget {
                        name: label.to_owned(),
                        url,
                        tool: "echo__echo".to_owned(),
                        servers,
                    },
                    process,
                });
            }
            Err(error) => missing.push(format!("{} {label}: {error:#}", way.name)),
        }
    }
    if let Some(peers_dir) = &lineup.peers {
        let proxy = peers::peer_http(bins, peers_dir, Peer::RustMcpProxy, &way.peer, dir)?;
        push_peer(&mut started, missing, way, Peer::RustMcpProxy, proxy);
    }
    Ok(started)
}

/// A peer that started joins `started`; one that did not is noted in `missing`.
fn push_peer(
    started: &mut Vec<Started>,
    missing: &mut Vec<String>,
    way: &Way<'_>,
    peer: Peer,
    result: Result<PeerGateway, String>,
) {
    match result {
        Ok(gateway) => {
            let mut servers = vec![gateway.process.pid()];
            servers.extend(way.fixture);
            started.push(Started {
                target: HttpTarget {
                    name: peer.label().to_owned(),
                    url: gateway.url,
                    tool: gateway.tool.to_owned(),
                    servers,
                },
                process: gateway.process,
            });
        }
        Err(reason) => missing.push(format!("{}: {reason}", way.name)),
    }
}
