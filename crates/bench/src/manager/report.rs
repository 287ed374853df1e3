//! What `bench manager` measured, as JSON and as the printed table, and the check that fails
//! the run on failed calls or installs.

use std::time::Duration;

use anyhow::bail;
use serde::Serialize;
use serde_json::Value;

use super::load::{Calls, Side};
use super::{Args, Gateway, PACKAGE, VERSION};
use crate::report::{self, Percentiles, ScenarioResult};

/// The busy p99 over the idle p99 the issue allows.
const TARGET: f64 = 1.10;

/// One run.
#[derive(Debug, Serialize)]
pub struct ManagerRun {
    pub gateway: String,
    /// Cores the run saw.
    pub cores: usize,
    pub clients: usize,
    pub window_secs: f64,
    pub cycles: usize,
    pub installs_per_cycle: usize,
    /// Windows A: idle before the installs.
    pub idle_before: Side,
    /// Windows B, while the installs run: up to when the last one ended.
    pub busy: Side,
    /// Windows B after the last install ended (a busy window lasts at least as long as an
    /// idle one): in neither kind.
    pub busy_ended: Side,
    /// Windows C: idle after them.
    pub idle_after: Side,
    /// A and C pooled.
    pub idle: Side,
    /// busy p99 / idle p99.
    pub p99_ratio: f64,
    /// busy p50 / idle p50.
    pub p50_ratio: f64,
    pub p99_target: f64,
    pub p99_target_met: bool,
    pub windows: Vec<Window>,
    pub installs: Vec<Install>,
    /// `/proc/loadavg`'s 1, 5 and 15 minute figures before and after the windows: other work
    /// on the machine moves the tail.
    pub load_average: [Option<String>; 2],
    pub idle_cores: Option<String>,
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// One window's figures.
#[derive(Debug, Serialize)]
pub struct Window {
    pub cycle: usize,
    pub kind: &'static str,
    pub secs: f64,
    pub calls: usize,
    pub errors: usize,
    pub p50_us: f64,
    pub p99_us: f64,
}

impl Window {
    pub fn of(cycle: usize, kind: &'static str, calls: &Calls, length: Duration) -> Self {
        let latency = Percentiles::of(&mut calls.samples.clone());
        Self {
            cycle,
            kind,
            secs: length.as_secs_f64(),
            calls: latency.samples + calls.errors,
            errors: calls.errors,
            p50_us: latency.p50_us,
            p99_us: latency.p99_us,
        }
    }
}

/// One install operation as it ended.
#[derive(Debug, Serialize)]
pub struct Install {
    pub cycle: usize,
    pub server: String,
    pub id: String,
    pub state: String,
    /// From queued to over.
    pub total_s: Option<f64>,
    /// From started to over.
    pub ran_s: Option<f64>,
    /// The installer step (npm): from "installing into" to the first step at 70 % or more.
    pub npm_s: Option<f64>,
    pub error: Option<String>,
}

impl Install {
    pub fn of(cycle: usize, operation: &Value) -> Self {
        let ms = |key: &str| operation.get(key).and_then(Value::as_u64);
        let span =
            |from: Option<u64>, to: Option<u64>| Some(to?.checked_sub(from?)? as f64 / 1000.0);
        let steps = operation
            .get("steps")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let step_at = |found: &dyn Fn(&Value) -> bool| {
            steps
                .iter()
                .find(|step| found(step))
                .and_then(|step| step.get("at_ms")?.as_u64())
        };
        let npm_from = step_at(&|step| {
            step.get("message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.starts_with("installing into"))
        });
        let npm_to = step_at(&|step| step.get("progress").and_then(Value::as_u64) >= Some(70));
        let text = |key: &str| operation.get(key).and_then(Value::as_str);
        Self {
            cycle,
            server: operation
                .pointer("/request/work/server")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned(),
            id: text("id").unwrap_or("?").to_owned(),
            state: super::admin::state(operation).to_owned(),
            total_s: span(ms("created_ms"), ms("finished_ms")),
            ran_s: span(ms("started_ms"), ms("finished_ms")),
            npm_s: span(npm_from, npm_to),
            error: text("error").map(str::to_owned),
        }
    }

    /// `m1 completed in 9.8 s (ran 9.7 s, npm 6.1 s)`, or its error.
    pub fn summary(&self) -> String {
        let secs = |s: Option<f64>| s.map_or("?".to_owned(), |s| format!("{s:.1} s"));
        let mut line = format!(
            "cycle {}: {} {} in {} (ran {}, npm {})",
            self.cycle,
            self.server,
            self.state,
            secs(self.total_s),
            secs(self.ran_s),
            secs(self.npm_s)
        );
        if let Some(error) = &self.error {
            line.push_str(&format!(": {error}"));
        }
        line
    }
}

impl ManagerRun {
    pub(super) fn new(
        gateway: &Gateway,
        args: &Args,
        [idle_before, busy, busy_ended, idle_after, idle]: [Side; 5],
        windows: Vec<Window>,
        installs: Vec<Install>,
        load_average: [Option<String>; 2],
    ) -> Self {
        let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
        let p99_ratio = ratio(busy.latency.p99_us, idle.latency.p99_us);
        Self {
            gateway: gateway.switchboard.display().to_string(),
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            clients: args.clients,
            window_secs: args.window_secs,
            cycles: args.cycles,
            installs_per_cycle: args.installs,
            p50_ratio: ratio(busy.latency.p50_us, idle.latency.p50_us),
            p99_ratio,
            p99_target: TARGET,
            p99_target_met: p99_ratio <= TARGET,
            idle_before,
            busy,
            busy_ended,
            idle_after,
            idle,
            windows,
            installs,
            load_average,
            idle_cores: crate::machine::idle_config(),
        }
    }

