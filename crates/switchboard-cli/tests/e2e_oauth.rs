//! The gateway as an OAuth 2.1 resource server, end to end: an authorization server written
//! for the tests (`auth_server`: its RFC 8414 metadata and a JWK set of an ES256 and an RS256 key made for the test,
//! on 127.0.0.1) mints tokens, good and bad, and a real `switchboard serve --http` is asked
//! with each over real HTTP. Every refusal is checked with its status and its
//! `WWW-Authenticate` challenge; a good token's call runs as the agent its `client_id` maps to.

mod auth_server;
mod support;

use std::sync::atomic::Ordering;

use auth_server::*;
use serde_json::{Value, json};
use support::*;

fn modern(method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn listed(body: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(body).expect("json");
    names(&value["result"]["tools"])
}

async fn get_json(url: &str) -> (u16, Value) {
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(url)
        .send()
        .await
        .expect("send");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn oauth_tokens_are_checked_and_decide_the_agent() {
    let server = AuthServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[auth]\nmode = \"oauth\"\nissuer = {}\nscopes = [\"mcp\"]\n\n[auth.identities]\n\"client-r\" = \"reader\"\n\n\
             [agents.reader]\nallow = [\"fx__echo\"]\n\n[agents.all]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger.display().to_string()),
            quoted(&server.issuer),
            quoted(&fixture())
        ),
    );
    let mut gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.clone();
    let origin = url.trim_end_matches("/mcp").to_owned();
    let metadata_url = format!("{origin}/.well-known/oauth-protected-resource/mcp");
    let es = json!({"alg": "ES256", "kid": "es", "typ": "at+jwt"});
    let claims = |changes: Value| {
        let mut claims = json!({"iss": server.issuer, "aud": url, "sub": "alice",
            "client_id": "client-r", "scope": "mcp", "iat": now(), "nbf": now() - 5,
            "exp": now() + 300});
        if let (Some(claims), Value::Object(changes)) = (claims.as_object_mut(), changes) {
            claims.extend(changes);
        }
        claims
    };
    let list = modern("tools/list", json!({}));

    // The protected resource metadata, for /mcp and for a tier's endpoint.
    let (status, document) = get_json(&metadata_url).await;
    assert_eq!(status, 200);
    assert_eq!(document["resource"], json!(url));
    assert_eq!(document["authorization_servers"], json!([server.issuer]));
    assert_eq!(document["scopes_supported"], json!(["mcp"]));
    assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    let (_, tier) = get_json(&format!("{metadata_url}/tiers/fast")).await;
    assert_eq!(tier["resource"], json!(format!("{url}/tiers/fast")));

    // No token: 401 pointing to the metadata, no error code (RFC 6750 §3.1).
    let (status, _, challenge) = post(&url, None, list.clone()).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge.as_deref(),
        Some(format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"mcp\"").as_str())
    );

    // A good token: the call runs as the agent its client_id maps to.
    let good = server.mint(&es, &claims(json!({})));
    let (status, body, _) = post(&url, Some(&good), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(listed(&body), ["fx__echo"]);
    let call = modern(
        "tools/call",
        json!({"name": "fx__echo", "arguments": {"message": "hi"}}),
    );
    let (status, body, _) = post(&url, Some(&good), call).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hi"), "{body}");
    // An RS256 token whose client_id is an agent's name acts as that agent.
    let rs = json!({"alg": "RS256", "kid": "rs"});
    let all = server.mint(&rs, &claims(json!({"client_id": "all"})));
    let (status, body, _) = post(&url, Some(&all), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert!(listed(&body).len() > 1, "{body}");
    let fetches = server.jwks_fetches.load(Ordering::SeqCst);
    assert_eq!(fetches, 1, "the key set is fetched once and cached");

    // Each bad token: 401 invalid_token.
    let hs = json!({"alg": "HS256", "kid": "rs"});
    let bad = [
        (
            "expired",
            server.mint(&es, &claims(json!({"exp": now() - 120}))),
        ),
        (
            "not yet valid",
            server.mint(&es, &claims(json!({"nbf": now() + 600}))),
        ),
        (
            "wrong issuer",
            server.mint(&es, &claims(json!({"iss": "http://evil.example"}))),
        ),
        (
            "wrong audience",
            server.mint(&es, &claims(json!({"aud": "http://other.example/mcp"}))),
        ),
        (
            "unknown kid",
            server.mint(&json!({"alg": "ES256", "kid": "gone"}), &claims(json!({}))),
        ),
        (
            "alg none",
            server.mint(&json!({"alg": "none", "kid": "es"}), &claims(json!({}))),
        ),
        (
            "HS256 with the public key",
            server.mint(&hs, &claims(json!({}))),
        ),
        (
            "an ID token",
            server.mint(
                &json!({"alg": "ES256", "kid": "es", "typ": "id+jwt"}),
                &claims(json!({})),
            ),
        ),
        ("forged signature", format!("{}x", &good[..good.len() - 1])),
        ("not a JWT", "sbt_static".to_owned()),
    ];
    for (what, token) in bad {
        let (status, body, challenge) = post(&url, Some(&token), list.clone()).await;
        assert_eq!(status, 401, "{what}: {body}");
        let challenge = challenge.unwrap_or_default();
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\""))
                && challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }
    assert!(
        server.jwks_fetches.load(Ordering::SeqCst) <= fetches + 1,
        "an unknown kid refetches the keys at most once"
    );

    // A token for another loopback server of the same issuer, sent with that server's
    // name as Host: the audience is this gateway's own URL, never the request's Host.
    let other = "127.0.0.1:9/mcp";
    let replayed = server.mint(&es, &claims(json!({"aud": format!("http://{other}")})));
    let body = list.to_string();
    let path_and_host = url.trim_start_matches("http://");
    let (address, _) = path_and_host.split_once('/').expect("host/path");
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer {replayed}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut stream, request.as_bytes()).expect("send");
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).expect("answer");
    assert!(
        answer.starts_with("HTTP/1.1 401"),
        "a token for another resource, Host naming it: {answer}"
    );

    // The scheme's name in any case.
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: BEARER {good}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut stream, request.as_bytes()).expect("send");
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut stream, &mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "BEARER: {answer}");

    // A token in the query string is refused (400, RFC 6750 §3.1), even beside a good header.
    let (status, _, challenge) = post(
        &format!("{url}?access_token={good}"),
        Some(&good),
        list.clone(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        challenge
            .unwrap_or_default()
            .contains("error=\"invalid_request\"")
    );

    // A good token without the scope: 403 insufficient_scope naming it (step-up).
    let narrow = server.mint(&es, &claims(json!({"scope": "other"})));
    let (status, body, challenge) = post(&url, Some(&narrow), list.clone()).await;
    assert_eq!(status, 403, "{body}");
    let challenge = challenge.unwrap_or_default();
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp\""),
        "{challenge}"
    );
    // An identity that names no agent: 403.
    let stranger = server.mint(&es, &claims(json!({"client_id": "stranger"})));
    let (status, body, _) = post(&url, Some(&stranger), list.clone()).await;
    assert_eq!(status, 403, "{body}");

    // A tier's endpoint is a resource of its own; a token for /mcp is good there too.
    let (status, _, challenge) = post(&format!("{url}/tiers/fast"), None, list.clone()).await;
    assert_eq!(status, 401);
    assert!(
        challenge
            .unwrap_or_default()
            .contains(&format!("resource_metadata=\"{metadata_url}/tiers/fast\"")),
    );
    let (status, body, _) = post(&format!("{url}/tiers/fast"), Some(&good), list).await;
    assert_eq!(status, 200, "{body}");

    // The ledger names the token's subject and client beside the agent, and never the token.
    assert!(gateway.terminate().success());
    let rows = audit_rows(&config);
    let call = rows
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["exposed"] == "fx__echo")
        .expect("the call's row");
    assert_eq!(
        (&call["agent"], &call["subject"], &call["client_id"]),
        (&json!("reader"), &json!("alice"), &json!("client-r")),
        "{call}"
    );
    for entry in std::fs::read_dir(dir.path()).expect("dir").flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(&good) && !text.contains(good.split('.').nth(2).unwrap_or("-")),
            "{} holds the token",
            entry.path().display()
        );
    }
}

