//! Approvals through every channel: an operator (approve, deny, timeout), the legacy client
//! through `elicitation/create`, and the modern client through `input_required` with a sealed
//! `requestState` (tampered and replayed states refused).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use support::{Named, plan};
use switchboard::{Approvals, Host, HostOptions};
use switchboard_core::approval::{AgentApproval, ApprovalMode, ApprovalRules};
use switchboard_core::pipeline::{CallError, Governance};
use switchboard_core::{CallContext, CallerChannel, CallerError, ModernRequest, ToolOutcome};
use switchboard_mcp::seal::{FixedKeys, KeyRing};

async fn host(timeout: Duration) -> Host {
    let approvals = Arc::new(Approvals::new(
        Arc::new(FixedKeys(Arc::new(KeyRing::from_secret(b"test key")))),
        timeout,
    ));
    let mut rules = ApprovalRules::default();
    rules.agents.insert(
        "qa".into(),
        AgentApproval {
            mode: ApprovalMode::Destructive,
            auto_approve: vec![switchboard_core::agent::ToolPattern::parse("t__safe")],
        },
    );
    let governance = Governance {
        approvals: rules,
        approver: Some(approvals.clone()),
        ..Governance::default()
    };
    let options = HostOptions {
        governance: Arc::new(governance),
        pending_approvals: Some(approvals.pending.clone()),
        agents: BTreeMap::new(),
        ..HostOptions::default()
    };
    let host = Host::start(
        vec![plan(
            Named {
                id: "t",
                tools: &["delete", "safe"],
            },
            "",
        )],
        options,
    );
    host.ready().await;
    host
}

fn qa() -> CallContext {
    CallContext::default().with_agent("qa")
}

