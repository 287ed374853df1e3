//! Settings from the file and the `OTEL_*` variables, the sampler, and the OTLP JSON shape.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use switchboard_core::trace::{AttributeValue, FinishedSpan, SpanKind, Telemetry, TraceContext};

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

fn span_named(name: &str, attributes: Vec<(&'static str, AttributeValue)>) -> FinishedSpan {
    FinishedSpan {
        context: TraceContext::root(),
        parent: None,
        name: name.into(),
        kind: SpanKind::Server,
        start: UNIX_EPOCH,
        end: UNIX_EPOCH,
        attributes,
        error: Some("é".repeat(100)),
    }
}

/// A span's texts are cut at the limit (at a character's boundary); captured arguments are
/// redacted as the ledger redacts them.
#[test]
fn spans_are_bounded_and_captured_secrets_redacted() {
    let mut span = span_named(
        &"n".repeat(100),
        vec![
            ("mcp.session.id", "s".repeat(100).into()),
            (
                "gen_ai.tool.call.arguments",
                json!({"path": "a", "password": "hunter2"})
                    .to_string()
                    .into(),
            ),
            ("n", 7.into()),
        ],
    );
    otlp::bound(&mut span, 51);
    assert_eq!(span.name.len(), 51);
    assert_eq!(
        span.error.as_deref().map(str::len),
        Some(50),
        "é is two bytes"
    );
    let text = |key: &str| match &span
        .attributes
        .iter()
        .find(|(k, _)| *k == key)
        .expect(key)
        .1
    {
        AttributeValue::Text(text) => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text("mcp.session.id").len(), 51);
    let arguments = text("gen_ai.tool.call.arguments");
    assert!(
        !arguments.contains("hunter2") && arguments.contains("\"path\":\"a\""),
        "{arguments}"
    );
    assert!(
        TelemetrySettings::resolve(&TelemetryConfig::default(), &|name| (name
            == "OTEL_EXPORTER_OTLP_ENDPOINT")
            .then(|| "http://127.0.0.1:9".to_owned()))
        .0
        .is_some_and(|settings| settings.max_attribute_bytes == DEFAULT_MAX_ATTRIBUTE_BYTES)
    );
}

/// A collector on 127.0.0.1 that answers every request 200 and says when each came.
async fn collector() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<tokio::time::Instant>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let (seen, arrivals) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0_u8; 4096];
                loop {
                    let Ok(read) = stream.read(&mut chunk).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length:"))
                        .and_then(|n| n.trim().parse().ok())
                        .unwrap_or(0);
                    if buffer.len() < end + 4 + length {
                        continue;
                    }
                    buffer.drain(..end + 4 + length);
                    let _ = seen.send(tokio::time::Instant::now());
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{address}/v1/traces"), arrivals)
}

/// Spans trickling in faster than the schedule delay go `delay` after the first of them,
/// not once the trickle stops (or the batch fills).
#[tokio::test]
async fn a_batch_goes_a_delay_after_its_first_span_however_steady_the_trickle() {
    let (endpoint, mut arrivals) = collector().await;
    let (settings, _) =
        TelemetrySettings::resolve(&TelemetryConfig::default(), &|name| match name {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some(endpoint.clone()),
            "OTEL_BSP_SCHEDULE_DELAY" => Some("300".to_owned()),
            _ => None,
        });
    let exporter = OtlpExporter::start(settings.expect("on")).expect("started");
    let first = tokio::time::Instant::now();
    let trickle = async {
        for _ in 0..20 {
            exporter.export(span_named("tools/call t", Vec::new()));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let arrived = async {
        tokio::time::timeout(Duration::from_secs(5), arrivals.recv())
            .await
            .expect("a batch arrives")
            .expect("the collector runs")
    };
    let ((), arrived) = tokio::join!(trickle, arrived);
    let after = arrived - first;
    assert!(
        after < Duration::from_millis(1500),
        "the first batch went {after:?} after its first span, with spans every 100 ms"
    );
}

/// Spans the collector never got are counted as dropped (for /metrics), those it took as
/// exported.
#[tokio::test]
async fn spans_a_collector_never_got_are_counted_dropped() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}/v1/traces", closed.local_addr().expect("address"));
    drop(closed);
    let (settings, _) = TelemetrySettings::resolve(&TelemetryConfig::default(), &|name| {
        (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| endpoint.clone())
    });
    let exporter = OtlpExporter::start(settings.expect("on")).expect("started");
    exporter.export(span_named("tools/call t", Vec::new()));
    exporter.flush(Duration::from_secs(5)).await;
    assert_eq!((exporter.dropped(), exporter.exported()), (1, 0));
    let (endpoint, _arrivals) = collector().await;
    let (settings, _) = TelemetrySettings::resolve(&TelemetryConfig::default(), &|name| {
        (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").then(|| endpoint.clone())
    });
    let exporter = OtlpExporter::start(settings.expect("on")).expect("started");
    exporter.export(span_named("tools/call t", Vec::new()));
    exporter.flush(Duration::from_secs(5)).await;
    assert_eq!((exporter.dropped(), exporter.exported()), (0, 1));
}

/// An endpoint's userinfo and query (where credentials go) never reach the log.
#[test]
fn endpoints_are_logged_without_their_credentials() {
    let shown = switchboard_core::config::redacted_url(
        "https://user:s3cret@otel.example/v1/traces?api_key=k3y",
    );
    assert!(
        !shown.contains("s3cret") && !shown.contains("k3y"),
        "{shown}"
    );
    assert!(shown.contains("otel.example/v1/traces"), "{shown}");
    assert_eq!(
        switchboard_core::config::redacted_url("http://127.0.0.1:4318/v1/traces"),
        "http://127.0.0.1:4318/v1/traces"
    );
}
