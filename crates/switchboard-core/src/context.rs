//! What travels with a call besides its arguments: who is calling, where progress goes, and
//! the token that cancels it — with [`unless_cancelled`], the one way a stage waits on work
//! while watching that token.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// One progress report of a running call (`notifications/progress`, minus the token, which
/// each side of the gateway maps for itself).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where the progress of a call is reported. Cheap to clone.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    pub fn new(report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    pub fn report(&self, progress: Progress) {
        (self.0)(progress);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Who stands behind an authenticated caller: an OAuth access token's subject, client and
/// scopes (the scopes narrow the agent's view: `[agents.X.scopes]`), and the token itself,
/// held only to be exchanged for a server that takes the caller's identity
/// (`grant = "token_exchange"`). The ledger records the subject and client, never the token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Principal {
    /// `sub`: the user (or client) the token was issued for.
    pub subject: Option<String>,
    /// `client_id` (or `azp`): the OAuth client that presented it.
    pub client_id: Option<String>,
    /// The scopes the token carries.
    pub scopes: Vec<String>,
    /// The access token, for RFC 8693 token exchange only.
    pub token: Option<SubjectToken>,
}

/// A caller's OAuth access token: exchanged (RFC 8693) for a token of a server's own, never
/// sent anywhere as it is, never logged — `Debug` shows `***` — nor recorded.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SubjectToken(Arc<str>);

impl SubjectToken {
    pub fn new(token: &str) -> Self {
        Self(Arc::from(token))
    }

    /// The token itself, for the token exchange request.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SubjectToken(***)")
    }
}

impl Principal {
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|held| held == scope)
    }
}

/// The context of one call, from any front (stdio, HTTP, library).
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The agent on whose behalf the call is made, if the front knows it.
    pub agent: Option<String>,
    /// Who the agent's credential names, when it was an OAuth access token.
    pub principal: Option<Arc<Principal>>,
    /// The client session the call came from (a stdio connection, an HTTP session), if any:
    /// per-session state such as loaded tool categories hangs off it.
    pub session: Option<String>,
    /// The latency tier the request asked for explicitly (an endpoint or a header).
    pub tier: Option<String>,
    /// Set when the caller asked for progress.
    pub progress: Option<ProgressSink>,
    /// Cancelled when the caller gives up (`notifications/cancelled`, a closed stream).
    pub cancel: CancellationToken,
    /// How an upstream reaches back to the caller during the call (sampling, elicitation,
    /// roots, log messages), when the front can carry it.
    pub caller: Option<Arc<dyn CallerChannel>>,
    /// The deadline the caller sent in the request's `_meta` (see
    /// [`crate::latency_meta::DEADLINE_META_KEY`]), if any.
    pub deadline: Option<crate::latency_meta::RequestedDeadline>,
    /// Set for requests of the 2026-07-28 era, which cannot be asked anything mid-call: the
    /// gateway answers `input_required` and the client sends the call again with answers.
    pub modern: Option<ModernRequest>,
    /// The trace the call runs in: the gateway's SERVER span when it traces, else the
    /// caller's context passed through (`crate::trace`).
    pub trace: Option<crate::trace::TraceContext>,
    /// Where the call's spans go, when the gateway traces.
    pub telemetry: Option<Arc<dyn crate::trace::Telemetry>>,
}

/// What a 2026-07-28 era request brings for multi-round-trip answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModernRequest {
    /// The client declared the `elicitation` capability.
    pub elicitation: bool,
    /// `inputResponses` of a retried request.
    pub input_responses: Option<serde_json::Value>,
    /// `requestState` echoed by a retried request.
    pub request_state: Option<String>,
    /// The capabilities the client declared in the request's `_meta`, passed on to an
    /// upstream that may ask it for input.
    pub client_capabilities: Option<serde_json::Value>,
    /// The log level the request's `_meta` asked for (`io.modelcontextprotocol/logLevel`):
    /// the upstream's log messages at it or above reach the client, none without it.
    pub log_level: Option<String>,
}

