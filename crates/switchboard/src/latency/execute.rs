//! The layer every upstream call goes through, in order:
//! 1. plan: the deadline (the smallest of the tool's hard timeout — declared `max_duration_ms`,
//!    else measured p99 × 2 but at least 1 s, else the server's call timeout —, the tier ceiling when the
//!    caller sent `"switchboard.dev/deadline_ms": "tier"`, and the caller's own milliseconds);
//!    whether it may be retried or hedged (idempotent); whether a result may be reused;
//! 2. masking: a call predicted slower than `mask_after` sends an early progress notification
//!    ("working…") to a caller that asked for progress, so a voice client can say something;
//! 3. the result cache (with coalescing), for cacheable read-only or idempotent tools: this
//!    replica's, then the replicas' shared one (`[shared] redis`);
//! 4. retries, for idempotent tools only, after transport errors only, with backoff and
//!    jitter, within the deadline and a 10% extra-request budget (every attempt is cut at the
//!    call's deadline, so one that timed out leaves no time for another);
//! 5. hedging, for idempotent tools with enough samples: a second request after the p95, the
//!    first answer wins, within a 5% budget;
//! 6. measure: every attempt's latency and outcome goes into the book, and into the
//!    gateway's metrics (`mcp_client_operation_duration_seconds`). A hedge's latency in the
//!    book counts from its primary's start — what the caller waited —, so a tail the hedge
//!    cut still reaches placement and health (the primary it beat is dropped, unrecorded).
//!
//! A passed deadline drops the attempt's future, which cancels it upstream
//! (`notifications/cancelled`); the caller gets a timeout error naming the deadline.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::{Map, Value};
use switchboard_budget::retry::{RetryContext, RetryError};
use switchboard_budget::{ExtraRequestBudget, Failure, Sample, call_with_bounded_retries, hedged};
use switchboard_core::pipeline::CACHE_META_KEY;
use switchboard_core::upstream::{Upstream, UpstreamError};
use switchboard_core::{CallContext, Progress, ServerId, ToolOutcome};
use tokio::time::Instant;

use super::{CallPlan, LatencyBudget, ToolTraits, cache, tool_key};

/// An upstream seen through the latency budget.
pub struct BudgetedUpstream {
    pub inner: Arc<dyn Upstream>,
    pub server: ServerId,
    pub budget: Arc<LatencyBudget>,
    /// The tier the call is judged in (for tier deadlines), resolved by the Host.
    pub tier: Option<switchboard_budget::TierId>,
    /// The call's hold on the server's connection: a removed or replaced server's
    /// connection stays open until its leases are gone (or its drain time is up).
    pub(crate) lease: Option<crate::fleet::Lease>,
    /// Where each attempt is counted for `/metrics` (none: not counted).
    pub(crate) metrics: Option<Arc<crate::metrics::GatewayMetrics>>,
}

type Answer = Result<ToolOutcome, UpstreamError>;

impl Upstream for BudgetedUpstream {
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let answer = self.run(tool, arguments, ctx).await;
            match (&self.lease, answer) {
                (Some(lease), Err(error)) => Err(lease.explain(error)),
                (_, answer) => answer,
            }
        })
    }
}

