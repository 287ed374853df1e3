//! Audit: the ledger newest first in keyset pages (`before=MS-ID`: the start time and row id
//! of the last row shown), filtered by agent, tool (name or glob),
//! outcome and time; a row's detail with its hash and the previous row's; "verify chain",
//! which walks the whole hash chain; and the filtered rows as JSON lines (oldest first, each
//! the row's hashed entry with its id and hashes).

use axum::extract::{Extension, Path, State};
use axum::http::{Uri, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use switchboard_ledger::browse::{Page, PageQuery, StoredRow};

use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::form::{Fields, encode};
use crate::layout::{self, csrf_field};
use crate::time::{now_ms, utc};

/// Rows a page shows.
const PAGE_ROWS: usize = 50;

/// The outcomes a row may have, for the filter.
const OUTCOMES: [&str; 13] = [
    "ok",
    "tool_error",
    "denied",
    "rate_limited",
    "timed_out",
    "cancelled",
    "upstream_down",
    "upstream_error",
    "unknown_tool",
    "invalid_arguments",
    "input_required",
    "unavailable",
    "config_applied",
];

/// The filters as the form gave them (kept as text, to show them back).
#[derive(Default)]
struct Filters {
    agent: Option<String>,
    tool: Option<String>,
    outcome: Option<String>,
    since: Option<String>,
    until: Option<String>,
}

impl Filters {
    fn of(uri: &Uri) -> (Self, Option<(i64, i64)>) {
        let fields = Fields::of_query(uri);
        let before = fields.get("before").and_then(|before| {
            let (started, id) = before.split_once('-')?;
            Some((started.parse().ok()?, id.parse().ok()?))
        });
        (
            Self {
                agent: fields.owned("agent"),
                tool: fields.owned("tool"),
                outcome: fields.owned("outcome"),
                since: fields.owned("since"),
                until: fields.owned("until"),
            },
            before,
        )
    }

    fn query(&self, before: Option<(i64, i64)>) -> Result<PageQuery, ConsoleError> {
        let now = now_ms();
        let time = |text: &Option<String>, which: &str| {
            match text {
            None => Ok(None),
            Some(text) => crate::time::parse(text, now).map(Some).ok_or_else(|| {
                ConsoleError::Invalid(format!(
                    "{which}: {text:?} is not a time (30m, 2d, 2026-11-26, 2026-11-26 05:30, or milliseconds)"
                ))
            }),
        }
        };
        Ok(PageQuery {
            agent: self.agent.clone(),
            tool: self.tool.clone(),
            outcome: self.outcome.clone(),
            since_ms: time(&self.since, "since")?,
            until_ms: time(&self.until, "until")?,
            before,
            limit: PAGE_ROWS,
        })
    }

    /// The query string of these filters (`&`-prefixed pairs).
    fn link(&self) -> String {
        [
            ("agent", &self.agent),
            ("tool", &self.tool),
            ("outcome", &self.outcome),
            ("since", &self.since),
            ("until", &self.until),
        ]
        .iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("&{name}={}", encode(v))))
        .collect()
    }
}

fn row_line(row: &StoredRow) -> Markup {
    let entry = &row.entry;
    html! {
        tr class=(format!("outcome-{}", entry.outcome)) {
            td { a href=(format!("/console/audit/{}", row.id)) { (row.id) } }
            td { (utc(entry.started_ms)) }
            td { (entry.agent.as_deref().unwrap_or("—")) }
            td { (entry.exposed) }
            td { span class=(format!("outcome {}", entry.outcome)) { (entry.outcome) } }
            td class="num" { (format!("{:.1} ms", entry.duration_us as f64 / 1_000.0)) }
            td { (entry.approval.as_deref().unwrap_or("")) }
            td class="why" { (entry.error.as_deref().unwrap_or("")) }
        }
    }
}

/// The table of one page and its "older" link (the page without its shell).
fn table(page: &Page, filters: &Filters) -> Markup {
    html! {
        table class="audit" {
            thead { tr { th { "Row" } th { "Started" } th { "Agent" } th { "Tool" } th { "Outcome" } th class="num" { "Took" } th { "Approval" } th { "Error" } } }
            tbody { @for row in &page.rows { (row_line(row)) } }
        }
        @if page.rows.is_empty() { p class="empty" { "No rows match." } }
        nav class="pages" {
            a href=(format!("/console/audit?{}", filters.link().trim_start_matches('&'))) { "Newest" }
            @if let Some((started, id)) = page.next_before {
                " · " a rel="next" href=(format!("/console/audit?before={started}-{id}{}", filters.link())) { "Older →" }
            }
        }
    }
}

