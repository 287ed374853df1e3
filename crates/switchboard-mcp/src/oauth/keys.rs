//! The issuer's signing keys: its JWK set, found at the configured `jwks_uri` or through its
//! metadata (RFC 8414 `/.well-known/oauth-authorization-server`, then OpenID Connect's
//! `/.well-known/openid-configuration`), fetched with the upstreams' HTTP client.
//!
//! The set is cached for [`MAX_AGE`]. A token whose `kid` is not in it (a rotated key) fetches
//! it again, but never more often than every [`REFETCH_EVERY`], so a stream of tokens with
//! made-up `kid`s cannot turn the gateway against its issuer. Concurrent fetches are one fetch.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;
use tokio::time::Instant;

use super::TokenError;
use super::jwt::{Jwk, JwkSet, key_fits};

/// How long a fetched key set is used before it is fetched again.
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// The shortest time between two fetches.
pub const REFETCH_EVERY: Duration = Duration::from_secs(30);
/// The largest metadata or key set document read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// The longest a fetch of the issuer's metadata and key set may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Cached {
    keys: Arc<Vec<Jwk>>,
    fetched_at: Option<Instant>,
    /// The key set's URL, once configured or discovered.
    jwks_uri: Option<String>,
}

pub struct KeyCache {
    issuer: String,
    cached: Mutex<Cached>,
    fetching: tokio::sync::Mutex<()>,
}

impl KeyCache {
    pub fn new(issuer: String, jwks_uri: Option<String>) -> Self {
        Self {
            issuer,
            cached: Mutex::new(Cached {
                jwks_uri,
                ..Cached::default()
            }),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// A cache that starts with `keys`, fetched at `now` (fetched again as any other).
    pub fn preloaded(
        issuer: String,
        jwks_uri: Option<String>,
        keys: Vec<Jwk>,
        now: Instant,
    ) -> Self {
        let cache = Self::new(issuer, jwks_uri);
        if let Ok(mut cached) = cache.cached.lock() {
            cached.keys = Arc::new(keys);
            cached.fetched_at = Some(now);
        }
        cache
    }

    fn snapshot(&self) -> (Arc<Vec<Jwk>>, Option<Instant>) {
        self.cached
            .lock()
            .map(|cached| (cached.keys.clone(), cached.fetched_at))
            .unwrap_or_default()
    }

    /// The keys that may have signed a token with this `kid` and `alg`.
    pub async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: &str,
        now: Instant,
    ) -> Result<Vec<Jwk>, TokenError> {
        let (keys, fetched_at) = self.snapshot();
        let fresh = fetched_at.is_some_and(|at| now.duration_since(at) < MAX_AGE);
        let found = select(&keys, kid, alg);
        if fresh && !found.is_empty() {
            return Ok(found);
        }
        let may_fetch =
            !fresh || fetched_at.is_none_or(|at| now.duration_since(at) >= REFETCH_EVERY);
        if !may_fetch {
            return Err(TokenError::UnknownKey);
        }
        let _one_fetch = self.fetching.lock().await;
        let (keys, fetched_again) = self.snapshot();
        if fetched_again != fetched_at {
            // Another request fetched while this one waited.
            let found = select(&keys, kid, alg);
            return if found.is_empty() {
                Err(TokenError::UnknownKey)
            } else {
                Ok(found)
            };
        }
        // Bounded: the lock above holds every request with an unknown key behind this one,
        // and an issuer that accepts the connection and then stalls must not hold them long.
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch())
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no answer within {} s from the issuer's metadata or key set",
                    FETCH_TIMEOUT.as_secs()
                ))
            });
        let mut cached = self
            .cached
            .lock()
            .map_err(|_| TokenError::Keys("the key cache is poisoned".to_owned()))?;
        cached.fetched_at = Some(now);
        match fetched {
            Ok(keys) => {
                cached.keys = Arc::new(keys);
                let found = select(&cached.keys, kid, alg);
                if found.is_empty() {
                    Err(TokenError::UnknownKey)
                } else {
                    Ok(found)
                }
            }
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "cannot fetch the issuer's keys");
                // Stale keys still verify what they signed until the issuer answers again.
                if found.is_empty() {
                    Err(TokenError::Keys(error))
                } else {
                    Ok(found)
                }
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<Jwk>, String> {
        let known = self
            .cached
            .lock()
            .ok()
            .and_then(|cached| cached.jwks_uri.clone());
        let uri = match known {
            Some(uri) => uri,
            None => {
                let uri = discover(&self.issuer).await?;
                if let Ok(mut cached) = self.cached.lock() {
                    cached.jwks_uri = Some(uri.clone());
                }
                uri
            }
        };
        let set: JwkSet = serde_json::from_slice(&get(&uri).await?)
            .map_err(|error| format!("{uri} is not a JWK set: {error}"))?;
        Ok(set.usable())
    }
}

