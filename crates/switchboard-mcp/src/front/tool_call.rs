//! `tools/call`, in the era the request speaks: the call goes through the backend's pipeline,
//! and its outcome is serialized straight into the response. A modern client's call that an
//! upstream asks something mid-call is parked ([`super::parked`]) and answered
//! `input_required`; the retried call resumes it.

use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_core::latency_meta::RequestedDeadline;
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, ModernRequest, ToolCall, ToolOutcome};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::dispatch::{Dispatcher, Notifier, RequestEra};
use super::modern_caller::ModernCaller;
use super::parked::{Ask, ParkedCalls, RunningCall, Settled};
use crate::era::{META_CLIENT_CAPABILITIES, META_LOG_LEVEL};
use crate::jsonrpc::{Message, RequestId, RpcError, code, params_meta};
use crate::upstream::session::input_required_result;

/// What a call's task answers.
pub(super) type ToolCallResult = Result<CallAnswer, RpcError>;

impl Dispatcher {
    /// `tools/call`. A tool's outcome is serialized straight into the response's text: the hot
    /// path never builds it as a `Value` tree first.
    pub(super) async fn call_tool(
        &self,
        id: RequestId,
        params: Option<Value>,
        ctx: CallContext,
        era: RequestEra,
        notify: Option<&Notifier>,
    ) -> Message {
        let answer = match era {
            // Boxed: the modern call's future is larger, and inline it would enlarge every
            // legacy call's future too (moved whole as each call starts).
            RequestEra::Modern => Box::pin(self.modern_tool_call(params, ctx, notify)).await,
            RequestEra::Legacy => self.run_tool_call(params, ctx, era, notify, None).await,
        };
        answer_message(id, answer, era)
    }

    /// A modern `tools/call`. A client that can be asked something (it declared elicitation,
    /// sampling or roots) has its call run on a task of its own, so that an upstream asking
    /// mid-call parks it ([`super::parked`]); a retried call with a parked call's
    /// `requestState` resumes that call instead of starting one.
    async fn modern_tool_call(
        &self,
        params: Option<Value>,
        ctx: CallContext,
        notify: Option<&Notifier>,
    ) -> Result<CallAnswer, RpcError> {
        let state = params
            .as_ref()
            .and_then(|p| p.get("requestState"))
            .and_then(Value::as_str)
            .filter(|state| ParkedCalls::<ToolCallResult>::owns(state))
            .map(str::to_owned);
        let can_be_asked = params_meta(params.as_ref())
            .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
            .is_some_and(|declared| {
                ["elicitation", "sampling", "roots"]
                    .iter()
                    .any(|capability| declared.get(capability).is_some())
            });
        if state.is_none() && !can_be_asked {
            return self
                .run_tool_call(params, ctx, RequestEra::Modern, notify, None)
                .await;
        }
        let tool = params
            .as_ref()
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let agent = ctx.agent.clone().or_else(|| self.agent.clone());
        let request = ctx.cancel.clone();
        let call = match state {
            Some(state) => {
                let responses = params.as_ref().and_then(|p| p.get("inputResponses"));
                self.parked
                    .resume(&state, &tool, agent.as_deref(), responses)?
            }
            None => {
                let (asks_tx, asks) = mpsc::unbounded_channel();
                let cancel = CancellationToken::new();
                let ctx = CallContext {
                    cancel: cancel.clone(),
                    ..ctx
                };
                let dispatcher = self.clone();
                let notify = notify.cloned();
                let task = tokio::spawn(async move {
                    dispatcher
                        .run_tool_call(
                            params,
                            ctx,
                            RequestEra::Modern,
                            notify.as_ref(),
                            Some(asks_tx),
                        )
                        .await
                });
                RunningCall { task, cancel, asks }
            }
        };
        match self
            .parked
            .settle(&tool, agent.as_deref(), call, &request)
            .await
        {
            Settled::Answered(answer) => answer,
            Settled::Asked(result) => Ok(CallAnswer::Other(result)),
            Settled::Cancelled => Err(RpcError::new(
                code::INTERNAL_ERROR,
                "the call was cancelled",
            )),
            Settled::Lost => Err(RpcError::new(
                code::INTERNAL_ERROR,
                "the call ended without an answer",
            )),
        }
    }

