//! `[telemetry]`: OpenTelemetry traces, exported over OTLP/HTTP. Off unless an endpoint is
//! set here or in the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables (which the gateway honours with the other
//! `OTEL_*` ones; docs/telemetry.md). What the file says wins over the variables.
//!
//! ```toml
//! [telemetry]
//! endpoint = "http://127.0.0.1:4318/v1/traces"  # the OTLP/HTTP traces URL, used as written
//! headers = { Authorization = "Bearer ${OTLP_TOKEN}" }
//! service_name = "switchboard"                   # resource service.name
//! sample_ratio = 1.0                             # of new traces (a caller's decision is kept)
//! capture_content = false                        # tool arguments and results in spans
//! trace_url = "http://127.0.0.1:16686/trace/{trace_id}"  # the console links rows to traces
//! metrics = true                                 # count calls for /metrics (false: gauges only)
//! ```

use super::model::TelemetryConfig;
use super::transport::check_url;
use super::tree::{Node, Value};
use super::validate::Walk;

pub(super) const TELEMETRY_KEYS: [&str; 7] = [
    "endpoint",
    "metrics",
    "trace_url",
    "headers",
    "service_name",
    "sample_ratio",
    "capture_content",
];

impl Walk<'_> {
    pub(super) fn telemetry(&mut self, node: &Node) -> TelemetryConfig {
        let mut telemetry = TelemetryConfig::default();
        for (key, key_pos, value) in self.table(node, "telemetry") {
            let what = format!("telemetry.{key}");
            match key.as_str() {
                "endpoint" => {
                    let Some(url) = self.string(value, &what) else {
                        continue;
                    };
                    match check_url(&url) {
                        Ok(()) => telemetry.endpoint = Some(url),
                        Err(why) => self.problem(value.pos, format!("{what} {why}"), None),
                    }
                }
                "trace_url" => {
                    let Some(url) = self.string(value, &what) else {
                        continue;
                    };
                    match check_url(&url) {
                        Ok(()) if url.contains("{trace_id}") => telemetry.trace_url = Some(url),
                        Ok(()) => self.problem(
                            value.pos,
                            format!("{what} has no {{trace_id}} to put the trace's id in"),
                            Some("e.g. \"http://127.0.0.1:16686/trace/{trace_id}\"".to_owned()),
                        ),
                        Err(why) => self.problem(value.pos, format!("{what} {why}"), None),
                    }
                }
                "headers" => telemetry.headers = self.string_map(value, &what),
                "service_name" => telemetry.service_name = self.string(value, &what),
                "sample_ratio" => {
                    let ratio = match value.value {
                        Value::Integer(n) => Some(n as f64),
                        Value::Float(x) => Some(x),
                        _ => None,
                    };
                    match ratio {
                        Some(ratio) if (0.0..=1.0).contains(&ratio) => {
                            telemetry.sample_ratio = Some(ratio);
                        }
                        _ => self.problem(
                            value.pos,
                            format!("{what} must be a number from 0 to 1"),
                            Some("1.0 traces every new trace, 0.1 one in ten".to_owned()),
                        ),
                    }
                }
                "capture_content" => {
                    telemetry.capture_content = self.bool(value, &what).unwrap_or(false);
                }
                "metrics" => {
                    telemetry.metrics_off = !self.bool(value, &what).unwrap_or(true);
                }
                other => self.unknown(*key_pos, other, "telemetry", &TELEMETRY_KEYS),
            }
        }
        telemetry
    }
}
