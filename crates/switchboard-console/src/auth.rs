//! Signing in: the admin token, given once, becomes a session.
//!
//! - `GET /console/sign-in` — the form; `POST /console/sign-in` with `token` (the admin
//!   token) and `operator` (a name for the ledger);
//! - `POST /console/codes` with `Authorization: Bearer ADMIN_TOKEN` and `{"operator"?}` →
//!   `{"code", "path"}`: a single-use code valid for [`CODE_LIFETIME`], which
//!   `switchboard console` prints as a link; `GET /console/sign-in/{code}` redeems it;
//! - `POST /console/sign-out`.
//!
//! A session is a random 256-bit id in a cookie named for the port the console is reached on
//! ([`cookie_name`]; `HttpOnly; SameSite=Strict; Path=/console`), held here with its operator, its CSRF token and its expiry
//! ([`SESSION_LIFETIME`]); only the server knows what an id means, and nothing about it is in
//! the cookie.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde_json::json;

use crate::error::ConsoleError;
use crate::form::Fields;
use crate::{Console, layout};

/// The session cookie's name, and the stem of a port's ([`cookie_name`]).
pub(crate) const COOKIE: &str = "switchboard_console";

/// The session cookie's name for the console a request reached: `switchboard_console_PORT`
/// for the port in its `Host` (browsers keep cookies by host, not port, so two gateways on
/// one machine would otherwise sign each other out), [`COOKIE`] without one.
pub(crate) fn cookie_name(headers: &HeaderMap) -> String {
    let port = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .and_then(|host| host.rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| {
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
        });
    match port {
        Some(port) => format!("{COOKIE}_{port}"),
        None => COOKIE.to_owned(),
    }
}
/// How long a session lasts.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3_600);
/// How long a sign-in code can be redeemed.
pub const CODE_LIFETIME: Duration = Duration::from_secs(120);
/// Sessions held at once: the oldest goes when a new one would pass it.
const MAX_SESSIONS: usize = 64;

/// A signed-in browser.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) operator: String,
    pub(crate) csrf: String,
    expires: Instant,
}

struct Code {
    operator: String,
    expires: Instant,
}

/// Sessions and sign-in codes, by their random ids.
#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<HashMap<String, Session>>,
    codes: Mutex<HashMap<String, Code>>,
}

/// 256 random bits as 64 hex digits.
fn random_id() -> String {
    let bytes: [u8; 32] = rand::random();
    switchboard_core::hex::encode(&bytes)
}

pub(crate) use switchboard::tokens::same_secret;

/// An operator's name as the ledger will show it: printable, at most 64 characters.
fn operator_name(given: Option<&str>) -> String {
    let name: String = given
        .unwrap_or("operator")
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect();
    if name.trim().is_empty() {
        "operator".to_owned()
    } else {
        name.trim().to_owned()
    }
}

impl Sessions {
    /// Starts a session; returns its id.
    fn start(&self, operator: String) -> String {
        let id = random_id();
        let now = Instant::now();
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.retain(|_, session| session.expires > now);
            if sessions.len() >= MAX_SESSIONS
                && let Some(oldest) = sessions
                    .iter()
                    .min_by_key(|(_, session)| session.expires)
                    .map(|(id, _)| id.clone())
            {
                sessions.remove(&oldest);
            }
            sessions.insert(
                id.clone(),
                Session {
                    operator,
                    csrf: random_id(),
                    expires: now + SESSION_LIFETIME,
                },
            );
        }
        id
    }

    /// The live session of this id.
    pub(crate) fn get(&self, id: &str) -> Option<Session> {
        let sessions = self.sessions.lock().ok()?;
        sessions
            .get(id)
            .filter(|session| session.expires > Instant::now())
            .cloned()
    }

    fn end(&self, id: &str) {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(id);
        }
    }

    pub(crate) fn mint_code(&self, operator: &str) -> String {
        let code = random_id();
        let now = Instant::now();
        if let Ok(mut codes) = self.codes.lock() {
            codes.retain(|_, code| code.expires > now);
            codes.insert(
                code.clone(),
                Code {
                    operator: operator_name(Some(operator)),
                    expires: now + CODE_LIFETIME,
                },
            );
        }
        code
    }

    /// Takes a code out (it works once) and starts its session.
    fn redeem(&self, code: &str) -> Option<String> {
        let taken = self.codes.lock().ok()?.remove(code)?;
        (taken.expires > Instant::now()).then(|| self.start(taken.operator))
    }
}

/// The session id the request's cookie of this console ([`cookie_name`]) carries.
pub(crate) fn cookie_of(headers: &HeaderMap) -> Option<&str> {
    let wanted = cookie_name(headers);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value.trim())
}

