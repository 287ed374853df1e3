//! The CLIENT span of a call the gateway makes to an upstream (`tools/call`, `prompts/get`),
//! and the trace context it carries there: `params._meta.traceparent` (and `tracestate`) on
//! every transport — the only carrier a stdio server has — which the HTTP transport mirrors
//! into its `traceparent` header. A traced call gets a span of its own below the request's
//! SERVER span, and the server sees that span as its parent; an untraced call passes the
//! caller's context on unchanged.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};
use switchboard_core::CallContext;
use switchboard_core::trace::{
    AttributeValue, BAGGAGE, FinishedSpan, SpanKind, TRACEPARENT, TRACESTATE, Telemetry,
    TraceContext, target_attributes,
};

use super::client::ClientError;
use super::session::Rounds;

/// A call's span while it runs.
pub(super) struct ClientSpan {
    telemetry: Arc<dyn Telemetry>,
    context: TraceContext,
    parent: [u8; 8],
    name: String,
    start: SystemTime,
    attributes: Vec<(&'static str, AttributeValue)>,
}

impl ClientSpan {
    /// Puts the call's trace context in `params._meta` and starts its span when the call is
    /// traced.
    pub(super) fn start(
        ctx: &CallContext,
        (method, name): (&str, &str),
        server: &str,
        params: &mut Map<String, Value>,
    ) -> Option<Self> {
        let trace = ctx.trace.as_ref()?;
        let traced = ctx.telemetry.as_ref().filter(|_| trace.sampled);
        let context = match traced {
            Some(_) => trace.child(),
            None => trace.clone(),
        };
        inject(params, &context);
        let telemetry = traced?.clone();
        let mut attributes: Vec<(&'static str, AttributeValue)> = vec![
            ("mcp.method.name", method.into()),
            ("switchboard.server.id", server.into()),
        ];
        target_attributes(method, name, &mut attributes);
        Some(Self {
            telemetry,
            parent: trace.span_id,
            context,
            name: format!("{method} {name}"),
            start: SystemTime::now(),
            attributes,
        })
    }

    /// Ends the span with how the call ended.
    pub(super) fn finish(mut self, answer: &Result<Rounds, ClientError>) {
        let error = match answer {
            Err(ClientError::Rpc(error)) => Some((error.code.to_string(), error.message.clone())),
            Err(ClientError::Disconnected(why)) => Some(("transport".to_owned(), why.clone())),
            Ok(Rounds::Answered(result)) if result.get("isError") == Some(&Value::Bool(true)) => {
                Some((
                    "tool_error".to_owned(),
                    "the tool reported an error".to_owned(),
                ))
            }
            Ok(Rounds::NotAsked(why)) => Some(("input_not_asked".to_owned(), why.clone())),
            Ok(_) => None,
        };
        let error = error.map(|(kind, message)| {
            self.attributes.push(("error.type", kind.into()));
            message
        });
        self.telemetry.export(FinishedSpan {
            context: self.context,
            parent: Some(self.parent),
            name: self.name,
            kind: SpanKind::Client,
            start: self.start,
            end: SystemTime::now(),
            attributes: self.attributes,
            error,
        });
    }
}

/// Sets `_meta.traceparent` (and `tracestate`) of a request's params.
fn inject(params: &mut Map<String, Value>, context: &TraceContext) {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(TRACEPARENT.into(), Value::String(context.traceparent()));
        for (key, value) in [(TRACESTATE, &context.state), (BAGGAGE, &context.baggage)] {
            match value {
                Some(value) => meta.insert(key.into(), Value::String(value.to_string())),
                None => meta.remove(key),
            };
        }
    }
}
