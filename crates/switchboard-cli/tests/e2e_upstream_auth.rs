//! The gateway's own credentials to an HTTP server (`[servers.ID.auth]`), end to end: the
//! test's authorization server issues client-credentials tokens, a recording MCP server
//! answers with the `Authorization` header it got, and a real `switchboard serve --http` sits
//! between a client and it. The server gets the gateway's token — audienced to the resource
//! the config names, the client's own token never — the same token while it lives, a new
//! one once it is about to expire; a wrong secret leaves the server down with the token
//! endpoint's refusal in `status`. A server that takes the caller's identity (token
//! exchange, RFC 8693) gets each OAuth caller's token exchanged for one of its own. A token
//! endpoint behind the server's private CA is reached with the server's `tls.ca` when
//! `auth.server_tls` asks for it.

mod auth_server;
mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use auth_server::*;
use serde_json::{Value, json};
use support::*;

/// The claims of a JWT, unchecked (the test only reads what the gateway was given).
fn claims(token: &str) -> Value {
    unverified_claims(token)
}

/// The bearer token the recording server saw on a `whoami` call through the gateway.
async fn token_seen(url: &str) -> String {
    token_seen_by(url, "client-own-token").await
}

/// The bearer token the recording server saw on a `whoami` call by the holder of `bearer`.
async fn token_seen_by(url: &str, bearer: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "rec__whoami", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, answer, _) = post(url, Some(bearer), body).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    text.strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("the server got no bearer token: {answer}"))
        .to_owned()
}

#[tokio::test]
async fn an_http_server_gets_the_gateways_client_credentials_token_renewed_before_it_expires() {
    let server = AuthServer::start().await;
    let (upstream, seen) = recording_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.rec]\nurl = {upstream}\nera = \"legacy\"\n\
             auth = {{ grant = \"client_credentials\", token_endpoint = {endpoint}, \
             client_id = \"sdk-client\", client_secret = \"s3cret\", scope = \"short-lived\", \
             resource = {upstream} }}\n",
            upstream = quoted(&upstream),
            endpoint = quoted(&format!("{}/token", server.issuer)),
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);

    let first = token_seen(&gateway.url).await;
    let granted = claims(&first);
    assert_eq!(granted["client_id"], "sdk-client", "{granted}");
    assert_eq!(
        granted["aud"],
        upstream.as_str(),
        "audienced to the resource"
    );
    assert_eq!(granted["scope"], "short-lived", "{granted}");
    // While it lives, the same token: one grant for the connection and this call.
    let again = token_seen(&gateway.url).await;
    assert_eq!(again, first);
    assert_eq!(server.issued.load(Ordering::SeqCst), 1);
    // Past most of its two seconds, a new one.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let renewed = token_seen(&gateway.url).await;
    assert_ne!(
        renewed, first,
        "a new token once the old one is about to expire"
    );
    assert_eq!(server.issued.load(Ordering::SeqCst), 2);
    // The client's own token never reached the server.
    let seen = seen.lock().expect("headers").clone();
    assert!(
        seen.iter()
            .all(|header| !header.contains("client-own-token")),
        "{seen:?}"
    );
}

// The test waits for `status` on its own thread; the authorization server needs another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_grant_leaves_the_server_down_saying_why() {
    let server = AuthServer::start().await;
    let (upstream, seen) = recording_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = dir.path().join("admin.json");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.rec]\nurl = {}\nera = \"legacy\"\n\
             auth = {{ grant = \"client_credentials\", token_endpoint = {}, \
             client_id = \"sdk-client\", client_secret = \"wrong\" }}\n",
            quoted(&upstream),
            quoted(&format!("{}/token", server.issuer)),
        ),
    );
    let admin_arg = admin.display().to_string();
    let _gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let mut last = String::new();
    let reported = wait_for(Duration::from_secs(10), || {
        let status = run_switchboard(&config, &["status", "--json", "--admin-file", &admin_arg]);
        last = String::from_utf8_lossy(&status.stdout).into_owned();
        last.contains("refused the gateway's client credentials")
            .then(|| last.clone())
    });
    let text =
        reported.unwrap_or_else(|| panic!("status names the token endpoint's refusal: {last}"));
    assert!(text.contains("invalid_client"), "{text}");
    assert!(
        !text.contains("wrong"),
        "the secret stays out of status: {text}"
    );
    assert!(
        seen.lock().expect("headers").is_empty(),
        "nothing reached the server without a token"
    );
}

/// An MCP server over HTTP (legacy era) that refuses the first bearer token it is sent, as
/// a server does with a token revoked before it expired, and answers `whoami` with the
/// token of every later request.
async fn revoking_upstream() -> String {
    use axum::response::IntoResponse;
    let revoked = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let handler = move |headers: axum::http::HeaderMap, axum::Json(message): axum::Json<Value>| {
        let revoked = revoked.clone();
        async move {
            let token = authorization_of(&headers);
            let refused = {
                let mut first = revoked.lock().expect("revoked");
                *first.get_or_insert_with(|| token.clone()) == token
            };
            if refused {
                return axum::http::StatusCode::UNAUTHORIZED.into_response();
            }
            whoami_answer(&headers, &message)
        }
    };
    serve_mcp(handler).await
}