/// Static tokens and OAuth tokens side by side (`mode = ["tokens", "oauth"]`), and neither
/// reaches an upstream: the upstream gets its own configured header, never the client's.
#[tokio::test]
async fn the_clients_authorization_header_never_reaches_an_upstream() {
    let server = AuthServer::start().await;
    let (upstream, seen) = recording_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.json");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\ntoken_file = {}\n\n[auth]\nmode = [\"tokens\", \"oauth\"]\nissuer = {}\n\n\
             [agents.all]\n\n[servers.rec]\nurl = {}\nera = \"legacy\"\n\
             headers = {{ Authorization = \"Bearer upstream-own\" }}\n",
            quoted(&tokens.display().to_string()),
            quoted(&server.issuer),
            quoted(&upstream),
        ),
    );
    let created = run_switchboard(&config, &["token", "create", "all"]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let static_token = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.clone();
    let oauth_token = server.mint(
        &json!({"alg": "ES256", "kid": "es"}),
        &json!({"iss": server.issuer, "aud": url, "client_id": "all", "exp": now() + 300}),
    );
    let whoami = modern(
        "tools/call",
        json!({"name": "rec__whoami", "arguments": {}}),
    );
    // A first listing waits for the upstream's first connection.
    let (status, body, _) = post(&url, Some(&oauth_token), modern("tools/list", json!({}))).await;
    assert_eq!(
        (status, listed(&body)),
        (200, vec!["rec__whoami".to_owned()]),
        "{body}"
    );
    for token in [&static_token, &oauth_token] {
        let (status, body, _) = post(&url, Some(token), whoami.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("Bearer upstream-own"), "{body}");
    }
    let seen = seen.lock().expect("headers").clone();
    assert!(!seen.is_empty());
    for header in &seen {
        assert!(
            !header.contains(&static_token) && !header.contains(&oauth_token),
            "the upstream was sent a client's token: {header}"
        );
    }
}

