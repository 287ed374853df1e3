//! `bench drive`: the load generator on any MCP target — a stdio command or an HTTP URL, in
//! either protocol era. It makes N `tools/call`s of one tool at concurrency C after a warm-up
//! and reports p50 / p90 / p99 / max latency and calls per second.
//!
//! Over HTTP, concurrency C is C keep-alive connections (and, in the 2025 era, C sessions),
//! each making its calls one after another. Over stdio it is C requests in flight on the one
//! pipe, matched to their answers by id. A call answered with a JSON-RPC error or an
//! `isError` result counts as failed; a target that stops answering for `--timeout` fails the
//! run rather than hanging it.

mod stdio;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cpu;
use crate::era::{self, Era};
use crate::http_client::HttpClient;
use crate::report::{self, Percentiles, ScenarioResult};
use stdio::StdioPipe;

/// `bench drive`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// An HTTP endpoint, http://127.0.0.1:PORT/PATH.
    #[arg(long, conflicts_with = "command")]
    url: Option<String>,
    /// The tool to call.
    #[arg(long, default_value = "echo")]
    tool: String,
    /// Its arguments, a JSON object.
    #[arg(long, default_value = r#"{"message":"hello"}"#)]
    arguments: String,
    /// The protocol era the calls speak.
    #[arg(long, value_enum, default_value = "legacy")]
    era: Era,
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// Calls in flight at once: HTTP connections, or requests on the stdio pipe.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Calls made first and not measured.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Seconds to wait for an answer before the run fails.
    #[arg(long, default_value_t = 30.0)]
    timeout: f64,
    /// Milliseconds each worker pauses after an answer before its next measured call: an
    /// agent's think time, so every call finds the target idle (over stdio the pipe's one
    /// reader pauses). The warm-up makes its calls without pauses.
    #[arg(long, default_value_t = 0.0)]
    gap_ms: f64,
    /// A client capability the 2026-07-28 era's calls declare in `_meta` (repeatable:
    /// `--declare elicitation`); none by default.
    #[arg(long, value_name = "CAPABILITY")]
    declare: Vec<String>,
    /// The processes serving --url (each with its children), for their CPU time per call:
    /// one gateway, or every replica behind a load balancer (`--server-pid 1,2,3`).
    #[arg(long, value_name = "PID", requires = "url", value_delimiter = ',')]
    server_pid: Vec<u32>,
    /// A stdio target: the command and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `bench drive` and prints what it measured; a run with failed calls is an error.
pub fn main(args: &Args, json: bool) -> anyhow::Result<()> {
    let target = match (&args.url, args.command.is_empty()) {
        (Some(url), _) => Target::Http {
            url: url.clone(),
            server_pid: args.server_pid.clone(),
        },
        (None, false) => Target::Stdio {
            command: args.command.clone(),
        },
        (None, true) => bail!("name a target: --url URL, or a stdio command after --"),
    };
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!(
            "--timeout must be a positive number of seconds, not {}",
            args.timeout
        );
    }
    if !(args.gap_ms >= 0.0 && args.gap_ms.is_finite()) {
        bail!(
            "--gap-ms must be zero or a positive number of milliseconds, not {}",
            args.gap_ms
        );
    }
    if !args.declare.is_empty() && args.era != Era::Modern {
        bail!("--declare needs --era modern: legacy clients declare capabilities in initialize");
    }
    let plan = Plan {
        target,
        era: args.era,
        tool: args.tool.clone(),
        arguments: parse_arguments(&args.arguments)?,
        declared: args
            .declare
            .iter()
            .map(|capability| (capability.clone(), json!({})))
            .collect(),
        calls: args.calls,
        concurrency: args.concurrency,
        warmup: args.warmup,
        timeout: Duration::from_secs_f64(args.timeout),
        gap: Duration::from_secs_f64(args.gap_ms / 1000.0),
    };
    let result = run(&plan)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        report::print(&rows(&result));
    }
    if let Some(error) = &result.first_error {
        bail!(
            "{} of {} calls failed; the first: {error}",
            result.errors,
            result.calls
        );
    }
    Ok(())
}

