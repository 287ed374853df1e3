//! The registry client against a small v0.1 registry on 127.0.0.1 (axum, in the test): search
//! follows the cursor and keeps active latest entries only, answers are cached for the TTL,
//! look-ups by name (URL-encoded) and version, failures named with their URL and JSON path,
//! a failing registry skipped while a catalog answers, redirects followed within the
//! registry's origin only, and an answer for another server or version refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchboard_registry::{Registry, RegistryError, Sources};

/// What the fake registry serves and has seen.
#[derive(Default)]
struct Fake {
    /// Entries `{server, _meta}` in order.
    entries: Vec<Value>,
    /// Servers per page, whatever the client asks.
    page_size: usize,
    /// Spell the cursor `next_cursor` (older docs).
    snake_cursor: bool,
    /// Answer every request with this status and body instead.
    canned: Option<(StatusCode, String)>,
    requests: AtomicUsize,
    /// Every request's path and query, as sent.
    seen: Mutex<Vec<String>>,
}

fn entry(name: &str, version: &str, status: &str, is_latest: bool) -> Value {
    json!({
        "server": {"name": name, "version": version, "description": format!("{name} server"),
                   "remotes": [{"type": "streamable-http", "url": "https://example.com/mcp"}]},
        "_meta": {"io.modelcontextprotocol.registry/official": {
            "status": status, "isLatest": is_latest,
            "publishedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z"}}
    })
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn answer(State(fake): State<Arc<Fake>>, uri: Uri) -> Response {
    fake.requests.fetch_add(1, Ordering::SeqCst);
    let path = uri.path().to_owned();
    if let Ok(mut seen) = fake.seen.lock() {
        seen.push(uri.to_string());
    }
    if let Some((status, body)) = &fake.canned {
        return (*status, body.clone()).into_response();
    }
    let query: Vec<(String, String)> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), decode(v)))
        .collect();
    let param = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    if path == "/v0.1/servers" {
        let search = param("search").unwrap_or_default().to_lowercase();
        let latest_only = param("version").as_deref() == Some("latest");
        let matching: Vec<&Value> = fake
            .entries
            .iter()
            .filter(|e| {
                e["server"]["name"]
                    .as_str()
                    .is_some_and(|n| n.to_lowercase().contains(&search))
            })
            .filter(|e| {
                !latest_only
                    || e["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"]
                        != json!(false)
            })
            .collect();
        let start: usize = param("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
        let end = (start + fake.page_size).min(matching.len());
        let page: Vec<&Value> = matching[start.min(end)..end].to_vec();
        let cursor_key = if fake.snake_cursor {
            "next_cursor"
        } else {
            "nextCursor"
        };
        let mut metadata = json!({"count": page.len()});
        if end < matching.len() {
            metadata[cursor_key] = json!(end.to_string());
        }
        return axum::Json(json!({"servers": page, "metadata": metadata})).into_response();
    }
    if let Some(rest) = path.strip_prefix("/v0.1/servers/")
        && let Some((name, version)) = rest.rsplit_once("/versions/")
    {
        let name = decode(name);
        let found = fake.entries.iter().find(|e| {
            e["server"]["name"] == json!(name)
                && if version == "latest" {
                    e["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"]
                        == json!(true)
                } else {
                    e["server"]["version"] == json!(version)
                }
        });
        return match found {
            Some(found) => axum::Json(found.clone()).into_response(),
            None => (StatusCode::NOT_FOUND, r#"{"title":"Not Found"}"#).into_response(),
        };
    }
    (StatusCode::NOT_FOUND, "").into_response()
}

/// Serves `fake` on 127.0.0.1 and returns its base URL.
async fn serve(fake: Arc<Fake>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let router = Router::new().fallback(answer).with_state(fake);
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

fn registry(bases: Vec<String>, ttl: Duration) -> Registry {
    Registry::new(Sources {
        registries: bases,
        catalogs: vec![],
        ttl,
    })
}

fn five() -> Vec<Value> {
    vec![
        entry("io.example/alpha", "1.0.0", "active", true),
        entry("io.example/beta", "1.0.0", "deleted", true),
        entry("io.example/gamma", "1.0.0", "active", false),
        entry("io.example/gamma", "2.0.0", "active", true),
        entry("io.example/delta", "3.0.0", "deprecated", true),
        entry("io.example/epsilon", "0.1.0", "active", true),
    ]
}

#[tokio::test]
async fn search_follows_the_cursor_and_keeps_active_latest_entries() {
    for snake_cursor in [false, true] {
        let fake = Arc::new(Fake {
            entries: five(),
            page_size: 2,
            snake_cursor,
            ..Fake::default()
        });
        let base = serve(fake.clone()).await;
        let found = registry(vec![base.clone()], Duration::ZERO)
            .search("", 10)
            .await
            .expect("search");
        let names: Vec<(&str, &str)> = found
            .iter()
            .map(|l| (l.server.name.as_str(), l.server.version.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("io.example/alpha", "1.0.0"),
                ("io.example/gamma", "2.0.0"),
                ("io.example/epsilon", "0.1.0"),
            ]
        );
        assert!(
            found
                .iter()
                .all(|l| l.source == base && l.status == "active")
        );
        // Five latest entries in pages of two.
        assert_eq!(fake.requests.load(Ordering::SeqCst), 3);
        let seen = fake.seen.lock().expect("seen").clone();
        assert_eq!(seen[0], "/v0.1/servers?version=latest&limit=10");
        assert_eq!(seen[1], "/v0.1/servers?version=latest&limit=10&cursor=2");
    }
}

#[tokio::test]
async fn search_stops_at_the_limit_and_sends_the_query() {
    let fake = Arc::new(Fake {
        entries: five(),
        page_size: 1,
        ..Fake::default()
    });
    let base = serve(fake.clone()).await;
    let registry = registry(vec![format!("{base}/")], Duration::ZERO);
    let found = registry.search("", 2).await.expect("search");
    assert_eq!(found.len(), 2);
    // alpha, beta (deleted), gamma: three pages for two active entries.
    assert_eq!(fake.requests.load(Ordering::SeqCst), 3);
    let found = registry.search(" Gamma ", 5).await.expect("search");
    assert_eq!(found.len(), 1);
    let seen = fake.seen.lock().expect("seen").clone();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("/v0.1/servers?search=Gamma&version=latest&limit=5")
    );
}

#[tokio::test]
async fn answers_are_cached_for_the_ttl() {
    let fake = Arc::new(Fake {
        entries: five(),
        page_size: 100,
        ..Fake::default()
    });
    let base = serve(fake.clone()).await;
    let cached = registry(vec![base.clone()], Duration::from_secs(60));
    let first = cached.search("", 10).await.expect("search");
    let clone = cached.clone();
    let second = clone.search("", 10).await.expect("search");
    assert_eq!(first, second);
    assert_eq!(
        fake.requests.load(Ordering::SeqCst),
        1,
        "the clone shares the cache"
    );
    cached.search("alpha", 10).await.expect("search");
    cached.search("", 3).await.expect("search");
    assert_eq!(
        fake.requests.load(Ordering::SeqCst),
        3,
        "other keys ask again"
    );
    cached.get("io.example/alpha", None).await.expect("get");
    cached.get("io.example/alpha", None).await.expect("get");
    assert_eq!(fake.requests.load(Ordering::SeqCst), 4);

    let uncached = registry(vec![base], Duration::ZERO);
    uncached.search("", 10).await.expect("search");
    uncached.search("", 10).await.expect("search");
    assert_eq!(fake.requests.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn get_by_name_and_version_encodes_the_name() {
    let fake = Arc::new(Fake {
        entries: five(),
        page_size: 100,
        ..Fake::default()
    });
    let base = serve(fake.clone()).await;
    let registry = registry(vec![base.clone()], Duration::ZERO);
    let latest = registry
        .get("io.example/gamma", None)
        .await
        .expect("latest");
    assert_eq!(latest.server.version, "2.0.0");
    let older = registry
        .get("io.example/gamma", Some("1.0.0"))
        .await
        .expect("a version");
    assert_eq!(older.server.version, "1.0.0");
    assert!(!older.is_latest);
    let seen = fake.seen.lock().expect("seen").clone();
    assert_eq!(seen[0], "/v0.1/servers/io.example%2Fgamma/versions/latest");
    assert_eq!(seen[1], "/v0.1/servers/io.example%2Fgamma/versions/1.0.0");

    let deleted = registry
        .get("io.example/beta", None)
        .await
        .expect_err("deleted");
    assert!(
        matches!(&deleted, RegistryError::Inactive { status, .. } if status == "deleted"),
        "{deleted}"
    );
    let missing = registry
        .get("io.example/nope", None)
        .await
        .expect_err("missing");
    let text = missing.to_string();
    assert!(matches!(missing, RegistryError::NotFound { .. }), "{text}");
    assert!(text.contains(&base), "{text}");
}

#[tokio::test]
async fn a_failing_registry_is_skipped_while_a_catalog_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        json!([{"name": "io.example/local", "version": "1.0.0"}]).to_string(),
    )
    .expect("write");
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}", listener.local_addr().expect("address"))
    };
    let broken = serve(Arc::new(Fake {
        canned: Some((StatusCode::INTERNAL_SERVER_ERROR, "database down".into())),
        ..Fake::default()
    }))
    .await;
    let mixed = Registry::new(Sources {
        registries: vec![closed.clone(), broken.clone()],
        catalogs: vec![catalog.clone()],
        ttl: Duration::ZERO,
    });
    let found = mixed.search("", 10).await.expect("the catalog answers");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].source, catalog.display().to_string());
    assert_eq!(
        mixed
            .get("io.example/local", None)
            .await
            .expect("get")
            .server
            .name,
        "io.example/local"
    );
    let not_found = mixed
        .get("io.example/other", None)
        .await
        .expect_err("not found")
        .to_string();
    assert!(not_found.contains("HTTP 500"), "{not_found}");

    let failing = registry(vec![closed.clone(), broken.clone()], Duration::ZERO);
    let error = failing
        .search("", 10)
        .await
        .expect_err("every source failed");
    let RegistryError::AllFailed(failures) = &error else {
        panic!("expected AllFailed, got {error}");
    };
    assert!(
        matches!(&failures[0], RegistryError::Unreachable { url, .. } if url.starts_with(&closed))
    );
    assert!(
        matches!(&failures[1], RegistryError::Status { status: 500, body, .. } if body == "database down")
    );
    let text = error.to_string();
    assert!(text.contains(&closed) && text.contains(&broken), "{text}");
}