/// Off loopback the Host header is the client's to choose, so it cannot name the audience:
/// a gateway there with OAuth and no `resource` refuses to start, saying so.
#[test]
fn oauth_off_loopback_needs_a_configured_resource() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        "[auth]\nmode = \"oauth\"\nissuer = \"http://127.0.0.1:9\"\n",
    );
    let mut child = serve_at(&config, "0.0.0.0:0");
    let exited = wait_for(std::time::Duration::from_secs(20), || {
        child.try_wait().ok().flatten()
    });
    if exited.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("output");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs `resource`"), "{stderr}");
}

/// `switchboard serve --http ADDRESS` on `config`, its stderr piped.
fn serve_at(config: &std::path::Path, address: &str) -> std::process::Child {
    std::process::Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", address])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the gateway")
}

/// OAuth with neither agents nor scopes lets every token of the issuer call every tool: the
/// gateway says so as it starts (security review), and starts.
#[test]
fn oauth_without_agents_or_scopes_is_warned_about() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        "[auth]\nmode = \"oauth\"\nissuer = \"http://127.0.0.1:9\"\n",
    );
    let mut child = serve_at(&config, "127.0.0.1:0");
    let stderr = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("read stderr");
        let listening = line.contains("listening on");
        seen.push(line);
        if listening {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        seen.iter()
            .any(|line| line.contains("any valid token of http://127.0.0.1:9 may call every tool")),
        "{seen:#?}"
    );
    assert!(
        seen.iter().any(|line| line.contains("listening on")),
        "{seen:#?}"
    );
}