/// Where the calls go.
enum Target {
    Http { url: String, server_pid: Vec<u32> },
    Stdio { command: Vec<String> },
}

/// What to run.
struct Plan {
    pub target: Target,
    pub era: Era,
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// The client capabilities modern calls declare.
    pub declared: Map<String, Value>,
    pub calls: usize,
    pub concurrency: usize,
    pub warmup: usize,
    pub timeout: Duration,
    /// The pause after each measured answer (`--gap-ms`).
    pub gap: Duration,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
struct Drive {
    pub target: String,
    pub era: Era,
    pub tool: String,
    pub concurrency: usize,
    pub warmup: usize,
    /// Latency of the measured calls that succeeded.
    pub latency: Percentiles,
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub seconds: f64,
    pub calls_per_second: f64,
    /// CPU time of the server side (the target's process and its children) per call, in
    /// µs: the stdio command, or `--server-pid` of an HTTP target.
    pub server_cpu_us: Option<f64>,
    /// Why `server_cpu_us` is absent.
    #[serde(skip)]
    pub server_cpu_absent: Option<String>,
}

/// The `arguments` of `--arguments`: a JSON object.
fn parse_arguments(text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => bail!("--arguments must be a JSON object, not {other}"),
        Err(error) => bail!("--arguments is not JSON: {error}"),
    }
}

/// Runs `plan`: the warm-up, then the measured calls.
fn run(plan: &Plan) -> anyhow::Result<Drive> {
    if plan.calls == 0 || plan.concurrency == 0 {
        bail!("--calls and --concurrency must be at least 1");
    }
    let mut params = json!({"name": plan.tool, "arguments": plan.arguments});
    if !plan.declared.is_empty() {
        params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": plan.declared});
    }
    match &plan.target {
        Target::Http { url, server_pid } => {
            let mut clients = Vec::with_capacity(plan.concurrency);
            for _ in 0..plan.concurrency {
                let mut client = HttpClient::connect(url)?;
                client.set_timeout(plan.timeout)?;
                match plan.era {
                    Era::Legacy => client.initialize().map(drop),
                    Era::Modern => client.discover().map(drop),
                }
                .with_context(|| format!("{url}: opening a connection"))?;
                clients.push(client);
            }
            http_round(&mut clients, &params, plan.warmup, Duration::ZERO)?;
            let cpu_before = cpu::trees(server_pid);
            let round = http_round(&mut clients, &params, plan.calls, plan.gap)?;
            let cpu_spent = cpu::trees(server_pid).saturating_sub(cpu_before);
            Ok(summary(
                plan,
                url.clone(),
                round,
                (!server_pid.is_empty()).then_some(cpu_spent),
            ))
        }
        Target::Stdio { command } => {
            let mut pipe = StdioPipe::spawn(command, plan)?;
            let mut params = params;
            if plan.era == Era::Modern
                && let Value::Object(params) = &mut params
            {
                era::add_modern_meta(params);
            }
            let line = |id: u64| {
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
                    .to_string()
            };
            pipe.round(plan, plan.warmup, Duration::ZERO, &line)?;
            let servers = [pipe.child.id()];
            let cpu_before = cpu::trees(&servers);
            let round = pipe.round(plan, plan.calls, plan.gap, &line)?;
            let cpu_spent = cpu::trees(&servers).saturating_sub(cpu_before);
            Ok(summary(plan, command.join(" "), round, Some(cpu_spent)))
        }
    }
}

/// One round of calls: their latencies and failures, and how long the round took.
#[derive(Default)]
struct Round {
    samples: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    elapsed: Duration,
}

impl Round {
    fn record(&mut self, latency: Duration, answer: &Value) {
        match failure(answer) {
            None => self.samples.push(latency),
            Some(reason) => {
                self.errors += 1;
                self.first_error.get_or_insert(reason);
            }
        }
    }

