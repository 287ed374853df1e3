//! The SERVER span of a request into the gateway, as the OpenTelemetry MCP semantic
//! conventions name it: `{mcp.method.name} {target}` (`tools/call fs__read_file`), with
//! `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version`,
//! `network.transport`, `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` for a
//! tool call, `gen_ai.prompt.name`, `mcp.resource.uri`, and `error.type` (the JSON-RPC code,
//! or `tool_error` for a result with `isError`). Arguments and results only when the
//! telemetry captures content (opt-in).
//!
//! The caller's trace context comes from `params._meta.traceparent` (and `tracestate`), else
//! from the HTTP `traceparent` header the front put in the context. Traced, the request runs
//! in the span's own context; untraced, the caller's context passes through unchanged.
//!
//! A tool call this process makes itself (`switchboard call`) gets the same span through
//! [`LocalCallSpan`], less what only a received request has (its JSON-RPC id, transport,
//! session and protocol version).

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value, json};
use switchboard_core::pipeline::CallError;
use switchboard_core::trace::{
    AttributeValue, FinishedSpan, SpanKind, Telemetry, TraceContext, target_attributes,
};
use switchboard_core::{CallContext, ToolOutcome};

use super::dispatch::RequestEra;
use super::tool_call::{answer_message, call_answer};
use crate::era::META_PROTOCOL_VERSION;
use crate::jsonrpc::{Message, RequestId};

