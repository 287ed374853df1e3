//! Every console page renders with real data: a gateway with the fixture echo server, calls
//! through the pipeline (ok, a tool error, an approval, a denial), the ledger they left; and
//! the actions that pages offer (restart, disable, enable, verify, export) work.

mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::*;

/// Makes a known set of calls: 3 echoes by qa, a failing call by qa, an echo by npc, and a
/// call of `fx__add` by qa that the operator approves.
async fn traffic(gateway: &Gateway) {
    for i in 0..3 {
        let (error, text) = gateway
            .call("qa", "fx__echo", json!({"message": format!("hello {i}")}))
            .await;
        assert!(!error, "{text}");
    }
    let (error, _) = gateway
        .call("qa", "fx__fail", json!({"message": "boom <b>not bold</b>"}))
        .await;
    assert!(error);
    let (error, _) = gateway
        .call("npc", "fx__echo", json!({"message": "hi"}))
        .await;
    assert!(!error);
    let hidden = gateway
        .host
        .call(
            &switchboard_core::CallContext::default().with_agent("npc"),
            "fx__add",
            add_args().as_object().cloned().unwrap_or_default(),
        )
        .await;
    assert!(hidden.is_err(), "npc cannot see add");
    let approved = tokio::spawn({
        let host = gateway.host.clone();
        async move {
            host.call(
                &switchboard_core::CallContext::default().with_agent("qa"),
                "fx__add",
                add_args().as_object().cloned().unwrap_or_default(),
            )
            .await
        }
    });
    let id = gateway.first_waiting().await;
    let pending = gateway.host.pending_approvals().expect("approvals");
    pending
        .answer(&id, true, "bob", None)
        .await
        .expect("waiting");
    let outcome = approved.await.expect("join").expect("outcome");
    assert!(!outcome.is_error, "{}", outcome.text_content());
    gateway.flush();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_with_real_data() {
    let gateway = Gateway::start().await;
    traffic(&gateway).await;
    let browser = gateway.signed_in().await;

    let approvals = browser.page("/console/approvals").await;
    assert!(
        approvals.contains("No calls are waiting for approval."),
        "{approvals}"
    );
    assert!(approvals.contains("data-live-source=\"/console/approvals/live\""));
    assert!(approvals.contains("signed in as <strong>alice</strong>"));
    assert!(approvals.contains("<script src=\"/console/static/console.js\""));

    let servers = browser.page("/console/servers").await;
    assert!(servers.contains("data-server=\"fx\""), "{servers}");
    assert!(
        servers.contains("<span class=\"state up\">up</span>"),
        "{servers}"
    );
    assert!(servers.contains(">stdio<"), "{servers}");
    // 3 + 1 + 1 + 1 calls reached fx (the denial of npc's add did not); one failed.
    assert!(servers.contains("16.7 % of 6"), "{servers}");
    assert!(servers.contains("value=\"restart\""), "{servers}");

    let tools = browser.page("/console/tools").await;
    for tool in ["fx__echo", "fx__add", "fx__fail", "fx__sleep"] {
        assert!(
            tools.contains(&format!("data-tool=\"{tool}\"")),
            "{tool}: {tools}"
        );
    }
    let echo_row = row_of(&tools, "data-tool=\"fx__echo\"");
    assert!(
        echo_row.contains("<td class=\"num\">4</td>"),
        "4 samples: {echo_row}"
    );
    assert!(
        echo_row.contains("npc, qa"),
        "seen by both agents: {echo_row}"
    );
    let add_row = row_of(&tools, "data-tool=\"fx__add\"");
    assert!(
        add_row.contains("<td>qa</td>"),
        "only qa sees add: {add_row}"
    );
    let filtered = browser.page("/console/tools?q=ECH&sort=p50&dir=desc").await;
    assert!(filtered.contains("1 of 7 tools"), "{filtered}");
    assert!(!filtered.contains("data-tool=\"fx__add\""));

    let detail = browser.page("/console/tools/fx__echo").await;
    assert!(detail.contains("<svg"), "{detail}");
    assert_eq!(
        detail.matches("<circle").count(),
        4,
        "one dot per echo call"
    );
    assert!(
        detail.contains("fast 500 ms") && detail.contains("deep 4 s"),
        "{detail}"
    );
    let svg = browser
        .get("/console/tools/fx__echo/chart.svg")
        .send()
        .await
        .expect("svg");
    assert_eq!(svg.headers()["content-type"], "image/svg+xml");
    let missing = browser
        .get("/console/tools/nope__nothing")
        .send()
        .await
        .expect("404");
    assert_eq!(missing.status(), 404);

    let audit = browser.page("/console/audit").await;
    assert!(audit.contains("fx__fail"), "{audit}");
    assert!(audit.contains("approved by bob via operator"), "{audit}");
    assert!(audit.contains("<span class=\"outcome tool_error\">tool_error</span>"));
    // Everything from outside is escaped: the failing call's arguments carry markup.
    assert!(!audit.contains("<b>not bold</b>"));
    let denied = browser
        .page("/console/audit?agent=npc&outcome=unknown_tool")
        .await;
    assert_eq!(
        denied.matches("<tr class=\"outcome-").count(),
        1,
        "{denied}"
    );
    let paged = browser.page("/console/audit?agent=qa").await;
    assert_eq!(paged.matches("<tr class=\"outcome-").count(), 5, "{paged}");
    let bad = browser
        .get("/console/audit?since=whenever")
        .send()
        .await
        .expect("400");
    assert_eq!(bad.status(), 400);

    let row = browser.page("/console/audit/2").await;
    assert!(
        row.contains("Row hash") && row.contains("Previous hash"),
        "{row}"
    );
    let first = browser.page("/console/audit/1").await;
    // [row hash, previous hash] of a row's page.
    let hashes = |page: &str| -> Vec<String> {
        page.split("<code class=\"hash\">")
            .skip(1)
            .map(|rest| rest.chars().take(64).collect())
            .collect()
    };
    assert_eq!(hashes(&row)[1], hashes(&first)[0], "row 2 links to row 1");

    let verify = browser.post_form("/console/audit/verify", &[]).await;
    assert_eq!(verify.status(), 200);
    let verified = verify.text().await.expect("body");
    assert!(
        verified.contains("The chain holds: 7 rows verified"),
        "{verified}"
    );

    let export = browser
        .get("/console/audit/export.jsonl?agent=qa")
        .send()
        .await
        .expect("export");
    assert_eq!(export.headers()["content-type"], "application/x-ndjson");
    let lines: Vec<Value> = export
        .text()
        .await
        .expect("body")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 5);
    assert!(
        lines
            .windows(2)
            .all(|w| w[0]["id"].as_i64() < w[1]["id"].as_i64()),
        "oldest first"
    );
    assert_eq!(lines[0]["entry"]["exposed"], "fx__echo");
    assert_eq!(lines[0]["row_hash"].as_str().map(str::len), Some(64));

    let agents = browser.page("/console/agents").await;
    let qa = row_of(&agents, "data-agent=\"qa\"");
    // qa: 7 tools; 5 calls in the last day; none denied.
    assert!(qa.contains("<td class=\"num\">7</td>"), "{qa}");
    assert!(qa.contains("<td class=\"num\">5</td>"), "{qa}");
    assert!(qa.contains("<td>destructive</td>"), "{qa}");
    let npc = row_of(&agents, "data-agent=\"npc\"");
    assert!(
        npc.contains("<td class=\"num\">1</td>"),
        "npc sees one tool: {npc}"
    );
    assert!(
        npc.contains("<td class=\"num\">2</td>"),
        "npc made 2 calls: {npc}"
    );
}