/// The keys of `keys` that fit `alg` and, when the token names one, its `kid`.
fn select(keys: &[Jwk], kid: Option<&str>, alg: &str) -> Vec<Jwk> {
    keys.iter()
        .filter(|key| kid.is_none_or(|kid| key.kid.as_deref() == Some(kid)))
        .filter(|key| key_fits(key, alg))
        .cloned()
        .collect()
}

async fn get(url: &str) -> Result<Vec<u8>, String> {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let (status, body) =
        crate::upstream::http::request(Method::GET, url, headers, Bytes::new(), MAX_DOCUMENT_BYTES)
            .await?;
    if status != StatusCode::OK {
        return Err(format!("{url} answered {status}"));
    }
    Ok(body)
}

/// The metadata URLs of an issuer, in the order they are tried.
fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (origin, path) = match trimmed.split_once("://") {
        Some((scheme, rest)) => match rest.find('/') {
            Some(slash) => (format!("{scheme}://{}", &rest[..slash]), &rest[slash..]),
            None => (trimmed.to_owned(), ""),
        },
        None => (trimmed.to_owned(), ""),
    };
    let mut urls = vec![format!(
        "{origin}/.well-known/oauth-authorization-server{path}"
    )];
    urls.push(format!("{trimmed}/.well-known/openid-configuration"));
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    }
    urls
}

