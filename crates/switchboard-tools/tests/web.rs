//! The `web` built-in against `switchboard-fixture search-api` over real HTTP on 127.0.0.1:
//! SearXNG, Brave (key sent; a wrong key is a readable 401) and a generic JSON mapping;
//! `fetch_page` stripping HTML, following redirects up to the limit, truncating at
//! `max_bytes`, refusing binary bodies, refusing loopback addresses unless `allow_private`,
//! and timing out.

mod fixture;

use std::time::{Duration, Instant};
use switchboard_core::config::SecretString;

use fixture::Fixture;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::ToolProvider;
use switchboard_core::{CallContext, LatencyMeta};
use switchboard_tools::web::{SearchBackend, Web, WebSettings};

fn search_api() -> Fixture {
    Fixture::start(&["search-api", "--key", "brave-key"])
}

fn web(settings: WebSettings) -> Web {
    Web::new(settings).expect("valid settings")
}

/// Settings that may fetch from loopback (every test page is on 127.0.0.1).
fn local(fixture: &Fixture) -> WebSettings {
    WebSettings {
        url: Some(fixture.url("")),
        allow_private: true,
        ..WebSettings::default()
    }
}

async fn call(web: &Web, tool: &str, arguments: Value) -> Result<Value, String> {
    let arguments: Map<String, Value> = arguments.as_object().cloned().expect("an object");
    web.call(tool, arguments, &CallContext::default())
        .await
        .map(|outcome| outcome.structured_content.expect("structured content"))
        .map_err(|error| error.0)
}

