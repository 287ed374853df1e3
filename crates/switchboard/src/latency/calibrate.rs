//! Calibration: measure tools here by calling them, so tiers rest on facts before real traffic
//! arrives. `switchboard calibrate`, the optional probe when a server connects
//! (`[latency] probe_on_connect`), and the recovery probes of degraded tools all come here.
//!
//! **Only tools that are read-only or idempotent are ever probed, and a destructive tool
//! never** — whatever the annotations claim, the operator's overrides (`read_only`,
//! `destructive`, `idempotent`, `probe = false`) win. A probe's input is the tool's
//! configured `probe_arguments`, else a minimal valid instance of its input schema, and it is
//! validated against that schema before anything is sent. Probes go to the upstream directly
//! (no cache, no retries, no hedging) and their latencies are recorded like any call's.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use switchboard_budget::{ProbeVerdict, Sample, minimal_instance};
use switchboard_core::{CallContext, CatalogEntry};

use super::ToolTraits;
use crate::host::Host;

/// What to calibrate.
#[derive(Debug, Clone, Default)]
pub struct CalibrateOptions {
    /// Only this server's tools.
    pub server: Option<String>,
    /// Only this tool (exposed name).
    pub tool: Option<String>,
    /// Calls per tool.
    pub calls: u32,
}

/// One tool's calibration.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Calibration {
    pub tool: String,
    pub server: String,
    /// Why it was not probed; `None` when it was.
    pub skipped: Option<String>,
    pub calls: u32,
    pub errors: u32,
    pub timeouts: u32,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// Why calibration could not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    #[error("no server '{0}' in the catalog")]
    UnknownServer(String),
    #[error("no tool '{0}' in the catalog")]
    UnknownTool(String),
}

/// A tool chosen for probing, with its input, or the reason it is left alone.
pub(crate) struct ProbeTarget {
    pub(crate) traits: Arc<ToolTraits>,
    pub(crate) input: Result<Map<String, Value>, String>,
}

/// Why a tool may not be probed, in words.
pub(super) fn refusal(verdict: ProbeVerdict) -> Option<&'static str> {
    match verdict {
        ProbeVerdict::Eligible => None,
        ProbeVerdict::Destructive => Some("destructive tools are never probed"),
        ProbeVerdict::NotIdempotent => Some("neither read-only nor idempotent"),
        ProbeVerdict::DisabledByOperator => Some("probe = false in the config"),
    }
}

/// The input a probe sends: configured, else minimal; checked against the schema.
pub(super) fn probe_input(
    traits: &ToolTraits,
    entry: Option<&CatalogEntry>,
) -> Result<Map<String, Value>, String> {
    let mut input = match &traits.probe_arguments {
        Some(arguments) => arguments.clone(),
        None => match minimal_instance(&traits.input_schema) {
            Ok(Value::Object(arguments)) => arguments,
            Ok(other) => return Err(format!("its input schema yields {other}, not an object")),
            Err(error) => {
                return Err(format!(
                    "no minimal input from its schema ({error}); set probe_arguments"
                ));
            }
        },
    };
    if let Some(entry) = entry
        && let Err(violations) = entry.schema.validate(&mut input)
    {
        let first = violations
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        return Err(format!("the probe input does not fit the schema: {first}"));
    }
    Ok(input)
}

impl Host {
    /// The tools `options` selects, each with its probe input or the reason it is skipped.
    pub(crate) fn probe_targets(
        &self,
        options: &CalibrateOptions,
    ) -> Result<Vec<ProbeTarget>, CalibrateError> {
        let catalog = self.catalog();
        let latency = &self.inner.latency;
        if let Some(server) = &options.server
            && !catalog
                .entries()
                .iter()
                .any(|entry| entry.spec.server.as_str() == server)
        {
            return Err(CalibrateError::UnknownServer(server.clone()));
        }
        if let Some(tool) = &options.tool
            && catalog.resolve(tool).is_none()
        {
            return Err(CalibrateError::UnknownTool(tool.clone()));
        }
        let mut targets: Vec<ProbeTarget> = latency
            .tools()
            .values()
            .filter(|traits| {
                options
                    .server
                    .as_deref()
                    .is_none_or(|server| traits.server.as_str() == server)
            })
            .filter(|traits| {
                options.tool.as_deref().is_none_or(|tool| {
                    catalog
                        .resolve(tool)
                        .is_some_and(|entry| entry.exposed == traits.exposed)
                })
            })
            .map(|traits| {
                let input = match refusal(traits.safety.probe_verdict()) {
                    Some(reason) => Err(reason.to_owned()),
                    None => probe_input(traits, catalog.resolve(&traits.exposed).map(Arc::as_ref)),
                };
                ProbeTarget {
                    traits: traits.clone(),
                    input,
                }
            })
            .collect();
        targets.sort_by(|a, b| a.traits.exposed.cmp(&b.traits.exposed));
        Ok(targets)
    }

