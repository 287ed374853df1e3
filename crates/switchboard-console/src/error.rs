//! Why a console request was not answered with its page: each variant is whose problem it
//! is, and carries the status the browser gets. Answers are a small HTML page (the text is
//! escaped like every other value), and never name more than the request already knew.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

/// A refused or failed console request.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No session cookie, or one that expired: the browser goes to the sign-in page.
    #[error("sign in first")]
    SignedOut,
    /// The same, for the page's script (it sent its CSRF header): 401, not a redirect that
    /// `fetch` would follow to a sign-in page and take for success.
    #[error("your console session ended: reload the page and sign in again")]
    SessionEnded,
    /// A POST whose CSRF token is missing or not the session's.
    #[error("the form's CSRF token is missing or not this session's: reload the page")]
    Csrf,
    /// A `Host` that is not loopback or the listener's own address (DNS rebinding), or an
    /// `Origin` that is not this console's.
    #[error("{0}")]
    Foreign(String),
    /// The admin token (or sign-in code) given was wrong, used or expired.
    #[error("{0}")]
    BadCredentials(String),
    /// A form or query the console cannot read.
    #[error("{0}")]
    Invalid(String),
    /// What was asked for does not exist (an unknown server, tool, row or approval).
    #[error("{0}")]
    NotFound(String),
    /// The gateway refused an operation (a change it could not apply).
    #[error("{0}")]
    Refused(String),
    /// Reading the ledger failed.
    #[error("the audit ledger: {0}")]
    Ledger(String),
}

impl ConsoleError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::SignedOut | Self::SessionEnded | Self::BadCredentials(_) => {
                StatusCode::UNAUTHORIZED
            }
            Self::Csrf | Self::Foreign(_) => StatusCode::FORBIDDEN,
            Self::Invalid(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Refused(_) => StatusCode::CONFLICT,
            Self::Ledger(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<switchboard_ledger::LedgerError> for ConsoleError {
    fn from(error: switchboard_ledger::LedgerError) -> Self {
        Self::Ledger(error.to_string())
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        if matches!(self, Self::SignedOut) {
            return (
                StatusCode::SEE_OTHER,
                [("location", "/console/sign-in")],
                "sign in first",
            )
                .into_response();
        }
        let status = self.status();
        let body = html! {
            (maud::DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "Switchboard console: " (status.as_u16()) }
                    link rel="stylesheet" href="/console/static/console.css";
                }
                body {
                    main class="error" {
                        h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                        p class="problem" { (self.to_string()) }
                        p { a href="/console/" { "Back to the console" } }
                    }
                }
            }
        };
        (status, body).into_response()
    }
}