/// A request's span while it runs.
pub(super) struct ServerSpan {
    telemetry: Arc<dyn Telemetry>,
    context: TraceContext,
    parent: Option<[u8; 8]>,
    name: String,
    start: SystemTime,
    attributes: Vec<(&'static str, AttributeValue)>,
    method: String,
}

/// The trace context a request's `_meta` carries, if any.
pub fn trace_of_meta(params: Option<&Value>) -> Option<TraceContext> {
    let meta = params?.get("_meta")?;
    TraceContext::extract(|key| meta.get(key).and_then(Value::as_str))
}

impl ServerSpan {
    /// Sets the request's trace context in `ctx` — the span's when the request is traced,
    /// else the caller's — and starts the span when it is. `id` and `transport` are a
    /// received request's (none for a call made in this process).
    pub(super) fn start(
        telemetry: Option<&Arc<dyn Telemetry>>,
        request: (Option<&RequestId>, &str, Option<&Value>),
        session: Option<&str>,
        transport: Option<&'static str>,
        ctx: &mut CallContext,
    ) -> Option<Self> {
        let (id, method, params) = request;
        let parent = trace_of_meta(params).or_else(|| ctx.trace.take());
        let telemetry = match telemetry {
            Some(telemetry) if telemetry.samples(parent.as_ref()) => telemetry,
            _ => {
                ctx.trace = parent;
                return None;
            }
        };
        let mut context = parent
            .as_ref()
            .map_or_else(TraceContext::root, TraceContext::child);
        // Recorded here (a sampler that does not follow the caller may record what it did
        // not): what descends from this span is recorded too, and says so upstream.
        context.sampled = true;
        ctx.trace = Some(context.clone());
        ctx.telemetry = Some(telemetry.clone());
        let text = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
        let mut attributes: Vec<(&'static str, AttributeValue)> =
            vec![("mcp.method.name", method.into())];
        if let Some(id) = id {
            attributes.push(("jsonrpc.request.id", id.to_string().into()));
        }
        if let Some(transport) = transport {
            attributes.push(("network.transport", transport.into()));
        }
        if let Some(session) = session {
            attributes.push(("mcp.session.id", session.into()));
        }
        let version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .or_else(|| text("protocolVersion"));
        if let Some(version) = version {
            attributes.push(("mcp.protocol.version", version.into()));
        }
        let target = match method {
            "tools/call" | "prompts/get" => text("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => text("uri"),
            _ => None,
        };
        if let Some(target) = target {
            target_attributes(method, target, &mut attributes);
        }
        if method == "tools/call"
            && telemetry.captures_content()
            && let Some(arguments) = params.and_then(|p| p.get("arguments"))
        {
            attributes.push(("gen_ai.tool.call.arguments", arguments.to_string().into()));
        }
        Some(Self {
            telemetry: telemetry.clone(),
            parent: parent.map(|parent| parent.span_id),
            context,
            name: match target {
                Some(target) => format!("{method} {target}"),
                None => method.to_owned(),
            },
            start: SystemTime::now(),
            attributes,
            method: method.to_owned(),
        })
    }

    /// Ends the span with what the request was answered.
    pub(super) fn finish(mut self, answer: &Message) {
        let error = match answer {
            Message::Error { error, .. } => {
                let code = error.code.to_string();
                self.attributes
                    .push(("rpc.response.status_code", code.clone().into()));
                Some((code, error.message.clone()))
            }
            Message::Response { result, .. } => {
                if self.method == "tools/call" && self.telemetry.captures_content() {
                    self.attributes
                        .push(("gen_ai.tool.call.result", result.to_string().into()));
                }
                (result.get("isError") == Some(&Value::Bool(true))).then(|| {
                    // The tool's own words are content: sent only where content may go.
                    let text = result
                        .pointer("/content/0/text")
                        .and_then(Value::as_str)
                        .filter(|_| self.telemetry.captures_content())
                        .unwrap_or("the tool reported an error");
                    ("tool_error".to_owned(), text.to_owned())
                })
            }
            // A result the front serialized already (a tool call's, on the hot path).
            Message::PreparedResponse { result, .. } => {
                if self.method == "tools/call" && self.telemetry.captures_content() {
                    self.attributes
                        .push(("gen_ai.tool.call.result", result.to_string().into()));
                }
                result.contains("\"isError\":true").then(|| {
                    (
                        "tool_error".to_owned(),
                        "the tool reported an error".to_owned(),
                    )
                })
            }
            _ => None,
        };
        let error = error.map(|(kind, message)| {
            self.attributes.push(("error.type", kind.into()));
            message
        });
        self.telemetry.export(FinishedSpan {
            context: self.context,
            parent: self.parent,
            name: self.name,
            kind: SpanKind::Server,
            start: self.start,
            end: SystemTime::now(),
            attributes: self.attributes,
            error,
        });
    }
}

/// The SERVER span of a tool call this process makes itself rather than receives
/// (`switchboard call`): named and attributed as a received `tools/call` is, and ended with
/// what the gateway would have answered it, so the call is traced as a gateway call is.
pub struct LocalCallSpan(ServerSpan);

impl LocalCallSpan {
    /// Sets the call's trace context in `ctx` — the span's when the call is traced, else the
    /// one `ctx` brought (the caller's, if any) — and starts the span when it is.
    pub fn start(
        telemetry: Option<&Arc<dyn Telemetry>>,
        tool: &str,
        arguments: &Map<String, Value>,
        ctx: &mut CallContext,
    ) -> Option<Self> {
        let params = json!({"name": tool, "arguments": arguments});
        ServerSpan::start(
            telemetry,
            (None, "tools/call", Some(&params)),
            None,
            None,
            ctx,
        )
        .map(Self)
    }

    /// Ends the span with the answer the gateway would have sent for `result`.
    pub fn finish(self, result: &Result<ToolOutcome, CallError>) {
        // The id is not recorded: the span was started without one.
        let id = RequestId::Number(0);
        let answer = answer_message(id, call_answer(result.clone()), RequestEra::Legacy);
        self.0.finish(&answer);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    /// Records everything, whatever the caller decided; keeps what it is given.
    #[derive(Debug, Default)]
    struct Always(Mutex<Vec<FinishedSpan>>);

    impl Telemetry for Always {
        fn samples(&self, _parent: Option<&TraceContext>) -> bool {
            true
        }

        fn export(&self, span: FinishedSpan) {
            self.0.lock().expect("lock").push(span);
        }
    }

    /// A span recorded against the caller's "not sampled" says it is sampled to what runs
    /// under it; a tool's error text stays out of its status unless content is captured.
    #[test]
    fn a_recorded_span_is_sampled_below_and_keeps_tool_errors_out() {
        let always = Arc::new(Always::default());
        let telemetry: Arc<dyn Telemetry> = always.clone();
        let params = json!({"name": "fs__read", "_meta": {
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"}});
        let mut ctx = CallContext::default();
        let id = RequestId::Number(1);
        let span = ServerSpan::start(
            Some(&telemetry),
            (Some(&id), "tools/call", Some(&params)),
            None,
            Some("pipe"),
            &mut ctx,
        )
        .expect("recorded");
        assert!(ctx.trace.as_ref().is_some_and(|trace| trace.sampled));
        span.finish(&Message::Response {
            id,
            result: json!({"isError": true, "content": [{"type": "text", "text": "pw=hunter2"}]}),
        });
        let spans = always.0.lock().expect("lock");
        assert_eq!(
            spans[0].error.as_deref(),
            Some("the tool reported an error")
        );
    }
}
