//! Probation: before a new server's tools reach any model, a copy of it is started beside
//! the fleet (as its entry says, with its secrets), negotiated with, and listed — tools,
//! prompts, resources. Every tool definition is fingerprinted (the baseline its pins start
//! from), the listing's token cost counted (o200k), and the safe tools (read-only or
//! idempotent, never destructive) probed a few times with minimal arguments to say which
//! latency tiers they fit. A server that does not come up, or lists a tool whose input
//! schema does not compile, fails.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use switchboard_budget::{Declared, SafetyOverride, ToolSafety, minimal_instance};
use switchboard_core::catalog::ListedTool;
use switchboard_core::config::edit::ServerEntry;
use switchboard_core::{CallContext, ServerId};
use switchboard_mcp::upstream::{ServerState, Supervisor, SupervisorObserver};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::Host;

/// Tools probed at most, and calls per tool.
const PROBED_TOOLS: usize = 8;
const PROBE_CALLS: usize = 3;
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What probation found: the operation's result.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct VetReport {
    pub server: String,
    pub passed: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub transport: String,
    pub era: Option<String>,
    pub protocol_version: Option<String>,
    pub server_info: Value,
    pub tools: Vec<VettedTool>,
    pub prompts: usize,
    pub resources: usize,
    /// Tokens its tool listing adds to a model's context (o200k).
    pub listing_tokens: usize,
    /// From starting it to its tools listed.
    pub connect_ms: f64,
}

/// One tool as probation saw it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct VettedTool {
    pub name: String,
    /// SHA-256 of its pinned fields: the definition it is held to.
    pub fingerprint: String,
    pub read_only: bool,
    pub destructive: bool,
    /// Median of the probe calls, for tools safe to probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<f64>,
    /// Why it was not probed, or how the probe went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_note: Option<String>,
    /// The latency tiers its probe fits.
    pub tiers: Vec<String>,
}

struct Unheard;

impl SupervisorObserver for Unheard {
    fn status_changed(&self, _server: &ServerId) {}
}

