//! The gateway's Prometheus metrics: what is counted on a call's path, with which labels, and
//! the scrape that writes it all ([`scrape`], `Host::metrics_text`, served at `/metrics` on
//! the admin endpoint).
//!
//! Recorded where the figure is already known, never measured twice:
//! - `mcp_server_operation_duration_seconds`: every `tools/call` that reached the pipeline, with
//!   the pipeline's own duration, from its [`CallRecord`] ([`MetricsRecorder`] wraps the
//!   gateway's recorder), with the policy decisions and rate-limited calls of the same record;
//!   every other request as the front's dispatcher timed it (`Backend::request_answered`);
//! - `mcp_client_operation_duration_seconds`: every attempt the latency layer makes upstream,
//!   with the time it measured for the latency book (`latency::execute`);
//! - the rest is read when scraped: approvals (`PendingApprovals`), servers up, tools per
//!   tier, the result cache's hits and misses, and the recorder's own (the ledger's append
//!   time and queue).
//!
//! Label values come from bounded sets only: a tool name is one the catalog resolved
//! (`_unknown` otherwise — never what a client sent), an agent one the config defines
//! (`_unknown` otherwise, empty for none), a method one of MCP's (`_other` otherwise), an
//! error type a [`CallStatus`] or a JSON-RPC code of the reserved range. No call ids, no
//! arguments.
//!
//! Counting stays off a call's answer: on a thread whose runtime runs idle work (the
//! gateway's do, `switchboard_core::idle`), an observation is copied into that thread's
//! buffer and counted when the thread goes idle, after the answer was written ([`deferred`]);
//! a scrape counts every buffer first. Counting itself is a comparison with the few label sets
//! the thread used last and a few relaxed atomic additions, else a hash of the labels and a
//! lock-free map read ([`family`]). Nothing here allocates on a `tools/call`'s path for a
//! label set it has seen, or takes a lock another thread holds but for a scrape.
//! `[telemetry] metrics = false` leaves only the gauges.

mod deferred;
mod family;
pub(crate) mod scrape;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{Map, Value};
use switchboard_core::ToolOutcome;
use switchboard_core::idle;
use switchboard_core::metrics::{Exposition, Histogram};
use switchboard_core::pipeline::{
    CallRecord, CallStatus, ChangeRecord, RecordedArguments, Recorder,
};
use switchboard_core::upstream::UpstreamError;

use deferred::{Held, Pending};
use family::Family;

/// The tool or agent label of a name outside the catalog or the config.
pub const UNKNOWN: &str = "_unknown";

/// The pipeline's method.
const TOOLS_CALL: &str = "tools/call";

/// The methods a client may send the gateway: the only method label values besides
/// [`OTHER`].
const METHODS: [&str; 20] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    TOOLS_CALL,
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
];

/// The method label of a method outside [`METHODS`], and the error type of a JSON-RPC code
/// outside the range the specification reserves.
pub const OTHER: &str = "_other";

/// What the policy stages made of a call, as `switchboard_policy_decisions_total` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Through every check (resolve, validate, hooks, approval, admission): it went upstream.
    Allowed,
    /// Refused by a hook, an approval rule or an approver (or handed back for input).
    Denied,
    /// Not in the caller's view.
    UnknownTool,
    InvalidArguments,
    RateLimited,
    /// Refused because the audit ledger could not keep its record.
    Unavailable,
}

impl Decision {
    const ALL: [Self; 6] = [
        Self::Allowed,
        Self::Denied,
        Self::UnknownTool,
        Self::InvalidArguments,
        Self::RateLimited,
        Self::Unavailable,
    ];

