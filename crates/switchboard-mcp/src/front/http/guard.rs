//! Who may use the endpoint. The DNS-rebinding guard: an `Origin` that is not loopback or
//! allowed, or (when checked) a `Host` that is not, gets 403. Bearer tokens, when required —
//! static ones, OAuth access tokens, or either: 401 with `WWW-Authenticate` without a valid
//! one (with OAuth, pointing to the resource's metadata), 403 `insufficient_scope` for a
//! token without a needed scope, 403 when an agent's endpoint is called with another
//! agent's token. Tokens are read from the `Authorization` header only.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::resource::{ResourceUrls, challenge};
use super::{HttpOptions, plain};
use crate::oauth::TokenError;
use switchboard_core::loopback::is_loopback_host;
use switchboard_core::{Principal, SubjectToken};

/// Maps bearer tokens to agents.
pub trait Authenticator: Send + Sync + std::fmt::Debug {
    /// The agent a token belongs to, or `None` for an unknown token.
    fn agent_for(&self, token: &str) -> Option<String>;
}

/// The agent a request acts for: from its bearer token when tokens are required (401
/// without a valid one; 403 when an agent endpoint names another agent), else the agent of
/// the endpoint, else the front's own. A token is a static one (`auth`) or an OAuth access
/// token (`oauth`), and is read from the `Authorization` header only: a request that carries
/// one in its query string is refused whatever its header says.
pub(super) async fn authenticate(
    options: &HttpOptions,
    headers: &HeaderMap,
    uri: &Uri,
    endpoint_agent: Option<&str>,
) -> Result<Authenticated, Response> {
    check_origin(options, headers)?;
    if options.auth.is_none() && options.oauth.is_none() {
        return Ok(Authenticated {
            agent: endpoint_agent.map(str::to_owned),
            principal: None,
        });
    }
    let refuse = Refuse::new(options, headers, uri);
    if token_in_query(uri) {
        return Err(refuse.bad_request(
            "a token is accepted only in the Authorization header, never in the URL",
        ));
    }
    // The scheme's name is case-insensitive (RFC 9110 §11.1).
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let Some(token) = token else {
        let why = if options.oauth.is_some() {
            "a bearer token is required (an OAuth access token from the authorization server)"
        } else {
            "a bearer token is required (switchboard token create AGENT)"
        };
        return Err(refuse.unauthorized(None, why));
    };
    let known = options.auth.as_ref().and_then(|auth| auth.agent_for(token));
    let mut principal = None;
    let agent = match (known, &options.oauth, &refuse.urls) {
        (Some(agent), _, _) => agent,
        // Boxed: verifying a token is rare next to the calls it admits, and its future held
        // inline made every request's future (moved whole as each request starts) ~7 kB larger.
        (None, Some(verifier), Some(urls)) => {
            match Box::pin(verifier.verify(token, &urls.audiences())).await {
                Ok(identity) => {
                    principal = Some(Arc::new(Principal {
                        subject: identity.subject,
                        client_id: identity.client_id,
                        scopes: identity.scopes,
                        token: Some(SubjectToken::new(token)),
                    }));
                    identity.agent
                }
                Err(error) if error.is_forbidden() => return Err(refuse.forbidden(&error)),
                Err(error) => {
                    // The gateway's own trouble (the issuer's keys or introspection out of
                    // reach) is logged whole; the caller hears only that, not where or why.
                    let why = match &error {
                        TokenError::Keys(_) | TokenError::Introspection(_) => {
                            tracing::warn!(%error, "an access token could not be checked");
                            "the token cannot be checked now (the authorization server's keys are unavailable)".to_owned()
                        }
                        _ => error.to_string(),
                    };
                    return Err(refuse.unauthorized(Some("invalid_token"), &why));
                }
            }
        }
        _ => {
            return Err(refuse.unauthorized(Some("invalid_token"), "the bearer token is not valid"));
        }
    };
    if let Some(wanted) = endpoint_agent
        && wanted != agent
    {
        return Err(plain(
            StatusCode::FORBIDDEN,
            &format!("this token belongs to agent '{agent}', not '{wanted}'"),
        ));
    }
    Ok(Authenticated {
        agent: Some(agent),
        principal,
    })
}

/// Who a request acts for.
pub(super) struct Authenticated {
    /// The agent (none: the front's own).
    pub agent: Option<String>,
    /// Who its OAuth token named, for the ledger.
    pub principal: Option<Arc<Principal>>,
}

