//! The scrape: every metric family of a Host in the text exposition format, in a fixed order.
//! Counted figures come from [`GatewayMetrics`]; the states (approvals waiting, servers up,
//! tools per tier, the cache, the ledger) are read from their owners now.

use std::sync::atomic::Ordering;

use switchboard_core::metrics::{Exposition, Histogram, Kind};
use switchboard_mcp::upstream::ServerState;

use super::family::Family;
use super::{Decision, GatewayMetrics};
use crate::Host;

const SERVER_DURATION: &str = "mcp_server_operation_duration_seconds";
const CLIENT_DURATION: &str = "mcp_client_operation_duration_seconds";
const LABELS: [&str; 5] = [
    "mcp_method_name",
    "gen_ai_tool_name",
    "error_type",
    "agent",
    "server",
];

impl GatewayMetrics {
    /// The counted families: durations, policy decisions, rate-limited calls.
    pub(super) fn write(&self, out: &mut Exposition) {
        write_durations(
            out,
            SERVER_DURATION,
            "Duration of MCP requests the gateway served (tools/call: the whole pipeline).",
            &self.server,
        );
        write_durations(
            out,
            CLIENT_DURATION,
            "Duration of MCP requests the gateway sent to upstream servers, per attempt.",
            &self.client,
        );
        out.family(
            "switchboard_policy_decisions_total",
            Kind::Counter,
            "Tool calls by what the policy stages decided (allowed: passed every check).",
        );
        for decision in Decision::ALL {
            let count = self.decisions[decision as usize].load(Ordering::Relaxed);
            out.sample(
                "switchboard_policy_decisions_total",
                &[("outcome", decision.as_str())],
                count as f64,
            );
        }
        out.family(
            "switchboard_rate_limited_calls_total",
            Kind::Counter,
            "Tool calls refused by a rate limit, concurrency cap or quota.",
        );
        for series in self.rate_limited.sorted() {
            let count = series.value.load(Ordering::Relaxed);
            out.sample(
                "switchboard_rate_limited_calls_total",
                &[("agent", series.labels()[0])],
                count as f64,
            );
        }
    }
}

/// A duration family whose labels are the first `N` of [`LABELS`].
fn write_durations<const N: usize>(
    out: &mut Exposition,
    name: &str,
    help: &str,
    family: &Family<Histogram, N>,
) {
    out.family(name, Kind::Histogram, help);
    for series in family.sorted() {
        let values = series.labels();
        let labels: [(&str, &str); N] = std::array::from_fn(|i| (LABELS[i], values[i]));
        out.histogram(name, &labels, &series.value.snapshot());
    }
}

impl Host {
    /// Every metric of this gateway, in the Prometheus text exposition format (version 0.0.4).
    pub fn metrics_text(&self) -> String {
        let mut out = Exposition::new();
        self.inner.metrics.catch_up();
        self.inner.metrics.write(&mut out);
        self.write_approvals(&mut out);
        self.write_servers(&mut out);
        self.write_tiers(&mut out);
        let (hits, misses) = self.inner.latency.cache.counts();
        out.family(
            "switchboard_cache_hits_total",
            Kind::Counter,
            "Tool calls answered from the result cache (shared in-flight answers included).",
        );
        out.sample("switchboard_cache_hits_total", &[], hits as f64);
        out.family(
            "switchboard_cache_misses_total",
            Kind::Counter,
            "Calls of cacheable tools that went upstream.",
        );
        out.sample("switchboard_cache_misses_total", &[], misses as f64);
        if let Some(exporter) = &self.inner.options.telemetry {
            out.family(
                "switchboard_trace_spans_exported_total",
                Kind::Counter,
                "Spans the trace collector took.",
            );
            let exported = exporter.exported();
            out.sample(
                "switchboard_trace_spans_exported_total",
                &[],
                exported as f64,
            );
            out.family(
                "switchboard_trace_spans_dropped_total",
                Kind::Counter,
                "Spans dropped because the export queue was full (a slow or unreachable collector).",
            );
            let dropped = exporter.dropped();
            out.sample("switchboard_trace_spans_dropped_total", &[], dropped as f64);
        }
        self.inner.pipeline.recorder().write_metrics(&mut out);
        out.finish()
    }

    fn write_approvals(&self, out: &mut Exposition) {
        let pending = self.inner.options.pending_approvals.as_deref();
        out.family(
            "switchboard_approvals_pending",
            Kind::Gauge,
            "Calls waiting for an operator's approval.",
        );
        let waiting = pending.map_or(0, |pending| pending.len());
        out.sample("switchboard_approvals_pending", &[], waiting as f64);
        out.family(
            "switchboard_approval_wait_seconds",
            Kind::Histogram,
            "How long calls waited for an approval decision (client or operator), by decision.",
        );
        if let Some(pending) = pending {
            for (decision, waited) in pending.waits() {
                out.histogram(
                    "switchboard_approval_wait_seconds",
                    &[("decision", decision)],
                    &waited,
                );
            }
        }
    }

    fn write_servers(&self, out: &mut Exposition) {
        out.family(
            "switchboard_upstream_up",
            Kind::Gauge,
            "Whether an upstream server is connected (1) or not (0: starting or down).",
        );
        let fleet = self.inner.fleet.load();
        let mut servers: Vec<(String, bool)> = fleet
            .members
            .iter()
            .map(|member| {
                let supervisor = member.supervisor();
                let up = supervisor.status().state == ServerState::Up;
                (supervisor.id().to_string(), up)
            })
            .collect();
        servers.sort();
        for (server, up) in servers {
            out.sample(
                "switchboard_upstream_up",
                &[("server", &server)],
                f64::from(u8::from(up)),
            );
        }
    }

    fn write_tiers(&self, out: &mut Exposition) {
        out.family(
            "switchboard_tier_tools",
            Kind::Gauge,
            "Tools of the catalog that fit each latency tier now (a tool fits its tier and slower ones).",
        );
        let latency = &self.inner.latency;
        let fits = latency.fits();
        let catalog = self.catalog();
        let tiers = latency.tiers();
        let mut counts = vec![0u64; tiers.len()];
        for entry in catalog.entries() {
            if let Some(Some(fastest)) = fits.get(&entry.exposed) {
                for slot in counts.iter_mut().skip(fastest.0) {
                    *slot += 1;
                }
            }
        }
        for ((_, tier), count) in tiers.iter().zip(counts) {
            out.sample(
                "switchboard_tier_tools",
                &[("tier", &tier.name)],
                count as f64,
            );
        }
    }
}