#[tokio::test]
async fn searxng_results_are_mapped_and_limited() {
    let fixture = search_api();
    let web = web(local(&fixture));
    let found = call(&web, "search", json!({"query": "rust async", "limit": 3}))
        .await
        .expect("results");
    assert_eq!(found["backend"], "searxng");
    let results = found["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["title"], "rust async result 1");
    assert_eq!(results[0]["snippet"], "Snippet 1 about rust async.");
    assert_eq!(results[0]["source"], "searxng");
    assert!(results[2]["url"].as_str().expect("url").ends_with("/3"));
    let last = fixture.last().await;
    assert_eq!(last["target"], "/search?q=rust+async&format=json");
}

#[tokio::test]
async fn brave_gets_the_key_and_a_wrong_key_is_explained() {
    let fixture = search_api();
    let brave = |key: &str| {
        web(WebSettings {
            backend: SearchBackend::Brave,
            api_key: Some(SecretString(key.to_owned())),
            ..local(&fixture)
        })
    };
    let found = call(
        &brave("brave-key"),
        "search",
        json!({"query": "dragons", "limit": 4}),
    )
    .await
    .expect("results");
    let results = found["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    assert_eq!(results[1]["title"], "dragons brave 2");
    // Brave's <strong> highlighting is stripped.
    assert_eq!(results[1]["snippet"], "Brave says dragons 2.");
    assert_eq!(results[1]["source"], "brave");
    let last = fixture.last().await;
    assert_eq!(last["headers"]["x-subscription-token"], "brave-key");
    assert_eq!(last["target"], "/res/v1/web/search?q=dragons&count=4");

    let error = call(&brave("not-the-key"), "search", json!({"query": "dragons"}))
        .await
        .expect_err("401");
    assert!(
        error.contains("Brave Search answered HTTP 401 Unauthorized")
            && error.contains("The provided subscription token is invalid.")
            && error.contains("check the api_key"),
        "{error}"
    );
    assert!(!error.contains("not-the-key"), "the key leaked: {error}");
}

#[tokio::test]
async fn a_json_mapping_reads_any_search_api() {
    let fixture = search_api();
    let mapping = |results_path: &str| SearchBackend::Json {
        results_path: results_path.to_owned(),
        title: "name".to_owned(),
        url: "link.href".to_owned(),
        snippet: Some("summary".to_owned()),
        key_header: Some("X-Api-Key".to_owned()),
    };
    let settings = WebSettings {
        backend: mapping("data.items"),
        url: Some(fixture.url("/json?q={query}&n={limit}")),
        api_key: Some(SecretString("json-key".to_owned())),
        ..WebSettings::default()
    };
    let found = call(
        &web(settings.clone()),
        "search",
        json!({"query": "fish & chips"}),
    )
    .await
    .expect("results");
    let results = found["results"].as_array().expect("results");
    assert_eq!(results.len(), 5, "the default limit");
    assert_eq!(results[0]["title"], "fish & chips item 1");
    assert_eq!(results[0]["snippet"], "Summary 1 of fish & chips.");
    assert_eq!(results[0]["source"], "json");
    let last = fixture.last().await;
    assert_eq!(last["target"], "/json?q=fish+%26+chips&n=5");
    assert_eq!(last["headers"]["x-api-key"], "json-key");

    let wrong = WebSettings {
        backend: mapping("data.results"),
        ..settings
    };
    let error = call(&web(wrong), "search", json!({"query": "x"}))
        .await
        .expect_err("no such array");
    assert!(
        error.contains("the JSON search API's answer has no array at 'data.results'"),
        "{error}"
    );
}

#[tokio::test]
async fn backend_failures_name_the_backend_and_status() {
    let fixture = search_api();
    let settings = WebSettings {
        url: Some(fixture.url("/nowhere")),
        ..local(&fixture)
    };
    let error = call(&web(settings), "search", json!({"query": "x"}))
        .await
        .expect_err("404");
    assert!(
        error.contains("SearXNG answered HTTP 404 Not Found: Not Found"),
        "{error}"
    );
    let unreachable = WebSettings {
        url: Some("http://127.0.0.1:9".to_owned()),
        ..WebSettings::default()
    };
    let error = call(&web(unreachable), "search", json!({"query": "x"}))
        .await
        .expect_err("refused");
    assert!(error.starts_with("SearXNG is unreachable"), "{error}");
}

#[tokio::test]
async fn a_page_becomes_readable_text() {
    let fixture = search_api();
    let page = call(
        &web(local(&fixture)),
        "fetch_page",
        json!({"url": fixture.url("/page/hello")}),
    )
    .await
    .expect("page");
    assert_eq!(page["title"], "Hello & welcome");
    assert_eq!(page["content_type"], "text/html; charset=utf-8");
    assert_eq!(page["truncated"], false);
    assert_eq!(page["redirects"], 0);
    let text = page["text"].as_str().expect("text");
    assert_eq!(
        text,
        "# Hello, world\n\nFish & chips cost £5 — €6 or $7.\n\n- first item\n- second item\n\n\
         Tags <b> stay literal\nafter a break"
    );
    for gone in [
        "secret",
        "alert",
        "color",
        "JavaScript",
        "vector",
        "console",
        "comment",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
}

#[tokio::test]
async fn text_and_json_pass_through_and_binary_is_refused() {
    let fixture = search_api();
    let web = web(local(&fixture));
    let text = call(&web, "fetch_page", json!({"url": fixture.url("/text")}))
        .await
        .expect("text");
    assert_eq!(text["text"], "plain text\n  kept as is\n");
    assert_eq!(text["title"], Value::Null);
    let data = call(
        &web,
        "fetch_page",
        json!({"url": fixture.url("/data.json")}),
    )
    .await
    .expect("json");
    assert_eq!(data["text"], r#"{"ok":true,"items":[1,2,3]}"#);
    let error = call(&web, "fetch_page", json!({"url": fixture.url("/binary")}))
        .await
        .expect_err("binary");
    assert!(
        error.contains("is application/octet-stream, not a page"),
        "{error}"
    );
    let error = call(&web, "fetch_page", json!({"url": fixture.url("/missing")}))
        .await
        .expect_err("404");
    assert!(error.ends_with("answered HTTP 404 Not Found"), "{error}");
    for (url, expected) in [
        ("ftp://127.0.0.1/file", "only http and https"),
        ("not a url", "is not a valid URL"),
    ] {
        let error = call(&web, "fetch_page", json!({"url": url}))
            .await
            .expect_err(url);
        assert!(error.contains(expected), "{error}");
    }
}

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit() {
    let fixture = search_api();
    let web5 = web(local(&fixture));
    // /redirect/3 → 2 → 1 → 0 → /page/hello: four hops.
    let page = call(
        &web5,
        "fetch_page",
        json!({"url": fixture.url("/redirect/3")}),
    )
    .await
    .expect("within the limit");
    assert_eq!(page["redirects"], 4);
    assert_eq!(page["final_url"], fixture.url("/page/hello"));
    assert_eq!(page["url"], fixture.url("/redirect/3"));
    assert_eq!(page["title"], "Hello & welcome");
    // Six hops.
    let error = call(
        &web5,
        "fetch_page",
        json!({"url": fixture.url("/redirect/5")}),
    )
    .await
    .expect_err("beyond the limit");
    assert!(
        error.contains("too many redirects") && error.contains("max_redirects = 5"),
        "{error}"
    );
    let web10 = web(WebSettings {
        max_redirects: 10,
        ..local(&fixture)
    });
    let page = call(
        &web10,
        "fetch_page",
        json!({"url": fixture.url("/redirect/5")}),
    )
    .await
    .expect("a higher limit");
    assert_eq!(page["redirects"], 6);
}

#[tokio::test]
async fn bodies_stop_at_max_bytes() {
    let fixture = search_api();
    let web = web(WebSettings {
        max_bytes: 10_000,
        ..local(&fixture)
    });
    let page = call(
        &web,
        "fetch_page",
        json!({"url": fixture.url("/big?kb=4096")}),
    )
    .await
    .expect("a truncated page");
    assert_eq!(page["bytes"], 10_000);
    assert_eq!(page["truncated"], true);
    assert_eq!(page["text"].as_str().expect("text").len(), 10_000);
    let small = call(&web, "fetch_page", json!({"url": fixture.url("/big?kb=4")}))
        .await
        .expect("a whole page");
    assert_eq!(
        (small["bytes"].clone(), small["truncated"].clone()),
        (json!(4096), json!(false))
    );
}

#[tokio::test]
async fn loopback_is_refused_unless_allowed() {
    let fixture = search_api();
    let guarded = web(WebSettings {
        allow_private: false,
        ..local(&fixture)
    });
    let port = fixture.address.rsplit(':').next().expect("a port");
    for (url, expected) in [
        (
            fixture.url("/page/hello"),
            "127.0.0.1 is a loopback address".to_owned(),
        ),
        (
            format!("http://localhost:{port}/page/hello"),
            "localhost resolves to".to_owned(),
        ),
        (
            format!("http://[::1]:{port}/"),
            "::1 is a loopback address".to_owned(),
        ),
        (format!("http://0.0.0.0:{port}/"), "unspecified".to_owned()),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            "IPv4-mapped 127.0.0.1".to_owned(),
        ),
    ] {
        let error = call(&guarded, "fetch_page", json!({"url": url}))
            .await
            .expect_err(&url);
        assert!(error.contains(&expected), "{url}: {error}");
        assert!(error.contains("allow_private"), "{error}");
    }
    // The refusal happens before any request reaches the fixture.
    assert_eq!(fixture.last().await, Value::Null);
    let allowed = web(local(&fixture));
    let page = call(
        &allowed,
        "fetch_page",
        json!({"url": format!("http://localhost:{port}/text")}),
    )
    .await
    .expect("allowed");
    assert_eq!(page["text"], "plain text\n  kept as is\n");
}

#[tokio::test]
async fn slow_pages_time_out() {
    let fixture = search_api();
    let web = web(WebSettings {
        timeout: Duration::from_millis(500),
        ..local(&fixture)
    });
    let started = Instant::now();
    let error = call(
        &web,
        "fetch_page",
        json!({"url": fixture.url("/slow?ms=5000")}),
    )
    .await
    .expect_err("too slow");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        error.contains("timed out") || error.contains("no answer in time"),
        "{error}"
    );
}

#[test]
fn tools_declare_deep_latency_and_honest_annotations() {
    let web = web(WebSettings {
        url: Some("http://127.0.0.1:1".to_owned()),
        ..WebSettings::default()
    });
    let tools = web.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search", "fetch_page"]);
    for tool in &tools {
        let latency = LatencyMeta::from_meta(tool.meta.as_ref()).expect("latency meta");
        assert_eq!(
            (latency.estimated_duration_ms, latency.max_duration_ms),
            (Some(700), Some(15_000)),
            "the bound is the configured timeout (default 15 s)"
        );
        assert_eq!(latency.idempotent, Some(true));
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true));
        assert_eq!(annotations.destructive_hint, Some(false));
        assert_eq!(annotations.idempotent_hint, Some(true));
        assert_eq!(annotations.open_world_hint, Some(true));
        assert!(tool.output_schema.is_some());
    }
}

#[test]
fn settings_are_checked_and_keys_never_shown() {
    let error = |settings: WebSettings| match Web::new(settings) {
        Ok(_) => panic!("accepted"),
        Err(error) => error.to_string(),
    };
    assert!(error(WebSettings::default()).contains("searxng backend needs url"));
    let brave = WebSettings {
        backend: SearchBackend::Brave,
        ..WebSettings::default()
    };
    assert!(error(brave.clone()).contains("needs api_key"));
    let json = WebSettings {
        backend: SearchBackend::Json {
            results_path: "items".into(),
            title: "title".into(),
            url: "url".into(),
            snippet: None,
            key_header: None,
        },
        url: Some("https://example.com/search".into()),
        ..WebSettings::default()
    };
    assert!(error(json).contains("has no {query}"));
    let secret = WebSettings {
        api_key: Some(SecretString("sk-very-secret".to_owned())),
        ..brave
    };
    let shown = format!("{secret:?}");
    assert!(
        !shown.contains("sk-very-secret") && shown.contains("Some(***)"),
        "{shown}"
    );
}
