//! The pipeline end to end against in-memory upstreams, on paused time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::*;
use crate::catalog::{ListedTool, NamingRules, ServerSlice};
use crate::clock::SystemClock;
use crate::upstream::{Upstream, UpstreamError};
use crate::{ServerId, ToolDefinition};

/// An upstream whose behaviour is chosen by the tool name.
struct Scripted;

impl Upstream for Scripted {
    fn call_tool<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, UpstreamError>> {
        Box::pin(async move {
            match tool {
                "echo" | "plain" => Ok(ToolOutcome::text(
                    arguments["text"].as_str().unwrap_or_default(),
                )),
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok(ToolOutcome::text("late"))
                }
                "progress" => {
                    if let Some(sink) = &ctx.progress {
                        sink.report(crate::Progress {
                            progress: 1.0,
                            total: Some(2.0),
                            message: None,
                        });
                    }
                    Ok(ToolOutcome::text("done"))
                }
                "reject" => Err(UpstreamError::Protocol {
                    server: ServerId::new("s"),
                    code: -32602,
                    message: "no".into(),
                    data: None,
                }),
                _ => Err(UpstreamError::Unavailable {
                    server: ServerId::new("s"),
                    reason: "crashed".into(),
                }),
            }
        })
    }
}

struct Directory(Option<Arc<dyn Upstream>>);

impl UpstreamDirectory for Directory {
    fn upstream(&self, _server: &ServerId) -> Option<Arc<dyn Upstream>> {
        self.0.clone()
    }
}

#[derive(Default)]
struct Records(Mutex<Vec<CallRecord>>);

impl Recorder for Records {
    fn record(&self, record: &CallRecord) {
        if let Ok(mut records) = self.0.lock() {
            records.push(record.clone());
        }
    }
}

fn catalog() -> Catalog {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": false});
    let tools = ["echo", "slow", "progress", "reject", "down", "plain"]
        .iter()
        .map(|name| ListedTool::compile(ToolDefinition::new(*name, "d", schema.clone())))
        .collect();
    let slice = ServerSlice {
        held: Default::default(),
        server: ServerId::new("s"),
        prefix: "s".into(),
        tools,
        overrides: Default::default(),
        call_timeout: Duration::from_secs(5),
        category: String::new(),
    };
    Catalog::build(&[slice], &NamingRules::default())
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

struct Fixture {
    pipeline: Pipeline,
    records: Arc<Records>,
    catalog: Catalog,
    directory: Directory,
}

impl Fixture {
    /// A fixture whose pipeline runs under `governance`.
    fn governed(governance: Governance) -> Self {
        let mut fixture = Self::new();
        fixture.pipeline = Pipeline::governed(
            fixture.records.clone(),
            Arc::new(SystemClock),
            Arc::new(governance),
        );
        fixture
    }

    fn new() -> Self {
        let records = Arc::new(Records::default());
        Self {
            pipeline: Pipeline::new(records.clone(), Arc::new(SystemClock)),
            records,
            catalog: catalog(),
            directory: Directory(Some(Arc::new(Scripted))),
        }
    }

    async fn call(
        &self,
        ctx: &CallContext,
        name: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, CallError> {
        self.call_as(&crate::agent::FullView, ctx, name, arguments)
            .await
    }

    async fn call_as(
        &self,
        view: &dyn crate::agent::View,
        ctx: &CallContext,
        name: &str,
        arguments: Value,
    ) -> Result<ToolOutcome, CallError> {
        self.pipeline
            .call(
                &self.catalog,
                view,
                &self.directory,
                ctx,
                ToolCall::new(name, args(arguments)),
            )
            .await
    }

    fn statuses(&self) -> Vec<CallStatus> {
        self.records
            .0
            .lock()
            .map(|r| r.iter().map(|r| r.status).collect())
            .unwrap_or_default()
    }
}

#[tokio::test(start_paused = true)]
async fn every_fate_is_recorded_once() {
    let fixture = Fixture::new();
    let ctx = CallContext::default();
    let ok = fixture
        .call(&ctx, "s__echo", json!({"text": "hi"}))
        .await
        .expect("ok");
    assert_eq!(ok.text_content(), "hi");
    let unknown = fixture
        .call(&ctx, "s__nope", json!({}))
        .await
        .expect_err("unknown");
    assert_eq!(
        unknown,
        CallError::UnknownTool {
            name: "s__nope".into()
        }
    );
    let invalid = fixture
        .call(&ctx, "s__echo", json!({"text": 5, "extra": true}))
        .await
        .expect("tool error");
    assert!(invalid.is_error);
    let text = invalid.text_content();
    assert!(text.contains("$.text") && text.contains("extra"), "{text}");
    let rejected = fixture
        .call(&ctx, "s__reject", json!({}))
        .await
        .expect_err("passthrough");
    assert!(matches!(rejected, CallError::Upstream { code: -32602, .. }));
    let down = fixture
        .call(&ctx, "s__down", json!({}))
        .await
        .expect("tool error");
    assert!(down.is_error && down.text_content().contains("crashed"));
    assert_eq!(
        fixture.statuses(),
        [
            CallStatus::Ok,
            CallStatus::UnknownTool,
            CallStatus::InvalidArguments,
            CallStatus::UpstreamError,
            CallStatus::UpstreamDown
        ]
    );
    // Every result carries the envelope, whose id is the record's.
    let envelope = &serde_json::to_value(&ok).expect("serializes")["_meta"][CALL_META_KEY];
    assert_eq!(envelope["server"], "s");
    assert_eq!(envelope["cached"], false);
    let records = fixture
        .records
        .0
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    assert_eq!(envelope["id"], records[0].call_id.as_str());
    assert_eq!(records[1].error.as_deref(), Some("unknown tool: s__nope"));
    let ids: std::collections::BTreeSet<&str> =
        records.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids.len(), records.len(), "ids are unique");
}

#[tokio::test(start_paused = true)]
async fn deadline_ends_a_slow_call_with_a_tool_error() {
    let fixture = Fixture::new();
    let started = tokio::time::Instant::now();
    let outcome = fixture
        .call(&CallContext::default(), "s__slow", json!({}))
        .await
        .expect("tool error");
    assert!(outcome.is_error);
    assert!(
        outcome.text_content().contains("5000ms"),
        "{}",
        outcome.text_content()
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let records = fixture
        .records
        .0
        .lock()
        .map(|r| r[0].duration)
        .unwrap_or_default();
    assert_eq!(records, Duration::from_secs(5));
    assert_eq!(fixture.statuses(), [CallStatus::TimedOut]);
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_call() {
    let fixture = Fixture::new();
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let result = fixture.call(&ctx, "s__slow", json!({})).await;
    assert_eq!(result, Err(CallError::Cancelled));
    assert_eq!(fixture.statuses(), [CallStatus::Cancelled]);
}

/// An operator who takes an hour, then approves.
struct SlowOperator;

impl crate::approval::Approver for SlowOperator {
    fn decide<'a>(
        &'a self,
        _request: &'a crate::approval::ApprovalRequest,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, crate::approval::Decision> {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            crate::approval::Decision::Approved {
                by: "operator".into(),
                channel: "test".into(),
            }
        })
    }
}