#[tokio::test]
async fn an_answer_of_the_wrong_shape_names_the_url_and_json_path() {
    let cases = [
        (
            r#"{"servers": [{"server": {"name": "x"}}]}"#,
            "$.servers[0].server",
        ),
        (r#"{"servers": 3}"#, "$.servers"),
        (r#"{"metadata": {}}"#, "$.servers"),
        ("not json", "$"),
    ];
    for (body, json_path) in cases {
        let base = serve(Arc::new(Fake {
            canned: Some((StatusCode::OK, body.into())),
            ..Fake::default()
        }))
        .await;
        let error = registry(vec![base.clone()], Duration::ZERO)
            .search("", 10)
            .await
            .expect_err(body);
        let RegistryError::AllFailed(failures) = &error else {
            panic!("expected AllFailed, got {error}");
        };
        let RegistryError::Shape {
            url,
            json_path: path,
            ..
        } = &failures[0]
        else {
            panic!("expected Shape, got {}", failures[0]);
        };
        assert!(url.starts_with(&format!("{base}/v0.1/servers")), "{url}");
        assert_eq!(path, json_path, "{body}: {error}");
    }
    let bad = registry(vec!["ftp://example.com".into()], Duration::ZERO)
        .search("", 1)
        .await
        .expect_err("ftp");
    assert!(
        bad.to_string()
            .contains("invalid registry URL 'ftp://example.com'"),
        "{bad}"
    );
}

/// Serves, on 127.0.0.1, redirects from `/old/…` to `…` (in `elsewhere`, another origin,
/// when given; else here) and `fake` for everything else; its base URL, `…/old`.
async fn serve_redirecting(fake: Arc<Fake>, elsewhere: Option<String>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let handler = move |state: State<Arc<Fake>>, uri: Uri| {
        let elsewhere = elsewhere.clone();
        async move {
            match uri.path().strip_prefix("/old") {
                Some(rest) => {
                    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
                    let target = format!("{}{rest}{query}", elsewhere.unwrap_or_default());
                    (
                        StatusCode::TEMPORARY_REDIRECT,
                        [(axum::http::header::LOCATION, target)],
                    )
                        .into_response()
                }
                None => answer(state, uri).await,
            }
        }
    };
    let router = Router::new().fallback(handler).with_state(fake);
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}/old")
}

/// Regression: the client followed up to 10 redirects to any host (https to http too), so
/// whoever could answer for the registry once could send the gateway anywhere.
#[tokio::test]
async fn redirects_are_followed_within_the_registrys_origin_only() {
    let fake = || {
        Arc::new(Fake {
            entries: five(),
            ..Fake::default()
        })
    };
    let here = serve_redirecting(fake(), None).await;
    let found = registry(vec![here], Duration::ZERO)
        .get("io.example/alpha", None)
        .await
        .expect("a redirect within the origin is followed");
    assert_eq!(found.server.name, "io.example/alpha");

    let other = fake();
    let elsewhere = serve(other.clone()).await;
    // Another port of the same host is another origin.
    let base = serve_redirecting(fake(), Some(elsewhere)).await;
    let error = registry(vec![base.clone()], Duration::ZERO)
        .get("io.example/alpha", None)
        .await
        .expect_err("a redirect to another origin is refused");
    let text = error.to_string();
    assert!(
        text.contains("may redirect only within its own origin"),
        "{text}"
    );
    assert!(text.contains(&base), "names the request: {text}");
    assert_eq!(
        other.requests.load(Ordering::SeqCst),
        0,
        "the other origin is never asked"
    );
}

/// Regression: a look-up took whatever server the registry answered with.
#[tokio::test]
async fn a_look_up_answered_with_another_server_or_version_is_refused() {
    let answered = entry("io.example/other", "2.0.0", "active", true);
    let fake = Arc::new(Fake {
        canned: Some((StatusCode::OK, answered.to_string())),
        ..Fake::default()
    });
    let base = serve(fake).await;
    let registry = registry(vec![base], Duration::ZERO);
    for (name, version, asked) in [
        ("io.example/wanted", None, "io.example/wanted but"),
        (
            "io.example/wanted",
            Some("2.0.0"),
            "io.example/wanted version 2.0.0 but",
        ),
        (
            "io.example/other",
            Some("1.0.0"),
            "io.example/other version 1.0.0 but",
        ),
    ] {
        let error = registry.get(name, version).await.expect_err(name);
        let text = error.to_string();
        assert!(
            text.contains(asked) && text.contains("the answer is io.example/other version 2.0.0"),
            "{name} {version:?}: {text}"
        );
    }
    let same = registry
        .get("io.example/other", Some("2.0.0"))
        .await
        .expect("the server asked for");
    assert_eq!(same.server.version, "2.0.0");
    let latest = registry
        .get("io.example/other", None)
        .await
        .expect("any version is the latest asked for");
    assert_eq!(latest.server.version, "2.0.0");
}

/// The futures can be spawned: they are `Send`.
#[test]
fn futures_are_send() {
    fn send<T: Send>(_: T) {}
    let registry = registry(vec![], Duration::ZERO);
    send(registry.search("", 1));
    send(registry.get("x", None));
    let server: switchboard_registry::ServerJson =
        serde_json::from_value(json!({"name": "x", "version": "1.0.0",
            "remotes": [{"type": "sse", "url": "https://example.com/sse"}]}))
        .expect("server");
    let resolution = switchboard_registry::resolve(&server).expect("resolves");
    let cancel = tokio_util::sync::CancellationToken::new();
    send(switchboard_registry::install(
        &resolution,
        std::path::Path::new("/nonexistent"),
        switchboard_registry::install::STEP_DEADLINE,
        &cancel,
        &|_, _| {},
    ));
}
