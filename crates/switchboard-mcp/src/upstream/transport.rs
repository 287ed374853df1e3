//! The seam between an MCP client and the bytes: a [`Transport`] sends messages and a channel
//! delivers what the server sends back, whatever carries them (a child's pipes, HTTP POSTs
//! with JSON or SSE answers, a legacy SSE stream).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use futures::future::BoxFuture;
use switchboard_core::param_headers::ParamHeader;
use switchboard_core::{CallContext, SubjectToken};
use tokio::sync::mpsc;

use crate::jsonrpc::{Message, RequestId};

/// Why a message could not be sent, or why the connection ended.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TransportError(pub String);

impl TransportError {
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// What the server sent: a message, or the end of the connection with its reason.
#[derive(Debug)]
pub enum Inbound {
    Message(Message),
    /// A message that came on the response stream of our request `of` (Streamable HTTP): a
    /// server request or log message there belongs to that request's caller.
    OnStream {
        message: Message,
        of: RequestId,
    },
    Closed(String),
}

/// On whose behalf a request goes: this decides the token an HTTP server that takes the
/// caller's identity gets (`grant = "token_exchange"`); every other transport ignores it.
#[derive(Debug, Clone, Default)]
pub enum OnBehalf {
    /// The gateway's own requests: initialize, listings, pings.
    #[default]
    Gateway,
    /// A caller's call, with the caller's OAuth access token when it came with one.
    Caller(Option<SubjectToken>),
}

impl OnBehalf {
    /// The caller of a call.
    pub fn of(ctx: &CallContext) -> Self {
        Self::Caller(
            ctx.principal
                .as_ref()
                .and_then(|principal| principal.token.clone()),
        )
    }
}

/// Where an answer to one of our requests can be handed straight to the request waiting for
/// it, skipping the inbound channel and the task that reads it: with threads that own their
/// connections, that task runs elsewhere, and the way through it cost each call two wake-ups
/// across threads.
pub trait DirectAnswers: Send + Sync {
    /// Hands `message` to the request it answers; gives it back when it is no answer to one
    /// of ours (it then goes on the inbound channel).
    fn answer(&self, message: Message) -> Option<Message>;
}

/// Where a transport keeps the [`DirectAnswers`] its client offered
/// ([`Transport::answer_directly`]), once.
#[derive(Default)]
pub struct OfferedAnswers(OnceLock<Weak<dyn DirectAnswers>>);

impl OfferedAnswers {
    pub fn offer(&self, answers: Weak<dyn DirectAnswers>) {
        let _ = self.0.set(answers);
    }

    /// Hands `message` to the request it answers, when the client offered a way and is
    /// still there; gives it back otherwise, for the inbound channel.
    pub fn hand_over(&self, message: Message) -> Option<Message> {
        match self.0.get().and_then(Weak::upgrade) {
            Some(answers) => answers.answer(message),
            None => Some(message),
        }
    }
}

/// Sends messages to one server.
pub trait Transport: Send + Sync {
    /// Sends one message. For HTTP transports, the answer (and any notifications sent on the
    /// way) arrive on the inbound channel like every other message.
    fn send(&self, message: Message) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Sends one message on behalf of `on_behalf` (the default: as [`Transport::send`]).
    fn send_on_behalf(
        &self,
        message: Message,
        _on_behalf: OnBehalf,
    ) -> BoxFuture<'_, Result<(), TransportError>> {
        self.send(message)
    }

    /// Offers the transport a way to hand answers straight to their requests. A transport
    /// uses it only where no message sent before an answer can be overtaken by it (HTTP: the
    /// answer is the first message of its own response; stdio: nothing read before it still
    /// waits in the inbound channel); the default ignores it.
    fn answer_directly(&self, _answers: Weak<dyn DirectAnswers>) {}

    /// Tells the transport which protocol version was negotiated (HTTP sends it as a header).
    fn set_protocol_version(&self, _version: &str) {}

    /// The `x-mcp-header` declarations of the server's tools, by tool name: HTTP mirrors a
    /// modern `tools/call`'s declared arguments into `Mcp-Param-*` headers.
    fn learn_param_headers(&self, _declared: HashMap<String, Arc<[ParamHeader]>>) {}

    /// What the transport saw that may explain a failure (e.g. non-JSON on stdout).
    fn diagnostics(&self) -> Option<String> {
        None
    }

    /// Ends the connection: kills the child process group, or ends the HTTP session.
    fn close(&self) -> BoxFuture<'_, ()>;
}

/// A freshly opened transport and the channel of what the server sends.
pub struct Opened {
    pub transport: Arc<dyn Transport>,
    pub inbound: mpsc::Receiver<Inbound>,
}