/// The official Python SDK's OAuth client (`ClientCredentialsOAuthProvider`) connects through
/// the gateway by itself: the 401's `resource_metadata` leads it to the metadata, that to the
/// authorization server, whose token (audienced to the resource the SDK names) it retries with.
#[tokio::test]
async fn the_python_sdks_oauth_client_finds_the_authorization_server_and_calls() {
    let server = AuthServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[auth]\nmode = \"oauth\"\nissuer = {}\nscopes = [\"mcp\"]\n\n[auth.identities]\n\"sdk-client\" = \"reader\"\n\n\
             [agents.reader]\nallow = [\"fx__echo\"]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&server.issuer),
            quoted(&fixture())
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let (url, issuer) = (gateway.url.clone(), server.issuer.clone());
    let sdk = move |action: &'static [&'static str]| {
        let (url, issuer) = (url.clone(), issuer.clone());
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "--http",
                url.as_str(),
                "--client-credentials",
                "sdk-client:s3cret",
            ];
            args.extend(["--issuer", issuer.as_str(), "--scope", "mcp"]);
            args.extend(action);
            python_client(&args)
        })
    };
    let tools = sdk(&["list"]).await.expect("the SDK client");
    assert_eq!(
        names(&tools),
        ["fx__echo"],
        "the view of the agent the client maps to"
    );
    let result = sdk(&["call", "fx__echo", r#"{"message": "through oauth"}"#])
        .await
        .expect("the SDK client");
    assert_eq!(result["isError"], json!(false), "{result}");
    assert!(result.to_string().contains("through oauth"), "{result}");
}

/// Opaque tokens go to the authorization server's introspection endpoint (RFC 7662) with the
/// gateway's own credentials; an active answer is checked like a JWT's claims and reused for
/// a while, an inactive one or one for another resource is refused.
#[tokio::test]
async fn opaque_tokens_are_introspected() {
    let server = AuthServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[auth]\nmode = \"oauth\"\nissuer = {}\nintrospection_endpoint = {}\n\
             client_id = \"switchboard\"\nclient_secret = \"gw-secret\"\n\n\
             [agents.reader]\nallow = [\"fx__echo\"]\n\n[servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&server.issuer),
            quoted(&format!("{}/introspect", server.issuer)),
            quoted(&fixture())
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.clone();
    let active = |aud: &str| {
        json!({"active": true, "iss": server.issuer, "aud": aud, "client_id": "reader",
            "sub": "bob", "scope": "mcp", "exp": now() + 300})
    };
    if let Ok(mut answers) = server.introspected.answers.lock() {
        answers.insert("opaque-good".into(), active(&url));
        answers.insert(
            "opaque-elsewhere".into(),
            active("http://other.example/mcp"),
        );
    }
    let list = modern("tools/list", json!({}));
    for _ in 0..2 {
        let (status, body, _) = post(&url, Some("opaque-good"), list.clone()).await;
        assert_eq!(
            (status, listed(&body)),
            (200, vec!["fx__echo".to_owned()]),
            "{body}"
        );
    }
    assert_eq!(
        server.introspected.asked.load(Ordering::SeqCst),
        1,
        "an active answer is reused"
    );
    for token in ["opaque-revoked", "opaque-elsewhere"] {
        let (status, body, challenge) = post(&url, Some(token), list.clone()).await;
        assert_eq!(status, 401, "{token}: {body}");
        assert!(
            challenge
                .unwrap_or_default()
                .contains("error=\"invalid_token\"")
        );
    }
}

/// `[agents.X.scopes]`: a tool a scope names is seen and callable only with a token that
/// carries the scope, and a scope can choose the caller's tier; a tier the request names
/// still wins.
#[tokio::test]
async fn token_scopes_narrow_the_agents_view_and_choose_its_tier() {
    let server = AuthServer::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[auth]\nmode = \"oauth\"\nissuer = {}\n\n\
             [tiers]\nfast = \"50ms\"\ndeep = \"10s\"\n\n\
             [agents.planner.scopes]\n\"reports:write\" = [\"lab__medium_report\"]\n\
             voice = {{ tier = \"fast\" }}\n\n\
             [servers.lab]\ncommand = {}\nargs = [\"latency\", \"--scale\", \"0.1\"]\n",
            quoted(&server.issuer),
            quoted(&fixture())
        ),
    );
    let gateway = HttpGateway::start(&config, &[]);
    let url = gateway.url.clone();
    // The metadata offers the scopes that open tools or tiers.
    let metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let (_, document) = get_json(&metadata).await;
    assert_eq!(
        document["scopes_supported"],
        json!(["reports:write", "voice"])
    );
    let es = json!({"alg": "ES256", "kid": "es", "typ": "at+jwt"});
    let token = |scope: &str| {
        server.mint(
            &es,
            &json!({"iss": server.issuer, "aud": url, "sub": "alice", "client_id": "planner",
                "scope": scope, "exp": now() + 300}),
        )
    };
    let list = modern("tools/list", json!({}));
    let sorted = |body: &str| {
        let mut names = listed(body);
        names.sort();
        names
    };

    // Without the scope the gated tool is neither listed nor callable.
    let plain = token("mcp");
    let (status, body, _) = post(&url, Some(&plain), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    let without = sorted(&body);
    assert!(
        without.contains(&"lab__fast_lookup".to_owned())
            && !without.contains(&"lab__medium_report".to_owned()),
        "{without:?}"
    );
    let call = modern(
        "tools/call",
        json!({"name": "lab__medium_report", "arguments": {}}),
    );
    let (status, body, _) = post(&url, Some(&plain), call.clone()).await;
    assert!(
        status == 200 && body.contains("\"error\"") && body.contains("lab__medium_report"),
        "a gated tool is refused like an unknown one: {status} {body}"
    );

    // With it, the tool is listed and the call runs.
    let writer = token("mcp reports:write");
    let (_, body, _) = post(&url, Some(&writer), list.clone()).await;
    let mut expected = without.clone();
    expected.push("lab__medium_report".to_owned());
    expected.sort();
    assert_eq!(sorted(&body), expected);
    let (status, body, _) = post(&url, Some(&writer), call).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !body.contains("\"error\"") && body.contains("\"result\""),
        "{body}"
    );

    // A scope that chooses a tier: what fits "fast", as if the request had named it...
    let voice = token("voice reports:write");
    let (_, body, _) = post(&url, Some(&voice), list.clone()).await;
    let fast = sorted(&body);
    let (_, body, _) = post(&format!("{url}/tiers/fast"), Some(&writer), list.clone()).await;
    assert_eq!(fast, sorted(&body));
    assert!(
        fast.contains(&"lab__fast_lookup".to_owned())
            && !fast.contains(&"lab__slow_analysis".to_owned()),
        "{fast:?}"
    );
    // ...and a tier the request names wins.
    let deep = format!("{url}/tiers/deep");
    let (status, body, _) = post(&deep, Some(&voice), list.clone()).await;
    assert_eq!(status, 200, "{body}");
    let (_, expected, _) = post(&deep, Some(&writer), list).await;
    assert_eq!(sorted(&body), sorted(&expected));
    assert!(
        sorted(&body).contains(&"lab__medium_report".to_owned()),
        "{body}"
    );
    drop(gateway);
}
