//! Servers: each one's state, era, transport, tools, generation and calls in flight, with
//! the last success and last error of real calls and the error rate of the last hour (from
//! the audit ledger's tally, not from probes); restart, enable and disable through the
//! gateway's one change operation (`Host::apply`, as the CLI and the admin endpoint do), and
//! test (a copy connected beside it, listed and judged, as `switchboard servers test`); and the
//! config file's located problems when a hand edit left it invalid.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use switchboard::{Change, ChangeRequest, ServerReport, Surface};
use switchboard_ledger::tally::ServerCalls;

use super::done;
use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::guard::form;
use crate::layout::{self, csrf_field, percent};
use crate::time::{ago, now_ms};

/// The window of the error rate.
const RATE_WINDOW_MS: i64 = 3_600_000;

pub(crate) async fn page(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Result<Markup, ConsoleError> {
    let host = &console.shared.host;
    let now = now_ms();
    let reports = host.status();
    let names: Vec<String> = reports.iter().map(|r| r.server.clone()).collect();
    let calls: HashMap<String, ServerCalls> = crate::ledger::tally(&console, move |tally| {
        names
            .into_iter()
            .map(|name| {
                let calls = tally.server(&name, now - RATE_WINDOW_MS);
                (name, calls)
            })
            .collect()
    })
    .await?
    .unwrap_or_default();
    let live = host.live_status();
    Ok(layout::page(
        &session,
        "/console/servers",
        "Servers",
        html! {
            @if let Some(error) = &live.file_error {
                section class="config-error" role="alert" {
                    h2 { "The config file is invalid" }
                    p { (error.file.display().to_string()) " failed validation; the gateway keeps running the configuration before it." }
                    ul { @for problem in &error.problems { li { code { (problem) } } } }
                }
            }
            @if !live.needs_restart.is_empty() {
                p class="notice" { "Changed settings that apply only after a restart: " (live.needs_restart.join(", ")) }
            }
            @if live.read_only { p class="notice" { "The configuration is read-only: changes are refused." } }
            table class="servers" {
                thead { tr {
                    th { "Server" } th { "State" } th { "Era" } th { "Transport" } th { "Tools" }
                    th { "Generation" } th { "In flight" } th { "Last success" } th { "Last error" }
                    th { "Errors (1 h)" } th { "Actions" }
                } }
                tbody {
                    @for report in &reports { (row(report, calls.get(&report.server), &session, now)) }
                }
            }
            @if reports.is_empty() { p class="empty" { "No servers are configured." } }
        },
    ))
}

fn row(report: &ServerReport, calls: Option<&ServerCalls>, session: &Session, now: i64) -> Markup {
    let rate = calls
        .filter(|c| c.calls > 0)
        .map(|c| c.failed as f64 / c.calls as f64);
    let action = format!("/console/servers/{}", crate::form::encode(&report.server));
    html! {
        tr class=(format!("state-{}", report.state)) data-server=(report.server) {
            th scope="row" { (report.server) }
            td { span class=(format!("state {}", report.state)) { (report.state) }
                @if let Some(error) = &report.error { div class="why" { (error) } }
                @if let Some(error) = &report.change_error { div class="why" { "last change failed: " (error) } }
                @for note in &report.notes { div class="note" { (note) } }
            }
            td { (report.era.as_deref().unwrap_or("—")) }
            td { (report.transport) }
            td class="num" { (report.tools) }
            td class="num" { (report.generation) }
            td class="num" { (report.in_flight) }
            td { @match calls.and_then(|c| c.last_ok_ms) {
                Some(at) => span title=(crate::time::utc(at)) { (ago(at, now)) },
                None => "—",
            } }
            td { @match calls.and_then(|c| c.last_error_ms) {
                Some(at) => {
                    span title=(crate::time::utc(at)) { (ago(at, now)) }
                    @if let Some(error) = calls.and_then(|c| c.last_error.as_deref()) { div class="why" { (error) } }
                },
                None => "—",
            } }
            td class="num" { (percent(rate)) @if let Some(c) = calls { " of " (c.calls) } }
            td class="actions" {
                form method="post" action=(action) {
                    (csrf_field(session))
                    button type="submit" name="action" value="test" { "Test" }
                    @if report.state == "disabled" {
                        button type="submit" name="action" value="enable" { "Enable" }
                    } @else {
                        button type="submit" name="action" value="restart" { "Restart" }
                        button type="submit" name="action" value="disable" class="danger" { "Disable" }
                    }
                }
            }
        }
    }
}

/// `POST /console/servers/{name}` with `action` = restart | enable | disable | test.
pub(crate) async fn act(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let fields = form(&body);
    if fields.get("action") == Some("test") {
        return test(&console, &session, name).await;
    }
    let change = match fields.get("action") {
        Some("restart") => Change::Restart { server: name },
        Some("enable") => Change::Enable { server: name },
        Some("disable") => Change::Disable { server: name },
        _ => {
            return Err(ConsoleError::Invalid(
                "action must be restart, enable or disable".to_owned(),
            ));
        }
    };
    let request = ChangeRequest {
        change,
        by: Surface::Admin,
        actor: Some(format!("{} (console)", session.operator)),
        base_revision: None,
        dry_run: false,
    };
    // On a task of its own: a browser that goes away mid-change must not cancel it half-way.
    let host = console.shared.host.clone();
    tokio::spawn(async move { host.apply(request).await })
        .await
        .map_err(|error| ConsoleError::Refused(format!("the change failed: {error}")))?
        .map_err(|error| ConsoleError::Refused(error.to_string()))?;
    Ok(done(&headers, "/console/servers"))
}

/// Connects a copy of the server beside the running one, lists its tools and judges them.
async fn test(
    console: &Console,
    session: &Session,
    name: String,
) -> Result<Response, ConsoleError> {
    let host = console.shared.host.clone();
    let report = tokio::spawn(async move { host.test_server(&name, None).await })
        .await
        .map_err(|error| ConsoleError::Refused(format!("the test failed: {error}")))?
        .map_err(|error| ConsoleError::Refused(error.to_string()))?;
    let page = layout::page(
        session,
        "/console/servers",
        &format!("Test of {}", report.server),
        html! {
            p class=(format!("verdict {}", report.verdict)) role="status" {
                "Verdict: " strong { (report.verdict) }
                @if let Some(error) = &report.error { " — " (error) }
            }
            dl class="facts" {
                dt { "Transport" } dd { (report.transport) }
                dt { "Era" } dd { (report.era.as_deref().unwrap_or("—")) " " (report.protocol_version.as_deref().unwrap_or("")) }
                dt { "Connected and listed in" } dd { (format!("{:.0} ms", report.connect_ms)) }
                dt { "Tools" } dd { (report.tools) " (" (report.listing_tokens) " tokens to list)" }
                dt { "Names" } dd { (report.tool_names.join(", ")) }
            }
            @if !report.problems.is_empty() {
                h2 { "Problems" }
                ul { @for problem in &report.problems { li { (problem) } } }
            }
            p { a href="/console/servers" { "← Back to the servers" } }
        },
    );
    Ok(page.into_response())
}