    fn table(&self) -> ScenarioResult {
        let mut notes = vec![format!(
            "p99 busy / idle (A + C): {:.2}× (target ≤ {TARGET:.2}×: {}); p50 {:.2}×",
            self.p99_ratio,
            if self.p99_target_met {
                "met"
            } else {
                "NOT met"
            },
            self.p50_ratio
        )];
        for (name, side) in [("idle", &self.idle), ("busy", &self.busy)] {
            let mut line = format!("{name}: {} calls, {} failed", side.calls, side.errors);
            if let Some(error) = &side.first_error {
                line.push_str(&format!(" (first: {error})"));
            }
            notes.push(line);
        }
        notes.extend(self.windows.iter().filter(|w| w.calls > 0).map(|w| {
            format!(
                "cycle {} {:<11} {:>5.1} s {:>7} calls  p50 {:>7.0} µs  p99 {:>7.0} µs",
                w.cycle, w.kind, w.secs, w.calls, w.p50_us, w.p99_us
            )
        }));
        notes.extend(self.installs.iter().map(Install::summary));
        if let [Some(before), Some(after)] = &self.load_average {
            notes.push(format!(
                "load average (1 5 15 min): {before} before, {after} after (the run's own included)"
            ));
        }
        let row = |name: &str, side: &Side| (name.to_owned(), side.latency.clone());
        ScenarioResult {
            scenario: format!(
                "manager: a__echo from {} clients, {} cycles of idle {:.0} s / busy ({} installs of {PACKAGE}@{VERSION} at once) / idle {:.0} s",
                self.clients,
                self.cycles,
                self.window_secs,
                self.installs_per_cycle,
                self.window_secs
            ),
            rows: [
                row("idle before (A)", &self.idle_before),
                row("busy: installs running (B)", &self.busy),
                row("  B after the installs ended", &self.busy_ended),
                row("idle after (C)", &self.idle_after),
                row("idle (A + C)", &self.idle),
            ]
            .into_iter()
            .filter(|(_, latency)| latency.samples > 0)
            .collect(),
            notes,
        }
    }

    pub fn print(&self) {
        report::print(&self.table());
        println!("\n{} on {} cores", self.gateway, self.cores);
        if let Some(line) = &self.idle_cores {
            println!("{line}");
        }
    }

    /// Failed calls or installs fail the run (after the report); the ratio does not (it is
    /// what the run measures).
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(install) = self.installs.iter().find(|i| i.state != "completed") {
            let mut message = format!("an install did not complete: {}", install.summary());
            if install
                .error
                .as_deref()
                .is_some_and(|e| e.contains("ENOTCACHED"))
            {
                message.push_str(&format!(
                    "\nnpm runs offline here and {PACKAGE}@{VERSION} (or a dependency) is not in \
                     npm's cache: run scripts/install-test-deps.sh, which warms it"
                ));
            }
            bail!(message);
        }
        let failed = self.idle.errors + self.busy.errors;
        if failed > 0 {
            let first = self
                .idle
                .first_error
                .as_ref()
                .or(self.busy.first_error.as_ref())
                .map_or("", String::as_str);
            bail!(
                "{failed} calls to a__echo failed ({} idle, {} busy); the first: {first}",
                self.idle.errors,
                self.busy.errors
            );
        }
        Ok(())
    }
}