    /// Runs a call through the backend. `asks` is where a modern client's call sends the
    /// questions an upstream asks mid-call.
    async fn run_tool_call(
        &self,
        params: Option<Value>,
        mut ctx: CallContext,
        era: RequestEra,
        notify: Option<&Notifier>,
        asks: Option<mpsc::UnboundedSender<Ask>>,
    ) -> Result<CallAnswer, RpcError> {
        if era == RequestEra::Modern {
            let modern = modern_request(params.as_ref());
            if ctx.caller.is_none() {
                let caller = ModernCaller::new(&modern, notify.cloned(), asks);
                ctx.caller = Some(Arc::new(caller));
            }
            ctx.modern = Some(modern);
        }
        let Some(Value::Object(mut params)) = params else {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                "tools/call needs params with a 'name'",
            ));
        };
        let Some(Value::String(name)) = params.remove("name") else {
            return Err(RpcError::new(
                code::INVALID_PARAMS,
                "tools/call: 'name' must be a string",
            ));
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments,
            Some(_) => {
                return Err(RpcError::new(
                    code::INVALID_PARAMS,
                    "tools/call: 'arguments' must be an object",
                ));
            }
        };
        self.fill_caller(&mut ctx);
        let meta = match params.get("_meta") {
            Some(Value::Object(meta)) => Some(meta),
            _ => None,
        };
        // Counted from now, the request's receipt: what the call then waits for (an
        // approval, a slot) comes out of it.
        ctx.deadline = RequestedDeadline::from_meta(meta)
            .map(|deadline| deadline.received_at(tokio::time::Instant::now()));
        call_answer(
            self.backend
                .call_tool(ctx, ToolCall::new(name, arguments))
                .await,
        )
    }
}

/// What a call through the pipeline answers the client.
pub(super) fn call_answer(result: Result<ToolOutcome, CallError>) -> Result<CallAnswer, RpcError> {
    match result {
        Ok(outcome) => Ok(CallAnswer::Outcome(outcome)),
        Err(CallError::UnknownTool { name }) => Err(RpcError::new(
            code::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        )),
        Err(CallError::Upstream {
            code,
            message,
            data,
        }) => Err(RpcError {
            code,
            message,
            data,
        }),
        Err(CallError::Cancelled) => Err(RpcError::new(
            code::INTERNAL_ERROR,
            "the call was cancelled",
        )),
        Err(CallError::InputRequired {
            input_requests,
            request_state,
        }) => Ok(CallAnswer::Other(input_required_result(
            input_requests,
            request_state,
        ))),
        Err(other) => Err(RpcError::new(code::INTERNAL_ERROR, other.to_string())),
    }
}

/// The answer to a `tools/call` in its era: a tool's outcome is serialized straight into the
/// response's text (the hot path never builds it as a `Value` tree first).
pub(super) fn answer_message(
    id: RequestId,
    answer: Result<CallAnswer, RpcError>,
    era: RequestEra,
) -> Message {
    match answer {
        Ok(CallAnswer::Outcome(mut outcome)) => {
            if era == RequestEra::Modern {
                outcome
                    .extra
                    .entry("resultType")
                    .or_insert_with(|| Value::String("complete".into()));
            }
            match serde_json::to_string(&outcome) {
                Ok(result) => Message::PreparedResponse {
                    id,
                    result: result.into(),
                },
                Err(error) => Message::error(Some(id), code::INTERNAL_ERROR, error.to_string()),
            }
        }
        Ok(CallAnswer::Other(result)) => Message::Response { id, result },
        Err(error) => Message::Error {
            id: Some(id),
            error,
        },
    }
}

/// What a `tools/call` produced: the tool's outcome, or another answer (the modern era's
/// request for input).
pub(super) enum CallAnswer {
    Outcome(ToolOutcome),
    Other(Value),
}

/// What a modern request brings for multi-round-trip answers: the client's capabilities, the
/// answers and state of a retried request, and the log level it asked for.
pub(super) fn modern_request(params: Option<&Value>) -> ModernRequest {
    let client_capabilities = params_meta(params)
        .and_then(|meta| meta.get(META_CLIENT_CAPABILITIES))
        .cloned();
    ModernRequest {
        elicitation: client_capabilities
            .as_ref()
            .is_some_and(|capabilities| capabilities.get("elicitation").is_some()),
        client_capabilities,
        input_responses: params.and_then(|p| p.get("inputResponses")).cloned(),
        request_state: params
            .and_then(|p| p.get("requestState"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        log_level: params_meta(params)
            .and_then(|meta| meta.get(META_LOG_LEVEL))
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}
