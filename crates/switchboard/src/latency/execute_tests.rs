//! Retries at the execution layer, against an upstream that fails in transport: an idempotent
//! tool is tried again within its deadline, a non-idempotent one never, and a tool's own
//! error result is never retried. A server's answer never says it came from this gateway's
//! cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use switchboard_budget::TierSet;
use switchboard_core::catalog::{ListedTool, NamingRules, ServerSlice};
use switchboard_core::clock::SystemClock;
use switchboard_core::config::LatencyConfig;
use switchboard_core::pipeline::CACHE_META_KEY;
use switchboard_core::upstream::{Upstream, UpstreamError};
use switchboard_core::{CallContext, Catalog, ServerId, ToolDefinition, ToolOutcome};

use super::BudgetedUpstream;
use crate::latency::LatencyBudget;

/// Fails the first `failures` calls as `failure`, then answers.
struct Flaky {
    failures: usize,
    failure: UpstreamError,
    calls: AtomicUsize,
}

impl Upstream for Flaky {
    fn call_tool<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if call < self.failures {
                Err(self.failure.clone())
            } else {
                Ok(ToolOutcome::text("ok"))
            }
        })
    }
}

fn budget() -> Arc<LatencyBudget> {
    let budget = LatencyBudget::new(
        LatencyConfig::default(),
        TierSet::default(),
        HashMap::new(),
        Arc::new(SystemClock),
        None,
    );
    let tool = |name: &str, annotations: Value| {
        let mut definition = ToolDefinition::new(name, "t", json!({"type": "object"}));
        definition.annotations = serde_json::from_value(annotations).ok();
        ListedTool::compile(definition)
    };
    let slice = ServerSlice {
        held: Default::default(),
        server: ServerId::new("s"),
        prefix: "s".into(),
        tools: Arc::from(vec![
            tool("lookup", json!({"readOnlyHint": true})),
            tool(
                "append",
                json!({"readOnlyHint": false, "destructiveHint": false}),
            ),
            {
                // Read-only, cacheable for a minute, over in a second.
                let mut cached = ToolDefinition::new("cached", "t", json!({"type": "object"}));
                cached.annotations = serde_json::from_value(json!({"readOnlyHint": true})).ok();
                cached.meta = json!({"switchboard.dev/latency":
                    {"cacheable_seconds": 60, "max_duration_ms": 1000}})
                .as_object()
                .cloned();
                ListedTool::compile(cached)
            },
        ]),
        overrides: BTreeMap::new(),
        call_timeout: Duration::from_secs(5),
        category: String::new(),
    };
    let catalog = Catalog::build(&[slice], &NamingRules::default());
    budget.refresh(&catalog, &HashMap::new());
    budget
}

async fn run(
    tool: &str,
    failures: usize,
    failure: UpstreamError,
) -> (Result<ToolOutcome, UpstreamError>, usize) {
    let flaky = Arc::new(Flaky {
        failures,
        failure,
        calls: AtomicUsize::new(0),
    });
    let upstream = budgeted(flaky.clone());
    let answer = upstream
        .call_tool(tool, Map::new(), &CallContext::default())
        .await;
    (answer, flaky.calls.load(Ordering::SeqCst))
}

/// `inner` as server `s`, under [`budget`].
fn budgeted(inner: Arc<dyn Upstream>) -> BudgetedUpstream {
    BudgetedUpstream {
        inner,
        server: ServerId::new("s"),
        budget: budget(),
        tier: None,
        lease: None,
        metrics: None,
    }
}