/// A call cancelled while it waits for its approval ends then, and never runs.
#[tokio::test(start_paused = true)]
async fn cancellation_while_waiting_for_approval_ends_the_call_at_once() {
    let mut approvals = crate::approval::ApprovalRules::default();
    approvals.default.mode = crate::approval::ApprovalMode::Always;
    let governance = Governance {
        approvals,
        approver: Some(Arc::new(SlowOperator)),
        ..Governance::default()
    };
    let fixture = Fixture::governed(governance);
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    });
    let started = tokio::time::Instant::now();
    let result = fixture.call(&ctx, "s__plain", json!({"text": "x"})).await;
    assert_eq!(result, Err(CallError::Cancelled));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "ended when cancelled, not when the operator answered: {:?}",
        started.elapsed()
    );
    assert_eq!(fixture.statuses(), [CallStatus::Cancelled]);
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_the_caller_and_missing_upstreams_are_tool_errors() {
    let fixture = Fixture::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let ctx = CallContext::default().with_progress(crate::ProgressSink::new(move |p| {
        if let Ok(mut seen) = sink_seen.lock() {
            seen.push(p.progress);
        }
    }));
    fixture
        .call(&ctx, "s__progress", json!({}))
        .await
        .expect("ok");
    assert_eq!(seen.lock().map(|s| s.clone()).unwrap_or_default(), [1.0]);

    let orphan = Fixture {
        directory: Directory(None),
        ..Fixture::new()
    };
    let outcome = orphan
        .call(&CallContext::default(), "s__echo", json!({"text": "x"}))
        .await
        .expect("tool error");
    assert!(outcome.is_error && outcome.text_content().contains("not connected"));
}

