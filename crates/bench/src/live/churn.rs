//! Untouched servers under churn: C clients call `a__echo`, each one call after another on a
//! keep-alive connection with a legacy session of its own, in windows that alternate calm
//! (nothing changes) and churn (a background thread adds a stdio echo server `x{k}` at the
//! start of every second and removes it half a second later, through the admin endpoint).
//! Every failed call is counted, in either kind of window; a connection that fails is opened
//! again, and the run stops only when it cannot be.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::json;

use super::Gateway;
use crate::drive::failure;
use crate::http_client::HttpClient;
use crate::report::{Percentiles, ScenarioResult};

/// Calls in calm windows beside calls in churn windows.
#[derive(Debug, Serialize)]
pub struct UnderChurn {
    pub clients: usize,
    pub window_secs: f64,
    pub calm: Side,
    pub churn: Side,
    /// churn p99 / calm p99.
    pub p99_ratio: f64,
    /// churn p50 / calm p50.
    pub p50_ratio: f64,
    /// Adds and removes made during the churn windows.
    pub changes: usize,
    /// From sending each of those changes to its answer.
    pub change_answered: Percentiles,
    /// Each window in order.
    pub windows: Vec<Window>,
}

/// The calls of one kind of window.
#[derive(Debug, Serialize)]
pub struct Side {
    /// Latency of the calls that were answered.
    pub latency: Percentiles,
    /// Every call made, failed ones included.
    pub calls: usize,
    pub errors: usize,
    pub first_error: Option<String>,
}

/// One window's figures.
#[derive(Debug, Serialize)]
pub struct Window {
    pub churn: bool,
    pub calls: usize,
    pub errors: usize,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// Calls of one window or more.
#[derive(Default)]
struct Calls {
    samples: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
}

impl Calls {
    fn failed(&mut self, reason: String) {
        self.errors += 1;
        self.first_error.get_or_insert(reason);
    }

    fn merge(&mut self, other: Calls) {
        self.samples.extend(other.samples);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn side(mut self) -> Side {
        Side {
            calls: self.samples.len() + self.errors,
            latency: Percentiles::of(&mut self.samples),
            errors: self.errors,
            first_error: self.first_error,
        }
    }
}

/// `windows` windows of `window` each, calm first, after half a second of warm-up calls.
pub fn measure(
    gateway: &Gateway,
    clients: usize,
    windows: usize,
    window: Duration,
) -> anyhow::Result<UnderChurn> {
    let mut callers = (0..clients)
        .map(|_| gateway.client())
        .collect::<anyhow::Result<Vec<_>>>()?;
    run_window(gateway, &mut callers, Duration::from_millis(500), None)?;
    let (mut calm, mut churn) = (Calls::default(), Calls::default());
    let mut changes = Vec::new();
    let mut each = Vec::with_capacity(windows);
    for index in 0..windows {
        let churning = index % 2 == 1;
        let first_server = changes.len() / 2;
        let (mut calls, made) = run_window(
            gateway,
            &mut callers,
            window,
            churning.then_some(first_server),
        )
        .with_context(|| format!("window {} ({})", index + 1, kind(churning)))?;
        changes.extend(made);
        let latency = Percentiles::of(&mut calls.samples);
        each.push(Window {
            churn: churning,
            calls: latency.samples + calls.errors,
            errors: calls.errors,
            p50_us: latency.p50_us,
            p99_us: latency.p99_us,
        });
        if churning { &mut churn } else { &mut calm }.merge(calls);
    }
    let (calm, churn) = (calm.side(), churn.side());
    if calm.latency.samples == 0 || churn.latency.samples == 0 {
        bail!(
            "no answered calls to a__echo in the {} windows",
            if calm.latency.samples == 0 {
                "calm"
            } else {
                "churn"
            }
        );
    }
    let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
    Ok(UnderChurn {
        clients,
        window_secs: window.as_secs_f64(),
        p99_ratio: ratio(churn.latency.p99_us, calm.latency.p99_us),
        p50_ratio: ratio(churn.latency.p50_us, calm.latency.p50_us),
        calm,
        churn,
        changes: changes.len(),
        change_answered: Percentiles::of(&mut changes),
        windows: each,
    })
}

fn kind(churning: bool) -> &'static str {
    if churning { "churn" } else { "calm" }
}

/// One window: every client calls until it ends; with `churn_from`, servers `x{k}` (k from
/// it) are added and removed meanwhile. Returns the calls and how long each change took.
fn run_window(
    gateway: &Gateway,
    callers: &mut [HttpClient],
    length: Duration,
    churn_from: Option<usize>,
) -> anyhow::Result<(Calls, Vec<Duration>)> {
    let deadline = Instant::now() + length;
    std::thread::scope(|scope| {
        let churner = churn_from.map(|first| scope.spawn(move || churn(gateway, first, deadline)));
        let workers: Vec<_> = callers
            .iter_mut()
            .map(|client| scope.spawn(move || call_until(gateway, client, deadline)))
            .collect();
        let mut calls = Calls::default();
        for worker in workers {
            let done = worker
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))?;
            calls.merge(done);
        }
        let changes = match churner {
            Some(churner) => churner
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the churn thread panicked")))?,
            None => Vec::new(),
        };
        Ok((calls, changes))
    })
}