pub(crate) async fn page(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Result<Markup, ConsoleError> {
    let (filters, before) = Filters::of(&uri);
    let query = filters.query(before)?;
    let page = crate::ledger::page(&console, query).await?;
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    Ok(layout::page(
        &session,
        "/console/audit",
        "Audit",
        html! {
            form class="filters" method="get" action="/console/audit" {
                label { "Agent " input type="text" name="agent" value=(value(&filters.agent)); }
                label { "Tool " input type="text" name="tool" placeholder="name or glob: files__*" value=(value(&filters.tool)); }
                label { "Outcome " select name="outcome" {
                    option value="" { "any" }
                    @for outcome in OUTCOMES { option value=(outcome) selected[filters.outcome.as_deref() == Some(outcome)] { (outcome) } }
                } }
                label { "Since " input type="text" name="since" placeholder="1h, 2d, 2026-11-26 05:30" value=(value(&filters.since)); }
                label { "Until " input type="text" name="until" value=(value(&filters.until)); }
                button type="submit" { "Filter" }
            }
            div class="toolbar" {
                a class="button" href=(format!("/console/audit/export.jsonl?{}", filters.link().trim_start_matches('&'))) download="ledger.jsonl" { "Export JSONL" }
                form method="post" action="/console/audit/verify" data-verify-live="/console/audit/verify/live" {
                    (csrf_field(&session))
                    button type="submit" { "Verify chain" }
                }
            }
            div id="verify-progress" hidden { progress max="1" value="0" {} " " span class="count" {} }
            @match &page {
                Some(page) => (table(page, &filters)),
                None => p class="empty" { (NO_LEDGER) },
            }
        },
    ))
}

/// `GET /console/audit/{id}`: one row, all its fields, and its links in the chain.
pub(crate) async fn detail(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(id): Path<i64>,
) -> Result<Markup, ConsoleError> {
    let row = crate::ledger::row(&console, id)
        .await?
        .ok_or_else(|| ConsoleError::NotFound(format!("no ledger row {id}")))?;
    let entry = &row.entry;
    let fields = serde_json::to_string_pretty(entry).unwrap_or_default();
    Ok(layout::page(
        &session,
        "/console/audit",
        &format!("Ledger row {id}"),
        html! {
            dl class="facts" {
                dt { "Call id" } dd { code { (entry.call_id) } }
                dt { "Started" } dd { (utc(entry.started_ms)) }
                dt { "Agent" } dd { (entry.agent.as_deref().unwrap_or("—")) }
                dt { "Tool" } dd { (entry.exposed) }
                dt { "Outcome" } dd { (entry.outcome) }
                dt { "Approval" } dd { (entry.approval.as_deref().unwrap_or("—")) }
                @if let Some(trace) = &entry.trace_id {
                    dt { "Trace" } dd {
                        @match &console.shared.trace_url {
                            Some(url) => a href=(url.replace("{trace_id}", trace)) { code { (trace) } },
                            None => code { (trace) },
                        }
                    }
                }
                dt { "Row hash" } dd { code class="hash" { (row.row_hash) } }
                dt { "Previous hash" } dd { code class="hash" { (row.prev_hash) }
                    @if id > 1 { " " a href=(format!("/console/audit/{}", id - 1)) { "previous row" } } }
            }
            h2 { "The hashed entry" }
            pre class="entry" { (fields) }
            p { a href="/console/audit" { "← Back to the ledger" } }
        },
    ))
}

/// `POST /console/audit/verify`: walks the chain and says whether it holds.
pub(crate) async fn verify(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Result<Markup, ConsoleError> {
    let report = crate::ledger::verify(&console, u64::MAX, |_, _| ())
        .await?
        .ok_or_else(|| ConsoleError::NotFound(NO_LEDGER.to_owned()))?;
    Ok(layout::page(
        &session,
        "/console/audit",
        "Verify chain",
        html! {
            (verdict(&report))
            p { a href="/console/audit" { "← Back to the ledger" } }
        },
    ))
}

/// What the audit pages say when the gateway keeps no ledger.
const NO_LEDGER: &str = "This gateway keeps no audit ledger.";

/// What a walk of the chain found.
fn verdict(report: &switchboard_ledger::store::VerifyReport) -> Markup {
    html! {
        @if report.ok {
            p class="verified ok" role="status" { "The chain holds: " (report.rows) " rows verified, none edited or deleted." }
        } @else {
            p class="verified broken" role="alert" {
                "The chain is broken"
                @if let Some((id, problem)) = &report.problem {
                    " at " a href=(format!("/console/audit/{id}")) { "row " (id) } ": " (problem)
                }
            }
        }
    }
}

/// Rows checked between two progress events of a live verification.
const VERIFY_PROGRESS_EVERY: u64 = 2_000;

/// `GET /console/audit/verify/live`: the same walk as the verify button, as server-sent
/// events: `progress` (`{"rows": N, "total": M}`) every few thousand rows, then `done` with
/// the verdict's HTML. Reading only; the page's script follows it.
pub(crate) async fn verify_live(
    State(console): State<Console>,
) -> Sse<impl futures::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let (events, received) = tokio::sync::mpsc::unbounded_channel::<Event>();
    let progress = events.clone();
    tokio::spawn(async move {
        let report = move |rows: u64, total: u64| {
            let data = serde_json::json!({"rows": rows, "total": total}).to_string();
            let _ = progress.send(Event::default().event("progress").data(data));
        };
        let report = crate::ledger::verify(&console, VERIFY_PROGRESS_EVERY, report).await;
        let html = match report {
            Ok(Some(report)) => verdict(&report),
            Ok(None) => html! { p class="empty" { (NO_LEDGER) } },
            Err(error) => html! { p class="problem" { (error.to_string()) } },
        };
        let _ = events.send(Event::default().event("done").data(html.into_string()));
    });
    let stream = futures::stream::unfold(received, |mut received| async move {
        received.recv().await.map(|event| (Ok(event), received))
    });
    Sse::new(stream)
}

/// `GET /console/audit/export.jsonl`: the filtered rows, oldest first, one JSON object a
/// line: `{"id", "entry", "prev_hash", "row_hash"}`, streamed as it is read (`export`).
pub(crate) async fn export(
    State(console): State<Console>,
    uri: Uri,
) -> Result<Response, ConsoleError> {
    let (filters, _) = Filters::of(&uri);
    let query = filters.query(None)?;
    let body = crate::export::body(console, query).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"ledger.jsonl\"",
            ),
        ],
        body,
    )
        .into_response())
}
