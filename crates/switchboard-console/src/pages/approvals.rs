//! Approvals, the console's first page: the calls waiting for an operator — agent, tool,
//! server, tier, redacted arguments, the rule that asked, how long each has waited and the
//! time left before it is denied — updated live over server-sent events; approve, deny with
//! a reason, or approve for N minutes for this agent and tool; and the grants in force.
//!
//! A decision goes to `PendingApprovals` with the signed-in operator's name, so the waiting
//! call proceeds at once and its ledger row says who decided.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use maud::{Markup, html};
use switchboard::{AnswerError, Grant, PendingApproval, PendingApprovals};

use super::done;
use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::guard::form;
use crate::layout::{self, csrf_field};
use crate::time::{now_ms, span, utc};

/// The longest grant the form offers, in minutes (a day).
const MAX_GRANT_MINUTES: u64 = 24 * 60;

/// Who decided, as the ledger records it.
fn decider(session: &Session) -> String {
    format!("{} (console)", session.operator)
}

fn arguments_of(approval: &PendingApproval) -> String {
    serde_json::to_string_pretty(&switchboard_ledger::redact::redact(&approval.arguments))
        .unwrap_or_default()
}

/// The live part of the page: the queue and the grants.
pub(crate) fn queue(pending: Option<&PendingApprovals>, session: &Session) -> Markup {
    let Some(pending) = pending else {
        return html! { p class="empty" { "Approvals are not set up on this gateway: no agent or tool has an approval rule." } };
    };
    let now = now_ms();
    let waiting = pending.list();
    let grants = pending.grants();
    html! {
        @if waiting.is_empty() {
            p class="empty" id="none-waiting" { "No calls are waiting for approval." }
        } @else {
            p class="count" { (waiting.len()) " waiting" }
        }
        @for approval in &waiting {
            (card(approval, session, now))
        }
        @if !grants.is_empty() {
            h2 { "Grants in force" }
            table class="grants" {
                thead { tr { th { "Agent" } th { "Tool" } th { "Granted by" } th { "For" } th { "Ends in" } th {} } }
                tbody {
                    @for grant in &grants { (grant_row(grant, session, now)) }
                }
            }
        }
    }
}

fn card(approval: &PendingApproval, session: &Session, now: i64) -> Markup {
    let waited_ms = now - i64::try_from(approval.since).unwrap_or(0) * 1_000;
    let deadline = now + i64::try_from(approval.expires_in_ms).unwrap_or(0);
    let action = format!("/console/approvals/{}", approval.id);
    html! {
        article class="approval" id=(format!("approval-{}", approval.id)) data-id=(approval.id) {
            header {
                strong class="tool" { (approval.tool) }
                span class="server" { " on " (approval.server) }
                span class="agent" { " for " (approval.agent.as_deref().unwrap_or("(no agent)")) }
                @if let Some(tier) = &approval.tier { span class="tier" { " · tier " (tier) } }
            }
            p class="reason" { "Asked because: " (approval.reason) }
            pre class="arguments" { (arguments_of(approval)) }
            p class="timing" {
                "Waiting " span class="waited" data-since=(approval.since * 1_000) { (span(Duration::from_millis(u64::try_from(waited_ms.max(0)).unwrap_or(0)))) }
                " · denied in " span class="countdown" data-deadline=(deadline) { (span(Duration::from_millis(approval.expires_in_ms))) }
                " (at " (utc(deadline)) ")"
            }
            div class="actions" {
                form method="post" action=(action) class="approve" data-live {
                    (csrf_field(session))
                    input type="hidden" name="action" value="approve";
                    button type="submit" class="primary" { "Approve" }
                }
                form method="post" action=(action) class="deny" data-live {
                    (csrf_field(session))
                    input type="hidden" name="action" value="deny";
                    input type="text" name="reason" placeholder="reason" maxlength="500" aria-label="reason for denying";
                    button type="submit" class="danger" { "Deny" }
                }
                form method="post" action=(action) class="grant" data-live {
                    (csrf_field(session))
                    input type="hidden" name="action" value="grant";
                    label { "Approve for "
                        input type="number" name="minutes" value="15" min="1" max=(MAX_GRANT_MINUTES) aria-label="minutes";
                        " min for this agent and tool" }
                    button type="submit" { "Approve for a while" }
                }
            }
        }
    }
}

