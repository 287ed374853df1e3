//! `web`: search the web and read pages — `search(query, limit?)` on a configured backend
//! (SearXNG, Brave Search, or any search URL answering JSON, [`SearchBackend`]) and
//! `fetch_page(url)`, a page as readable text.
//!
//! Fetching is guarded against server-side request forgery: HTTP(S) only, every redirect hop
//! checked again, and no loopback, private, link-local, CGNAT, multicast or otherwise
//! non-public address unless `allow_private` ([`guard`]); the address checked is the address
//! connected to, so DNS rebinding cannot slip past. The fetch client never uses a proxy (a
//! proxy would resolve names itself, out of the guard's sight). Bodies stop at `max_bytes`,
//! every call at `timeout`. API keys come from the config (`${VAR}`), are sent only to the
//! search backend, and are never logged nor shown (`Debug` hides them).

mod definitions;
mod entities;
mod fetch;
pub mod guard;
mod html;
mod search;

use std::sync::Arc;
use std::time::Duration;
use switchboard_core::config::SecretString;

use futures::future::BoxFuture;
use reqwest::Client;
use reqwest::redirect::Policy;
use serde_json::{Map, Value, json};
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, ToolDefinition, ToolOutcome};

pub use definitions::{ESTIMATED_MS, max_duration_ms};
pub use fetch::Page;
pub use html::{Readable, readable};
pub use search::{BRAVE_URL, SearchResult};

/// Where `search` sends queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchBackend {
    /// A SearXNG instance (`url` = its base URL) with the JSON format enabled:
    /// `GET {url}/search?q=…&format=json` → `results[]` `{title, url, content}`.
    Searxng,
    /// The Brave Search API (`api_key` = the subscription token; `url` overrides
    /// `https://api.search.brave.com`): `GET {url}/res/v1/web/search?q=…&count=…` →
    /// `web.results[]` `{title, url, description}`.
    Brave,
    /// Any search URL answering JSON. `url` is a template in which `{query}` (required) and
    /// `{key}` are replaced, percent-encoded, by the query and `api_key`, and `{limit}` by the
    /// number of results wanted, e.g. `https://api.example.com/search?q={query}&n={limit}`.
    /// Paths are dotted (`data.items`, `link.href`, `items.0`; `""` is the value itself).
    Json {
        /// Path of the results array in the answer.
        results_path: String,
        /// Path of a result's title within the result.
        title: String,
        /// Path of a result's URL within the result (results without one are skipped).
        url: String,
        /// Path of a result's snippet within the result, if it has one.
        snippet: Option<String>,
        /// A header that carries `api_key` (e.g. `X-Api-Key`), if the API wants one.
        key_header: Option<String>,
    },
}

/// Settings of the web provider.
#[derive(Debug, Clone, PartialEq)]
pub struct WebSettings {
    pub backend: SearchBackend,
    /// The backend's base URL (SearXNG, Brave) or URL template (JSON).
    pub url: Option<String>,
    /// Printed as `***` by `Debug`.
    pub api_key: Option<SecretString>,
    /// Let `fetch_page` reach loopback, private and other non-public addresses.
    pub allow_private: bool,
    /// Most body bytes `fetch_page` reads (default 2 MiB).
    pub max_bytes: u64,
    /// Longest a call may take, redirects included (default 15 s).
    pub timeout: Duration,
    /// Most redirects `fetch_page` follows (default 5).
    pub max_redirects: u32,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            backend: SearchBackend::Searxng,
            url: None,
            api_key: None,
            allow_private: false,
            max_bytes: 2 << 20,
            timeout: Duration::from_secs(15),
            max_redirects: 5,
        }
    }
}

/// Why the web provider cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("web: {0}")]
    Settings(String),
    #[error("web: cannot build an HTTP client: {0}")]
    Client(String),
}

/// The web provider.
pub struct Web {
    settings: WebSettings,
    /// For the search backend: the operator's endpoint, which may be local.
    search_client: Client,
    /// For pages: no proxy, no automatic redirects, names resolved by the guard.
    fetch_client: Client,
}

const USER_AGENT: &str = concat!("Switchboard/", env!("CARGO_PKG_VERSION"), " (web built-in)");