/// The issuer's `jwks_uri`, from the first metadata document that names this issuer.
async fn discover(issuer: &str) -> Result<String, String> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let document = match get(&url).await {
            Ok(body) => body,
            Err(error) => {
                tried.push(error);
                continue;
            }
        };
        let Ok(metadata) = serde_json::from_slice::<Value>(&document) else {
            tried.push(format!("{url} is not JSON"));
            continue;
        };
        if metadata.get("issuer").and_then(Value::as_str) != Some(issuer) {
            tried.push(format!("{url} names another issuer"));
            continue;
        }
        if let Some(uri) = metadata.get("jwks_uri").and_then(Value::as_str) {
            if switchboard_core::config::plain_http_off_loopback(uri).is_some() {
                return Err(format!(
                    "{url} names the key set {uri}, which is not https:// (plain http:// \
                     only on loopback): anyone on the path could hand the gateway keys of \
                     their own"
                ));
            }
            return Ok(uri.to_owned());
        }
        tried.push(format!("{url} has no jwks_uri"));
    }
    Err(format!("no metadata with a jwks_uri: {}", tried.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc_8414_then_openid() {
        assert_eq!(
            metadata_urls("https://as.example"),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example/tenant"),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant",
                "https://as.example/tenant/.well-known/openid-configuration",
                "https://as.example/.well-known/openid-configuration/tenant"
            ]
        );
    }

    /// An issuer on 127.0.0.1 with RFC 8414 metadata and a key set the test can rotate;
    /// counts the key set's fetches.
    async fn issuer(
        keys: Arc<Mutex<Value>>,
        fetches: Arc<std::sync::atomic::AtomicUsize>,
    ) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let issuer = format!("http://{}/tenant", listener.local_addr().expect("address"));
        let metadata = serde_json::json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")});
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server/tenant",
                axum::routing::get(move || async move { axum::Json(metadata) }),
            )
            .route(
                "/tenant/jwks",
                axum::routing::get(move || async move {
                    fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let set = keys.lock().map(|keys| keys.clone()).unwrap_or_default();
                    axum::Json(set)
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        issuer
    }

    /// Metadata that names a key set over plain HTTP off loopback is refused: the keys could
    /// come from anyone on the path.
    #[tokio::test]
    async fn a_discovered_key_set_over_plain_http_is_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let metadata = serde_json::json!({"issuer": issuer, "jwks_uri": "http://as.example/jwks"});
        let app = axum::Router::new().route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || async move { axum::Json(metadata) }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let cache = KeyCache::new(issuer, None);
        let refused = cache.keys_for(Some("k"), "RS256", Instant::now()).await;
        assert!(
            matches!(&refused, Err(TokenError::Keys(why))
                if why.contains("http://as.example/jwks") && why.contains("not https://")),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn keys_are_discovered_cached_and_fetched_again_after_a_rotation() {
        let key = |kid: &str| serde_json::json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": "AAAA"}]});
        let keys = Arc::new(Mutex::new(key("old")));
        let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let issuer = issuer(keys.clone(), fetches.clone()).await;
        let cache = KeyCache::new(issuer, None);
        let count = || fetches.load(std::sync::atomic::Ordering::SeqCst);
        let start = Instant::now();
        let found = cache.keys_for(Some("old"), "EdDSA", start).await;
        assert_eq!(
            found.map(|keys| keys.len()),
            Ok(1),
            "discovered through the metadata"
        );
        let again = cache.keys_for(Some("old"), "EdDSA", start).await;
        assert!(again.is_ok() && count() == 1, "cached");
        // The issuer rotates its key: the new kid is fetched for, but not at once again.
        if let Ok(mut keys) = keys.lock() {
            *keys = key("new");
        }
        let soon = start + Duration::from_secs(1);
        assert!(matches!(
            cache.keys_for(Some("new"), "EdDSA", soon).await,
            Err(TokenError::UnknownKey)
        ));
        assert_eq!(
            count(),
            1,
            "within 30 s of the last fetch nothing is fetched"
        );
        let later = start + REFETCH_EVERY;
        let rotated = cache.keys_for(Some("new"), "EdDSA", later).await;
        assert_eq!(rotated.map(|keys| keys.len()), Ok(1));
        assert_eq!(count(), 2);
        assert!(
            matches!(
                cache.keys_for(Some("new"), "RS256", later).await,
                Err(TokenError::UnknownKey)
            ),
            "an Ed25519 key is no RSA key"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_kid_fetches_at_most_every_refetch_period() {
        // Nothing listens on this port: every fetch fails fast, and each one is counted by
        // its effect on `fetched_at`.
        let cache = KeyCache::new(
            "https://as".to_owned(),
            Some("http://127.0.0.1:9/jwks".to_owned()),
        );
        let start = Instant::now();
        let first = cache.keys_for(Some("k"), "RS256", start).await;
        assert!(matches!(first, Err(TokenError::Keys(_))), "{first:?}");
        let soon = cache
            .keys_for(Some("k"), "RS256", start + Duration::from_secs(5))
            .await;
        assert!(
            matches!(soon, Err(TokenError::UnknownKey)),
            "no second fetch within 30 s: {soon:?}"
        );
        assert_eq!(cache.snapshot().1, Some(start));
        let later = start + REFETCH_EVERY;
        let _ = cache.keys_for(Some("k"), "RS256", later).await;
        assert_eq!(cache.snapshot().1, Some(later), "fetched again after 30 s");
    }

    /// An issuer that accepts the connection and never answers holds the fetch (and every
    /// request waiting behind its lock) for [`FETCH_TIMEOUT`] at most.
    #[tokio::test(start_paused = true)]
    async fn a_stalled_key_fetch_gives_up_in_time() {
        let (address, stall) = crate::oauth::stalled_server().await;
        let cache = KeyCache::new(
            "https://as".to_owned(),
            Some(format!("http://{address}/jwks")),
        );
        let started = tokio::time::Instant::now();
        let outcome = cache.keys_for(Some("k"), "RS256", Instant::now()).await;
        assert!(
            matches!(&outcome, Err(TokenError::Keys(why)) if why.contains("no answer within")),
            "{outcome:?}"
        );
        assert!(started.elapsed() <= FETCH_TIMEOUT + Duration::from_secs(1));
        stall.abort();
    }
}
