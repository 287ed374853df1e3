//! The console's pages, one module each; [`home`] sends the browser to the first page,
//! approvals. Each page renders from the gateway's own state (the Host, its approvals queue)
//! and the audit ledger, read-only.

pub(crate) mod agents;
pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod servers;
pub(crate) mod tokens;
pub(crate) mod tools;
pub(crate) mod work;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(crate) async fn home() -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, "/console/approvals")],
    )
        .into_response()
}

/// Whether the request came from the console's script (which then wants a short answer,
/// not a page to follow).
pub(crate) fn from_script(headers: &HeaderMap) -> bool {
    headers.contains_key("x-csrf-token")
}

/// The answer to a change: to the script, `204`; to a plain form, back to `to`.
pub(crate) fn done(headers: &HeaderMap, to: &str) -> Response {
    if from_script(headers) {
        return StatusCode::NO_CONTENT.into_response();
    }
    (StatusCode::SEE_OTHER, [(header::LOCATION, to.to_owned())]).into_response()
}
