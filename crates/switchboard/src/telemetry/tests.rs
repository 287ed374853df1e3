//! Settings from the file and the `OTEL_*` variables, the sampler, and the OTLP JSON shape.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use switchboard_core::trace::{FinishedSpan, SpanKind, TraceContext};

use super::*;

fn resolve(
    config: &TelemetryConfig,
    vars: &[(&str, &str)],
) -> (Option<TelemetrySettings>, Option<String>) {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    TelemetrySettings::resolve(config, &|name| vars.get(name).cloned())
}

#[test]
fn traces_are_off_without_an_endpoint_or_when_disabled() {
    assert_eq!(resolve(&TelemetryConfig::default(), &[]), (None, None));
    let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
    assert!(resolve(&TelemetryConfig::default(), &on).0.is_some());
    let off = [on[0], ("OTEL_SDK_DISABLED", "true")];
    assert_eq!(resolve(&TelemetryConfig::default(), &off), (None, None));
    let grpc = [on[0], ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
    let (settings, warning) = resolve(&TelemetryConfig::default(), &grpc);
    assert!(settings.is_none());
    assert!(warning.is_some_and(|w| w.contains("grpc")));
}

#[test]
fn the_variables_fill_in_and_the_file_wins() {
    let vars = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-team=voice"),
        ("OTEL_SERVICE_NAME", "gw-from-env"),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
    ];
    let (settings, _) = resolve(&TelemetryConfig::default(), &vars);
    let settings = settings.expect("on");
    assert_eq!(settings.endpoint, "http://collector:4318/v1/traces");
    assert_eq!(settings.headers["api-key"], "a b");
    assert_eq!(settings.resource["service.name"], "gw-from-env");
    assert_eq!(settings.resource["deployment.environment"], "prod");
    assert_eq!(
        settings.sampler,
        Sampler {
            ratio: 0.25,
            parent_based: true
        }
    );
    assert_eq!(settings.timeout, Duration::from_millis(2500));
    let file = TelemetryConfig {
        endpoint: Some("http://127.0.0.1:9/traces".into()),
        service_name: Some("gw".into()),
        sample_ratio: Some(1.0),
        headers: [("x-team".to_owned(), "npc".to_owned())].into(),
        capture_content: true,
        trace_url: None,
        metrics_off: false,
    };
    let settings = resolve(&file, &vars).0.expect("on");
    assert_eq!(settings.endpoint, "http://127.0.0.1:9/traces");
    assert_eq!(settings.resource["service.name"], "gw");
    assert_eq!(settings.headers["x-team"], "npc");
    assert_eq!(settings.sampler.ratio, 1.0);
    assert!(settings.capture_content);
}

#[test]
fn the_sampler_follows_the_caller_or_the_ratio() {
    let parent = TraceContext::root();
    let unsampled = TraceContext {
        sampled: false,
        ..parent.clone()
    };
    let based = Sampler {
        ratio: 0.0,
        parent_based: true,
    };
    assert!(based.samples(Some(&parent)));
    assert!(!based.samples(Some(&unsampled)));
    assert!(!based.samples(None));
    let always = Sampler {
        ratio: 1.0,
        parent_based: false,
    };
    assert!(always.samples(Some(&unsampled)) && always.samples(None));
    let half = Sampler {
        ratio: 0.5,
        parent_based: false,
    };
    let kept = (0..2000)
        .filter(|_| half.samples(Some(&TraceContext::root())))
        .count();
    assert!((800..1200).contains(&kept), "{kept} of 2000 at one half");
}

#[test]
fn spans_are_written_as_otlp_json() {
    let context = TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        Some("k=v"),
    )
    .expect("valid");
    let span = FinishedSpan {
        context,
        parent: Some([1, 2, 3, 4, 5, 6, 7, 8]),
        name: "tools/call fs__read".into(),
        kind: SpanKind::Server,
        start: UNIX_EPOCH + Duration::from_nanos(1_500),
        end: UNIX_EPOCH + Duration::from_nanos(2_500),
        attributes: vec![("mcp.method.name", "tools/call".into()), ("n", 7.into())],
        error: Some("bo\"om\n\u{1}".into()),
    };
    let text = otlp::export_request("{\"attributes\":[]}", &[span]);
    let request: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let span = &request["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    assert_eq!(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(span["spanId"], "00f067aa0ba902b7");
    assert_eq!(span["parentSpanId"], "0102030405060708");
    assert_eq!(span["kind"], 2);
    assert_eq!(span["startTimeUnixNano"], "1500");
    assert_eq!(span["traceState"], "k=v");
    assert_eq!(
        span["attributes"],
        json!([{"key": "mcp.method.name", "value": {"stringValue": "tools/call"}},
               {"key": "n", "value": {"intValue": "7"}}])
    );
    assert_eq!(
        span["status"],
        json!({"code": 2, "message": "bo\"om\n\u{1}"})
    );
}