/// A server that refuses the gateway's token (revoked early) gets a new one at once: the
/// request is sent again with it, and the client never sees the refusal.
#[tokio::test]
async fn a_token_the_server_refuses_is_renewed_and_the_request_sent_again() {
    let server = AuthServer::start().await;
    let upstream = revoking_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[servers.rec]\nurl = {}\nera = \"legacy\"\n\
             auth = {{ grant = \"client_credentials\", token_endpoint = {}, \
             client_id = \"sdk-client\", client_secret = \"s3cret\" }}\n",
            quoted(&upstream),
            quoted(&format!("{}/token", server.issuer)),
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let token = token_seen(&gateway.url).await;
    assert_eq!(claims(&token)["client_id"], "sdk-client");
    assert_eq!(
        server.issued.load(Ordering::SeqCst),
        2,
        "the refused token and its replacement"
    );
}

/// `grant = "token_exchange"`: each OAuth caller's token is exchanged for one audienced to
/// the server, carrying the caller's subject with the gateway as actor, kept while it lives;
/// the gateway's own requests carry its client-credentials token; a caller without an OAuth
/// token is refused saying why; no caller's own token reaches the server.
// `switchboard call` runs on the test's thread; the authorization server needs another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_callers_token_is_exchanged_for_one_of_the_servers() {
    let server = AuthServer::start().await;
    let (upstream, seen) = recording_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[auth]\nmode = \"oauth\"\nissuer = {issuer}\n\n\
             [servers.rec]\nurl = {upstream}\nera = \"legacy\"\n\
             auth = {{ grant = \"token_exchange\", token_endpoint = {endpoint}, \
             client_id = \"sdk-client\", client_secret = \"s3cret\", resource = {upstream} }}\n",
            issuer = quoted(&server.issuer),
            upstream = quoted(&upstream),
            endpoint = quoted(&format!("{}/token", server.issuer)),
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let caller = |sub: &str| {
        server.mint(
            &json!({"alg": "ES256", "kid": "es", "typ": "at+jwt"}),
            &json!({"iss": server.issuer, "aud": gateway.url, "sub": sub,
                "client_id": "planner", "exp": now() + 300}),
        )
    };
    let (alice, bob) = (caller("alice"), caller("bob"));

    let for_alice = token_seen_by(&gateway.url, &alice).await;
    assert_ne!(
        for_alice, alice,
        "the caller's own token is never passed on"
    );
    let granted = claims(&for_alice);
    assert_eq!(
        (&granted["sub"], &granted["aud"], &granted["act"]["sub"]),
        (&json!("alice"), &json!(upstream), &json!("sdk-client")),
        "{granted}"
    );
    assert_eq!(token_seen_by(&gateway.url, &alice).await, for_alice);
    assert_eq!(
        server.exchanged.load(Ordering::SeqCst),
        1,
        "kept while it lives"
    );
    let for_bob = token_seen_by(&gateway.url, &bob).await;
    assert_eq!(claims(&for_bob)["sub"], "bob");
    assert_eq!(server.exchanged.load(Ordering::SeqCst), 2);

    // The gateway's own requests (initialize, the listing) carried its own token.
    let seen = seen.lock().expect("headers").clone();
    let own: Vec<&String> = seen
        .iter()
        .filter(|header| header.starts_with("authorization: Bearer "))
        .filter(|header| {
            claims(header.trim_start_matches("authorization: Bearer "))["sub"] == "sdk-client"
        })
        .collect();
    assert!(!own.is_empty(), "{seen:?}");
    assert_eq!(server.issued.load(Ordering::SeqCst), 1);
    assert!(
        seen.iter()
            .all(|header| !header.contains(&alice) && !header.contains(&bob)),
        "{seen:?}"
    );

    // A caller without an OAuth token (here the CLI's own call) has nothing to exchange.
    let refused = run_switchboard(&config, &["call", "rec__whoami"]);
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(
        !refused.status.success() && output.contains("takes the caller's identity"),
        "{output}"
    );
}

// The gateway is started from this thread; the authorization server needs another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_behind_the_servers_private_ca_is_reached_with_its_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = switchboard_testkit::certs::TestCa::make(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let issued = |name: &str| ca.issue_server(name).unwrap_or_else(|e| panic!("{e}"));
    let server = AuthServer::start_tls(&issued("auth")).await;
    assert!(server.issuer.starts_with("https://"), "{}", server.issuer);
    let mcp = issued("mcp");
    let (cert, key) = (
        mcp.cert.display().to_string(),
        mcp.key.display().to_string(),
    );
    let fixture = Fixture::start(&["http-echo", "--tls-cert", &cert, "--tls-key", &key]);
    let config = |server_tls: bool| {
        write_config(
            dir.path(),
            &format!(
                "[servers.private]\nurl = {}\ntls = {{ ca = \"ca.pem\" }}\n\
                 auth = {{ grant = \"client_credentials\", token_endpoint = {}, \
                 client_id = \"sdk-client\", client_secret = \"s3cret\", \
                 server_tls = {server_tls} }}\n",
                quoted(&format!("https://{}/mcp", fixture.address)),
                quoted(&format!("{}/token", server.issuer)),
            ),
        )
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "private__echo", "arguments": {"message": "past a private CA"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});

    // Unasked, the server's CA is not trusted for the endpoint that gets the client secret.
    let gateway = HttpGateway::start(&config(false), &[]);
    let (_, answer, _) = post(&gateway.url, None, body.clone()).await;
    assert!(answer.contains("Unknown tool"), "{answer}");
    assert_eq!(server.issued.load(Ordering::SeqCst), 0);
    drop(gateway);

    let gateway = HttpGateway::start(&config(true), &[]);
    let (status, answer, _) = post(&gateway.url, None, body).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(
        answer["result"]["content"][0]["text"], "past a private CA",
        "{answer}"
    );
    assert_eq!(
        server.issued.load(Ordering::SeqCst),
        1,
        "one token, over TLS"
    );
}