fn grant_row(grant: &Grant, session: &Session, now: i64) -> Markup {
    let ends = now + i64::try_from(grant.expires_in_ms).unwrap_or(0);
    html! {
        tr {
            td { (grant.agent.as_deref().unwrap_or("(no agent)")) }
            td { (grant.tool) }
            td { (grant.by) }
            td { (grant.minutes) " min" }
            td { span class="countdown" data-deadline=(ends) { (span(Duration::from_millis(grant.expires_in_ms))) } }
            td {
                form method="post" action="/console/grants/revoke" data-live {
                    (csrf_field(session))
                    input type="hidden" name="agent" value=(grant.agent.as_deref().unwrap_or(""));
                    input type="hidden" name="tool" value=(grant.tool);
                    button type="submit" class="link" { "End now" }
                }
            }
        }
    }
}

pub(crate) async fn page(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Markup {
    let pending = console.shared.host.pending_approvals();
    layout::page(
        &session,
        "/console/approvals",
        "Approvals",
        html! {
            p class="lede" { "Calls waiting for an operator. This list updates itself; a call not answered in time is denied." }
            section id="queue" data-live-source="/console/approvals/live" aria-live="polite" {
                (queue(pending.as_deref(), &session))
            }
        },
    )
}

/// How often a live queue checks that its session still holds (signed out, expired).
const SESSION_CHECK_EVERY: Duration = Duration::from_secs(30);

/// `GET /console/approvals/live`: the queue's HTML again at every change (event `queue`),
/// while the session holds: signed out or expired, the stream ends.
pub(crate) async fn live(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let pending = console.shared.host.pending_approvals();
    let changes = pending.as_ref().map(|pending| pending.subscribe());
    let id = crate::auth::cookie_of(&headers).unwrap_or("").to_owned();
    let stream = futures::stream::unfold(
        (console, id, pending, changes, session, true),
        |(console, id, pending, mut changes, session, first)| async move {
            if !first {
                loop {
                    let changed = async {
                        match changes.as_mut() {
                            Some(changes) => changes.changed().await.is_ok(),
                            None => futures::future::pending().await,
                        }
                    };
                    let changed = tokio::select! {
                        changed = changed => Some(changed),
                        () = tokio::time::sleep(SESSION_CHECK_EVERY) => None,
                    };
                    console.shared.sessions.get(&id)?;
                    match changed {
                        Some(true) => break,
                        Some(false) => return None,
                        None => {}
                    }
                }
            }
            let html = queue(pending.as_deref(), &session).into_string();
            let event = Event::default().event("queue").data(html);
            Some((Ok(event), (console, id, pending, changes, session, false)))
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// `POST /console/approvals/{id}`: `action` = approve | deny (with `reason`) | grant (with
/// `minutes`).
pub(crate) async fn decide(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let fields = form(&body);
    let pending = console
        .shared
        .host
        .pending_approvals()
        .ok_or_else(|| ConsoleError::NotFound("approvals are not set up".to_owned()))?;
    let by = decider(&session);
    let answered = match fields.get("action") {
        Some("approve") => pending.answer(&id, true, &by, None).await,
        Some("deny") => pending.answer(&id, false, &by, fields.get("reason")).await,
        Some("grant") => {
            let minutes = fields
                .get("minutes")
                .and_then(|m| m.parse::<u64>().ok())
                .filter(|m| (1..=MAX_GRANT_MINUTES).contains(m))
                .ok_or_else(|| {
                    ConsoleError::Invalid(format!(
                        "minutes must be a whole number from 1 to {MAX_GRANT_MINUTES}"
                    ))
                })?;
            pending.approve_for(&id, minutes, &by).await.map(|_| ())
        }
        _ => {
            return Err(ConsoleError::Invalid(
                "action must be approve, deny or grant".to_owned(),
            ));
        }
    };
    answered.map_err(|error| match error {
        AnswerError::NotPending(_) => ConsoleError::NotFound(error.to_string()),
        AnswerError::AlreadyDecided { .. } | AnswerError::Store(_) => {
            ConsoleError::Refused(error.to_string())
        }
    })?;
    tracing::info!(id, by, "console: approval answered");
    Ok(done(&headers, "/console/approvals"))
}

/// `POST /console/grants/revoke` with `agent` and `tool`.
pub(crate) async fn revoke(
    State(console): State<Console>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ConsoleError> {
    let fields = form(&body);
    let tool = fields
        .get("tool")
        .ok_or_else(|| ConsoleError::Invalid("which tool?".to_owned()))?;
    let ended = match console.shared.host.pending_approvals() {
        Some(pending) => pending
            .revoke_grant(fields.get("agent"), tool)
            .await
            .map_err(|error| ConsoleError::Refused(error.to_string()))?,
        None => false,
    };
    if !ended {
        return Err(ConsoleError::NotFound(format!(
            "no grant in force for {tool}"
        )));
    }
    Ok(done(&headers, "/console/approvals"))
}