    fn merge(&mut self, other: Round) {
        self.samples.extend(other.samples);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// The least server CPU time reported: `/proc` counts it in 10 ms ticks.
const MEASURABLE_CPU: Duration = Duration::from_millis(200);

fn summary(plan: &Plan, target: String, mut round: Round, server_cpu: Option<Duration>) -> Drive {
    let calls = round.samples.len() + round.errors;
    let seconds = round.elapsed.as_secs_f64();
    let (server_cpu_us, server_cpu_absent) = match server_cpu {
        None => (None, Some("pass --server-pid to measure it".to_owned())),
        Some(spent) if spent < MEASURABLE_CPU => (
            None,
            Some(format!(
                "too little to measure ({} ms; /proc counts 10 ms ticks): more --calls",
                spent.as_millis()
            )),
        ),
        Some(spent) => (Some(cpu::per_call_us(spent, calls as u64)), None),
    };
    Drive {
        target,
        era: plan.era,
        tool: plan.tool.clone(),
        concurrency: plan.concurrency,
        warmup: plan.warmup,
        latency: Percentiles::of(&mut round.samples),
        calls,
        errors: round.errors,
        first_error: round.first_error,
        seconds,
        calls_per_second: calls as f64 / seconds.max(f64::MIN_POSITIVE),
        server_cpu_us,
        server_cpu_absent,
    }
}

/// Why a `tools/call` answer is a failure, if it is one.
pub fn failure(answer: &Value) -> Option<String> {
    if let Some(error) = answer.get("error") {
        return Some(format!("JSON-RPC error {error}"));
    }
    let Some(result) = answer.get("result") else {
        return Some(format!("an answer with neither result nor error: {answer}"));
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = result
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("(no text)");
        return Some(format!("the tool failed: {text}"));
    }
    None
}

/// `calls` calls over the HTTP connections, each making its share one after another,
/// pausing `gap` after each answer.
fn http_round(
    clients: &mut [HttpClient],
    params: &Value,
    calls: usize,
    gap: Duration,
) -> anyhow::Result<Round> {
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let rounds = std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .iter_mut()
            .map(|client| {
                let next = &next;
                scope.spawn(move || -> anyhow::Result<Round> {
                    let mut round = Round::default();
                    while next.fetch_add(1, Ordering::Relaxed) < calls {
                        let sent = Instant::now();
                        let answer = client.exchange("tools/call", params.clone())?;
                        round.record(sent.elapsed(), &answer);
                        if !gap.is_zero() {
                            std::thread::sleep(gap);
                        }
                    }
                    Ok(round)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker thread panicked")))
            })
            .collect::<Vec<_>>()
    });
    let mut total = Round {
        elapsed: started.elapsed(),
        ..Round::default()
    };
    for round in rounds {
        total.merge(round?);
    }
    Ok(total)
}

/// The run as a printed table.
fn rows(drive: &Drive) -> ScenarioResult {
    let mut notes = vec![format!(
        "{} calls in {:.2} s: {:.0} calls/s; {} failed",
        drive.calls, drive.seconds, drive.calls_per_second, drive.errors
    )];
    if let Some(cpu) = drive.server_cpu_us {
        notes.push(format!("server-side CPU per call {cpu:.0} µs"));
    } else if let Some(why) = &drive.server_cpu_absent {
        notes.push(format!("server-side CPU per call: {why}"));
    }
    if let Some(error) = &drive.first_error {
        notes.push(format!("first failure: {error}"));
    }
    ScenarioResult {
        scenario: format!(
            "tools/call {} ({} era), concurrency {}, after {} warm-up calls",
            drive.tool,
            drive.era.version(),
            drive.concurrency,
            drive.warmup
        ),
        rows: vec![(drive.target.clone(), drive.latency.clone())],
        notes,
    }
}
