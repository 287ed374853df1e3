//! `search`: one query to the configured backend — SearXNG's JSON API, Brave's Web Search
//! API, or any "search URL answering JSON" described by a [`SearchBackend::Json`] mapping —
//! and its results as `{title, url, snippet, source}`. Errors name the backend, the HTTP
//! status and what the body said; the API key never appears in them.

use reqwest::header::ACCEPT;
use reqwest::{Client, Response, Url};
use serde_json::Value;
use switchboard_core::config::SecretString;

use super::html::inline_text;
use super::{SearchBackend, WebSettings};

/// Brave's API, when `url` does not say otherwise.
pub const BRAVE_URL: &str = "https://api.search.brave.com";
/// Largest search answer read.
const MAX_ANSWER: usize = 4 << 20;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    pub snippet: String,
    /// The backend that found it ("searxng", "brave", "json").
    pub source: &'static str,
}

/// A backend's name as results and errors give it.
pub fn backend_name(backend: &SearchBackend) -> &'static str {
    match backend {
        SearchBackend::Searxng => "searxng",
        SearchBackend::Brave => "brave",
        SearchBackend::Json { .. } => "json",
    }
}

fn display_name(backend: &SearchBackend) -> &'static str {
    match backend {
        SearchBackend::Searxng => "SearXNG",
        SearchBackend::Brave => "Brave Search",
        SearchBackend::Json { .. } => "the JSON search API",
    }
}

/// Runs `query` on the configured backend, keeping at most `limit` results.
pub async fn search(
    client: &Client,
    settings: &WebSettings,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchResult>, String> {
    let backend = &settings.backend;
    let who = display_name(backend);
    let request = match backend {
        SearchBackend::Searxng => {
            let base = settings.url.as_deref().unwrap_or_default();
            let mut url = endpoint(base, "search")?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("format", "json");
            client.get(url)
        }
        SearchBackend::Brave => {
            let base = settings.url.as_deref().unwrap_or(BRAVE_URL);
            let mut url = endpoint(base, "res/v1/web/search")?;
            url.query_pairs_mut()
                .append_pair("q", query)
                .append_pair("count", &limit.to_string());
            client.get(url).header(
                "X-Subscription-Token",
                settings
                    .api_key
                    .as_ref()
                    .map(SecretString::expose)
                    .unwrap_or(""),
            )
        }
        SearchBackend::Json { key_header, .. } => {
            let template = settings.url.as_deref().unwrap_or_default();
            let url = fill_template(
                template,
                query,
                limit,
                settings.api_key.as_ref().map(SecretString::expose),
            )?;
            let request = client.get(url);
            match (key_header, &settings.api_key) {
                (Some(header), Some(key)) => request.header(header.as_str(), key.expose()),
                _ => request,
            }
        }
    };
    let response = request
        .header(ACCEPT, "application/json")
        .send()
        .await
        .map_err(|error| format!("{who} is unreachable: {}", describe(&error)))?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("no content type")
        .to_owned();
    let body = read_capped(response, MAX_ANSWER)
        .await
        .map_err(|error| format!("{who}'s answer broke off: {error}"))?;
    if !status.is_success() {
        return Err(format!(
            "{who} answered HTTP {status}: {}{}",
            error_detail(&body),
            hint(backend, status.as_u16())
        ));
    }
    let answer: Value = serde_json::from_slice(&body).map_err(|_| {
        format!(
            "{who} answered with something that is not JSON ({content_type}): {}",
            excerpt(&body)
        )
    })?;
    let (path, title, url, snippet) = match backend {
        SearchBackend::Searxng => ("results", "title", "url", Some("content")),
        SearchBackend::Brave => ("web.results", "title", "url", Some("description")),
        SearchBackend::Json {
            results_path,
            title,
            url,
            snippet,
            ..
        } => (
            results_path.as_str(),
            title.as_str(),
            url.as_str(),
            snippet.as_deref(),
        ),
    };
    let Some(items) = lookup(&answer, path).and_then(Value::as_array) else {
        if matches!(backend, SearchBackend::Brave) && answer.get("web").is_none() {
            // Brave leaves `web` out when nothing was found.
            return Ok(Vec::new());
        }
        return Err(format!(
            "{who}'s answer has no array at '{path}': {}",
            excerpt(&body)
        ));
    };
    let source = backend_name(backend);
    let text = |item: &Value, path: &str| {
        lookup(item, path)
            .and_then(Value::as_str)
            .map(inline_text)
            .unwrap_or_default()
    };
    Ok(items
        .iter()
        .filter_map(|item| {
            let link = lookup(item, url).and_then(Value::as_str)?.trim().to_owned();
            (!link.is_empty()).then(|| SearchResult {
                title: text(item, title),
                url: link,
                snippet: snippet.map(|path| text(item, path)).unwrap_or_default(),
                source,
            })
        })
        .take(limit)
        .collect())
}

/// `base` (which may have a path) joined with `path`.
fn endpoint(base: &str, path: &str) -> Result<Url, String> {
    let joined = format!("{}/{path}", base.trim_end_matches('/'));
    Url::parse(&joined).map_err(|error| format!("the search URL '{base}' is not valid: {error}"))
}

/// A JSON backend's URL template with `{query}`, `{limit}` and `{key}` filled in (the query
/// and key percent-encoded).
pub fn fill_template(
    template: &str,
    query: &str,
    limit: usize,
    key: Option<&str>,
) -> Result<Url, String> {
    let encode =
        |text: &str| -> String { url::form_urlencoded::byte_serialize(text.as_bytes()).collect() };
    let filled = template
        .replace("{query}", &encode(query))
        .replace("{limit}", &limit.to_string());
    let filled = match key {
        Some(key) => filled.replace("{key}", &encode(key)),
        None => filled,
    };
    Url::parse(&filled).map_err(|error| {
        format!("the search URL template '{template}' does not make a valid URL: {error}")
    })
}

/// The value at a dotted path (`web.results`, `link.href`, `items.0.name`); `""` is the
/// value itself.
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|step| !step.is_empty())
        .try_fold(value, |value, step| match value {
            Value::Array(items) => items.get(step.parse::<usize>().ok()?),
            _ => value.get(step),
        })
}