impl Web {
    /// Checks the settings and builds the HTTP clients.
    pub fn new(settings: WebSettings) -> Result<Self, WebError> {
        let bad = |text: String| Err(WebError::Settings(text));
        let has_key = settings
            .api_key
            .as_ref()
            .map(SecretString::expose)
            .is_some_and(|k| !k.is_empty());
        match (&settings.backend, settings.url.as_deref()) {
            (SearchBackend::Searxng, None) => {
                return bad("the searxng backend needs url, the instance's base URL".into());
            }
            (SearchBackend::Brave, _) if !has_key => {
                return bad(
                    "the brave backend needs api_key, e.g. api_key = \"${BRAVE_API_KEY}\"".into(),
                );
            }
            (SearchBackend::Json { .. }, None) => {
                return bad("the json backend needs url, a template with {query}".into());
            }
            (SearchBackend::Json { title, url, .. }, Some(template)) => {
                if !template.contains("{query}") {
                    return bad(format!(
                        "the json backend's url '{template}' has no {{query}}"
                    ));
                }
                if title.is_empty() || url.is_empty() {
                    return bad(
                        "the json backend needs the paths of a result's title and url".into(),
                    );
                }
                search::fill_template(template, "q", 1, Some("k")).map_err(WebError::Settings)?;
            }
            (_, Some(base)) => {
                let parsed = reqwest::Url::parse(base)
                    .map_err(|error| WebError::Settings(format!("url '{base}': {error}")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return bad(format!("url '{base}' is not an http or https URL"));
                }
            }
            (SearchBackend::Brave, None) => {}
        }
        if settings.max_bytes == 0 || settings.timeout.is_zero() {
            return bad("max_bytes and timeout must be more than zero".into());
        }
        let client_error = |error: reqwest::Error| WebError::Client(error.to_string());
        let tls = switchboard_tls::client_config(Default::default())
            .map_err(|error| WebError::Client(error.to_string()))?;
        let search_client = Client::builder()
            .use_preconfigured_tls(tls.clone())
            .user_agent(USER_AGENT)
            .timeout(settings.timeout)
            .redirect(Policy::limited(settings.max_redirects as usize))
            .build()
            .map_err(client_error)?;
        let fetch_client = Client::builder()
            .use_preconfigured_tls(tls)
            .user_agent(USER_AGENT)
            .timeout(settings.timeout)
            .redirect(Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(guard::GuardedResolver {
                allow_private: settings.allow_private,
            }))
            .build()
            .map_err(client_error)?;
        Ok(Self {
            settings,
            search_client,
            fetch_client,
        })
    }

    async fn search(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or("'query' must be a non-empty string")?;
        let limit = match arguments.get("limit") {
            None | Some(Value::Null) => definitions::DEFAULT_LIMIT,
            Some(value) => value
                .as_u64()
                .filter(|n| (1..=definitions::MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    format!(
                        "'limit' must be a number from 1 to {}",
                        definitions::MAX_LIMIT
                    )
                })?,
        };
        let results =
            search::search(&self.search_client, &self.settings, query, limit as usize).await?;
        let backend = search::backend_name(&self.settings.backend);
        let mut text = format!("{} results for \"{query}\" ({backend})", results.len());
        for (rank, result) in results.iter().enumerate() {
            text.push_str(&format!(
                "\n\n{}. {}\n   {}",
                rank + 1,
                result.title,
                result.url
            ));
            if !result.snippet.is_empty() {
                text.push_str(&format!("\n   {}", result.snippet));
            }
        }
        let results: Vec<Value> = results
            .into_iter()
            .map(|r| json!({"title": r.title, "url": r.url, "snippet": r.snippet, "source": r.source}))
            .collect();
        Ok(ToolOutcome::structured_with_text(
            json!({"query": query, "backend": backend, "results": results}),
            text,
        ))
    }

    async fn fetch_page(&self, arguments: &Map<String, Value>) -> Result<ToolOutcome, String> {
        let url = arguments
            .get("url")
            .and_then(Value::as_str)
            .ok_or("'url' must be a string")?;
        let page = fetch::fetch(&self.fetch_client, &self.settings, url).await?;
        let mut text = String::new();
        if let Some(title) = &page.title {
            text.push_str(&format!("# {title}\n"));
        }
        text.push_str(&format!(
            "({}, {})\n\n{}",
            page.final_url, page.content_type, page.text
        ));
        if page.truncated {
            text.push_str(&format!(
                "\n\n[truncated: only the first {} bytes were read]",
                page.bytes
            ));
        }
        Ok(ToolOutcome::structured_with_text(
            json!({
                "url": page.url,
                "final_url": page.final_url,
                "status": page.status,
                "content_type": page.content_type,
                "title": page.title,
                "text": page.text,
                "bytes": page.bytes,
                "truncated": page.truncated,
                "redirects": page.redirects,
            }),
            text,
        ))
    }
}

impl ToolProvider for Web {
    fn name(&self) -> &str {
        "web"
    }

    fn description(&self) -> &str {
        "Web search and page reading"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        definitions::all(self.settings.timeout)
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let work = async {
                match tool {
                    "search" => self.search(&arguments).await,
                    "fetch_page" => self.fetch_page(&arguments).await,
                    other => Err(format!("web has no tool '{other}'")),
                }
            };
            match tokio::time::timeout(self.settings.timeout, work).await {
                Ok(result) => result.map_err(ToolError::new),
                Err(_) => Err(ToolError::new(format!(
                    "{tool} timed out: no answer within {}",
                    humantime::format_duration(self.settings.timeout)
                ))),
            }
        })
    }
}