fn disconnected() -> UpstreamError {
    UpstreamError::Disconnected {
        server: ServerId::new("s"),
        reason: "stream closed".into(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_tool_is_retried_after_a_transport_failure() {
    let (answer, calls) = run("lookup", 1, disconnected()).await;
    assert_eq!(answer.map(|o| o.text_content()), Ok("ok".to_owned()));
    assert_eq!(calls, 2);
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_is_never_retried() {
    let (answer, calls) = run("append", 1, disconnected()).await;
    assert!(
        matches!(answer, Err(UpstreamError::Disconnected { .. })),
        "{answer:?}"
    );
    assert_eq!(calls, 1);
}

#[tokio::test(start_paused = true)]
async fn a_protocol_error_is_an_answer_and_never_retried() {
    let error = UpstreamError::Protocol {
        server: ServerId::new("s"),
        code: -32602,
        message: "bad".into(),
        data: None,
    };
    let (answer, calls) = run("lookup", 1, error).await;
    assert!(
        matches!(answer, Err(UpstreamError::Protocol { .. })),
        "{answer:?}"
    );
    assert_eq!(calls, 1);
}

#[tokio::test(start_paused = true)]
async fn retries_of_a_failing_server_stay_within_ten_percent_extra() {
    let flaky = Arc::new(Flaky {
        failures: usize::MAX,
        failure: disconnected(),
        calls: AtomicUsize::new(0),
    });
    let upstream = budgeted(flaky.clone());
    let requests = 50;
    for _ in 0..requests {
        let answer = upstream
            .call_tool("lookup", Map::new(), &CallContext::default())
            .await;
        assert!(answer.is_err());
    }
    let calls = flaky.calls.load(Ordering::SeqCst);
    // One token in reserve, then 0.1 per request: no retry storm.
    assert!(calls > requests, "nothing was retried");
    assert!(
        calls <= requests + requests / 10 + 1,
        "{calls} calls for {requests} requests"
    );
}

/// Answers with the cache's mark in its `_meta`, as a gateway behind this one would.
struct Marked;

impl Upstream for Marked {
    fn call_tool<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            let mut outcome = ToolOutcome::text("ok");
            let mut meta = Map::new();
            meta.insert(CACHE_META_KEY.to_owned(), json!({"hit": true}));
            meta.insert("other".to_owned(), json!(1));
            outcome.meta = Some(meta);
            Ok(outcome)
        })
    }
}

#[tokio::test]
async fn an_upstreams_cache_mark_is_not_taken_for_this_gateways() {
    let upstream = budgeted(Arc::new(Marked));
    let outcome = upstream
        .call_tool("append", Map::new(), &CallContext::default())
        .await
        .expect("answered");
    assert!(
        outcome
            .meta
            .as_ref()
            .is_some_and(|meta| !meta.contains_key(CACHE_META_KEY)),
        "{:?}",
        outcome.meta
    );
    assert_eq!(
        outcome.meta.as_ref().and_then(|meta| meta.get("other")),
        Some(&json!(1)),
        "the server's other keys are kept"
    );
}

/// Never answers.
struct Silent;

impl Upstream for Silent {
    fn call_tool<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(std::future::pending())
    }
}

/// A caller's deadline is counted from the request's receipt: the time the call waited
/// before it reached its server (an approval, an admission slot) comes out of it.
#[tokio::test(start_paused = true)]
async fn a_deadline_from_receipt_includes_the_wait_before_the_call() {
    use switchboard_core::latency_meta::RequestedDeadline;
    let upstream = budgeted(Arc::new(Silent));
    let received = tokio::time::Instant::now();
    let ctx = CallContext {
        deadline: Some(RequestedDeadline::Within(Duration::from_millis(500)).received_at(received)),
        ..CallContext::default()
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let called = tokio::time::Instant::now();
    let answer = upstream.call_tool("append", Map::new(), &ctx).await;
    assert!(
        matches!(answer, Err(UpstreamError::Timeout { .. })),
        "{answer:?}"
    );
    assert_eq!(called.elapsed(), Duration::from_millis(200));
}

/// A caller that waited on another's run of the same cached call, and runs it itself once
/// that one timed out, keeps its own deadline: it does not get a fresh one.
#[tokio::test(start_paused = true)]
async fn a_waiter_that_runs_the_call_itself_keeps_its_own_deadline() {
    let upstream = Arc::new(budgeted(Arc::new(Silent)));
    let first = {
        let upstream = upstream.clone();
        tokio::spawn(async move {
            upstream
                .call_tool("cached", Map::new(), &CallContext::default())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = tokio::time::Instant::now();
    let second = upstream
        .call_tool("cached", Map::new(), &CallContext::default())
        .await;
    assert!(
        matches!(second, Err(UpstreamError::Timeout { .. })),
        "{second:?}"
    );
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(1),
        "its own second, not the first caller's rest and a second more"
    );
    let first = first.await.expect("join");
    assert!(
        matches!(first, Err(UpstreamError::Timeout { .. })),
        "{first:?}"
    );
}

/// Answers every call with the tool's own error (`isError`), as for bad arguments.
struct Refusing;

impl Upstream for Refusing {
    fn call_tool<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async { Ok(ToolOutcome::error("no such file")) })
    }
}

/// A tool's own error is an answer: it does not count against the tool's health (bad
/// arguments are the model's), as the window's `Outcome::Ok` says.
#[tokio::test(start_paused = true)]
async fn a_tools_own_errors_are_answers_to_its_health() {
    let upstream = budgeted(Arc::new(Refusing));
    for _ in 0..30 {
        let answer = upstream
            .call_tool("append", Map::new(), &CallContext::default())
            .await
            .expect("an answer");
        assert!(answer.is_error);
    }
    let summary = upstream
        .budget
        .book()
        .summary(&super::tool_key("s", "append"))
        .expect("measured");
    assert_eq!((summary.samples, summary.error_rate), (30, 0.0));
}