    /// Probes the selected tools `options.calls` times each, sequentially, reporting each
    /// call to `progress` (done, total, tool); saves the stats file at the end.
    pub async fn calibrate(
        &self,
        options: &CalibrateOptions,
        progress: &(dyn Fn(usize, usize, &str) + Sync),
    ) -> Result<Vec<Calibration>, CalibrateError> {
        let targets = self.probe_targets(options)?;
        let calls = options.calls.max(1);
        let probed = targets.iter().filter(|t| t.input.is_ok()).count();
        let total = probed * calls as usize;
        let mut done = 0;
        let mut results = Vec::with_capacity(targets.len());
        for target in targets {
            let traits = &target.traits;
            let mut result = Calibration {
                tool: traits.exposed.clone(),
                server: traits.server.as_str().to_owned(),
                skipped: None,
                calls: 0,
                errors: 0,
                timeouts: 0,
                p50_ms: None,
                p99_ms: None,
            };
            match &target.input {
                Err(reason) => result.skipped = Some(reason.clone()),
                Ok(input) => {
                    for _ in 0..calls {
                        match self.probe(traits, input.clone()).await {
                            Some(sample) => {
                                result.calls += 1;
                                match sample.outcome {
                                    switchboard_budget::Outcome::Error => result.errors += 1,
                                    switchboard_budget::Outcome::Timeout => result.timeouts += 1,
                                    _ => {}
                                }
                            }
                            None => {
                                result.skipped =
                                    Some(format!("server '{}' is not connected", traits.server));
                                break;
                            }
                        }
                        done += 1;
                        progress(done, total, &traits.exposed);
                    }
                    if let Some(summary) = self.inner.latency.book().summary(&traits.key) {
                        result.p50_ms = Some(summary.p50.as_secs_f64() * 1_000.0);
                        result.p99_ms = Some(summary.p99.as_secs_f64() * 1_000.0);
                    }
                }
            }
            results.push(result);
        }
        if let Err(error) = self.inner.latency.save() {
            tracing::warn!(%error, "calibration results were not saved");
        }
        Ok(results)
    }

    /// One probe call of a tool, measured and recorded; `None` when its server is down.
    pub(crate) async fn probe(
        &self,
        traits: &ToolTraits,
        input: Map<String, Value>,
    ) -> Option<Sample> {
        let upstream = self.inner.raw_upstream(&traits.server)?;
        let latency = &self.inner.latency;
        let ctx = CallContext::default();
        let deadline = traits
            .declared
            .max
            .map_or(traits.call_timeout, |max| max.min(traits.call_timeout));
        let started = latency.clock.now();
        let answer = tokio::time::timeout(
            deadline,
            upstream.call_tool(&traits.upstream_name, input, &ctx),
        )
        .await;
        let elapsed = latency.clock.now().saturating_duration_since(started);
        // A tool's own `isError` is an answer (a probe's minimal input may well earn one):
        // only no answer counts against its health (`switchboard_budget::window`).
        let sample = match answer {
            Err(_) => Sample::timeout(elapsed),
            Ok(Ok(_)) => Sample::ok(elapsed),
            Ok(Err(_)) => Sample::error(elapsed),
        };
        latency.record(&traits.key, sample);
        Some(sample)
    }

    /// Probes due in the background: tools never measured on a fresh connection (with
    /// `probe_on_connect`), and degraded tools, so they can recover without real traffic.
    /// Cheap when nothing is due: inputs are built only for the tools that get a probe.
    pub(crate) async fn background_probes(&self) {
        let latency = &self.inner.latency;
        let settings = latency.settings();
        let due: Vec<(Arc<ToolTraits>, u32)> = {
            let tools = latency.tools();
            let book = latency.book();
            tools
                .values()
                .filter_map(|traits| {
                    let (samples, degraded) = match book.tool(&traits.key) {
                        Some(tool) => (
                            tool.window().len(),
                            tool.health() == switchboard_budget::HealthState::Degraded,
                        ),
                        None => (0, false),
                    };
                    let calls = if degraded {
                        1
                    } else if settings.probe_on_connect && samples == 0 {
                        settings.probe_calls
                    } else {
                        return None;
                    };
                    Some((traits.clone(), calls))
                })
                .collect()
        };
        if due.is_empty() {
            return;
        }
        let catalog = self.catalog();
        for (traits, calls) in due {
            if refusal(traits.safety.probe_verdict()).is_some() {
                continue;
            }
            let entry = catalog.resolve(&traits.exposed).map(Arc::as_ref);
            let Ok(input) = probe_input(&traits, entry) else {
                continue;
            };
            for _ in 0..calls {
                if self.probe(&traits, input.clone()).await.is_none() {
                    break;
                }
            }
        }
    }
}
