//! What every console request passes before its page: the `Host` and `Origin` checks and
//! the security headers ([`same_origin`], on every route), then the session and, on a POST,
//! its CSRF token ([`signed_in`], on every route but sign-in and the static files).
//!
//! DNS rebinding: a page on another site that resolves its own name to 127.0.0.1 reaches
//! this listener with its own name in `Host`, so only loopback names and the listener's own
//! address are taken. A cross-site form or fetch carries its own `Origin`, so a POST must
//! carry this console's (the code-minting API, which a command calls with the admin token
//! and no browser, is the one POST without one).

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::Console;
use crate::auth::{self, Session, same_secret};
use crate::error::ConsoleError;
use crate::form::Fields;

/// The most a console form may send.
const FORM_LIMIT: usize = 64 * 1024;

/// The Content-Security-Policy of every answer: nothing but this origin's own files, no
/// inline script or style, never in a frame.
pub const CSP: &str =
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// Whether `host` (a `Host` header's value) names this listener: a loopback name or its own
/// address, with its port.
fn known_host(host: &str, listen: std::net::SocketAddr) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(':') || name.starts_with('[') => {
            (name, port.parse::<u16>().ok())
        }
        _ => (host, Some(80)),
    };
    if port != Some(listen.port()) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    switchboard_core::loopback::is_loopback_host(name)
        || name.parse::<std::net::IpAddr>().ok() == Some(listen.ip())
}

fn check_origin(
    headers: &HeaderMap,
    method: &Method,
    path: &str,
    listen: std::net::SocketAddr,
) -> Result<(), ConsoleError> {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| ConsoleError::Foreign("the request names no Host".to_owned()))?;
    if !known_host(host, listen) {
        return Err(ConsoleError::Foreign(format!(
            "the console answers only on loopback (http://127.0.0.1:{}), not as {host}",
            listen.port()
        )));
    }
    // A change, or a costly read (the export, a chain check, a live stream), that a page of
    // another site or port asked for (an `<img>` of the export): browsers say so. Pages
    // themselves stay reachable by links (a sign-in link opened from a file included).
    let costly = *method != Method::GET
        || path.starts_with("/console/audit/export")
        || path.starts_with("/console/audit/verify")
        || path.ends_with("/live");
    if let Some(site) = headers
        .get("sec-fetch-site")
        .map(|value| value.to_str().unwrap_or(""))
        && costly
        && !matches!(site, "same-origin" | "none")
    {
        return Err(ConsoleError::Foreign(format!(
            "a request from another site or port ({site}) is refused: open the console itself"
        )));
    }
    match headers
        .get(header::ORIGIN)
        .map(|value| value.to_str().unwrap_or(""))
    {
        Some(origin) if origin != format!("http://{host}") => Err(ConsoleError::Foreign(format!(
            "requests from {origin} are refused: open the console itself"
        ))),
        None if *method == Method::POST && path != "/console/codes" => Err(ConsoleError::Foreign(
            "a change must come from the console's own page (no Origin was sent)".to_owned(),
        )),
        _ => Ok(()),
    }
}

fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Not `no-referrer`: under it a browser sends `Origin: null` with a plain form's POST
    // (Fetch, "append a request Origin header"), which the origin check must refuse — every
    // form without script (Sign out among them) would fail. `same-origin` sends the
    // referrer and the origin to the console alone.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Refuses foreign hosts and origins; adds the security headers to every answer.
pub(crate) async fn same_origin(
    State(console): State<Console>,
    request: Request,
    next: Next,
) -> Response {
    let checked = check_origin(
        request.headers(),
        request.method(),
        request.uri().path(),
        console.shared.listen,
    );
    secure(match checked {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    })
}

/// Requires a live session (else the sign-in page), and on a POST its CSRF token in the
/// `x-csrf-token` header or the form's `_csrf` field; hands the [`Session`] to the page.
pub(crate) async fn signed_in(
    State(console): State<Console>,
    request: Request,
    next: Next,
) -> Result<Response, ConsoleError> {
    let from_script = request.headers().contains_key("x-csrf-token");
    let session = auth::cookie_of(request.headers())
        .and_then(|id| console.shared.sessions.get(id))
        .ok_or(if from_script {
            ConsoleError::SessionEnded
        } else {
            ConsoleError::SignedOut
        })?;
    let (mut parts, body) = request.into_parts();
    let body = if parts.method == Method::POST {
        let bytes = axum::body::to_bytes(body, FORM_LIMIT)
            .await
            .map_err(|_| ConsoleError::Invalid("the form is too large".to_owned()))?;
        let header_token = parts
            .headers
            .get("x-csrf-token")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let given = header_token.or_else(|| Fields::of_body(&bytes).owned("_csrf"));
        if !given.is_some_and(|given| same_secret(&given, &session.csrf)) {
            return Err(ConsoleError::Csrf);
        }
        Body::from(bytes)
    } else {
        body
    };
    parts.extensions.insert::<Session>(session);
    Ok(next.run(Request::from_parts(parts, body)).await)
}

/// The body of a POST that [`signed_in`] already read.
pub(crate) fn form(body: &Bytes) -> Fields {
    Fields::of_body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_and_the_listeners_address_with_its_port_are_hosts() {
        let listen: std::net::SocketAddr = "127.0.0.1:7070".parse().expect("addr");
        for host in [
            "127.0.0.1:7070",
            "localhost:7070",
            "[::1]:7070",
            "127.0.0.2:7070",
        ] {
            assert!(known_host(host, listen), "{host}");
        }
        for host in [
            "evil.example:7070",
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost.evil.example:7070",
            "7070",
        ] {
            assert!(!known_host(host, listen), "{host}");
        }
    }
}
