//! Distributed tracing, as the pipeline sees it: the W3C trace context a call runs in
//! ([`TraceContext`], from `params._meta.traceparent` or the HTTP `traceparent` header), the
//! spans the gateway finishes ([`FinishedSpan`]: a SERVER span per request, a CLIENT span per
//! upstream call, INTERNAL spans for stages that waited), and where they go ([`Telemetry`]:
//! an OTLP exporter in the `switchboard` crate, or nothing). No OpenTelemetry dependency here:
//! the types are the few the OpenTelemetry MCP conventions need.
//!
//! Without a [`Telemetry`], a call's trace context still passes through unchanged, so a
//! trace that crosses the gateway stays one trace.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use rand::Rng;

/// The `_meta` key (and HTTP header) of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key (and HTTP header) of the vendors' trace state.
pub const TRACESTATE: &str = "tracestate";
/// The `_meta` key (and HTTP header) of W3C Baggage, passed on as it came.
pub const BAGGAGE: &str = "baggage";

/// One span's place in a trace: W3C `traceparent` (version 00) and `tracestate`, and the
/// `baggage` that travels with it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The `sampled` flag: the caller records this trace.
    pub sampled: bool,
    /// `tracestate`, passed on as it came.
    pub state: Option<Arc<str>>,
    /// `baggage`, passed on as it came.
    pub baggage: Option<Arc<str>>,
}

/// Why a `traceparent` is not used ([`TraceContext::try_parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MalformedTraceparent {
    #[error("it has fewer than four '-'-separated fields (version-traceid-spanid-flags)")]
    TooFewFields,
    #[error("its version is not two lowercase hex digits")]
    Version,
    #[error("version ff is invalid")]
    VersionFf,
    #[error("a version 00 value is 00-<32 hex>-<16 hex>-<2 hex> and nothing more (55 characters)")]
    Version00Form,
    #[error("its trace id must be 32 hex digits, its span id 16 and its flags 2")]
    FieldLengths,
    #[error("its ids and flags must be lowercase hex digits")]
    NotLowercaseHex,
    #[error("its trace id or span id is all zeros")]
    ZeroId,
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.traceparent())
    }
}

impl TraceContext {
    /// Parses a `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`; a later version's longer form
    /// is read by its first four fields); `None` for anything malformed, an all-zero id, or
    /// version `ff` — which then starts a new trace, as the W3C recommendation says.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        Self::try_parse(traceparent, tracestate).ok()
    }

    /// [`TraceContext::parse`], saying why a `traceparent` it refuses is malformed (for a
    /// caller that tells someone, as `switchboard call` does of `$TRACEPARENT`).
    pub fn try_parse(
        traceparent: &str,
        tracestate: Option<&str>,
    ) -> Result<Self, MalformedTraceparent> {
        let text = traceparent.trim();
        let mut parts = text.split('-');
        let (Some(version), Some(trace), Some(span), Some(flags)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(MalformedTraceparent::TooFewFields);
        };
        let lower_hex = |s: &str| {
            s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if version.len() != 2 || !lower_hex(version) {
            return Err(MalformedTraceparent::Version);
        }
        if version == "ff" {
            return Err(MalformedTraceparent::VersionFf);
        }
        if version == "00" && (parts.next().is_some() || text.len() != 55) {
            return Err(MalformedTraceparent::Version00Form);
        }
        if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
            return Err(MalformedTraceparent::FieldLengths);
        }
        if !lower_hex(trace) || !lower_hex(span) || !lower_hex(flags) {
            return Err(MalformedTraceparent::NotLowercaseHex);
        }
        let mut trace_id = [0; 16];
        let mut span_id = [0; 8];
        decode_hex(trace, &mut trace_id).ok_or(MalformedTraceparent::NotLowercaseHex)?;
        decode_hex(span, &mut span_id).ok_or(MalformedTraceparent::NotLowercaseHex)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(MalformedTraceparent::ZeroId);
        }
        let flags =
            u8::from_str_radix(flags, 16).map_err(|_| MalformedTraceparent::NotLowercaseHex)?;
        let state = tracestate
            .map(str::trim)
            .filter(|state| !state.is_empty() && state.len() <= 512)
            .map(Arc::from);
        Ok(Self {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
            state,
            baggage: None,
        })
    }

    /// The context a carrier holds — a request's `_meta`, HTTP headers — whose values `get`
    /// looks up by key: `traceparent`, with `tracestate` and `baggage`.
    pub fn extract<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<Self> {
        Self::parse(get(TRACEPARENT)?, get(TRACESTATE))
            .map(|context| context.with_baggage(get(BAGGAGE)))
    }

    /// The same context with the `baggage` that came beside it (at most 8 KiB, as W3C
    /// Baggage allows).
    pub fn with_baggage(mut self, baggage: Option<&str>) -> Self {
        self.baggage = baggage
            .map(str::trim)
            .filter(|baggage| !baggage.is_empty() && baggage.len() <= 8192)
            .map(Arc::from);
        self
    }

    /// A new trace's first span (sampled).
    pub fn root() -> Self {
        let mut rng = rand::rng();
        let mut trace_id = [0; 16];
        rng.fill(&mut trace_id);
        trace_id[0] |= 1;
        Self {
            trace_id,
            span_id: new_span_id(),
            sampled: true,
            state: None,
            baggage: None,
        }
    }

    /// A span below this one: the same trace, a new span id.
    pub fn child(&self) -> Self {
        Self {
            span_id: new_span_id(),
            ..self.clone()
        }
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            u8::from(self.sampled)
        )
    }

    /// The trace id as 32 lowercase hex digits (what the ledger and OTLP JSON show).
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    pub fn span_id_hex(&self) -> String {
        hex(&self.span_id)
    }
}

