//! [`Registry`]: search and look-up over the configured sources — local catalog files first,
//! then each MCP Registry (v0.1 API) in order — with a TTL cache of registry answers, since
//! the official registry promises no uptime.
//!
//! A source that fails is skipped with a warning while another answers; only when every
//! source fails is it an error, naming each. A registry is trusted only with its own answers:
//! its redirects are followed within its origin alone, and a look-up's answer must be the
//! server (and version) asked for. Catalog files are re-read on every call (they
//! are local and may be edited); registry answers are cached per (base, query, limit) and per
//! (base, name, version).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use url::Url;

use crate::error::RegistryError;
use crate::listing::{self, Listing, ParseFailure};

/// The official MCP Registry.
pub const OFFICIAL_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// How long one registry request may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// The most pages one search follows.
const MAX_PAGES: usize = 10;
/// The most one page may ask for (the official registry's maximum).
const MAX_PAGE_LIMIT: usize = 100;
/// The largest answer read.
const MAX_BODY: usize = 16 << 20;
/// The most redirects one request follows (each within the origin asked).
const MAX_REDIRECTS: usize = 5;

/// Where to look, and how long a registry's answer stays good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Registry base URLs (without `/v0.1`), asked in order.
    pub registries: Vec<String>,
    /// Local catalog files, asked before any registry, in order.
    pub catalogs: Vec<PathBuf>,
    /// How long a registry answer is reused; zero turns the cache off.
    pub ttl: Duration,
}

/// Finds servers in the configured sources. Cheap to clone: clones share the HTTP client and
/// the cache.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    sources: Sources,
    http: Result<reqwest::Client, String>,
    cache: Mutex<HashMap<CacheKey, (Instant, Cached)>>,
}

#[derive(PartialEq, Eq, Hash)]
enum CacheKey {
    Search {
        base: String,
        query: String,
        limit: usize,
    },
    Get {
        base: String,
        name: String,
        version: Option<String>,
    },
}