    fn of(status: CallStatus) -> Self {
        match status {
            CallStatus::Denied => Self::Denied,
            CallStatus::UnknownTool => Self::UnknownTool,
            CallStatus::InvalidArguments => Self::InvalidArguments,
            CallStatus::RateLimited => Self::RateLimited,
            CallStatus::Unavailable => Self::Unavailable,
            CallStatus::Ok
            | CallStatus::ToolError
            | CallStatus::TimedOut
            | CallStatus::Cancelled
            | CallStatus::UpstreamDown
            | CallStatus::UpstreamError
            | CallStatus::InputRequired => Self::Allowed,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidArguments => "invalid_arguments",
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Which duration family an observation goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// `mcp_server_operation_duration_seconds` (its first four labels).
    Server,
    /// `mcp_client_operation_duration_seconds`.
    Client,
}

/// One duration for a label set, and for a call the policy's decision.
struct Observation<'a> {
    family: Target,
    /// Method, tool, error type, agent, server (empty for the server family).
    labels: [&'a str; 5],
    duration: Duration,
    decision: Option<Decision>,
}

/// The metrics a Host keeps (one per Host, made by [`GatewayMetrics::new`]).
pub struct GatewayMetrics {
    /// By method, tool, error type, agent.
    server: Family<Histogram, 4>,
    /// By method, upstream tool, error type, agent, server.
    client: Family<Histogram, 5>,
    /// By [`Decision`], in [`Decision::ALL`]'s order.
    decisions: [AtomicU64; Decision::ALL.len()],
    /// By agent.
    rate_limited: Family<AtomicU64, 1>,
    /// The agents the config defines: the only agent label values besides
    /// [`UNKNOWN`] and the empty one.
    agents: ArcSwap<HashSet<String>>,
    /// Whether calls are counted at all (`[telemetry] metrics`).
    counting: bool,
    /// Observations waiting for their thread to go idle.
    pending: Pending,
    /// This, to register as each thread's idle work.
    me: Weak<GatewayMetrics>,
}

impl idle::IdleWork for GatewayMetrics {
    fn run_idle(&self) {
        self.pending.drain_this_thread(|held| self.apply(held));
    }
}

impl GatewayMetrics {
    /// Metrics that count (`counting`), or that only serve the gauges read at scrape time.
    pub fn new(counting: bool) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            counting,
            pending: Pending::default(),
            me: me.clone(),
            server: Family::default(),
            client: Family::default(),
            decisions: Default::default(),
            rate_limited: Family::default(),
            agents: ArcSwap::default(),
        })
    }

    /// Adopts the agents the config now defines (at start and when a reload changes them).
    pub(crate) fn set_agents<'a>(&self, agents: impl IntoIterator<Item = &'a String>) {
        self.agents
            .store(Arc::new(agents.into_iter().cloned().collect()));
    }

    /// The agent label: the agent if the config defines it, empty without one. Asked only
    /// when a label set is seen for the first time (a family's `bound`): an agent a reload
    /// removes keeps the series it has.
    fn agent_label<'a>(&self, agent: &'a str) -> &'a str {
        if agent.is_empty() || self.agents.load().contains(agent) {
            agent
        } else {
            UNKNOWN
        }
    }

    /// A label set seen for the first time, with its agent (at `agent`) bounded.
    fn bound<'a, const N: usize>(&self, mut labels: [&'a str; N], agent: usize) -> [&'a str; N] {
        if let Some(value) = labels.get_mut(agent) {
            *value = self.agent_label(value);
        }
        labels
    }

    /// One call through the pipeline, from its record.
    pub(crate) fn record_call(&self, record: &CallRecord) {
        let agent = record.agent.as_deref().unwrap_or("");
        // Only a name the catalog resolved is a label value; `name` is then an exposed name
        // or an alias of the catalog.
        let tool = match &record.target {
            Some(_) => record.name.as_str(),
            None => UNKNOWN,
        };
        let error = match record.status {
            CallStatus::Ok => "",
            status => status.as_str(),
        };
        self.observe(Observation {
            family: Target::Server,
            labels: [TOOLS_CALL, tool, error, agent, ""],
            duration: record.duration,
            decision: Some(Decision::of(record.status)),
        });
    }

    /// One request other than `tools/call`, as the front timed it: the error type is the
    /// JSON-RPC code it was answered with (the OpenTelemetry convention's `error.type`).
    pub(crate) fn record_request(
        &self,
        method: &str,
        agent: Option<&str>,
        elapsed: Duration,
        error: Option<i64>,
    ) {
        let method = METHODS
            .iter()
            .find(|known| **known == method)
            .copied()
            .unwrap_or(OTHER);
        // Only codes of the reserved range become labels (a bounded set); an error path, so
        // the code's text may be allocated.
        let code = error.map(|code| match code {
            -32768..=-32000 => code.to_string(),
            _ => OTHER.to_owned(),
        });
        self.observe(Observation {
            family: Target::Server,
            labels: [
                method,
                "",
                code.as_deref().unwrap_or(""),
                agent.unwrap_or(""),
                "",
            ],
            duration: elapsed,
            decision: None,
        });
    }

    /// One attempt of a call to `server`'s `tool` (the upstream's own name, from the
    /// catalog), as the latency layer measured it.
    pub(crate) fn record_attempt(
        &self,
        server: &str,
        tool: &str,
        agent: Option<&str>,
        answer: &Result<ToolOutcome, UpstreamError>,
        elapsed: Duration,
    ) {
        let error = match answer {
            Ok(outcome) if outcome.is_error => CallStatus::ToolError.as_str(),
            Ok(_) => "",
            Err(UpstreamError::Timeout { .. }) => CallStatus::TimedOut.as_str(),
            Err(UpstreamError::Cancelled) => CallStatus::Cancelled.as_str(),
            Err(UpstreamError::InputRequired { .. }) => CallStatus::InputRequired.as_str(),
            Err(UpstreamError::Unavailable { .. } | UpstreamError::Disconnected { .. }) => {
                CallStatus::UpstreamDown.as_str()
            }
            Err(_) => CallStatus::UpstreamError.as_str(),
        };
        self.observe(Observation {
            family: Target::Client,
            labels: [TOOLS_CALL, tool, error, agent.unwrap_or(""), server],
            duration: elapsed,
            decision: None,
        });
    }

    /// Counts an observation when its thread goes idle, or at once on a thread that never
    /// does (see [`deferred`]).
    fn observe(&self, observation: Observation<'_>) {
        if !self.counting {
            return;
        }
        if !idle::parks_here() {
            self.apply(&observation);
            return;
        }
        match self.pending.hold(&observation, |held| self.apply(held)) {
            Held::New => {
                let me: Weak<dyn idle::IdleWork> = self.me.clone();
                idle::register(me);
                idle::work_is_due();
            }
            Held::Buffered => idle::work_is_due(),
            Held::Counted => {}
        }
    }

    /// Counts what every thread still holds (a scrape reads nothing stale).
    pub(crate) fn catch_up(&self) {
        self.pending.drain_all(|held| self.apply(held));
    }

    /// Counts an observation into its series (a series seen for the first time is added,
    /// its agent bounded).
    fn apply(&self, observation: &Observation<'_>) {
        let [method, tool, error, agent, server] = observation.labels;
        let duration = observation.duration;
        match observation.family {
            Target::Server => self.server.with(
                [method, tool, error, agent],
                |l| self.bound(l, 3),
                |histogram| histogram.observe(duration),
            ),
            Target::Client => self.client.with(
                [method, tool, error, agent, server],
                |l| self.bound(l, 3),
                |histogram| histogram.observe(duration),
            ),
        }
        let Some(decision) = observation.decision else {
            return;
        };
        self.decisions[decision as usize].fetch_add(1, Ordering::Relaxed);
        if decision == Decision::RateLimited {
            self.rate_limited.with(
                [agent],
                |l| self.bound(l, 0),
                |count| {
                    count.fetch_add(1, Ordering::Relaxed);
                },
            );
        }
    }
}

/// The gateway's recorder with the call metrics in front: each record is counted, then handed
/// on unchanged.
pub(crate) struct MetricsRecorder {
    pub(crate) inner: Arc<dyn Recorder>,
    pub(crate) metrics: Arc<GatewayMetrics>,
}

impl Recorder for MetricsRecorder {
    fn record(&self, record: &CallRecord) {
        self.metrics.record_call(record);
        self.inner.record(record);
    }

    fn record_change(&self, change: &ChangeRecord) {
        self.inner.record_change(change);
    }

    fn capture_arguments(&self, arguments: &Map<String, Value>) -> Option<RecordedArguments> {
        self.inner.capture_arguments(arguments)
    }

    fn unavailable(&self) -> Option<String> {
        self.inner.unavailable()
    }

    fn write_metrics(&self, out: &mut Exposition) {
        self.inner.write_metrics(out);
    }
}

#[cfg(test)]
mod tests;
