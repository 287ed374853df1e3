//! The work the gateway does in the background, for an operator to watch and stop: the
//! server manager's operations (`GET /console/operations`: kind, state, progress, its last
//! message, energy, what it waits for; `POST /console/operations/{id}/cancel`) and the MCP
//! tasks clients started (`GET /console/tasks`: tool, owner, status, age, time to live;
//! `POST /console/tasks/{id}/cancel`, which cancels the call upstream too). Whoever
//! cancels is named in what the client or the operation's history sees.

use std::time::UNIX_EPOCH;

use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use maud::{Markup, html};
use switchboard::manager::State as OperationState;
use switchboard_core::task::TaskStatus;

use super::done;
use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::layout;
use crate::time::{ago, now_ms, span, utc};

/// Operations listed, newest first.
const OPERATIONS_SHOWN: usize = 100;

fn by(session: &Session) -> String {
    format!("{} (console)", session.operator)
}

/// `GET /console/operations`.
pub(crate) async fn operations(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Result<Markup, ConsoleError> {
    let Some(manager) = console.shared.host.manager() else {
        return Ok(layout::page(
            &session,
            "/console/operations",
            "Operations",
            html! { p class="empty" { "The server manager is not running: there are no operations." } },
        ));
    };
    let listed = manager
        .list(None, OPERATIONS_SHOWN)
        .map_err(|error| ConsoleError::Invalid(error.to_string()))?;
    let now = now_ms();
    Ok(layout::page(
        &session,
        "/console/operations",
        "Operations",
        html! {
            p class="hint" { "The server manager's work: searches, installs, probation, activation. Newest first." }
            @if listed.is_empty() { p class="empty" { "No operations yet." } } @else {
                table class="operations" {
                    thead { tr { th { "Id" } th { "Kind" } th { "State" } th class="num" { "Progress" } th { "Message" } th class="num" { "Energy" } th { "Queued" } th { "" } } }
                    tbody { @for operation in &listed {
                        @let running = matches!(operation.state, OperationState::Queued | OperationState::InProgress);
                        tr data-operation=(operation.id) {
                            td { code { (operation.id) } }
                            td { (operation.kind) }
                            td { span class=(format!("state {}", operation.state.as_str())) { (operation.state.as_str()) }
                                 @if let Some(waiting) = &operation.waiting { " — waiting: " (format!("{waiting:?}")) } }
                            td class="num" { (operation.progress) "%" }
                            td { (operation.error.as_deref().unwrap_or(&operation.message)) }
                            td class="num" { (format!("{:.1}", operation.energy)) }
                            td { (ago(i64::try_from(operation.created_ms).unwrap_or(i64::MAX), now)) }
                            td { @if running {
                                (layout::danger_button(&session, &format!("/console/operations/{}/cancel", operation.id), "Cancel"))
                            } }
                        }
                    } }
                }
            }
        },
    ))
}

/// `POST /console/operations/{id}/cancel`.
pub(crate) async fn cancel_operation(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ConsoleError> {
    let manager =
        console.shared.host.manager().ok_or_else(|| {
            ConsoleError::NotFound("the server manager is not configured".to_owned())
        })?;
    manager
        .cancel_anywhere(&id, &format!("cancelled by an operator ({})", by(&session)))
        .await
        .map_err(|error| ConsoleError::NotFound(error.to_string()))?;
    tracing::info!(id, operator = %session.operator, "console: operation cancelled");
    Ok(done(&headers, "/console/operations"))
}

/// `GET /console/tasks`.
pub(crate) async fn tasks(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Result<Markup, ConsoleError> {
    // With `[shared] redis`, every replica's tasks (each run where it was started).
    let (tasks, missing) = console.shared.host.operator_tasks_everywhere().await;
    let now = now_ms();
    let millis = |at: std::time::SystemTime| {
        at.duration_since(UNIX_EPOCH).map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
    };
    Ok(layout::page(
        &session,
        "/console/tasks",
        "Tasks",
        html! {
            p class="hint" { "Calls clients started as MCP tasks and come back for. Newest first; a task is kept until its time to live runs out." }
            @if let Some(missing) = &missing { p class="hint" { (missing) } }
            @if tasks.is_empty() { p class="empty" { "No tasks." } } @else {
                table class="tasks" {
                    thead { tr { th { "Id" } th { "Tool" } th { "Agent" } th { "Session" } th { "Replica" } th { "Status" } th { "Message" } th { "Started" } th { "Kept for" } th { "" } } }
                    tbody { @for task in &tasks {
                        @let (owner, view) = (&task.owner, &task.view);
                        @let open = !matches!(view.status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled);
                        tr data-task=(view.id) {
                            td { code { (view.id) } }
                            td { (task.tool) }
                            td { (owner.agent.as_deref().unwrap_or("—")) @if let Some(subject) = &owner.subject { " (" (subject) ")" } }
                            td { code { (owner.session.as_deref().unwrap_or("—")) } }
                            td { @match &task.replica { Some(replica) => code { (replica) }, None => "this one" } }
                            td { span class=(format!("state {}", view.status.as_str())) { (view.status.as_str()) } }
                            td { (view.status_message.as_deref().unwrap_or("")) }
                            td title=(utc(millis(view.created_at))) { (ago(millis(view.created_at), now)) }
                            td { @match view.ttl { Some(ttl) => (span(ttl)), None => "until the gateway stops" } }
                            td { @if open {
                                (layout::danger_button(&session, &format!("/console/tasks/{}/cancel", view.id), "Cancel"))
                            } }
                        }
                    } }
                }
            }
        },
    ))
}

/// `POST /console/tasks/{id}/cancel`.
pub(crate) async fn cancel_task(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ConsoleError> {
    console
        .shared
        .host
        .cancel_task_as_operator_anywhere(&id, &by(&session))
        .await
        .map_err(|error| ConsoleError::NotFound(error.to_string()))?;
    tracing::info!(id, operator = %session.operator, "console: task cancelled");
    Ok(done(&headers, "/console/tasks"))
}