/// Puts `entry` on probation as server `server`. Returns the report, and the tools as they
/// were listed (the pins' baseline) when it passed.
pub(crate) async fn vet(
    host: &Host,
    server: &str,
    entry: &ServerEntry,
    cancel: &CancellationToken,
) -> Result<(VetReport, Arc<[ListedTool]>), String> {
    let running = host.config();
    let config = crate::live::probe::config_of_entry(server, entry, running.as_deref())
        .map_err(|error| error.to_string())?;
    let settings = config
        .server(server)
        .ok_or_else(|| format!("server '{server}' vanished from its own config"))?;
    let plan = crate::assemble::plan(
        &config,
        settings,
        host.inner.options.sandbox_launcher.as_deref(),
    )
    .map_err(|error| error.to_string())?;
    let began = Instant::now();
    let supervisor = Supervisor::start(plan.spec.clone(), Arc::new(Unheard));
    let bound = plan.spec.connect_timeout + Duration::from_secs(1);
    tokio::select! {
        _ = tokio::time::timeout(bound, supervisor.settled()) => {}
        () = cancel.cancelled() => {
            supervisor.stop().await;
            return Err("cancelled".to_owned());
        }
    }
    let connect_ms = began.elapsed().as_secs_f64() * 1000.0;
    let status = supervisor.status();
    let mut report = VetReport {
        server: server.to_owned(),
        passed: false,
        reason: None,
        transport: plan.spec.endpoint.transport_label().to_owned(),
        era: status.era.as_ref().map(|era| era.label().to_owned()),
        protocol_version: status.era.as_ref().map(|era| era.version().to_owned()),
        server_info: status.server_info.clone(),
        tools: Vec::new(),
        prompts: status.extras.prompts.len(),
        resources: status.extras.resources.len() + status.extras.resource_templates.len(),
        listing_tokens: 0,
        connect_ms,
    };
    if status.state != ServerState::Up {
        supervisor.stop().await;
        report.reason = Some(format!(
            "it did not start: {}",
            status.error.as_deref().unwrap_or("no answer")
        ));
        return Ok((report, Arc::from([])));
    }
    let problems: Vec<String> = status
        .tools
        .iter()
        .filter_map(|t| {
            let error = t.schema.as_ref().err()?;
            Some(format!(
                "tool '{}' has an input schema that does not compile: {error}",
                t.definition.name
            ))
        })
        .collect();
    let definitions: Vec<_> = status.tools.iter().map(|t| &t.definition).collect();
    let listing = serde_json::to_string(&definitions).unwrap_or_default();
    report.listing_tokens = (host.inner.options.token_counter)(&listing);
    let tiers: Vec<(String, Duration)> = running
        .as_deref()
        .map(|config| {
            config
                .tiers
                .iter()
                .map(|tier| (tier.name.clone(), tier.ceiling))
                .collect()
        })
        .unwrap_or_default();
    let upstream = supervisor.upstream();
    let mut probed = 0;
    for listed in status.tools.iter() {
        let definition = &listed.definition;
        let safety = ToolSafety::resolve(
            definition.annotations.as_ref(),
            &Declared::default(),
            &SafetyOverride::default(),
        );
        let mut tool = VettedTool {
            name: definition.name.clone(),
            fingerprint: crate::pins::definition_fingerprint(definition),
            read_only: safety.read_only,
            destructive: safety.destructive,
            probe_ms: None,
            probe_note: None,
            tiers: Vec::new(),
        };
        let eligible = safety.probe_verdict() == switchboard_budget::ProbeVerdict::Eligible
            && listed.schema.is_ok();
        match (&upstream, eligible, probed < PROBED_TOOLS) {
            (_, false, _) => {
                tool.probe_note =
                    Some("not probed: not declared read-only or idempotent".to_owned());
            }
            (_, true, false) => {
                tool.probe_note = Some("not probed: enough tools probed".to_owned())
            }
            (None, true, true) => tool.probe_note = Some("not probed: no connection".to_owned()),
            (Some(upstream), true, true) => {
                probed += 1;
                match probe(upstream.as_ref(), definition, cancel).await {
                    Ok(ms) => {
                        tool.probe_ms = Some(ms);
                        tool.tiers = tiers
                            .iter()
                            .filter(|(_, ceiling)| ms <= ceiling.as_secs_f64() * 1000.0)
                            .map(|(name, _)| name.clone())
                            .collect();
                    }
                    Err(note) => tool.probe_note = Some(note),
                }
            }
        }
        report.tools.push(tool);
        if cancel.is_cancelled() {
            break;
        }
    }
    supervisor.stop().await;
    if cancel.is_cancelled() {
        return Err("cancelled".to_owned());
    }
    if !problems.is_empty() {
        report.reason = Some(problems.join("; "));
    } else if status.tools.is_empty() && report.prompts == 0 && report.resources == 0 {
        report.reason = Some("it serves no tools, prompts or resources".to_owned());
    } else {
        report.passed = true;
    }
    Ok((report, status.tools.clone()))
}

/// The median latency of a few calls of a safe tool with minimal arguments.
async fn probe(
    upstream: &dyn switchboard_core::upstream::Upstream,
    definition: &switchboard_core::ToolDefinition,
    cancel: &CancellationToken,
) -> Result<f64, String> {
    let arguments = match minimal_instance(&definition.input_schema) {
        Ok(Value::Object(arguments)) => arguments,
        Ok(_) => serde_json::Map::new(),
        Err(error) => return Err(format!("not probed: no minimal arguments ({error})")),
    };
    let mut samples = Vec::with_capacity(PROBE_CALLS);
    for _ in 0..PROBE_CALLS {
        let ctx = CallContext {
            cancel: cancel.child_token(),
            ..CallContext::default()
        };
        let began = Instant::now();
        match tokio::time::timeout(
            PROBE_TIMEOUT,
            upstream.call_tool(&definition.name, arguments.clone(), &ctx),
        )
        .await
        {
            Ok(Ok(_)) => samples.push(began.elapsed().as_secs_f64() * 1000.0),
            Ok(Err(error)) => return Err(format!("probe call failed: {error}")),
            Err(_) => {
                ctx.cancel.cancel();
                return Err(format!(
                    "probe call took over {} s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
        }
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}
