//! Who may use the endpoint. The DNS-rebinding guard: an `Origin` that is not loopback or
//! allowed, or (when checked) a `Host` that is not, gets 403. Bearer tokens, when required:
//! 401 with `WWW-Authenticate` without a valid one, 403 when an agent's endpoint is called
//! with another agent's token.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{HttpOptions, plain};

/// Maps bearer tokens to agents.
pub trait Authenticator: Send + Sync + std::fmt::Debug {
    /// The agent a token belongs to, or `None` for an unknown token.
    fn agent_for(&self, token: &str) -> Option<String>;
}

/// The agent a request acts for: from its bearer token when tokens are required (401
/// without a valid one; 403 when an agent endpoint names another agent), else the agent of
/// the endpoint, else the front's own.
pub(super) fn authenticate(
    options: &HttpOptions,
    headers: &HeaderMap,
    endpoint_agent: Option<&str>,
) -> Result<Option<String>, Response> {
    check_origin(options, headers)?;
    let Some(auth) = &options.auth else {
        return Ok(endpoint_agent.map(str::to_owned));
    };
    let unauthorized = |why: &str| {
        (
            StatusCode::UNAUTHORIZED,
            [
                (header::WWW_AUTHENTICATE, "Bearer realm=\"switchboard\""),
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            ],
            why.to_owned(),
        )
            .into_response()
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            value
                .strip_prefix("Bearer ")
                .or_else(|| value.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(token) = token else {
        return Err(unauthorized(
            "a bearer token is required (switchboard token create AGENT)",
        ));
    };
    let Some(agent) = auth.agent_for(token) else {
        return Err(unauthorized("the bearer token is not valid"));
    };
    if let Some(wanted) = endpoint_agent
        && wanted != agent
    {
        return Err(plain(
            StatusCode::FORBIDDEN,
            &format!("this token belongs to agent '{agent}', not '{wanted}'"),
        ));
    }
    Ok(Some(agent))
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
            is_loopback_name(name) || options.allowed_hosts.iter().any(|allowed| allowed == name);
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
    is_loopback_name(host_name(rest))
}

/// The host part of `host[:port]` or `[v6]:port`.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1") || name.starts_with("127.")
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
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:8080"), "::1");
    }
}
