//! `search-api`: web search APIs and web pages on 127.0.0.1, for the `web` built-in's tests.
//! Results are derived from the query, so every answer is deterministic.
//!
//! Search endpoints:
//! - `GET /search?q=…&format=json` — SearXNG: `{"query", "results": [{title, url, content,
//!   engine}]}` (8 results); any other format is 403, as SearXNG answers when JSON is off.
//! - `GET /res/v1/web/search?q=…&count=…` — Brave: needs `X-Subscription-Token` equal to
//!   `--key` (else 401 with Brave's error body); `{"web": {"results": [{title, url,
//!   description}]}}`, `count` results (default 10, at most 20).
//! - `GET /json?q=…&n=…` — a generic JSON API: `{"data": {"items": [{"name", "link":
//!   {"href"}, "summary"}]}}`, `n` items (default 5).
//!
//! Pages: `/page/hello` (HTML with a script, a style, entities and a list), `/redirect/N`
//! (302 to `/redirect/N-1`; `/redirect/0` → `/page/hello`), `/redirect-to?url=U` (302 to U),
//! `/big?kb=N` (N KiB of text, default 4096), `/binary` (application/octet-stream),
//! `/text` (text/plain), `/data.json`, `/slow?ms=N` (answers after N ms, default 5000),
//! `/missing` (404). `GET /last` answers the last other request.

use serde_json::{Value, json};

use crate::api::{ApiRequest, ApiResponse, fnv, serve as serve_api};

const HELLO: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Hello &amp; welcome</title>
  <style>body { color: red; } .hidden { display: none }</style>
  <script>var secret = "<p>not text</p>"; if (a < b) { alert(1); }</script>
</head>
<body>
  <!-- a comment that must vanish -->
  <h1>Hello,&nbsp;world</h1>
  <p>Fish &amp; chips cost &pound;5 &mdash; &#8364;6 or &#x24;7.</p>
  <noscript>Please enable JavaScript</noscript>
  <svg width="10" height="10"><text>vector text</text></svg>
  <ul><li>first item</li><li>second   item</li></ul>
  <p>Tags &lt;b&gt; stay   literal<br>after a break</p>
  <script type="module">console.log("gone")</script>
</body>
</html>
"#;

/// Serves until killed; returns an exit code when it cannot bind.
pub fn serve(port: u16, key: Option<String>) -> i32 {
    serve_api("search-api", port, move |request| {
        answer(request, key.as_deref())
    })
}

fn answer(request: &ApiRequest, key: Option<&str>) -> ApiResponse {
    let query = request.param("q").unwrap_or("");
    match request.path.as_str() {
        "/search" => {
            if request.param("format") != Some("json") {
                return ApiResponse::new(403, "text/html", "<h1>403 Forbidden</h1>");
            }
            let results: Vec<Value> = (1..=8)
                .map(|i| {
                    json!({
                        "title": format!("{query} result {i}"),
                        "url": result_url(query, i),
                        "content": format!("Snippet {i} about {query}."),
                        "engine": "fixture",
                    })
                })
                .collect();
            ApiResponse::json(
                200,
                &json!({"query": query, "number_of_results": 8, "results": results}),
            )
        }
        "/res/v1/web/search" => {
            let token = request.header("x-subscription-token");
            let valid = match key {
                Some(key) => token == Some(key),
                None => token.is_some_and(|t| !t.is_empty()),
            };
            if !valid {
                let error = json!({"type": "ErrorResponse", "error": {
                    "code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401,
                    "detail": "The provided subscription token is invalid."}});
                return ApiResponse::json(401, &error);
            }
            let count = number(request.param("count"), 10).min(20);
            let results: Vec<Value> = (1..=count)
                .map(|i| {
                    json!({
                        "title": format!("{query} brave {i}"),
                        "url": result_url(query, i),
                        "description": format!("Brave says <strong>{query}</strong> {i}."),
                    })
                })
                .collect();
            ApiResponse::json(
                200,
                &json!({"type": "search", "query": {"original": query},
                        "web": {"type": "search", "results": results}}),
            )
        }
        "/json" => {
            let n = number(request.param("n"), 5);
            let items: Vec<Value> = (1..=n)
                .map(|i| {
                    json!({
                        "name": format!("{query} item {i}"),
                        "link": {"href": result_url(query, i)},
                        "summary": format!("Summary {i} of {query}."),
                    })
                })
                .collect();
            ApiResponse::json(200, &json!({"data": {"items": items}}))
        }
        "/page/hello" => ApiResponse::new(200, "text/html; charset=utf-8", HELLO),
        "/text" => ApiResponse::new(200, "text/plain", "plain text\n  kept as is\n"),
        "/data.json" => ApiResponse::json(200, &json!({"ok": true, "items": [1, 2, 3]})),
        "/binary" => ApiResponse::new(
            200,
            "application/octet-stream",
            (0u8..=255).collect::<Vec<u8>>(),
        ),
        "/big" => {
            let kib = number(request.param("kb"), 4096);
            let line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstu\n";
            let mut body = String::with_capacity(kib * 1024);
            while body.len() < kib * 1024 {
                body.push_str(line);
            }
            body.truncate(kib * 1024);
            ApiResponse::new(200, "text/plain; charset=utf-8", body)
        }
        "/slow" => {
            let ms = number(request.param("ms"), 5000);
            std::thread::sleep(std::time::Duration::from_millis(ms as u64));
            ApiResponse::new(200, "text/html", "<p>finally</p>")
        }
        "/redirect-to" => redirect(request.param("url").unwrap_or("/page/hello")),
        path => match path
            .strip_prefix("/redirect/")
            .and_then(|n| n.parse::<u32>().ok())
        {
            Some(0) => redirect("/page/hello"),
            Some(n) => redirect(&format!("/redirect/{}", n - 1)),
            None => ApiResponse::new(404, "text/html", "<h1>Not Found</h1>"),
        },
    }
}

fn redirect(location: &str) -> ApiResponse {
    ApiResponse::new(302, "text/html", "").with_header(format!("Location: {location}"))
}

/// A result URL that depends on the query and the rank.
fn result_url(query: &str, rank: usize) -> String {
    format!("https://example.com/{:08x}/{rank}", fnv(query) as u32)
}

fn number(text: Option<&str>, default: usize) -> usize {
    text.and_then(|t| t.parse().ok()).unwrap_or(default)
}