/// The `<tr>` that holds `marker`.
fn row_of<'a>(page: &'a str, marker: &str) -> &'a str {
    let at = page
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {page}"));
    let start = page[..at].rfind("<tr").expect("row start");
    let end = at + page[at..].find("</tr>").expect("row end");
    &page[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_disabled_enabled_and_restarted_from_the_console_and_a_bad_file_is_shown() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    let disabled = browser
        .post_form("/console/servers/fx", &[("action", "disable")])
        .await;
    assert_eq!(disabled.status(), 303, "{:?}", disabled.text().await);
    let page = browser.page("/console/servers").await;
    assert!(
        page.contains("<span class=\"state disabled\">disabled</span>"),
        "{page}"
    );
    assert!(page.contains("value=\"enable\""));
    let enabled = browser
        .post_form("/console/servers/fx", &[("action", "enable")])
        .await;
    assert_eq!(enabled.status(), 303);
    let restarted = browser
        .post_form("/console/servers/fx", &[("action", "restart")])
        .await;
    assert_eq!(restarted.status(), 303, "{:?}", restarted.text().await);
    let page = browser.page("/console/servers").await;
    let row = row_of(&page, "data-server=\"fx\"");
    assert!(row.contains("state up"), "{row}");
    let tested = browser
        .post_form("/console/servers/fx", &[("action", "test")])
        .await;
    assert_eq!(tested.status(), 200);
    let tested = tested.text().await.expect("body");
    assert!(tested.contains("Verdict: <strong>ok</strong>"), "{tested}");
    assert!(
        tested.contains("fx__echo") || tested.contains("echo"),
        "{tested}"
    );
    let unknown = browser
        .post_form("/console/servers/nope", &[("action", "restart")])
        .await;
    assert_eq!(unknown.status(), 409);
    // Who changed it is on record.
    gateway.flush();
    let audit = browser.page("/console/audit?outcome=config_applied").await;
    assert!(audit.contains("switchboard.config/restart"), "{audit}");
    assert!(audit.contains("alice (console)"), "{audit}");

    // A hand edit that breaks the file: the page shows where, and the server keeps running.
    std::fs::write(&gateway.config, "[servers.fx]\ncommand = 42\n").expect("write");
    let _ = gateway.host.reload_file(switchboard::Surface::Reload).await;
    let page = browser.page("/console/servers").await;
    assert!(page.contains("The config file is invalid"), "{page}");
    assert!(page.contains("switchboard.toml:2"), "{page}");
    assert!(row_of(&page, "data-server=\"fx\"").contains("state up"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_pages_through_the_ledger_with_its_older_link() {
    let gateway = Gateway::start().await;
    for i in 0..60 {
        let (error, _) = gateway
            .call("npc", "fx__echo", json!({"message": format!("m{i}")}))
            .await;
        assert!(!error);
    }
    gateway.flush();
    let browser = gateway.signed_in().await;
    let first = browser.page("/console/audit?agent=npc").await;
    assert_eq!(first.matches("<tr class=\"outcome-").count(), 50);
    // "Verify chain" live: the walk's events end with the verdict.
    let live = browser.page("/console/audit/verify/live").await;
    assert!(
        live.contains("event: done") && live.contains("The chain holds: 60 rows verified"),
        "{live}"
    );
    let older = first
        .split("rel=\"next\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("an Older link")
        .replace("&amp;", "&");
    assert!(older.contains("agent=npc"), "the filters go along: {older}");
    let second = browser.page(&older).await;
    assert_eq!(second.matches("<tr class=\"outcome-").count(), 10);
    assert!(!second.contains("rel=\"next\""), "the last page");
    assert!(
        second.contains(">1</a></td>"),
        "down to the first row: {second}"
    );
}

/// A large export is streamed, not built whole: the body has no length up front and
/// arrives in pieces (the rows are read a page at a time), and it holds every filtered row
/// once, oldest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_export_is_streamed_with_every_row_in_order() {
    const ROWS: i64 = 3_500;
    let gateway = Gateway::start().await;
    for i in 0..ROWS {
        let agent = if i % 7 == 0 { "other" } else { "npc" };
        let entry = json!({
            "call_id": format!("call-{i}"), "started_ms": 1_700_000_000_000i64 + i,
            "agent": agent, "session": null, "tier": null, "exposed": "fx__echo",
            "server": "fx", "tool": "echo", "args_digest": null, "args_redacted": null,
            "outcome": "ok", "error": null, "duration_us": 10, "cost": 0.0,
            "approval": null, "result_bytes": 2, "cached": false,
        });
        gateway
            .ledger
            .record_entry(serde_json::from_value(entry).expect("an entry"));
    }
    gateway.flush();
    let browser = gateway.signed_in().await;
    let mut export = browser
        .get("/console/audit/export.jsonl?agent=npc")
        .send()
        .await
        .expect("export");
    assert_eq!(export.status(), 200);
    assert!(
        export.headers().get("content-length").is_none(),
        "a body built whole before it is sent: {:?}",
        export.headers()
    );
    let mut pieces = 0;
    let mut body = Vec::new();
    while let Some(piece) = export.chunk().await.expect("a piece of the body") {
        pieces += 1;
        body.extend_from_slice(&piece);
    }
    assert!(pieces > 1, "the body came in {pieces} piece");
    let calls: Vec<String> = String::from_utf8(body)
        .expect("UTF-8")
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("JSON line");
            assert_eq!(row["entry"]["agent"], "npc", "{row}");
            row["entry"]["call_id"]
                .as_str()
                .expect("a call id")
                .to_owned()
        })
        .collect();
    let expected: Vec<String> = (0..ROWS)
        .filter(|i| i % 7 != 0)
        .map(|i| format!("call-{i}"))
        .collect();
    assert_eq!(calls.len(), expected.len());
    assert!(calls == expected, "every npc row once, oldest first");
}

/// Makes a token for `agent` on the agents page: the token, as the page shows it once.
async fn made_token(browser: &Browser, agent: &str) -> String {
    let made = browser
        .post_form(&format!("/console/agents/{agent}/tokens"), &[])
        .await;
    assert_eq!(made.status(), 200);
    let made = made.text().await.expect("body");
    made.split("<pre class=\"token\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("the token, shown once: {made}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_made_and_revoked_from_the_agents_page() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    let token = made_token(&browser, "npc").await;
    assert!(token.starts_with("sbt_"), "{token}");
    let stored = std::fs::read_to_string(gateway.dir.path().join("tokens.json")).expect("file");
    assert!(!stored.contains(&token), "only its hash is kept");
    let file: serde_json::Value = serde_json::from_str(&stored).expect("json");
    let hash = file["tokens"][0]["hash"].as_str().expect("hash").to_owned();
    assert!(switchboard::tokens::matches(&hash, &token));
    let id = switchboard::tokens::token_id(&hash);
    let page = browser.page("/console/agents").await;
    assert!(page.contains(&format!("data-token=\"{id}\"")), "{page}");
    assert!(!page.contains(&token), "the list shows ids, never tokens");
    let unknown = browser.post_form("/console/agents/ghost/tokens", &[]).await;
    assert_eq!(unknown.status(), 404);
    let revoked = browser
        .post_form(&format!("/console/tokens/{id}/revoke"), &[])
        .await;
    assert_eq!(revoked.status(), 303);
    let file = switchboard::tokens::TokenFile::load(&gateway.dir.path().join("tokens.json"))
        .expect("file");
    assert!(file.tokens.is_empty(), "{file:?}");
    let again = browser
        .post_form(&format!("/console/tokens/{id}/revoke"), &[])
        .await;
    assert_eq!(again.status(), 404);
}

/// A task of session `session` on `host`: `fx__sleep` for 30 s.
async fn sleeping_task(
    host: &switchboard::Host,
    session: &str,
) -> switchboard_core::task::TaskView {
    let ctx = switchboard_core::CallContext {
        session: Some(session.into()),
        ..Default::default()
    };
    let call = switchboard_core::ToolCall {
        name: "fx__sleep".into(),
        arguments: args(json!({"ms": 30_000}))
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    host.start_task(ctx, call, Some(std::time::Duration::from_secs(60)))
        .await
        .expect("a task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_listed_and_cancelled_and_the_operations_page_renders() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    let started = sleeping_task(&gateway.host, "s-console").await;
    let page = browser.page("/console/tasks").await;
    let row = row_of(&page, &format!("data-task=\"{}\"", started.id));
    assert!(
        row.contains("fx__sleep") && row.contains("s-console"),
        "{row}"
    );
    assert!(
        row.contains("/cancel"),
        "an open task can be cancelled: {row}"
    );
    let cancelled = browser
        .post_form(&format!("/console/tasks/{}/cancel", started.id), &[])
        .await;
    assert_eq!(cancelled.status(), 303);
    let tasks = gateway.host.operator_tasks();
    let (_, _, view) = tasks
        .iter()
        .find(|(_, _, view)| view.id == started.id)
        .expect("still held");
    assert_eq!(view.status.as_str(), "cancelled");
    assert!(
        view.status_message
            .as_deref()
            .is_some_and(|message| message.contains("operator")),
        "{view:?}"
    );
    let again = browser
        .post_form(&format!("/console/tasks/{}/cancel", started.id), &[])
        .await;
    assert_eq!(again.status(), 404, "a cancelled task stays cancelled");
    let operations = browser.page("/console/operations").await;
    assert!(operations.contains("No operations yet."), "{operations}");
    assert!(
        operations.contains("href=\"/console/tasks\""),
        "in the navigation"
    );
}

/// An event bus and the tasks of a replica on `redis`, once the bus is subscribed.
async fn shared_tasks_on(
    redis: &switchboard_testkit::redis::Redis,
) -> (
    switchboard::shared::EventBus,
    Arc<switchboard::shared::SharedTasks>,
) {
    use switchboard::shared::{EventBus, SharedTasks};
    let bus = EventBus::connect(&redis.url(), "console").expect("bus");
    until(std::time::Duration::from_secs(10), || {
        (bus.epoch() != 0).then_some(())
    })
    .await;
    let tasks = SharedTasks::connect(
        &redis.url(),
        "console",
        switchboard_core::limits::WhenUnreachable::FailClosed,
        bus.clone(),
    )
    .expect("tasks");
    (bus, Arc::new(tasks))
}

/// With `[shared] redis` the tasks page lists the tasks of every replica, with the replica
/// that runs each, and an operator's cancel through this replica's console reaches the
/// replica that runs the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_the_tasks_page_lists_every_replicas_tasks_and_cancels_them_where_they_run() {
    let redis = switchboard_testkit::redis::Redis::start();
    let (bus, tasks) = shared_tasks_on(&redis).await;
    let gateway = Gateway::start_with_options(switchboard::HostOptions {
        events: Some(bus),
        shared_tasks: Some(tasks),
        ..switchboard::HostOptions::default()
    })
    .await;
    // Replica B: another Host of the same configuration on the same Redis.
    let (bus_b, tasks_b) = shared_tasks_on(&redis).await;
    let replica_b = {
        use switchboard_mcp::front::http::AnswerRoutes;
        bus_b.replica().to_owned()
    };
    let config = switchboard_core::config::Config::load(
        &gateway.config,
        &switchboard_core::config::GatewayEnvironment::new(),
    )
    .expect("config");
    let b = switchboard::Host::from_config_with(
        &config,
        switchboard::HostOptions {
            events: Some(bus_b),
            shared_tasks: Some(tasks_b),
            ..switchboard::HostOptions::default()
        },
    )
    .expect("replica b");
    b.ready().await;
    let started = sleeping_task(&b, "s-on-b").await;

    let browser = gateway.signed_in().await;
    let page = browser.page("/console/tasks").await;
    let row = row_of(&page, &format!("data-task=\"{}\"", started.id));
    assert!(
        row.contains("fx__sleep") && row.contains("s-on-b") && row.contains(&replica_b),
        "b's task, with b named: {row}"
    );
    assert!(row.contains("/cancel"), "it can be cancelled here: {row}");
    let cancelled = browser
        .post_form(&format!("/console/tasks/{}/cancel", started.id), &[])
        .await;
    assert_eq!(cancelled.status(), 303);
    // Cancelled on B, where it runs, saying by whom.
    let (_, _, view) = b
        .operator_tasks()
        .into_iter()
        .find(|(_, _, view)| view.id == started.id)
        .expect("held by b");
    assert_eq!(view.status.as_str(), "cancelled");
    assert_eq!(
        view.status_message.as_deref(),
        Some("cancelled by an operator (alice (console))"),
        "{view:?}"
    );
    let page = browser.page("/console/tasks").await;
    let row = row_of(&page, &format!("data-task=\"{}\"", started.id));
    assert!(
        row.contains("cancelled") && !row.contains("/cancel"),
        "{row}"
    );
    let again = browser
        .post_form(&format!("/console/tasks/{}/cancel", started.id), &[])
        .await;
    assert_eq!(again.status(), 404, "a cancelled task stays cancelled");
    // Redis away: the page still renders, with this replica's tasks and why not the others'.
    let mut redis = redis;
    redis.stop();
    let page = browser.page("/console/tasks").await;
    assert!(page.contains("tasks cannot be read now (redis"), "{page}");
    b.shutdown().await;
}

/// With `[storage] url` the agents page makes and revokes the tokens in PostgreSQL: a
/// replica following the table accepts the made token, and refuses it within a second of
/// the console's revocation; the row records who revoked it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_and_revoked_in_the_console_reach_every_replica_on_postgres() {
    use switchboard::tokens::{LiveTokens, SharedTokens, shared::STALE_AFTER};
    use switchboard_mcp::front::http::Authenticator;
    let gateway = Gateway::start_on_postgres().await;
    let url = gateway.postgres.as_ref().expect("postgres").url();
    let replica = LiveTokens::shared(
        Vec::new(),
        SharedTokens::new(&url).expect("store"),
        ["npc".to_owned()].into(),
    )
    .await
    .expect("a replica's tokens");
    let browser = gateway.signed_in().await;
    let token = made_token(&browser, "npc").await;
    until(std::time::Duration::from_secs(1), || {
        replica.agent_for(&token)
    })
    .await;
    assert!(
        !gateway.dir.path().join("tokens.json").exists(),
        "the token file is not used"
    );
    let page = browser.page("/console/agents").await;
    let id = page
        .split("data-token=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the token listed")
        .to_owned();
    assert!(page.contains("postgres"), "kept in PostgreSQL: {page}");
    let revoked = browser
        .post_form(&format!("/console/tokens/{id}/revoke"), &[])
        .await;
    assert_eq!(revoked.status(), 303);
    let started = std::time::Instant::now();
    until(STALE_AFTER, || {
        replica.agent_for(&token).is_none().then_some(())
    })
    .await;
    eprintln!(
        "revoked in the console -> refused in {:?}",
        started.elapsed()
    );
    let by = gateway
        .postgres
        .as_ref()
        .expect("postgres")
        .psql(
            switchboard_testkit::postgres::DATABASE,
            "SELECT revoked_by FROM agent_tokens",
        )
        .expect("the row");
    assert_eq!(by, "alice");
    let again = browser
        .post_form(&format!("/console/tokens/{id}/revoke"), &[])
        .await;
    assert_eq!(again.status(), 404);
}

/// With `[storage] url` the audit page, a row, the verification (plain and live), the
/// export and the running figures read the ledger on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_pages_read_a_ledger_on_postgres() {
    let gateway = Gateway::start_on_postgres().await;
    for message in ["one", "two", "three"] {
        let (failed, text) = gateway
            .call("npc", "fx__echo", json!({"message": message}))
            .await;
        assert!(!failed, "{text}");
    }
    gateway.flush();
    let browser = gateway.signed_in().await;
    let audit = browser.page("/console/audit").await;
    assert!(audit.matches("fx__echo").count() >= 3, "{audit}");
    let row = browser.page("/console/audit/2").await;
    assert!(row.contains("Ledger row 2"), "{row}");
    assert!(row.contains("previous row"), "{row}");
    let verify = browser.post_form("/console/audit/verify", &[]).await;
    assert_eq!(verify.status(), 200);
    let verified = verify.text().await.expect("body");
    assert!(
        verified.contains("The chain holds: 3 rows verified"),
        "{verified}"
    );
    let live = browser.page("/console/audit/verify/live").await;
    assert!(live.contains("The chain holds: 3 rows"), "{live}");
    let export = browser.page("/console/audit/export.jsonl?agent=npc").await;
    assert_eq!(export.lines().count(), 3, "{export}");
    assert!(
        export.lines().all(|line| line.contains("\"prev_hash\"")),
        "{export}"
    );
    // The running figures come from PostgreSQL too: npc's three calls.
    let agents = browser.page("/console/agents").await;
    let npc = row_of(&agents, "data-agent=\"npc\"");
    assert!(npc.contains("<td class=\"num\">3</td>"), "{npc}");
}
