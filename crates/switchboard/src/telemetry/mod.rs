//! OpenTelemetry traces out of the gateway: [`TelemetrySettings`] read from `[telemetry]` and
//! the standard `OTEL_*` variables (the file wins), a parent-based [`Sampler`], and the
//! [`OtlpExporter`] ([`otlp`]) that batches finished spans and posts them as OTLP/HTTP JSON.
//! Off — no exporter, a caller's trace context passed through unchanged — unless a traces
//! endpoint is configured.
//!
//! Honoured: `OTEL_SDK_DISABLED`, `OTEL_EXPORTER_OTLP_ENDPOINT` (with `/v1/traces` added),
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as written), `OTEL_EXPORTER_OTLP[_TRACES]_HEADERS`,
//! `OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT`, `OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL` (JSON is sent
//! for `http/json` and `http/protobuf` alike, which OTLP/HTTP receivers take at the same URL;
//! `grpc` turns traces off with a warning), `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio` and their `parentbased_`
//! forms) with `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_SCHEDULE_DELAY`,
//! `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
//! `OTEL_[SPAN_]ATTRIBUTE_VALUE_LENGTH_LIMIT` (default 4096 bytes here, not unlimited: a
//! request of 16 MiB must not become spans of 16 MiB in a queue of thousands).

pub mod otlp;

use std::collections::BTreeMap;
use std::time::Duration;

use switchboard_core::config::TelemetryConfig;
use switchboard_core::trace::TraceContext;

pub use otlp::OtlpExporter;

/// Which new traces are recorded, and whether a caller's decision is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    /// The share of traces recorded when nobody decided before (0 to 1).
    pub ratio: f64,
    /// Follow the caller's `sampled` flag when the request carries a trace context.
    pub parent_based: bool,
}

impl Sampler {
    /// Whether a trace whose caller's context is `parent` is recorded.
    pub fn samples(&self, parent: Option<&TraceContext>) -> bool {
        match parent {
            Some(parent) if self.parent_based => parent.sampled,
            Some(parent) => self.by_ratio(&parent.trace_id),
            // A new trace's id is not drawn yet: a fresh draw is as good.
            None => self.ratio >= 1.0 || rand::random::<f64>() < self.ratio,
        }
    }

    /// The `traceidratio` decision: the trace id's low 8 bytes against the ratio, so every
    /// service deciding by ratio decides the same for one trace.
    fn by_ratio(&self, trace_id: &[u8; 16]) -> bool {
        let mut low = [0; 8];
        low.copy_from_slice(&trace_id[8..]);
        let value = u64::from_be_bytes(low) >> 1;
        (value as f64) < self.ratio * ((u64::MAX >> 1) as f64)
    }
}

/// Everything the exporter needs, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP traces URL.
    pub endpoint: String,
    pub headers: BTreeMap<String, String>,
    /// Resource attributes; `service.name` among them.
    pub resource: BTreeMap<String, String>,
    pub sampler: Sampler,
    pub capture_content: bool,
    /// One export request's limit.
    pub timeout: Duration,
    /// How long spans wait to be sent with others.
    pub schedule_delay: Duration,
    /// Spans held at most; past it new ones are dropped (and counted).
    pub max_queue: usize,
    /// Spans per export request at most.
    pub max_batch: usize,
    /// The longest text of a span's name, attribute or error, in bytes (longer ones are cut).
    pub max_attribute_bytes: usize,
}

/// The default [`TelemetrySettings::max_attribute_bytes`].
pub const DEFAULT_MAX_ATTRIBUTE_BYTES: usize = 4096;

impl TelemetrySettings {
    /// The settings of `config` and the environment (`env` looks a variable up), or `None`
    /// when traces are off; a warning says why they are off when something asked for them.
    pub fn resolve(
        config: &TelemetryConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (Option<Self>, Option<String>) {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return (None, None);
        }
        let endpoint = config
            .endpoint
            .clone()
            .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            .or_else(|| {
                var("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
            });
        let Some(endpoint) = endpoint else {
            return (None, None);
        };
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if protocol.as_deref() == Some("grpc") && config.endpoint.is_none() {
            let warning = "traces are off: OTEL_EXPORTER_OTLP_PROTOCOL is grpc, and the gateway \
                           exports OTLP over HTTP only (set http/json and the HTTP port, usually 4318)";
            return (None, Some(warning.to_owned()));
        }
        let mut headers = BTreeMap::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            headers.extend(pairs(&var(name).unwrap_or_default()));
        }
        headers.extend(config.headers.clone());
        let mut resource = pairs(&var("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default());
        let service = config
            .service_name
            .clone()
            .or_else(|| var("OTEL_SERVICE_NAME"))
            .or_else(|| resource.get("service.name").cloned())
            .unwrap_or_else(|| "switchboard".to_owned());
        resource.insert("service.name".into(), service);
        resource.insert("service.version".into(), env!("CARGO_PKG_VERSION").into());
        let millis = |name: &str, default: u64| {
            Duration::from_millis(var(name).and_then(|v| v.parse().ok()).unwrap_or(default))
        };
        let count = |name: &str, default: usize| {
            var(name)
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        let timeout = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .map(|_| millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 10_000))
            .unwrap_or_else(|| millis("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000));
        let sampler = match config.sample_ratio {
            Some(ratio) => Sampler {
                ratio,
                parent_based: true,
            },
            None => sampler_of(
                var("OTEL_TRACES_SAMPLER").as_deref(),
                var("OTEL_TRACES_SAMPLER_ARG").as_deref(),
            ),
        };
        let settings = Self {
            endpoint,
            headers,
            resource,
            sampler,
            capture_content: config.capture_content,
            timeout,
            schedule_delay: millis("OTEL_BSP_SCHEDULE_DELAY", 1_000),
            max_queue: count("OTEL_BSP_MAX_QUEUE_SIZE", 2_048),
            max_batch: count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
            max_attribute_bytes: var("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
                .map(|_| {
                    count(
                        "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                        DEFAULT_MAX_ATTRIBUTE_BYTES,
                    )
                })
                .unwrap_or_else(|| {
                    count(
                        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                        DEFAULT_MAX_ATTRIBUTE_BYTES,
                    )
                }),
        };
        (Some(settings), None)
    }
}

/// `OTEL_TRACES_SAMPLER` and its argument; unknown names mean the default,
/// `parentbased_always_on`.
fn sampler_of(name: Option<&str>, arg: Option<&str>) -> Sampler {
    let ratio = arg
        .and_then(|arg| arg.parse::<f64>().ok())
        .filter(|ratio| (0.0..=1.0).contains(ratio))
        .unwrap_or(1.0);
    let (ratio, parent_based) = match name.unwrap_or("parentbased_always_on") {
        "always_on" => (1.0, false),
        "always_off" => (0.0, false),
        "traceidratio" => (ratio, false),
        "parentbased_always_off" => (0.0, true),
        "parentbased_traceidratio" => (ratio, true),
        _ => (1.0, true),
    };
    Sampler {
        ratio,
        parent_based,
    }
}

/// `k1=v1,k2=v2` with percent-encoded values (the W3C Baggage form the `OTEL_*` lists use).
fn pairs(text: &str) -> BTreeMap<String, String> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (key.to_owned(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let decoded = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
