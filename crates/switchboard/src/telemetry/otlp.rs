//! The OTLP/HTTP exporter: finished spans go into a bounded queue (a full queue drops new
//! spans and counts them, so a slow collector never slows a call) — each span bounded too,
//! its texts cut at [`TelemetrySettings::max_attribute_bytes`] and captured arguments and
//! results redacted as the ledger redacts them — and one task sends them
//! in batches — when [`TelemetrySettings::max_batch`] have gathered or
//! [`TelemetrySettings::schedule_delay`] after the first — as OTLP JSON
//! (`ExportTraceServiceRequest`) to the traces endpoint. A refused or failed export is
//! logged and its spans dropped (counted); nothing is retried. [`OtlpExporter::flush`] sends what is
//! queued, for a gateway that stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use switchboard_core::trace::{AttributeValue, FinishedSpan, SpanKind, Telemetry, TraceContext};
use tokio::sync::{mpsc, oneshot};

use super::{Sampler, TelemetrySettings};

/// An answer from the collector is read up to this size (it is only logged).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

enum Item {
    Span(Box<FinishedSpan>),
    Flush(oneshot::Sender<()>),
}

/// Spans out of the gateway, over OTLP/HTTP.
pub struct OtlpExporter {
    queue: mpsc::Sender<Item>,
    sampler: Sampler,
    capture_content: bool,
    max_attribute_bytes: usize,
    dropped: Arc<AtomicU64>,
    exported: Arc<AtomicU64>,
}

impl std::fmt::Debug for OtlpExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpExporter")
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl OtlpExporter {
    /// Starts the exporter's task on the current tokio runtime; an error when the settings'
    /// headers cannot be sent or there is no runtime.
    pub fn start(settings: TelemetrySettings) -> Result<Arc<Self>, String> {
        let mut headers = HeaderMap::new();
        for (name, value) in &settings.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("telemetry header name '{name}' is not valid"))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| format!("telemetry header '{name}' has a value that is not valid"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| "traces need the tokio runtime to be running".to_owned())?;
        let (queue, items) = mpsc::channel(settings.max_queue);
        let exporter = Arc::new(Self {
            queue,
            sampler: settings.sampler,
            capture_content: settings.capture_content,
            max_attribute_bytes: settings.max_attribute_bytes,
            dropped: Arc::default(),
            exported: Arc::default(),
        });
        let sender = Sender {
            resource: resource_json(&settings),
            endpoint: settings.endpoint.clone(),
            shown: switchboard_core::config::redacted_url(&settings.endpoint),
            headers,
            timeout: settings.timeout,
            exported: exporter.exported.clone(),
            dropped: exporter.dropped.clone(),
        };
        runtime.spawn(run(
            items,
            sender,
            settings.max_batch,
            settings.schedule_delay,
        ));
        Ok(exporter)
    }

    /// Sends what is queued now and waits for it (at most `limit`, a full queue included).
    pub async fn flush(&self, limit: Duration) {
        let (done, sent) = oneshot::channel();
        let _ = tokio::time::timeout(limit, async {
            if self.queue.send(Item::Flush(done)).await.is_ok() {
                let _ = sent.await;
            }
        })
        .await;
    }

    /// Spans dropped: the queue was full, or the collector refused or never got their batch
    /// (`switchboard_trace_spans_dropped_total`).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Spans the collector took.
    pub fn exported(&self) -> u64 {
        self.exported.load(Ordering::Relaxed)
    }
}

impl Telemetry for OtlpExporter {
    fn samples(&self, parent: Option<&TraceContext>) -> bool {
        self.sampler.samples(parent)
    }

    fn export(&self, mut span: FinishedSpan) {
        bound(&mut span, self.max_attribute_bytes);
        if self.queue.try_send(Item::Span(Box::new(span))).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn captures_content(&self) -> bool {
        self.capture_content
    }
}

/// Cuts `span`'s texts at `limit` bytes (at a character's boundary), after redacting the
/// captured arguments and result as the ledger does.
pub(super) fn bound(span: &mut FinishedSpan, limit: usize) {
    let cut = |text: &mut String| {
        if text.len() > limit {
            text.truncate(text.floor_char_boundary(limit));
        }
    };
    cut(&mut span.name);
    if let Some(error) = &mut span.error {
        cut(error);
    }
    for (key, value) in &mut span.attributes {
        let AttributeValue::Text(text) = value else {
            continue;
        };
        if matches!(
            *key,
            "gen_ai.tool.call.arguments" | "gen_ai.tool.call.result"
        ) && let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text)
        {
            *text = switchboard_ledger::redact::redact(&object).to_string();
        }
        cut(text);
    }
}

/// Where and how batches go.
struct Sender {
    /// The resource's JSON, written once.
    resource: String,
    endpoint: String,
    /// The endpoint as logs show it: without userinfo or query, where credentials go.
    shown: String,
    headers: HeaderMap,
    timeout: Duration,
    exported: Arc<AtomicU64>,
    /// Spans of batches the collector refused or never got (they are not sent again).
    dropped: Arc<AtomicU64>,
}