impl ModernRequest {
    /// Whether this round's answers are for the gateway's own approval (and so are not the
    /// upstream's to see).
    pub fn answers_an_approval(&self) -> bool {
        self.input_responses
            .as_ref()
            .is_some_and(|responses| responses.get(crate::approval::APPROVAL_INPUT_KEY).is_some())
    }
}

/// Why the caller could not answer a request relayed to it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerError {
    pub code: i64,
    pub message: String,
    /// The error's `data`, passed on to the server that asked (e.g. the `requiredCapabilities`
    /// of a missing client capability).
    pub data: Option<serde_json::Value>,
}

/// The way back to whoever made a call: an upstream server's own requests to its client
/// (`sampling/createMessage`, `elicitation/create`, `roots/list`) and its log messages are
/// relayed through it to the real client, which alone can answer them.
pub trait CallerChannel: Send + Sync + fmt::Debug {
    /// Whether the caller declared it can answer `method` (a client capability).
    fn supports(&self, method: &str) -> bool;
    /// Relays a request to the caller and waits for its answer.
    fn request(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> futures::future::BoxFuture<'_, Result<serde_json::Value, CallerError>>;
    /// Relays a notification (e.g. `notifications/message`) to the caller.
    fn notify(&self, method: &str, params: serde_json::Value);
    /// Which client this is: channels of one client (one stdio connection, one HTTP session)
    /// share a key, so a server request that cannot be tied to a call goes to a client only
    /// when every call in flight on that server is that client's. Default: this channel
    /// alone.
    fn client_key(&self) -> usize {
        (self as *const Self).cast::<()>() as usize
    }
    /// The call now waits on someone other than this caller — an operator's approval — with
    /// what it waits for, or no longer (`None`). A task shows it as `input_required`.
    /// Default: nothing.
    fn waiting_on(&self, _what: Option<&str>) {}
    /// Whether this caller is a task — nobody waits on the call, the client polls for it — so
    /// a server that runs tasks itself gets the call as a task of its own. Default: no.
    fn is_task(&self) -> bool {
        false
    }
    /// The server made the call a task of its own (a task's call, relayed): the gateway's
    /// task can be announced to the client now. Default: nothing.
    fn task_created(&self) {}
}

impl CallContext {
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }
}

/// Who is asking for a listing: the agent and the session, as the front knows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Caller {
    pub agent: Option<String>,
    pub session: Option<String>,
    /// A tier chosen on the request itself (wins over the session's and the agent's).
    pub tier: Option<String>,
    /// Who the caller's OAuth token named: its scopes narrow the agent's view. `None` for
    /// every other caller (stdio, a static token, the library), whose view is the agent's.
    pub principal: Option<Arc<Principal>>,
}

impl Caller {
    pub fn new(agent: Option<String>, session: Option<String>) -> Self {
        Self {
            agent,
            session,
            tier: None,
            principal: None,
        }
    }

    pub fn with_tier(mut self, tier: Option<String>) -> Self {
        self.tier = tier;
        self
    }

    pub fn with_principal(mut self, principal: Option<Arc<Principal>>) -> Self {
        self.principal = principal;
        self
    }

    /// The caller of a call.
    pub fn of(ctx: &CallContext) -> Self {
        Self::new(ctx.agent.clone(), ctx.session.clone())
            .with_tier(ctx.tier.clone())
            .with_principal(ctx.principal.clone())
    }
}

/// What `work` gives, unless `cancel` fires first (`None`; `work` is dropped, which ends what
/// it had started). Work ready at its first poll — most approvals and admissions — is taken
/// without waiting on the token (a lock and a list entry).
pub async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    if cancel.is_cancelled() {
        return None;
    }
    let mut work = std::pin::pin!(work);
    if let std::task::Poll::Ready(done) = futures::poll!(work.as_mut()) {
        return Some(done);
    }
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        done = work => Some(done),
    }
}