/// The body, stopping with an error past `max` bytes.
async fn read_capped(mut response: Response, max: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| describe(&error))? {
        if body.len() + chunk.len() > max {
            return Err(format!("it is larger than {} MiB", max >> 20));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// What an error body says: the message of a JSON error (`error.detail`, `error.message`,
/// `message`, `detail`, `error`), else the start of the text.
fn error_detail(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        for path in [
            "error.detail",
            "error.message",
            "message",
            "detail",
            "error",
        ] {
            if let Some(text) = lookup(&value, path).and_then(Value::as_str) {
                return text.to_owned();
            }
        }
    }
    excerpt(body)
}

fn hint(backend: &SearchBackend, status: u16) -> &'static str {
    match (backend, status) {
        (SearchBackend::Searxng, 403) => {
            " (is the json format enabled in the instance's settings.yml, search.formats?)"
        }
        (SearchBackend::Brave, 401 | 403) => " (check the api_key)",
        (SearchBackend::Brave, 422) => " (is the api_key valid for the Web Search API?)",
        (SearchBackend::Brave, 429) => " (rate limited: too many requests for the plan)",
        _ => "",
    }
}

/// The first 200 characters of a body, on one line.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = inline_text(&text);
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text,
    }
}

/// A reqwest error with its causes, without the URL (which may hold a key).
pub fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "no answer in time".to_owned();
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    if let Some(url) = error.url() {
        text = text
            .replace(&format!(" for url ({url})"), "")
            .replace(url.as_str(), "the URL");
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dotted_paths_reach_into_objects_and_arrays() {
        let value = json!({"data": {"items": [{"link": {"href": "u"}}]}});
        assert_eq!(lookup(&value, "data.items.0.link.href"), Some(&json!("u")));
        assert_eq!(lookup(&value, ""), Some(&value));
        assert_eq!(lookup(&value, "data.missing"), None);
        assert_eq!(lookup(&value, "data.items.x"), None);
    }

    #[test]
    fn templates_encode_the_query_and_the_key() {
        let url = fill_template(
            "https://s.example/api?q={query}&n={limit}&key={key}",
            "fish & chips?",
            3,
            Some("a/b c"),
        )
        .expect("valid");
        assert_eq!(
            url.as_str(),
            "https://s.example/api?q=fish+%26+chips%3F&n=3&key=a%2Fb+c"
        );
        let error = fill_template("not a url {query}", "x", 1, None).expect_err("invalid");
        assert!(error.contains("does not make a valid URL"), "{error}");
    }

    #[test]
    fn error_bodies_are_summarized() {
        let brave = br#"{"type":"ErrorResponse","error":{"detail":"The provided subscription token is invalid."}}"#;
        assert_eq!(
            error_detail(brave),
            "The provided subscription token is invalid."
        );
        assert_eq!(error_detail(b"<h1>403 Forbidden</h1>"), "403 Forbidden");
        assert_eq!(error_detail(b""), "(empty body)");
        let long = "x".repeat(500);
        assert_eq!(excerpt(long.as_bytes()).chars().count(), 201);
    }
}