fn new_span_id() -> [u8; 8] {
    let mut span_id = [0; 8];
    rand::rng().fill(&mut span_id);
    span_id[0] |= 1;
    span_id
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

fn decode_hex(text: &str, out: &mut [u8]) -> Option<()> {
    for (index, pair) in text.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        *out.get_mut(index)? = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(())
}

/// The kind of a span (OpenTelemetry's `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// A request into the gateway.
    Server,
    /// A request from the gateway to an upstream.
    Client,
    /// A stage of the gateway's own (an approval wait, the admission queue, hooks).
    Internal,
}

/// A span attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Text(String),
    Int(i64),
    Bool(bool),
}

impl From<&str> for AttributeValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<i64> for AttributeValue {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

/// What the MCP conventions say of a request's target: for `tools/call`
/// `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool`, for `prompts/get`
/// `gen_ai.prompt.name`, for the `resources/` methods `mcp.resource.uri`; nothing for others.
/// Both the gateway's SERVER spans and its CLIENT spans use it.
pub fn target_attributes(
    method: &str,
    target: &str,
    attributes: &mut Vec<(&'static str, AttributeValue)>,
) {
    match method {
        "tools/call" => {
            attributes.push(("gen_ai.tool.name", target.into()));
            attributes.push(("gen_ai.operation.name", "execute_tool".into()));
        }
        "prompts/get" => attributes.push(("gen_ai.prompt.name", target.into())),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            attributes.push(("mcp.resource.uri", target.into()));
        }
        _ => {}
    }
}

/// A span that has ended, on its way to the exporter.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSpan {
    /// Its trace id and span id.
    pub context: TraceContext,
    /// The span it belongs under, when it has one (a remote caller's, or the gateway's own).
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub kind: SpanKind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, AttributeValue)>,
    /// Set when the operation failed: the error's description (status ERROR).
    pub error: Option<String>,
}

/// Where finished spans go.
pub trait Telemetry: Send + Sync + fmt::Debug {
    /// Whether spans are recorded for a trace whose caller decided `parent` (none: a new
    /// trace). The default: every sampled trace and every new one.
    fn samples(&self, parent: Option<&TraceContext>) -> bool {
        parent.is_none_or(|parent| parent.sampled)
    }

    /// Hands a finished span over; must not block (a full queue drops it).
    fn export(&self, span: FinishedSpan);

    /// Whether a tool's arguments and result may go into spans (opt-in).
    fn captures_content(&self) -> bool {
        false
    }
}

/// An INTERNAL span below `parent` for a stage that ran from `start` to `end`, when the call
/// is traced.
pub fn stage_span(
    telemetry: Option<&Arc<dyn Telemetry>>,
    parent: Option<&TraceContext>,
    name: &str,
    (start, end): (SystemTime, SystemTime),
    attributes: Vec<(&'static str, AttributeValue)>,
) {
    let (Some(telemetry), Some(parent)) = (telemetry, parent) else {
        return;
    };
    if !parent.sampled {
        return;
    }
    telemetry.export(FinishedSpan {
        context: parent.child(),
        parent: Some(parent.span_id),
        name: name.to_owned(),
        kind: SpanKind::Internal,
        start,
        end,
        attributes,
        error: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_round_trips() {
        let context = TraceContext::parse(GOOD, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(context.traceparent(), GOOD);
        assert!(context.sampled);
        assert_eq!(context.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.state.as_deref(), Some("congo=t61rcWkgMzE"));
        let child = context.child();
        assert_eq!(child.trace_id, context.trace_id);
        assert_ne!(child.span_id, context.span_id);
        let unsampled = TraceContext::parse(&GOOD.replace("-01", "-00"), None).expect("valid");
        assert!(!unsampled.sampled);
    }

    #[test]
    fn malformed_traceparents_start_a_new_trace() {
        use MalformedTraceparent::*;
        for (bad, why) in [
            ("", TooFewFields),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                TooFewFields,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                ZeroId,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                ZeroId,
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                VersionFf,
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                NotLowercaseHex,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
                Version00Form,
            ),
            (
                "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Version,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                NotLowercaseHex,
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                FieldLengths,
            ),
        ] {
            assert_eq!(TraceContext::try_parse(bad, None), Err(why), "{bad}");
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
        // A later version's longer form is read by its first fields.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever";
        assert!(TraceContext::parse(later, None).is_some());
    }

    #[test]
    fn new_ids_are_never_zero() {
        let root = TraceContext::root();
        assert_ne!(root.trace_id, [0; 16]);
        assert_ne!(root.span_id, [0; 8]);
        assert!(TraceContext::parse(&root.traceparent(), None).is_some());
    }
}
