//! The front as an OAuth 2.1 protected resource: its URLs, its metadata document (RFC 9728)
//! at `/.well-known/oauth-protected-resource` + the endpoint's path, and the
//! `WWW-Authenticate` challenges (RFC 6750) that point clients to it.
//!
//! Every endpoint is a resource of its own (`/mcp`, `/mcp/tiers/fast`, `/mcp/agents/x`),
//! with its own metadata; a token for the gateway's `/mcp` is good at all of them. The
//! resource URL is `[auth] resource` (the canonical URL of `/mcp`) with the endpoint's path
//! after `/mcp` added, or `http://<Host>` + the path when none is configured.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::{HttpState, plain};
use crate::oauth::OAuthVerifier;

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The URLs of one endpoint as a protected resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ResourceUrls {
    /// The endpoint's own resource URL.
    pub endpoint: String,
    /// The gateway's `/mcp` resource URL.
    pub base: String,
    /// Where the endpoint's metadata document is.
    pub metadata: String,
}

impl ResourceUrls {
    /// For a request to `path` (`/mcp…`); `None` for a path outside `/mcp`.
    pub fn of(verifier: &OAuthVerifier, headers: &HeaderMap, path: &str) -> Option<Self> {
        let suffix = match path.strip_prefix("/mcp") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_end_matches('/'),
            _ => return None,
        };
        let base = match &verifier.config().resource {
            Some(resource) => resource.trim_end_matches('/').to_owned(),
            // Only with `audience` configured (the verifier refuses neither): the Host then
            // names the metadata's URLs, never what a token must be for.
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|host| host.to_str().ok())
                    .filter(|host| !host.is_empty() && host.bytes().all(|b| b.is_ascii_graphic()))
                    .unwrap_or("localhost");
                format!("http://{host}/mcp")
            }
        };
        let (origin, base_path) = split_origin(&base);
        Some(Self {
            endpoint: format!("{base}{suffix}"),
            metadata: format!("{origin}{WELL_KNOWN}{base_path}{suffix}"),
            base,
        })
    }

    /// The resource URLs a token's `aud` may name here.
    pub fn audiences(&self) -> Vec<String> {
        if self.endpoint == self.base {
            vec![self.base.clone()]
        } else {
            vec![self.endpoint.clone(), self.base.clone()]
        }
    }
}

/// `scheme://authority` and the path of a URL.
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    match url[after_scheme..].find('/') {
        Some(slash) => url.split_at(after_scheme + slash),
        None => (url, ""),
    }
}

/// The metadata routes, added to the front's router when OAuth is on.
pub(super) fn routes() -> Router<Arc<HttpState>> {
    Router::new()
        .route(WELL_KNOWN, get(metadata))
        .route(&format!("{WELL_KNOWN}/mcp"), get(metadata))
        .route(&format!("{WELL_KNOWN}/mcp/{{*rest}}"), get(metadata))
}

/// The metadata document of the endpoint named by the path after the well-known prefix
/// (the bare prefix: `/mcp`'s).
async fn metadata(State(state): State<Arc<HttpState>>, uri: Uri, headers: HeaderMap) -> Response {
    let Some(verifier) = &state.options.oauth else {
        return plain(StatusCode::NOT_FOUND, "no OAuth here");
    };
    let rest = uri.path().strip_prefix(WELL_KNOWN).unwrap_or("");
    let endpoint = if rest.is_empty() { "/mcp" } else { rest };
    if !is_endpoint(endpoint) {
        return plain(StatusCode::NOT_FOUND, "no such endpoint");
    }
    let Some(urls) = ResourceUrls::of(verifier, &headers, endpoint) else {
        return plain(StatusCode::NOT_FOUND, "no such endpoint");
    };
    let config = verifier.config();
    let document = json!({
        "resource": urls.endpoint,
        "authorization_servers": [config.issuer],
        "scopes_supported": verifier.scopes_supported(),
        "bearer_methods_supported": ["header"],
        "resource_signing_alg_values_supported": config.algorithms,
        "resource_name": "Switchboard",
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        document.to_string(),
    )
        .into_response()
}

/// Whether `path` is one of the front's MCP endpoints.
fn is_endpoint(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["mcp"] => true,
        ["mcp", "agents" | "tiers", name] => !name.is_empty(),
        _ => false,
    }
}

/// A quoted-string parameter's value, with what cannot appear in one dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '"' && *c != '\\' && (' '..='~').contains(c))
        .collect()
}

/// A `WWW-Authenticate: Bearer …` challenge; `error` is `(code, description)`.
pub(super) fn challenge(
    urls: &ResourceUrls,
    scopes: &[String],
    error: Option<(&str, &str)>,
) -> HeaderValue {
    let mut value = format!("Bearer resource_metadata=\"{}\"", quoted(&urls.metadata));
    if !scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    if let Some((code, description)) = error {
        value.push_str(&format!(
            ", error=\"{code}\", error_description=\"{}\"",
            quoted(description)
        ));
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_metadata_paths() {
        assert_eq!(
            split_origin("https://gw.example/base/mcp"),
            ("https://gw.example", "/base/mcp")
        );
        assert_eq!(split_origin("http://h:1"), ("http://h:1", ""));
        assert!(is_endpoint("/mcp") && is_endpoint("/mcp/tiers/fast"));
        assert!(!is_endpoint("/mcp/tiers") && !is_endpoint("/other") && !is_endpoint("/mcp/x/y"));
        assert_eq!(quoted("a\"b\\c\nd"), "abcd");
    }
}
