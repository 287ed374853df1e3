//! The way back to a 2026-07-28 client while its call runs.
//!
//! That era has no requests from server to client in the middle of a call: a server asks by
//! answering `input_required`. When an upstream asks mid-call anyway (a 2025-era server's
//! `elicitation/create`), the question goes to the call's [`super::parked`] bridge, which
//! answers the client `input_required` and hands the answer back when the client retries —
//! if the client declared the capability; otherwise the upstream client answers -32021 naming
//! it. A call outside the bridge refuses the question (-32600). The upstream's log messages
//! reach the client, on the call's stream, only at or above the level the request's `_meta`
//! asked for (`io.modelcontextprotocol/logLevel`), and never without one.

use std::fmt;

use futures::future::BoxFuture;
use serde_json::Value;
use switchboard_core::{CallerChannel, CallerError, ModernRequest};
use tokio::sync::{mpsc, oneshot};

use super::dispatch::Notifier;
use super::parked::Ask;
use crate::era::{META_LOG_LEVEL, MODERN_VERSION};
use crate::jsonrpc::{Message, client_capability_for, code, params_meta};

/// A log message's severity (RFC 5424's, as MCP names them), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    const NAMES: [(&'static str, LogLevel); 8] = [
        ("debug", Self::Debug),
        ("info", Self::Info),
        ("notice", Self::Notice),
        ("warning", Self::Warning),
        ("error", Self::Error),
        ("critical", Self::Critical),
        ("alert", Self::Alert),
        ("emergency", Self::Emergency),
    ];

    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, level)| *level)
    }
}

/// What is wrong with a modern request's `_meta` log level, if anything.
pub fn invalid_log_level(params: Option<&Value>) -> Option<String> {
    let level = params_meta(params)?.get(META_LOG_LEVEL)?;
    unknown_level(&format!("_meta['{META_LOG_LEVEL}']"), Some(level))
}

/// What is wrong with a `logging/setLevel` request's `params.level`, if anything: a level
/// MCP does not name is refused rather than taken as some level.
pub fn invalid_set_level(params: Option<&Value>) -> Option<String> {
    unknown_level(
        "logging/setLevel: params.level",
        params.and_then(|p| p.get("level")),
    )
}

/// `None` when `level` is a level's name, else what `place` must be and what it was.
fn unknown_level(place: &str, level: Option<&Value>) -> Option<String> {
    if level
        .and_then(Value::as_str)
        .and_then(LogLevel::parse)
        .is_some()
    {
        return None;
    }
    let names: Vec<&str> = LogLevel::NAMES.iter().map(|(name, _)| *name).collect();
    let got = level.map_or_else(|| "nothing".to_owned(), Value::to_string);
    Some(format!(
        "{place} must be one of {}; got {got}",
        names.join(", ")
    ))
}

/// A modern request's caller channel (see the module's doc).
pub struct ModernCaller {
    capabilities: Value,
    log_level: Option<LogLevel>,
    /// The request's stream, if it has one (an HTTP call that asked for no log level and
    /// no progress is answered as plain JSON).
    sink: Option<Notifier>,
    /// Where the upstream's questions go: the call's parking bridge.
    asks: Option<mpsc::UnboundedSender<Ask>>,
}

impl ModernCaller {
    /// The channel of one request, writing through `sink` (its stream) and asking through
    /// `asks`.
    pub fn new(
        modern: &ModernRequest,
        sink: Option<Notifier>,
        asks: Option<mpsc::UnboundedSender<Ask>>,
    ) -> Self {
        Self {
            capabilities: modern.client_capabilities.clone().unwrap_or(Value::Null),
            log_level: modern.log_level.as_deref().and_then(LogLevel::parse),
            sink,
            asks,
        }
    }

    /// Whether a log message of `params` goes to the client: it asked for a level, and the
    /// message is at it or above (a message whose level is missing or unknown goes too).
    fn wants_log(&self, params: &Value) -> bool {
        let Some(wanted) = self.log_level else {
            return false;
        };
        params
            .get("level")
            .and_then(Value::as_str)
            .and_then(LogLevel::parse)
            .is_none_or(|level| level >= wanted)
    }
}

impl fmt::Debug for ModernCaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModernCaller")
            .field("log_level", &self.log_level)
            .finish_non_exhaustive()
    }
}