impl BudgetedUpstream {
    async fn run(&self, tool: &str, arguments: Map<String, Value>, ctx: &CallContext) -> Answer {
        let key = tool_key(self.server.as_str(), tool);
        let Some(traits) = self.budget.traits(&key) else {
            // Not in the catalog (yet): measured, nothing else.
            return Attempts::new(self, tool, &key, None)
                .measured(arguments, ctx)
                .await;
        };
        let plan = self.budget.plan(&traits, ctx, self.tier);
        if plan.mask
            && let Some(progress) = &ctx.progress
        {
            progress.report(Progress {
                progress: 0.0,
                total: None,
                message: Some("working…".to_owned()),
            });
        }
        let attempts = Attempts::new(self, tool, &key, Some((&traits, plan)));
        match plan.cache_ttl {
            None => attempts.run(arguments, ctx).await,
            Some(ttl) => {
                let subject = ctx.principal.as_ref().and_then(|p| p.subject.as_deref());
                let cache_key = cache::cache_key(ctx.agent.as_deref(), subject, &key, &arguments);
                let clock = self.budget.clock.clone();
                let shared = self.budget.cache.shared().cloned();
                let shared_key = shared.as_ref().map(|_| cache_key.clone());
                let run = || async {
                    let run = attempts.run(arguments, ctx);
                    match (&shared, &shared_key) {
                        (Some(shared), Some(shared_key)) => {
                            let reuse = cache::Reuse {
                                ttl,
                                wait: plan.deadline.min(cache::MAX_SHARED_WAIT),
                            };
                            shared.get_or_run(shared_key, reuse, Box::pin(run)).await
                        }
                        _ => run.await,
                    }
                };
                // Waiting on another caller's run of the same call, this one keeps its own
                // deadline.
                let limit = cache::WaitLimit {
                    until: attempts.deadline_at,
                    timed_out: || attempts.timeout(),
                };
                self.budget
                    .cache
                    .get_or_run(cache_key, ttl, move || clock.now(), limit, run)
                    .await
            }
        }
    }
}

/// The attempts of one call.
struct Attempts<'a> {
    upstream: &'a BudgetedUpstream,
    tool: &'a str,
    key: &'a str,
    deadline: Duration,
    /// When the call must be over, fixed as it is planned: a caller that waited on another's
    /// run of the same call and then runs it itself keeps it (no fresh deadline).
    deadline_at: Instant,
    plan: Option<CallPlan>,
}

impl<'a> Attempts<'a> {
    fn new(
        upstream: &'a BudgetedUpstream,
        tool: &'a str,
        key: &'a str,
        planned: Option<(&ToolTraits, CallPlan)>,
    ) -> Self {
        let (deadline, plan) = match planned {
            Some((_, plan)) => (plan.deadline, Some(plan)),
            None => (upstream.budget.deadlines.fallback, None),
        };
        Self {
            upstream,
            tool,
            key,
            deadline,
            deadline_at: upstream.budget.clock.now() + deadline,
            plan,
        }
    }

    fn budget(&self) -> &LatencyBudget {
        &self.upstream.budget
    }

    /// The server's own retry budget (the Host's, for an upstream outside its fleet).
    fn retries(&self) -> &ExtraRequestBudget {
        match &self.upstream.lease {
            Some(lease) => &lease.connection().retries,
            None => &self.upstream.budget.retries,
        }
    }

    /// The server's own hedge budget (the Host's, for an upstream outside its fleet).
    fn hedges(&self) -> &ExtraRequestBudget {
        match &self.upstream.lease {
            Some(lease) => &lease.connection().hedges,
            None => &self.upstream.budget.hedges,
        }
    }

    async fn run(&self, arguments: Map<String, Value>, ctx: &CallContext) -> Answer {
        let Some(plan) = self.plan.filter(|plan| plan.idempotent) else {
            // Neither retried nor hedged: one attempt, no copy of the arguments.
            return self.measured(arguments, ctx).await;
        };
        let budget = self.budget();
        let deadline_at = self.deadline_at;
        let mut rng = SmallRng::from_rng(&mut rand::rng());
        let context = RetryContext {
            policy: &budget.retry_policy,
            idempotent: true,
            // Each attempt (and each hedge) ends itself at `deadline_at` and records it as a
            // timeout, so the loop arms no timer of its own (`call_with_bounded_retries`);
            // its deadline, just after, is what backoff pauses are judged against.
            deadline: deadline_at + Duration::from_millis(1),
            budget: self.retries(),
            rng: &mut rng,
            clock: budget.clock.as_ref(),
        };
        let report = call_with_bounded_retries(context, classify, || {
            self.hedged(&arguments, ctx, plan.hedge_after, deadline_at)
        })
        .await;
        match report.result {
            Ok(outcome) => Ok(outcome),
            Err(RetryError::Failed { error, .. }) => Err(error),
            Err(RetryError::DeadlineExceeded) => Err(self.timeout()),
        }
    }