async fn call(host: &Host, ctx: &CallContext) -> Result<ToolOutcome, CallError> {
    let arguments = json!({"text": "!"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    host.call(ctx, "t__delete", arguments).await
}

#[tokio::test]
async fn an_operator_approves_denies_or_lets_it_time_out() {
    let host = host(Duration::from_secs(5)).await;
    let pending = host.pending_approvals().expect("approvals");
    assert_eq!(
        host.call(&qa(), "t__safe", Default::default())
            .await
            .expect("ok")
            .text_content(),
        "t:safe",
        "auto-approved tools do not wait"
    );
    let waiting = tokio::spawn({
        let host = host.clone();
        async move { call(&host, &qa()).await }
    });
    let listed = loop {
        let listed = pending.list();
        if !listed.is_empty() {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(listed[0].tool, "t__delete");
    assert_eq!(listed[0].agent.as_deref(), Some("qa"));
    assert!(
        listed[0].reason.contains("destructiveHint absent"),
        "{}",
        listed[0].reason
    );
    pending
        .answer(&listed[0].id, true, "alice", None)
        .await
        .expect("pending");
    let approved = waiting.await.expect("join").expect("outcome");
    assert_eq!(approved.text_content(), "t:delete!");

    let (waiting, id) = qa_waits(&host).await;
    pending
        .answer(&id, false, "bob", Some("not on a Friday"))
        .await
        .expect("pending");
    assert!(
        pending.answer(&id, true, "bob", None).await.is_err(),
        "answered once only"
    );
    let denied = waiting.await.expect("join").expect("outcome");
    assert!(denied.is_error);
    assert_eq!(denied.text_content(), "denied by bob: not on a Friday");

    let quick = host_with_timeout().await;
    let timed_out = call(&quick, &qa()).await.expect("outcome");
    assert!(
        timed_out.is_error && timed_out.text_content().contains("no operator answered"),
        "{}",
        timed_out.text_content()
    );
}

#[tokio::test]
async fn an_operator_grant_lets_later_calls_of_that_agent_and_tool_through() {
    let host = host(Duration::from_secs(5)).await;
    let pending = host.pending_approvals().expect("approvals");
    let (waiting, id) = qa_waits(&host).await;
    pending
        .approve_for(&id, 15, "alice")
        .await
        .expect("pending");
    let approved = waiting.await.expect("join").expect("outcome");
    assert_eq!(approved.text_content(), "t:delete!");
    // The next call of the same agent and tool is approved without waiting.
    let again = tokio::time::timeout(Duration::from_secs(2), call(&host, &qa()))
        .await
        .expect("not queued")
        .expect("outcome");
    assert_eq!(again.text_content(), "t:delete!");
    assert!(pending.list().is_empty());
    // Another agent still waits (and times out on the short host below).
    let other = CallContext::default().with_agent("qa2");
    assert!(
        pending
            .granted(other.agent.as_deref(), "t__delete")
            .is_none()
    );
}

/// qa's call of `t__delete`, once it waits in the operator queue, and its id there.
async fn qa_waits(
    host: &Host,
) -> (
    tokio::task::JoinHandle<Result<ToolOutcome, CallError>>,
    String,
) {
    let pending = host.pending_approvals().expect("approvals");
    let waiting = tokio::spawn({
        let host = host.clone();
        async move { call(&host, &qa()).await }
    });
    let id = loop {
        if let Some(first) = pending.list().first() {
            break first.id.clone();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    (waiting, id)
}

async fn host_with_timeout() -> Host {
    host(Duration::from_millis(100)).await
}

/// A legacy client that answers elicitations with a scripted answer.
#[derive(Debug)]
struct Client {
    answer: Value,
    asked: Mutex<Vec<Value>>,
}

impl CallerChannel for Client {
    fn supports(&self, method: &str) -> bool {
        method == "elicitation/create"
    }

    fn request(&self, _method: &str, params: Value) -> BoxFuture<'_, Result<Value, CallerError>> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(params);
        }
        Box::pin(async move { Ok(self.answer.clone()) })
    }

    fn notify(&self, _method: &str, _params: Value) {}
}

#[tokio::test]
async fn a_legacy_client_answers_through_elicitation() {
    let host = host(Duration::from_secs(5)).await;
    let accept = Arc::new(Client {
        answer: json!({"action": "accept", "content": {"approve": true}}),
        asked: Mutex::default(),
    });
    let ctx = CallContext {
        caller: Some(accept.clone()),
        ..qa()
    };
    assert_eq!(
        call(&host, &ctx).await.expect("ok").text_content(),
        "t:delete!"
    );
    let asked = accept.asked.lock().map(|a| a.clone()).unwrap_or_default();
    let message = asked[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("t__delete")
            && message.contains("server t")
            && message.contains("{\"text\":\"!\"}"),
        "{message}"
    );
    for (answer, expected) in [
        (
            json!({"action": "decline"}),
            "denied by client: the user declined",
        ),
        (
            json!({"action": "accept", "content": {"approve": false, "reason": "looks wrong"}}),
            "denied by client: looks wrong",
        ),
    ] {
        let ctx = CallContext {
            caller: Some(Arc::new(Client {
                answer,
                asked: Mutex::default(),
            })),
            ..qa()
        };
        let denied = call(&host, &ctx).await.expect("outcome");
        assert_eq!(denied.text_content(), expected);
    }
}

#[tokio::test]
async fn a_modern_client_answers_through_input_required() {
    let host = host(Duration::from_secs(5)).await;
    let modern = |responses: Option<Value>, state: Option<String>| CallContext {
        modern: Some(ModernRequest {
            elicitation: true,
            input_responses: responses,
            request_state: state,
            client_capabilities: Some(json!({"elicitation": {}})),
            log_level: None,
        }),
        ..qa()
    };
    let Err(CallError::InputRequired {
        input_requests,
        request_state,
    }) = call(&host, &modern(None, None)).await
    else {
        panic!("expected input_required");
    };
    let request_state = request_state.expect("the approval's sealed state");
    assert_eq!(
        input_requests["switchboard_approval"]["method"],
        "elicitation/create"
    );
    let yes = json!({"switchboard_approval": {"action": "accept", "content": {"approve": true}}});
    let approved = call(
        &host,
        &modern(Some(yes.clone()), Some(request_state.clone())),
    )
    .await
    .expect("ok");
    assert_eq!(approved.text_content(), "t:delete!");
    let replayed = call(
        &host,
        &modern(Some(yes.clone()), Some(request_state.clone())),
    )
    .await
    .expect("outcome");
    assert!(
        replayed.is_error && replayed.text_content().contains("already used"),
        "{}",
        replayed.text_content()
    );
    let tampered = format!("{}00", request_state);
    let refused = call(&host, &modern(Some(yes), Some(tampered)))
        .await
        .expect("outcome");
    assert!(
        refused.is_error && refused.text_content().contains("refused"),
        "{}",
        refused.text_content()
    );
}