#[tokio::test(start_paused = true)]
async fn a_tool_outside_the_view_is_refused_like_an_unknown_tool() {
    use crate::agent::{AgentPolicy, ToolPattern};
    let fixture = Fixture::new();
    let ctx = CallContext::default();
    let only_echo = AgentPolicy {
        name: "npc".into(),
        allow: vec![ToolPattern::parse("s:echo")],
        deny: vec![],
    };
    let allowed = fixture
        .call_as(&only_echo, &ctx, "s__echo", json!({"text": "hi"}))
        .await
        .expect("echo is in the view");
    assert_eq!(allowed.text_content(), "hi");
    let hidden = fixture
        .call_as(&only_echo, &ctx, "s__progress", json!({}))
        .await
        .expect_err("outside the view");
    let missing = fixture
        .call_as(&only_echo, &ctx, "s__nope", json!({}))
        .await
        .expect_err("unknown");
    assert_eq!(
        hidden,
        CallError::UnknownTool {
            name: "s__progress".into()
        }
    );
    assert_eq!(
        missing,
        CallError::UnknownTool {
            name: "s__nope".into()
        }
    );
    let denied = AgentPolicy {
        name: "npc".into(),
        allow: vec![],
        deny: vec![ToolPattern::parse("s__e*")],
    };
    assert!(
        fixture
            .call_as(&denied, &ctx, "s__echo", json!({"text": "x"}))
            .await
            .is_err()
    );
    assert_eq!(
        fixture.statuses(),
        [
            CallStatus::Ok,
            CallStatus::UnknownTool,
            CallStatus::UnknownTool,
            CallStatus::UnknownTool
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn limits_refuse_with_a_readable_error_and_costs_are_charged() {
    use std::collections::HashMap;

    use crate::limits::{CostModel, LimitSpec, Limits, Quota, Scope};
    let specs = HashMap::from([(
        Scope::Tool("s/echo".into()),
        LimitSpec {
            per_minute: Some(60.0),
            ..LimitSpec::default()
        },
    )]);
    let quotas = HashMap::from([("npc".to_owned(), Quota::new(2.0, Duration::from_secs(3600)))]);
    let governance = Governance {
        limits: Limits::new(specs, quotas),
        costs: HashMap::from([(
            "s".into(),
            HashMap::from([(
                "*".into(),
                CostModel {
                    fixed: 1.0,
                    per_second: 0.0,
                },
            )]),
        )]),
        ..Governance::default()
    };
    let fixture = Fixture::governed(governance);
    let npc = CallContext::default().with_agent("npc");
    let first = fixture
        .call(&npc, "s__echo", json!({"text": "a"}))
        .await
        .expect("ok");
    assert_eq!(first.call.as_ref().expect("the envelope").cost, 1.0);
    let limited = fixture
        .call(&npc, "s__echo", json!({"text": "b"}))
        .await
        .expect("refusal");
    assert!(limited.is_error);
    assert!(
        limited
            .text_content()
            .contains("rate limited (tool s/echo), retry after 1000 ms"),
        "{}",
        limited.text_content()
    );
    fixture
        .call(&npc, "s__progress", json!({}))
        .await
        .expect("ok");
    let broke = fixture
        .call(&npc, "s__progress", json!({}))
        .await
        .expect("refusal");
    assert!(
        broke
            .text_content()
            .contains("quota exceeded: 2.00 of 2.00"),
        "{}",
        broke.text_content()
    );
    assert_eq!(
        fixture.statuses(),
        [
            CallStatus::Ok,
            CallStatus::RateLimited,
            CallStatus::Ok,
            CallStatus::RateLimited
        ]
    );
    let costs: Vec<f64> = fixture
        .records
        .0
        .lock()
        .map(|r| r.iter().map(|r| r.cost).collect())
        .unwrap_or_default();
    assert_eq!(costs, [1.0, 0.0, 1.0, 0.0], "refused calls cost nothing");
}

#[tokio::test(start_paused = true)]
async fn a_call_that_never_reached_its_server_costs_nothing() {
    use std::collections::HashMap;

    use crate::limits::{CostModel, Limits, Quota};
    let quotas = HashMap::from([("npc".to_owned(), Quota::new(1.0, Duration::from_secs(3600)))]);
    let governance = Governance {
        limits: Limits::new(HashMap::new(), quotas),
        costs: HashMap::from([(
            "s".into(),
            HashMap::from([(
                "*".into(),
                CostModel {
                    fixed: 1.0,
                    per_second: 0.0,
                },
            )]),
        )]),
        ..Governance::default()
    };
    let mut fixture = Fixture::governed(governance);
    let npc = CallContext::default().with_agent("npc");
    // The server is not connected: twice, and the budget of one call is still whole.
    fixture.directory = Directory(None);
    for _ in 0..2 {
        let down = fixture
            .call(&npc, "s__echo", json!({"text": "a"}))
            .await
            .expect("a tool error");
        assert!(down.is_error);
        assert_eq!(down.call.as_ref().expect("the envelope").cost, 0.0);
    }
    fixture.directory = Directory(Some(Arc::new(Scripted)));
    let ran = fixture
        .call(&npc, "s__echo", json!({"text": "b"}))
        .await
        .expect("ok");
    assert!(!ran.is_error, "{}", ran.text_content());
    assert_eq!(ran.call.as_ref().expect("the envelope").cost, 1.0);
}

/// A scripted hook: denies `s__progress`, rewrites echo's text, upper-cases echo results,
/// and fails on `s__down`.
struct Scripted2 {
    policy: crate::hooks::FailurePolicy,
}

impl crate::hooks::Hook for Scripted2 {
    fn name(&self) -> &str {
        "scripted"
    }

    fn on_failure(&self) -> crate::hooks::FailurePolicy {
        self.policy
    }

    fn before<'a>(
        &'a self,
        call: &'a crate::hooks::HookCall,
    ) -> BoxFuture<'a, Result<crate::hooks::Before, crate::hooks::HookFailure>> {
        use crate::hooks::{Before, HookFailure};
        Box::pin(async move {
            Ok(match call.tool.as_str() {
                "s__progress" => Before::Deny {
                    reason: "not today".into(),
                },
                "s__echo" if call.arguments.get("text") == Some(&json!("bad")) => Before::Rewrite {
                    arguments: args(json!({"text": 7})),
                },
                "s__echo" => Before::Rewrite {
                    arguments: args(json!({"text": "rewritten"})),
                },
                "s__down" => {
                    return Err(HookFailure {
                        hook: "scripted".into(),
                        reason: "crashed".into(),
                    });
                }
                _ => Before::Allow,
            })
        })
    }

    fn after<'a>(
        &'a self,
        call: &'a crate::hooks::HookCall,
        outcome: &'a ToolOutcome,
    ) -> BoxFuture<'a, Result<crate::hooks::After, crate::hooks::HookFailure>> {
        Box::pin(async move {
            let text = call.arguments.get("text").and_then(Value::as_str);
            match (call.tool.as_str(), text) {
                ("s__plain", Some("replace")) => Ok(crate::hooks::After::Replace {
                    outcome: Box::new(ToolOutcome::error("not for your eyes")),
                }),
                ("s__plain", Some("withhold")) => Err(crate::hooks::HookFailure {
                    hook: "scripted".into(),
                    reason: "crashed after".into(),
                }),
                _ => Ok(crate::hooks::After::Replace {
                    outcome: Box::new(ToolOutcome::text(outcome.text_content().to_uppercase())),
                }),
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_deny_rewrite_and_replace_and_fail_closed_or_open() {
    use crate::hooks::FailurePolicy;
    let hooked = |policy| {
        let governance = Governance {
            hooks: vec![Arc::new(Scripted2 { policy }) as Arc<dyn crate::hooks::Hook>],
            ..Governance::default()
        };
        Fixture::governed(governance)
    };
    let fixture = hooked(FailurePolicy::Closed);
    let ctx = CallContext::default();
    let echo = fixture
        .call(&ctx, "s__echo", json!({"text": "hi"}))
        .await
        .expect("ok");
    assert_eq!(
        echo.text_content(),
        "REWRITTEN",
        "rewritten before, replaced after"
    );
    let denied = fixture
        .call(&ctx, "s__progress", json!({}))
        .await
        .expect("refusal");
    assert!(denied.is_error);
    assert_eq!(
        denied.text_content(),
        "denied by hook 'scripted': not today"
    );
    let invalid = fixture
        .call(&ctx, "s__echo", json!({"text": "bad"}))
        .await
        .expect("refusal");
    assert!(
        invalid.text_content().contains("$.text"),
        "a rewrite is validated again: {}",
        invalid.text_content()
    );
    let failed = fixture
        .call(&ctx, "s__down", json!({}))
        .await
        .expect("refusal");
    assert_eq!(
        failed.text_content(),
        "denied: hook 'scripted' failed: crashed"
    );
    assert_eq!(
        fixture.statuses(),
        [
            CallStatus::Ok,
            CallStatus::Denied,
            CallStatus::InvalidArguments,
            CallStatus::Denied
        ]
    );
    // After the call: a result a hook turned into an error is recorded as one, and one a
    // failing hook withheld (fail-closed) as denied — what the caller got, not what the
    // tool said.
    let fixture = hooked(FailurePolicy::Closed);
    let replaced = fixture
        .call(&ctx, "s__plain", json!({"text": "replace"}))
        .await
        .expect("replaced");
    assert!(replaced.is_error && replaced.text_content() == "not for your eyes");
    let withheld = fixture
        .call(&ctx, "s__plain", json!({"text": "withhold"}))
        .await
        .expect("withheld");
    assert!(
        withheld.is_error && withheld.text_content().starts_with("result withheld"),
        "{}",
        withheld.text_content()
    );
    assert_eq!(
        fixture.statuses(),
        [CallStatus::ToolError, CallStatus::Denied]
    );
    let open = hooked(FailurePolicy::Open);
    let through = open.call(&ctx, "s__down", json!({})).await.expect("runs");
    assert!(
        through.text_content().contains("CRASHED"),
        "fail-open lets the call run: {}",
        through.text_content()
    );
}
