//! The console in a real browser (Debian's headless Chromium through chromedriver): a call
//! that waits for approval appears on the Approvals page without a reload, clicking Approve
//! completes the call at the client, and the Tools page shows measured latencies after calls.
//! Saves a screenshot of each page under target/console-screenshots/ — or, with
//! `SWITCHBOARD_SCREENSHOTS=docs/console`, where the docs show them from (how they are
//! refreshed), so a test run leaves the tree as it was.
//!
//! Needs `chromium` and `chromium-driver` (`scripts/install-test-deps.sh`); without them it
//! fails saying so.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use support::webdriver::Browser;
use support::*;

fn screenshots() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    match std::env::var_os("SWITCHBOARD_SCREENSHOTS").filter(|dir| !dir.is_empty()) {
        Some(dir) => root.join(dir),
        None => root.join("target/console-screenshots"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_call_appears_live_and_approving_it_in_the_browser_completes_it() {
    let gateway = Gateway::start().await;
    for i in 0..12 {
        let (error, text) = gateway
            .call("qa", "fx__echo", json!({"message": format!("hello {i}")}))
            .await;
        assert!(!error, "{text}");
    }
    gateway
        .call("npc", "fx__echo", json!({"message": "from the npc"}))
        .await;
    gateway
        .call("qa", "fx__fail", json!({"message": "it broke"}))
        .await;

    let browser = Browser::start().await;
    let code = gateway.console.mint_code("alice");
    browser
        .open(&format!("{}/console/sign-in/{code}", gateway.url))
        .await;
    browser
        .wait_for("#none-waiting", Duration::from_secs(10))
        .await;
    assert!(browser.url().await.ends_with("/console/approvals"));

    // A call waits for approval; the open page shows it without being reloaded.
    let waiting = {
        let host = gateway.host.clone();
        tokio::spawn(async move {
            host.call(
                &switchboard_core::CallContext::default().with_agent("qa"),
                "fx__add",
                json!({"a": 20, "b": 22})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )
            .await
        })
    };
    let card = browser
        .wait_for("article.approval", Duration::from_secs(10))
        .await;
    let shown = browser.text(&card).await;
    assert!(
        shown.contains("fx__add") && shown.contains("for qa"),
        "{shown}"
    );
    // The countdown ticks (the page's script runs under the CSP).
    let countdown = "return document.querySelector('article.approval .countdown').textContent;";
    let before = browser.execute(countdown).await;
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let after = browser.execute(countdown).await;
    assert_ne!(before, after, "the countdown ticks");
    browser
        .screenshot(&screenshots().join("approvals.png"))
        .await;

    let approve = browser
        .find("article.approval form.approve button")
        .await
        .expect("the Approve button");
    browser.click(&approve).await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the call completes once approved")
        .expect("join")
        .expect("outcome");
    assert!(!outcome.is_error);
    assert_eq!(outcome.text_content(), "42");
    browser
        .wait_for("#none-waiting", Duration::from_secs(10))
        .await;
    gateway.flush();

    // The other pages, with what the calls left.
    browser
        .open(&format!("{}/console/tools", gateway.url))
        .await;
    let echo = browser
        .wait_for("tr[data-tool=\"fx__echo\"]", Duration::from_secs(5))
        .await;
    let row = browser.text(&echo).await;
    assert!(row.contains(" ms"), "measured latencies: {row}");
    assert!(row.contains("13"), "13 samples: {row}");
    browser.screenshot(&screenshots().join("tools.png")).await;
    for (path, marker, file) in [
        ("/console/tools/fx__echo", "svg.chart", "tool.png"),
        ("/console/servers", "tr[data-server=\"fx\"]", "servers.png"),
        ("/console/audit", "table.audit", "audit.png"),
        ("/console/agents", "tr[data-agent=\"qa\"]", "agents.png"),
        ("/console/operations", "p.hint", "operations.png"),
        ("/console/tasks", "p.hint", "tasks.png"),
    ] {
        browser.open(&format!("{}{path}", gateway.url)).await;
        browser.wait_for(marker, Duration::from_secs(5)).await;
        browser.screenshot(&screenshots().join(file)).await;
    }
    browser
        .open(&format!("{}/console/audit", gateway.url))
        .await;
    let audit = browser.source().await;
    assert!(
        audit.contains("approved by alice (console) via operator"),
        "{audit}"
    );

    // Sign out, a plain form (no script): the browser's own POST is taken, and the console
    // asks to sign in again.
    let sign_out = browser
        .find("form.who button")
        .await
        .expect("the Sign out button");
    browser.click(&sign_out).await;
    browser
        .wait_for("input[name=\"token\"]", Duration::from_secs(10))
        .await;
    browser
        .open(&format!("{}/console/servers", gateway.url))
        .await;
    browser
        .wait_for("input[name=\"token\"]", Duration::from_secs(10))
        .await;
    browser.quit().await;
}