impl Sender {
    async fn send(&self, spans: &mut Vec<FinishedSpan>) {
        if spans.is_empty() {
            return;
        }
        let count = spans.len() as u64;
        let body = export_request(&self.resource, spans);
        spans.clear();
        let sent = tokio::time::timeout(
            self.timeout,
            switchboard_mcp::upstream::http::request(
                Method::POST,
                &self.endpoint,
                self.headers.clone(),
                Bytes::from(body),
                MAX_ANSWER_BYTES,
            ),
        )
        .await;
        match sent {
            Ok(Ok((status, _))) if status.is_success() => {
                self.exported.fetch_add(count, Ordering::Relaxed);
                return;
            }
            Ok(Ok((status, answer))) => tracing::warn!(
                target: "switchboard::telemetry",
                "the trace collector {} refused {count} spans: {status} {}",
                self.shown,
                String::from_utf8_lossy(&answer[..answer.len().min(200)])
            ),
            Ok(Err(error)) => tracing::warn!(
                target: "switchboard::telemetry",
                "cannot send {count} spans: {}",
                error.to_string().replace(&self.endpoint, &self.shown)
            ),
            Err(_) => tracing::warn!(
                target: "switchboard::telemetry",
                "the trace collector {} did not answer in {:?}; {count} spans dropped",
                self.shown,
                self.timeout
            ),
        }
        self.dropped.fetch_add(count, Ordering::Relaxed);
    }
}

/// The exporter's task: gathers spans into batches and sends them.
async fn run(mut items: mpsc::Receiver<Item>, sender: Sender, max_batch: usize, delay: Duration) {
    let mut batch: Vec<FinishedSpan> = Vec::new();
    // When the batch goes, at the latest: `delay` after its first span (a steady trickle
    // must not hold it back until it is full).
    let mut due = tokio::time::Instant::now();
    loop {
        let item = if batch.is_empty() {
            items.recv().await
        } else {
            match tokio::time::timeout_at(due, items.recv()).await {
                Ok(item) => item,
                Err(_) => {
                    sender.send(&mut batch).await;
                    continue;
                }
            }
        };
        match item {
            Some(Item::Span(span)) => {
                if batch.is_empty() {
                    due = tokio::time::Instant::now() + delay;
                }
                batch.push(*span);
                if batch.len() >= max_batch {
                    sender.send(&mut batch).await;
                }
            }
            Some(Item::Flush(done)) => {
                sender.send(&mut batch).await;
                let _ = done.send(());
            }
            None => {
                sender.send(&mut batch).await;
                return;
            }
        }
    }
}

/// The resource part of every request, written once: `{"attributes":[...]}`.
fn resource_json(settings: &TelemetrySettings) -> String {
    let mut out = String::from("{\"attributes\":[");
    for (index, (key, value)) in settings.resource.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        push_str(&mut out, key);
        out.push_str(",\"value\":{\"stringValue\":");
        push_str(&mut out, value);
        out.push_str("}}");
    }
    out.push_str("]}");
    out
}

/// An OTLP `ExportTraceServiceRequest` in its JSON form (ids as hex, 64-bit numbers as
/// decimal strings), written straight into text: building it as a `serde_json::Value` first
/// cost the gateway more per call than the rest of the call (callgrind, docs/telemetry.md).
pub fn export_request(resource: &str, spans: &[FinishedSpan]) -> String {
    let mut out = String::with_capacity(256 + spans.len() * 640);
    out.push_str("{\"resourceSpans\":[{\"resource\":");
    out.push_str(resource);
    out.push_str(",\"scopeSpans\":[{\"scope\":{\"name\":\"switchboard\",\"version\":\"");
    out.push_str(env!("CARGO_PKG_VERSION"));
    out.push_str("\"},\"spans\":[");
    for (index, span) in spans.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_span(&mut out, span);
    }
    out.push_str("]}]}]}");
    out
}

fn write_span(out: &mut String, span: &FinishedSpan) {
    use std::fmt::Write;
    let nanos = |at: SystemTime| {
        at.duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos())
    };
    let kind = match span.kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
    };
    let _ = write!(
        out,
        "{{\"traceId\":\"{}\",\"spanId\":\"{}\",",
        span.context.trace_id_hex(),
        span.context.span_id_hex()
    );
    if let Some(parent) = span.parent {
        let _ = write!(
            out,
            "\"parentSpanId\":\"{}\",",
            switchboard_core::trace::hex(&parent)
        );
    }
    if let Some(state) = &span.context.state {
        out.push_str("\"traceState\":");
        push_str(out, state);
        out.push(',');
    }
    out.push_str("\"name\":");
    push_str(out, &span.name);
    let _ = write!(
        out,
        ",\"kind\":{kind},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":[",
        nanos(span.start),
        nanos(span.end)
    );
    for (index, (key, value)) in span.attributes.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        push_str(out, key);
        out.push_str(",\"value\":");
        match value {
            AttributeValue::Text(text) => {
                out.push_str("{\"stringValue\":");
                push_str(out, text);
                out.push('}');
            }
            AttributeValue::Int(number) => {
                let _ = write!(out, "{{\"intValue\":\"{number}\"}}");
            }
            AttributeValue::Bool(flag) => {
                let _ = write!(out, "{{\"boolValue\":{flag}}}");
            }
        }
        out.push('}');
    }
    out.push_str("],\"status\":");
    match &span.error {
        Some(message) => {
            out.push_str("{\"code\":2,\"message\":");
            push_str(out, message);
            out.push_str("}}");
        }
        None => out.push_str("{\"code\":0}}"),
    }
}

/// `text` as a JSON string: runs that need no escape are copied whole.
fn push_str(out: &mut String, text: &str) {
    use std::fmt::Write;
    out.push('"');
    let mut run = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&text[run..at]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escaped);
        }
        run = at + 1;
    }
    out.push_str(&text[run..]);
    out.push('"');
}