    /// One attempt, and a hedge when it is slow: each gets its own copy of the arguments
    /// (the upstream serializes them into its request), one copy per attempt.
    async fn hedged(
        &self,
        arguments: &Map<String, Value>,
        ctx: &CallContext,
        hedge_after: Option<Duration>,
        deadline_at: Instant,
    ) -> Answer {
        let budget = self.budget();
        let began = budget.clock.now();
        let remaining = deadline_at.saturating_duration_since(began);
        match hedge_after.filter(|delay| *delay < remaining) {
            None => {
                self.attempt(arguments.clone(), ctx, deadline_at, Some(began))
                    .await
            }
            Some(delay) => {
                let run = || self.attempt(arguments.clone(), ctx, deadline_at, Some(began));
                hedged(run, delay, self.hedges(), budget.clock.as_ref())
                    .await
                    .result
            }
        }
    }

    /// One attempt, neither retried nor hedged, within the call's deadline.
    async fn measured(&self, arguments: Map<String, Value>, ctx: &CallContext) -> Answer {
        self.attempt(arguments, ctx, self.deadline_at, None).await
    }

    /// One request to the upstream, cut at the deadline, measured: in the book from `began`
    /// (the caller's wait: a hedge's primary's start; else its own start), in the metrics
    /// from its own start.
    async fn attempt(
        &self,
        arguments: Map<String, Value>,
        ctx: &CallContext,
        deadline_at: Instant,
        began: Option<Instant>,
    ) -> Answer {
        let budget = self.budget();
        let started = budget.clock.now();
        let call = self.upstream.inner.call_tool(self.tool, arguments, ctx);
        let mut answer = match tokio::time::timeout_at(deadline_at, call).await {
            Ok(answer) => answer,
            Err(_) => Err(self.timeout()),
        };
        // Whether an answer came from the cache is this gateway's to say: a server (or a
        // gateway behind this one) that sends the mark would have its call recorded cached.
        if let Ok(ToolOutcome {
            meta: Some(meta), ..
        }) = &mut answer
        {
            meta.shift_remove(CACHE_META_KEY);
        }
        let now = budget.clock.now();
        let elapsed = now.saturating_duration_since(started);
        let waited = now.saturating_duration_since(began.unwrap_or(started));
        let sample = match &answer {
            // A tool's own `isError` is an answer, given in its time (bad arguments are the
            // model's): only no answer counts against the tool's health.
            Ok(_) => Some(Sample::ok(waited)),
            Err(UpstreamError::Timeout { .. }) => Some(Sample::timeout(waited)),
            Err(UpstreamError::Cancelled) => None,
            // A request for the client's input is an answer, given in the usual time.
            Err(UpstreamError::InputRequired { .. }) => Some(Sample::ok(waited)),
            Err(_) => Some(Sample::error(waited)),
        };
        if let Some(sample) = sample {
            budget.record(self.key, sample);
        }
        if let Some(metrics) = &self.upstream.metrics {
            let server = self.upstream.server.as_str();
            metrics.record_attempt(server, self.tool, ctx.agent.as_deref(), &answer, elapsed);
        }
        answer
    }

    fn timeout(&self) -> UpstreamError {
        UpstreamError::Timeout {
            server: self.upstream.server.clone(),
            after: self.plan.map_or(self.deadline, |plan| plan.stated),
        }
    }
}

/// How a failed attempt counts for retries: no answer (transport, timeout) may be retried; an
/// answer — a tool's error result or a JSON-RPC error — never.
fn classify(error: &UpstreamError) -> Failure {
    match error {
        UpstreamError::Unavailable { .. } | UpstreamError::Disconnected { .. } => {
            Failure::Transport
        }
        UpstreamError::Timeout { .. } => Failure::Timeout,
        _ => Failure::Tool,
    }
}

#[cfg(test)]
#[path = "execute_tests.rs"]
mod tests;