/// Signs the browser in with a new session and sends it to the approvals page.
fn signed_in(headers: &HeaderMap, id: &str) -> Response {
    let cookie = format!(
        "{}={id}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={}",
        cookie_name(headers),
        SESSION_LIFETIME.as_secs()
    );
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/approvals")],
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

pub(crate) async fn form() -> Response {
    sign_in_page(None).into_response()
}

fn sign_in_page(problem: Option<&str>) -> maud::Markup {
    layout::bare(
        "Sign in",
        html! {
            main class="sign-in" {
                h1 { "Switchboard console" }
                @if let Some(problem) = problem { p class="problem" role="alert" { (problem) } }
                form method="post" action="/console/sign-in" {
                    label { "Admin token" input type="password" name="token" autocomplete="off" required; }
                    label { "Your name (goes to the ledger with your decisions)"
                        input type="text" name="operator" maxlength="64" placeholder="operator"; }
                    button type="submit" { "Sign in" }
                }
                p class="hint" {
                    "The token is in the gateway's admin file; "
                    code { "switchboard console" } " prints a one-time sign-in link instead."
                }
            }
        },
    )
}

pub(crate) async fn sign_in(
    State(console): State<Console>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fields = Fields::of_body(&body);
    let given = fields.get("token").unwrap_or("");
    if !same_secret(given, &console.shared.admin_token) {
        return (
            StatusCode::UNAUTHORIZED,
            sign_in_page(Some("That is not this gateway's admin token.")),
        )
            .into_response();
    }
    let id = console
        .shared
        .sessions
        .start(operator_name(fields.get("operator")));
    signed_in(&headers, &id)
}

pub(crate) async fn redeem(
    State(console): State<Console>,
    headers: HeaderMap,
    Path(code): Path<String>,
) -> Result<Response, ConsoleError> {
    let id = console.shared.sessions.redeem(&code).ok_or_else(|| {
        ConsoleError::BadCredentials(
            "this sign-in link was used already or has expired: run `switchboard console` again"
                .to_owned(),
        )
    })?;
    Ok(signed_in(&headers, &id))
}

pub(crate) async fn sign_out(State(console): State<Console>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie_of(&headers) {
        console.shared.sessions.end(id);
    }
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/sign-in")],
    )
        .into_response();
    let expired = format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0",
        cookie_name(&headers)
    );
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /console/codes`: the admin API's side of `switchboard console`.
pub(crate) async fn mint(
    State(console): State<Console>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or("");
    if !same_secret(bearer, &console.shared.admin_token) {
        return Err(ConsoleError::BadCredentials(
            "admin token required".to_owned(),
        ));
    }
    let operator = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|body| body.get("operator")?.as_str().map(str::to_owned));
    let code = console.mint_code(&operator_name(operator.as_deref()));
    Ok(Json(json!({
        "code": code,
        "path": format!("/console/sign-in/{code}"),
        "expires_in_s": CODE_LIFETIME.as_secs(),
    }))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_and_sessions_are_random_and_expire_with_the_server() {
        let sessions = Sessions::default();
        let code = sessions.mint_code("alice");
        assert_eq!(code.len(), 64);
        let id = sessions.redeem(&code).expect("first use");
        assert!(sessions.redeem(&code).is_none(), "single use");
        let session = sessions.get(&id).expect("live");
        assert_eq!(session.operator, "alice");
        assert_eq!(session.csrf.len(), 64);
        assert_ne!(session.csrf, id);
        sessions.end(&id);
        assert!(sessions.get(&id).is_none());
        assert!(sessions.get("forged").is_none());
    }

    #[test]
    fn the_cookie_is_read_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; switchboard_console=abc ; b=2"),
        );
        assert_eq!(cookie_of(&headers), Some("abc"));
        // Each port's console has a cookie of its own: another port's is not this one's.
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7001"));
        assert_eq!(cookie_of(&headers), None);
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static(
                "switchboard_console_7002=other; switchboard_console_7001=mine",
            ),
        );
        assert_eq!(cookie_of(&headers), Some("mine"));
        headers.insert(header::HOST, HeaderValue::from_static("[::1]:7002"));
        assert_eq!(cookie_of(&headers), Some("other"));
        headers.insert(header::HOST, HeaderValue::from_static("localhost"));
        assert_eq!(cookie_name(&headers), "switchboard_console");
        assert_eq!(operator_name(Some("  \u{7}bob ")), "bob");
        assert_eq!(operator_name(Some("")), "operator");
    }
}
