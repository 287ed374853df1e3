//! The console's security model, tested over real HTTP: sign-in (the form and the one-time
//! link), the session cookie's flags, CSRF on every change, Host and Origin checks (DNS
//! rebinding, cross-site forms), the security headers; and the approvals page's purpose — an
//! approval made in the console completes the waiting call at once, live over SSE.

mod support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_in_sets_a_strict_http_only_cookie_and_wrong_tokens_are_refused() {
    let gateway = Gateway::start().await;
    let browser = gateway.client();
    let signed_out = browser.get("/console/approvals").send().await.expect("GET");
    assert_eq!(signed_out.status(), 303);
    assert_eq!(signed_out.headers()["location"], "/console/sign-in");
    let form = browser.page("/console/sign-in").await;
    assert!(form.contains("name=\"token\""));

    let wrong = browser
        .post_form_unchecked("/console/sign-in", &[("token", "not the token")])
        .await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());

    let answer = browser
        .post_form_unchecked(
            "/console/sign-in",
            &[("token", ADMIN_TOKEN), ("operator", "alice")],
        )
        .await;
    assert_eq!(answer.status(), 303);
    let cookie = answer.headers()["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let (pair, flags) = cookie.split_once(';').expect("flags");
    // Named for the port, so two gateways on one machine keep their sessions apart.
    let port = gateway.url.rsplit(':').next().expect("a port").to_owned();
    let name = format!("switchboard_console_{port}");
    let id = pair
        .strip_prefix(&format!("{name}="))
        .expect("the cookie's name");
    assert_eq!(id.len(), 64, "256 random bits in hex: {id}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let flags: Vec<&str> = flags.split(';').map(str::trim).collect();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(flags.contains(&flag), "{flag} in {cookie}");
    }
    assert!(
        !cookie.contains(ADMIN_TOKEN),
        "the token is never in the cookie"
    );

    // A forged or expired session is no session.
    let mut forged = gateway.client();
    forged.cookie = Some(format!("{name}={}", "0".repeat(64)));
    assert_eq!(forged.status_of("/console/tools").await, 303);

    // Signing out ends the session on the server, not just in the browser.
    let mut signed_in = gateway.signed_in().await;
    let cookie = signed_in.cookie.clone();
    let out = signed_in.post_form("/console/sign-out", &[]).await;
    assert_eq!(out.status(), 303);
    signed_in.cookie = cookie;
    assert_eq!(signed_in.status_of("/console/tools").await, 303);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_time_code_minted_with_the_admin_token_signs_in_once() {
    let gateway = Gateway::start().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let refused = http
        .post(format!("{}/console/codes", gateway.url))
        .bearer_auth("wrong")
        .send()
        .await
        .expect("POST");
    assert_eq!(refused.status(), 401);
    let minted: serde_json::Value = http
        .post(format!("{}/console/codes", gateway.url))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"operator": "carol"}))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON");
    let path = minted["path"].as_str().expect("path").to_owned();
    let mut browser = gateway.client();
    let first = browser.get(&path).send().await.expect("GET");
    assert_eq!(first.status(), 303);
    assert_eq!(first.headers()["location"], "/console/approvals");
    browser.take_cookie(&first);
    let page = browser.page("/console/approvals").await;
    assert!(
        page.contains("signed in as <strong>carol</strong>"),
        "{page}"
    );
    let again = gateway.client().get(&path).send().await.expect("GET");
    assert_eq!(again.status(), 401, "single use");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_without_the_sessions_csrf_token_is_refused() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    for fields in [
        vec![("action", "disable")],
        vec![("action", "disable"), ("_csrf", "0000")],
    ] {
        let refused = browser
            .post_form_unchecked("/console/servers/fx", &fields)
            .await;
        assert_eq!(refused.status(), 403, "{fields:?}");
        assert!(refused.text().await.expect("body").contains("CSRF"));
    }
    // Another session's token does not do either.
    let other = gateway.signed_in().await;
    let csrf = other.csrf.clone().expect("csrf");
    let refused = browser
        .post_form_unchecked(
            "/console/servers/fx",
            &[("action", "disable"), ("_csrf", &csrf)],
        )
        .await;
    assert_eq!(refused.status(), 403);
    let servers = browser.page("/console/servers").await;
    assert!(servers.contains("state up"), "nothing changed: {servers}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_hosts_and_origins_are_refused_and_every_answer_carries_the_headers() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    let page = browser.get("/console/tools").send().await.expect("GET");
    assert_eq!(page.status(), 200);
    let headers = page.headers();
    assert_eq!(
        headers["content-security-policy"],
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["x-frame-options"], "DENY");
    // Not no-referrer: under it a browser's plain form POST says `Origin: null`.
    assert_eq!(headers["referrer-policy"], "same-origin");
    let html = page.text().await.expect("body");
    assert!(
        !html.contains("<script>") && !html.contains(" style="),
        "no inline script or style"
    );

    // DNS rebinding: the attacker's name pointing at 127.0.0.1.
    let port = gateway.addr.port();
    let rebound = browser
        .get_as_host("/console/tools", &format!("attacker.example:{port}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(rebound.status(), 403);
    assert!(rebound.headers().contains_key("content-security-policy"));
    let localhost = browser
        .get_as_host("/console/tools", &format!("localhost:{port}"))
        .send()
        .await
        .expect("GET");
    assert_eq!(localhost.status(), 200, "loopback names are fine");

    // A cross-site form, even carrying a stolen CSRF token, and a POST with no Origin.
    let csrf = browser.csrf.clone().expect("csrf");
    let cookie = browser.cookie.clone().expect("cookie");
    for origin in [Some("http://attacker.example"), Some("null"), None] {
        let mut request = browser
            .http
            .post(format!("{}/console/servers/fx", gateway.url))
            .header("cookie", &cookie)
            .form(&[("action", "disable"), ("_csrf", csrf.as_str())]);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let refused = request.send().await.expect("POST");
        assert_eq!(refused.status(), 403, "{origin:?}");
    }
    let sign_in = browser
        .http
        .post(format!("{}/console/sign-in", gateway.url))
        .header("origin", "http://attacker.example")
        .form(&[("token", ADMIN_TOKEN)])
        .send()
        .await
        .expect("POST");
    assert_eq!(sign_in.status(), 403, "no sign-in from another site either");
    assert!(browser.page("/console/servers").await.contains("state up"));

    // A costly read asked by a page of another site or port (an `<img>` of the export)
    // is refused; the same page reached by a link is not.
    for site in ["cross-site", "same-site"] {
        let export = browser
            .get("/console/audit/export.jsonl")
            .header("sec-fetch-site", site)
            .send()
            .await
            .expect("GET");
        assert_eq!(export.status(), 403, "{site}");
    }
    let linked = browser
        .get("/console/tools")
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("GET");
    assert_eq!(linked.status(), 200);
    let own = browser
        .get("/console/audit/export.jsonl")
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .expect("GET");
    assert_eq!(own.status(), 200);
}

/// The page's script learns that its session ended (401), instead of following a redirect
/// to the sign-in page and taking it for a success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_whose_session_ended_is_told_so() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    let answer = browser
        .http
        .post(format!("{}/console/servers/fx", gateway.url))
        .header("origin", &gateway.url)
        .header("cookie", "switchboard_console=0000")
        .header("x-csrf-token", "0000")
        .form(&[("action", "disable")])
        .send()
        .await
        .expect("POST");
    assert_eq!(answer.status(), 401);
    assert!(answer.text().await.expect("body").contains("session ended"));
    assert!(browser.page("/console/servers").await.contains("state up"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_made_in_the_console_completes_the_waiting_call_at_once() {
    let gateway = Gateway::start().await;
    let browser = gateway.signed_in().await;
    // The live page's event stream, as the page's script follows it.
    let mut events = browser
        .get("/console/approvals/live")
        .send()
        .await
        .expect("SSE")
        .bytes_stream();
    let mut seen = String::new();
    let mut next_event = async |seen: &mut String| {
        loop {
            if let Some(end) = seen.find("\n\n") {
                let event: String = seen.drain(..end + 2).collect();
                return event;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(15), events.next())
                .await
                .expect("an event in time")
                .expect("the stream goes on")
                .expect("bytes");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    let first = next_event(&mut seen).await;
    assert!(
        first.contains("event: queue") && first.contains("No calls are waiting"),
        "{first}"
    );

    let call = |arguments: serde_json::Value| {
        let host = gateway.host.clone();
        tokio::spawn(async move {
            host.call(
                &switchboard_core::CallContext::default().with_agent("qa"),
                "fx__add",
                arguments.as_object().cloned().unwrap_or_default(),
            )
            .await
        })
    };
    let waiting = call(json!({"a": 2, "b": 3}));
    let shown = loop {
        let event = next_event(&mut seen).await;
        if event.contains("class=\"approval\"") {
            break event;
        }
    };
    assert!(
        shown.contains("fx__add") && shown.contains(" for qa"),
        "{shown}"
    );
    assert!(
        shown.contains("the tool does not say it is safe"),
        "the rule that asked: {shown}"
    );
    assert!(shown.contains("data-deadline="), "a countdown: {shown}");
    let id = shown
        .split("data-id=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the call's id")
        .to_owned();
    let answered = browser.answer(&id, &[("action", "approve")]).await;
    assert_eq!(answered.status(), 303);
    let outcome = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the call proceeds at once")
        .expect("join")
        .expect("outcome");
    assert!(!outcome.is_error);
    assert_eq!(outcome.text_content(), "5");
    let cleared = next_event(&mut seen).await;
    assert!(cleared.contains("No calls are waiting"), "{cleared}");

    // Deny with a reason: the model is told it.
    let waiting = call(json!({"a": 1, "b": 1}));
    let id = gateway.first_waiting().await;
    let denied = browser
        .answer(&id, &[("action", "deny"), ("reason", "not on a Friday")])
        .await;
    assert_eq!(denied.status(), 303);
    let outcome = waiting.await.expect("join").expect("outcome");
    assert!(outcome.is_error && outcome.text_content().contains("not on a Friday"));

    // Approve for a while: this call and the next of qa's add go through.
    let waiting = call(json!({"a": 3, "b": 4}));
    let id = gateway.first_waiting().await;
    let bad = browser
        .answer(&id, &[("action", "grant"), ("minutes", "0")])
        .await;
    assert_eq!(bad.status(), 400);
    let granted = browser
        .answer(&id, &[("action", "grant"), ("minutes", "5")])
        .await;
    assert_eq!(granted.status(), 303);
    assert_eq!(
        waiting
            .await
            .expect("join")
            .expect("outcome")
            .text_content(),
        "7"
    );
    let next = tokio::time::timeout(Duration::from_secs(5), call(json!({"a": 4, "b": 4})))
        .await
        .expect("no wait under the grant")
        .expect("join")
        .expect("outcome");
    assert_eq!(next.text_content(), "8");
    let page = browser.page("/console/approvals").await;
    assert!(
        page.contains("Grants in force") && page.contains("alice (console)"),
        "{page}"
    );
    let ended = browser
        .post_form(
            "/console/grants/revoke",
            &[("agent", "qa"), ("tool", "fx__add")],
        )
        .await;
    assert_eq!(ended.status(), 303);
    let again = browser.answer(&id, &[("action", "approve")]).await;
    assert_eq!(again.status(), 404, "answered already");

    // The decisions and who made them are in the ledger.
    gateway.flush();
    let audit = browser.page("/console/audit?tool=fx__add").await;
    assert!(
        audit.contains("approved by alice (console) via operator"),
        "{audit}"
    );
    assert!(
        audit.contains("denied by alice (console) via operator: not on a Friday"),
        "{audit}"
    );
    assert!(audit.contains("granted for 5 min"), "{audit}");
    assert!(audit.contains("operator grant (5 min)"), "{audit}");
}