#[derive(Clone)]
enum Cached {
    Search(Vec<Listing>),
    Get(Box<Listing>),
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("sources", &self.inner.sources)
            .finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(sources: Sources) -> Self {
        let http = switchboard_tls::client_config(Default::default())
            .map_err(|error| error.to_string())
            .and_then(|tls| {
                reqwest::Client::builder()
                    .timeout(HTTP_TIMEOUT)
                    .user_agent(concat!("switchboard-registry/", env!("CARGO_PKG_VERSION")))
                    .use_preconfigured_tls(tls)
                    .redirect(same_origin_redirects())
                    .build()
                    .map_err(|error| format!("cannot build the HTTP client: {error}"))
            });
        Registry {
            inner: Arc::new(Inner {
                sources,
                http,
                cache: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The sources this registry asks.
    pub fn sources(&self) -> &Sources {
        &self.inner.sources
    }

    /// Entries matching `query` (case-insensitive substring of name, title or description;
    /// empty = all), active and latest only, local catalogs first then each registry in
    /// order, de-duplicated by name (first wins), at most `limit`. A registry that fails is
    /// skipped with a warning if another source answered; if every source failed, the error
    /// names each one.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<Listing>, RegistryError> {
        let mut found: Vec<Listing> = Vec::new();
        let mut names = HashSet::new();
        let mut failures = Vec::new();
        let mut answered = false;
        let needle = query.trim().to_lowercase();
        let mut add = |listings: Vec<Listing>, found: &mut Vec<Listing>| {
            for listing in listings {
                if found.len() < limit && names.insert(listing.server.name.clone()) {
                    found.push(listing);
                }
            }
        };
        if limit == 0 {
            return Ok(found);
        }
        for path in &self.inner.sources.catalogs {
            match read_catalog(path).await {
                Ok(listings) => {
                    answered = true;
                    let wanted = listing::latest_per_name(&listings)
                        .into_iter()
                        .filter(|l| l.is_active() && l.matches(&needle))
                        .cloned()
                        .collect();
                    add(wanted, &mut found);
                }
                Err(error) => failures.push(error),
            }
            if found.len() >= limit {
                return Ok(self.finish(found, failures));
            }
        }
        for base in &self.inner.sources.registries {
            match self.search_registry(base, query.trim(), limit).await {
                Ok(listings) => {
                    answered = true;
                    add(listings, &mut found);
                }
                Err(error) => failures.push(error),
            }
            if found.len() >= limit {
                break;
            }
        }
        if !answered && !failures.is_empty() {
            return Err(RegistryError::AllFailed(failures));
        }
        Ok(self.finish(found, failures))
    }

    fn finish(&self, found: Vec<Listing>, failures: Vec<RegistryError>) -> Vec<Listing> {
        for failure in failures {
            tracing::warn!(%failure, "registry source skipped");
        }
        found
    }

    /// One server by exact name; version `None` = latest (registry: `GET
    /// {base}/v0.1/servers/{name}/versions/latest` or `/{version}`; catalogs: matching name
    /// and version). Not found → [`RegistryError::NotFound`] naming every source asked. A
    /// non-active status → [`RegistryError::Inactive`].
    pub async fn get(&self, name: &str, version: Option<&str>) -> Result<Listing, RegistryError> {
        let mut asked = Vec::new();
        let mut failures = Vec::new();
        for path in &self.inner.sources.catalogs {
            match read_catalog(path).await {
                Ok(listings) => {
                    let same_name = listings.iter().filter(|l| l.server.name == name);
                    let found = match version {
                        Some(version) => {
                            same_name.into_iter().find(|l| l.server.version == version)
                        }
                        None => listing::latest(same_name),
                    };
                    if let Some(found) = found {
                        return active(found.clone());
                    }
                    asked.push(path.display().to_string());
                }
                Err(error) => {
                    asked.push(format!("{} ({error})", path.display()));
                    failures.push(error);
                }
            }
        }
        for base in &self.inner.sources.registries {
            match self.get_from_registry(base, name, version).await {
                Ok(Some(found)) => return active(found),
                Ok(None) => asked.push(base.clone()),
                Err(error) => {
                    asked.push(format!("{base} ({error})"));
                    failures.push(error);
                }
            }
        }
        if !failures.is_empty() && failures.len() == asked.len() {
            return Err(RegistryError::AllFailed(failures));
        }
        Err(RegistryError::NotFound {
            name: name.to_owned(),
            version: version.map(str::to_owned),
            asked,
        })
    }

    /// Up to `limit` active, latest listings of one registry, following its cursor.
    async fn search_registry(
        &self,
        base: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<Listing>, RegistryError> {
        let key = CacheKey::Search {
            base: base.to_owned(),
            query: query.to_owned(),
            limit,
        };
        if let Some(Cached::Search(listings)) = self.cached(&key) {
            return Ok(listings);
        }
        let mut listings: Vec<Listing> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = endpoint(base, &["v0.1", "servers"])?;
            {
                let mut pairs = url.query_pairs_mut();
                if !query.is_empty() {
                    pairs.append_pair("search", query);
                }
                pairs
                    .append_pair("version", "latest")
                    .append_pair("limit", &limit.min(MAX_PAGE_LIMIT).to_string());
                if let Some(cursor) = &cursor {
                    pairs.append_pair("cursor", cursor);
                }
            }
            let (status, body) = self.fetch(&url).await?;
            if !status.is_success() {
                return Err(status_error(&url, status, &body));
            }
            let page = listing::parse_page(&body).map_err(|failure| shape_error(&url, failure))?;
            for entry in page.servers {
                let listing = entry.into_listing(base);
                if listing.is_active()
                    && listing.is_latest
                    && !listings
                        .iter()
                        .any(|l| l.server.name == listing.server.name)
                {
                    listings.push(listing);
                }
            }
            cursor = page
                .metadata
                .and_then(|metadata| metadata.next_cursor)
                .filter(|cursor| !cursor.is_empty());
            if listings.len() >= limit || cursor.is_none() {
                break;
            }
        }
        listings.truncate(limit);
        self.store(key, Cached::Search(listings.clone()));
        Ok(listings)
    }

    /// One registry's entry for `name` at `version` (latest when `None`); `None` on 404.
    async fn get_from_registry(
        &self,
        base: &str,
        name: &str,
        version: Option<&str>,
    ) -> Result<Option<Listing>, RegistryError> {
        let key = CacheKey::Get {
            base: base.to_owned(),
            name: name.to_owned(),
            version: version.map(str::to_owned),
        };
        if let Some(Cached::Get(listing)) = self.cached(&key) {
            return Ok(Some(*listing));
        }
        let url = endpoint(
            base,
            &[
                "v0.1",
                "servers",
                name,
                "versions",
                version.unwrap_or("latest"),
            ],
        )?;
        let (status, body) = self.fetch(&url).await?;
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(status_error(&url, status, &body));
        }
        let listing = listing::parse_entry(&body)
            .map_err(|failure| shape_error(&url, failure))?
            .into_listing(base);
        answers_what_was_asked(&url, &listing, name, version)?;
        self.store(key, Cached::Get(Box::new(listing.clone())));
        Ok(Some(listing))
    }

    /// The status and body (at most [`MAX_BODY`]) of `GET url`.
    async fn fetch(&self, url: &Url) -> Result<(reqwest::StatusCode, Vec<u8>), RegistryError> {
        let unreachable = |message: String| RegistryError::Unreachable {
            url: url.to_string(),
            message,
        };
        let http = self
            .inner
            .http
            .as_ref()
            .map_err(|e| unreachable(e.clone()))?;
        tracing::debug!(%url, "registry request");
        let mut response = http
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| unreachable(describe(&error.without_url())))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| unreachable(describe(&error.without_url())))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(unreachable(format!(
                    "the answer is larger than {} MiB",
                    MAX_BODY >> 20
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }

    fn cached(&self, key: &CacheKey) -> Option<Cached> {
        let ttl = self.inner.sources.ttl;
        let cache = self.inner.cache.lock().ok()?;
        cache
            .get(key)
            .filter(|(at, _)| at.elapsed() < ttl)
            .map(|(_, cached)| cached.clone())
    }

    fn store(&self, key: CacheKey, value: Cached) {
        let ttl = self.inner.sources.ttl;
        if ttl.is_zero() {
            return;
        }
        if let Ok(mut cache) = self.inner.cache.lock() {
            cache.retain(|_, (at, _)| at.elapsed() < ttl);
            cache.insert(key, (Instant::now(), value));
        }
    }
}

/// Redirects are followed only within the origin asked (scheme, host and port), at most
/// [`MAX_REDIRECTS`]: a registry's answer decides what the gateway installs, so it may not be
/// handed to another host, nor from https down to http.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.stop();
        };
        let (from, to) = (first.origin(), attempt.url().origin());
        if from != to {
            let refusal = format!(
                "redirected from {} to {}: a registry may redirect only within its own origin",
                from.ascii_serialization(),
                to.ascii_serialization()
            );
            attempt.error(refusal)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// Whether a registry's answer to `GET …/servers/{name}/versions/{version}` is that server
/// (and that version, when one was asked): else [`RegistryError::Mismatch`].
fn answers_what_was_asked(
    url: &Url,
    listing: &Listing,
    name: &str,
    version: Option<&str>,
) -> Result<(), RegistryError> {
    let server = &listing.server;
    let wrong_version = version.is_some_and(|version| server.version != version);
    if server.name == name && !wrong_version {
        return Ok(());
    }
    Err(RegistryError::Mismatch {
        url: url.to_string(),
        asked: version.map_or_else(|| name.to_owned(), |v| format!("{name} version {v}")),
        answered: format!("{} version {}", server.name, server.version),
    })
}

/// `listing` if active, else [`RegistryError::Inactive`].
fn active(listing: Listing) -> Result<Listing, RegistryError> {
    if listing.is_active() {
        Ok(listing)
    } else {
        Err(RegistryError::Inactive {
            name: listing.server.name,
            version: listing.server.version,
            status: listing.status,
            source_name: listing.source,
        })
    }
}

async fn read_catalog(path: &Path) -> Result<Vec<Listing>, RegistryError> {
    let text =
        tokio::fs::read_to_string(path)
            .await
            .map_err(|source| RegistryError::CatalogRead {
                path: path.to_owned(),
                source,
            })?;
    listing::parse_catalog(path, &text)
}

/// `base` with `segments` appended, each percent-encoded as one segment (a `/` in a server
/// name becomes `%2F`).
fn endpoint(base: &str, segments: &[&str]) -> Result<Url, RegistryError> {
    let bad = |message: &str| RegistryError::BadUrl {
        base: base.to_owned(),
        message: message.to_owned(),
    };
    let mut url = Url::parse(base).map_err(|error| bad(&error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http and https are supported"));
    }
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| bad("it cannot be a base"))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

fn status_error(url: &Url, status: reqwest::StatusCode, body: &[u8]) -> RegistryError {
    let text = String::from_utf8_lossy(body);
    RegistryError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        body: text.chars().take(200).collect(),
    }
}

fn shape_error(url: &Url, failure: ParseFailure) -> RegistryError {
    RegistryError::Shape {
        url: url.to_string(),
        json_path: failure.json_path.clone(),
        message: failure.located(),
    }
}

/// A reqwest error with its causes (reqwest's own text alone often says only "error sending
/// request").
fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        format!("no answer within {} s", HTTP_TIMEOUT.as_secs())
    } else {
        error.to_string()
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