impl CallerChannel for ModernCaller {
    /// Log messages always (the most recent call takes an upstream's log messages, and this
    /// one drops what its client did not ask for); requests when the capability was declared.
    fn supports(&self, method: &str) -> bool {
        method == "notifications/message"
            || client_capability_for(method)
                .is_some_and(|capability| self.capabilities.get(capability).is_some())
    }

    fn request(&self, method: &str, params: Value) -> BoxFuture<'_, Result<Value, CallerError>> {
        let method = method.to_owned();
        Box::pin(async move {
            let Some(asks) = &self.asks else {
                // Not -32601: passed back by the server, that would read as "no tools/call
                // here" (HTTP 404 in this era).
                return Err(CallerError {
                    code: code::INVALID_REQUEST,
                    message: format!(
                        "the client calling through Switchboard speaks protocol version \
                         {MODERN_VERSION}, which a server asks only by answering the call with \
                         input_required; {method} sent while the call runs cannot reach it"
                    ),
                    data: None,
                });
            };
            let (answer, answered) = oneshot::channel();
            let asked = asks.send(Ask {
                method: method.clone(),
                params,
                answer,
            });
            let gone = || CallerError {
                code: code::INTERNAL_ERROR,
                message: format!("the client did not answer {method}: its call stopped waiting"),
                data: None,
            };
            if asked.is_err() {
                return Err(gone());
            }
            answered.await.unwrap_or_else(|_| Err(gone()))
        })
    }

    fn notify(&self, method: &str, params: Value) {
        if method == "notifications/message"
            && self.wants_log(&params)
            && let Some(sink) = &self.sink
        {
            sink(Message::Notification {
                method: method.to_owned(),
                params: Some(params),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;

    fn caller(
        capabilities: Value,
        level: Option<&str>,
    ) -> (ModernCaller, Arc<Mutex<Vec<Message>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let into = sent.clone();
        let sink: Notifier = Arc::new(move |message| {
            if let Ok(mut sent) = into.lock() {
                sent.push(message);
            }
        });
        let modern = ModernRequest {
            client_capabilities: Some(capabilities),
            log_level: level.map(str::to_owned),
            ..ModernRequest::default()
        };
        (ModernCaller::new(&modern, Some(sink), None), sent)
    }

    fn log(level: &str) -> Value {
        json!({"level": level, "data": format!("a {level} message")})
    }

    #[test]
    fn log_messages_reach_the_client_at_or_above_the_level_it_asked_for() {
        let (caller, sent) = caller(json!({}), Some("warning"));
        for level in ["debug", "info", "warning", "error", "no such level"] {
            caller.notify("notifications/message", log(level));
        }
        let sent = sent.lock().map(|sent| sent.clone()).unwrap_or_default();
        let levels: Vec<Value> = sent
            .iter()
            .filter_map(|message| match message {
                Message::Notification { params, .. } => params.as_ref().map(|p| p["level"].clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            levels,
            [json!("warning"), json!("error"), json!("no such level")]
        );
    }

    #[test]
    fn without_a_level_no_log_message_reaches_the_client() {
        let (caller, sent) = caller(json!({}), None);
        assert!(caller.supports("notifications/message"));
        caller.notify("notifications/message", log("emergency"));
        assert!(sent.lock().map(|sent| sent.is_empty()).unwrap_or(false));
    }

    #[tokio::test]
    async fn requests_are_taken_only_for_declared_capabilities_and_refused_with_the_reason() {
        let (caller, _) = caller(json!({"elicitation": {}}), None);
        assert!(caller.supports("elicitation/create"));
        assert!(!caller.supports("sampling/createMessage"));
        assert!(!caller.supports("tools/list"));
        let refused = caller.request("elicitation/create", json!({})).await;
        let error = refused.expect_err("a modern client cannot be asked mid-call");
        assert_eq!(error.code, code::INVALID_REQUEST);
        assert!(
            error.message.contains("input_required"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_log_level_outside_the_eight_names_is_refused_with_the_names() {
        let meta = |level: Value| Some(json!({"_meta": {META_LOG_LEVEL: level}}));
        assert_eq!(invalid_log_level(meta(json!("notice")).as_ref()), None);
        assert_eq!(invalid_log_level(Some(&json!({}))), None);
        let problem = invalid_log_level(meta(json!("verbose")).as_ref()).unwrap_or_default();
        assert!(
            problem.contains("debug, info, notice") && problem.contains("\"verbose\""),
            "{problem}"
        );
        assert!(invalid_log_level(meta(json!(3)).as_ref()).is_some());
    }
}