/// Calls `a__echo` one after another until `deadline`.
fn call_until(
    gateway: &Gateway,
    client: &mut HttpClient,
    deadline: Instant,
) -> anyhow::Result<Calls> {
    let params = json!({"name": "a__echo", "arguments": {"message": "untouched"}});
    let mut calls = Calls::default();
    while Instant::now() < deadline {
        let sent = Instant::now();
        match client.exchange("tools/call", params.clone()) {
            Ok(answer) => match failure(&answer) {
                None => calls.samples.push(sent.elapsed()),
                Some(reason) => calls.failed(reason),
            },
            Err(error) => {
                calls.failed(format!("{error:#}"));
                *client = gateway
                    .client()
                    .context("reconnecting after a failed call")?;
            }
        }
    }
    Ok(calls)
}

/// Adds `x{k}` at the start of every second until `deadline` and removes it half a second
/// later; how long each change took to answer.
fn churn(gateway: &Gateway, first: usize, deadline: Instant) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::new();
    let mut k = first;
    loop {
        let tick = Instant::now();
        if tick >= deadline {
            return Ok(times);
        }
        let name = format!("x{k}");
        k += 1;
        let sent = Instant::now();
        gateway
            .admin
            .add_stdio(&name, &gateway.fixture, &["echo"])?;
        times.push(sent.elapsed());
        std::thread::sleep(
            (tick + Duration::from_millis(500)).saturating_duration_since(Instant::now()),
        );
        let sent = Instant::now();
        gateway.admin.remove(&name)?;
        times.push(sent.elapsed());
        let next = (tick + Duration::from_secs(1)).min(deadline);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

impl UnderChurn {
    /// The printed table.
    pub fn table(&self) -> ScenarioResult {
        let side = |name: &str, side: &Side| {
            let mut line = format!("{name}: {} calls, {} failed", side.calls, side.errors);
            if let Some(error) = &side.first_error {
                line.push_str(&format!(" (first: {error})"));
            }
            line
        };
        let windows = self.windows.len();
        ScenarioResult {
            scenario: format!(
                "live: a__echo from {} clients, {windows} windows of {:.0} s alternating calm / churn (add + remove a server every second)",
                self.clients, self.window_secs
            ),
            rows: vec![
                ("calm".to_owned(), self.calm.latency.clone()),
                ("churn".to_owned(), self.churn.latency.clone()),
                (
                    "  each change answered".to_owned(),
                    self.change_answered.clone(),
                ),
            ],
            notes: vec![
                format!(
                    "p99 churn / calm: {:.2}× (target ≤ 1.10×); p50 {:.2}×",
                    self.p99_ratio, self.p50_ratio
                ),
                side("calm", &self.calm),
                side("churn", &self.churn),
                format!("changes during churn: {} (adds and removes)", self.changes),
            ],
        }
    }

    /// Failed calls fail the run (after the report): none is expected.
    pub fn check(&self) -> anyhow::Result<()> {
        let failed = self.calm.errors + self.churn.errors;
        if failed == 0 {
            return Ok(());
        }
        let first = self
            .calm
            .first_error
            .as_ref()
            .or(self.churn.first_error.as_ref())
            .map_or("", String::as_str);
        bail!(
            "{failed} of {} calls to a__echo failed ({} in calm windows, {} in churn windows); the first: {first}",
            self.calm.calls + self.churn.calls,
            self.calm.errors,
            self.churn.errors
        )
    }
}