/// Whether the query string carries an OAuth token (RFC 6750 §2.3's `access_token`).
fn token_in_query(uri: &Uri) -> bool {
    uri.query().is_some_and(|query| {
        query.split('&').any(|pair| {
            pair.split('=')
                .next()
                .is_some_and(|name| name.eq_ignore_ascii_case("access_token"))
        })
    })
}

/// The refusals of one request, with the challenge its endpoint calls for.
struct Refuse<'o> {
    options: &'o HttpOptions,
    /// The endpoint's resource URLs, when OAuth is on.
    urls: Option<ResourceUrls>,
}

impl<'o> Refuse<'o> {
    fn new(options: &'o HttpOptions, headers: &HeaderMap, uri: &Uri) -> Self {
        let urls = options
            .oauth
            .as_ref()
            .and_then(|verifier| ResourceUrls::of(verifier, headers, uri.path()));
        Self { options, urls }
    }

    fn scopes(&self) -> &[String] {
        self.options
            .oauth
            .as_ref()
            .map_or(&[], |verifier| verifier.config().scopes.as_slice())
    }

    /// 401: no token, or one that is not good (`error` is RFC 6750's code, none without a
    /// token).
    fn unauthorized(&self, error: Option<&str>, why: &str) -> Response {
        self.challenged(StatusCode::UNAUTHORIZED, error, why)
    }

    /// 400 with `invalid_request` (RFC 6750 §3.1): a request the token rules forbid, such as
    /// a token in the URL.
    fn bad_request(&self, why: &str) -> Response {
        self.challenged(StatusCode::BAD_REQUEST, Some("invalid_request"), why)
    }

    fn challenged(&self, status: StatusCode, error: Option<&str>, why: &str) -> Response {
        let challenge = match &self.urls {
            Some(urls) => challenge(urls, self.scopes(), error.map(|code| (code, why))),
            None => HeaderValue::from_static("Bearer realm=\"switchboard\""),
        };
        (
            status,
            [
                (header::WWW_AUTHENTICATE, challenge),
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                ),
            ],
            why.to_owned(),
        )
            .into_response()
    }

    /// 403: a good token that does not allow this — a missing scope (step-up: the challenge
    /// names the scopes needed) or an identity that is no agent here.
    fn forbidden(&self, error: &TokenError) -> Response {
        let mut response = plain(StatusCode::FORBIDDEN, &error.to_string());
        if let (TokenError::InsufficientScope(_), Some(urls)) = (error, &self.urls) {
            let value = challenge(
                urls,
                self.scopes(),
                Some(("insufficient_scope", &error.to_string())),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The DNS-rebinding guard.
fn check_origin(options: &HttpOptions, headers: &HeaderMap) -> Result<(), Response> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let allowed = options
            .allowed_origins
            .iter()
            .any(|allowed| allowed == origin)
            || is_loopback_origin(origin);
        if !allowed {
            return Err(plain(
                StatusCode::FORBIDDEN,
                &format!("origin '{origin}' is not allowed"),
            ));
        }
    }
    if options.check_host {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let name = host_name(host);
        let allowed =
            is_loopback_host(name) || options.allowed_hosts.iter().any(|allowed| allowed == name);
        if !allowed {
            return Err(plain(
                StatusCode::FORBIDDEN,
                &format!("host '{host}' is not allowed"),
            ));
        }
    }
    Ok(())
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some((_, rest)) = origin.split_once("://") else {
        return false;
    };
    is_loopback_host(host_name(rest))
}

/// The host part of `host[:port]` or `[v6]:port`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_origins() {
        assert!(is_loopback_origin("http://localhost:3000"));
        assert!(is_loopback_origin("http://127.0.0.1"));
        assert!(is_loopback_origin("http://[::1]:8080"));
        assert!(!is_loopback_origin("https://evil.example"));
        assert!(!is_loopback_origin("http://localhost.evil.example"));
        assert!(is_loopback_origin("http://127.1.2.3:8080"));
        assert!(!is_loopback_origin("http://127.0.0.1.evil.example:8080"));
        assert!(!is_loopback_origin("http://127.evil.example"));
        assert!(!is_loopback_host("127.0.0.1.nip.io"));
        assert!(!is_loopback_host("[::1]"));
        assert!(!is_loopback_host(""));
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:8080"), "::1");
    }
}
