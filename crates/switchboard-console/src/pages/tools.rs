//! Tools: every tool in the catalog with its server, badge, measured p50/p90/p99 and their
//! sample count, what it declares beside what was measured, the tiers it fits now, its
//! health, and which agents can see it — filtered (name, server, badge, tier) and sorted
//! by any column. A tool's own page draws its latency over its recent calls (from the
//! ledger) against the tier ceilings, as SVG made on the server.

use std::collections::{BTreeMap, HashSet};

use axum::extract::{Extension, Path, State};
use axum::http::{Uri, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use switchboard::{Host, ToolStats};

use crate::Console;
use crate::auth::Session;
use crate::chart::{Ceiling, latency_chart};
use crate::error::ConsoleError;
use crate::form::{Fields, encode};
use crate::layout::{self, ms, percent};

/// The columns a table may be sorted by.
const SORTS: [(&str, &str); 6] = [
    ("name", "Tool"),
    ("server", "Server"),
    ("samples", "Samples"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
];

/// Which agents see which tools: agent → exposed names (`None`: the gateway has no agents,
/// and every caller sees every tool).
pub(crate) fn visibility(host: &Host) -> Option<BTreeMap<String, HashSet<String>>> {
    let config = host.config()?;
    if config.agents.is_empty() {
        return None;
    }
    Some(
        config
            .agents
            .keys()
            .map(|agent| {
                let names = host
                    .visible_tools(Some(agent))
                    .iter()
                    .map(|entry| entry.exposed.clone())
                    .collect();
                (agent.clone(), names)
            })
            .collect(),
    )
}

fn seen_by(visible: Option<&BTreeMap<String, HashSet<String>>>, tool: &str) -> Vec<String> {
    match visible {
        None => vec!["every caller".to_owned()],
        Some(visible) => visible
            .iter()
            .filter(|(_, names)| names.contains(tool))
            .map(|(agent, _)| agent.clone())
            .collect(),
    }
}

/// The tier ceilings of the running configuration.
pub(crate) fn ceilings(host: &Host) -> Vec<Ceiling> {
    host.config()
        .map(|config| {
            config
                .tiers
                .iter()
                .map(|tier| Ceiling {
                    tier: tier.name.clone(),
                    ms: tier.ceiling.as_secs_f64() * 1_000.0,
                })
                .collect()
        })
        .unwrap_or_default()
}

struct Query {
    text: Option<String>,
    server: Option<String>,
    badge: Option<String>,
    tier: Option<String>,
    sort: String,
    descending: bool,
}

impl Query {
    fn of(uri: &Uri) -> Self {
        let fields = Fields::of_query(uri);
        let sort = fields
            .get("sort")
            .filter(|sort| SORTS.iter().any(|(key, _)| key == sort))
            .unwrap_or("name")
            .to_owned();
        Self {
            text: fields.get("q").map(str::to_lowercase),
            server: fields.owned("server"),
            badge: fields.owned("badge"),
            tier: fields.owned("tier"),
            descending: fields.get("dir") == Some("desc"),
            sort,
        }
    }

    fn keeps(&self, tool: &ToolStats) -> bool {
        self.text
            .as_ref()
            .is_none_or(|text| tool.tool.to_lowercase().contains(text))
            && self.server.as_ref().is_none_or(|s| &tool.server == s)
            && self
                .badge
                .as_ref()
                .is_none_or(|b| tool.badge == Some(b.as_str()))
            && self.tier.as_ref().is_none_or(|t| tool.tiers.contains(t))
    }

    fn order(&self, tools: &mut [ToolStats]) {
        let figure = |tool: &ToolStats| match self.sort.as_str() {
            "p50" => tool.p50_ms,
            "p90" => tool.p90_ms,
            "p99" => tool.p99_ms,
            "samples" => Some(tool.samples as f64),
            _ => None,
        };
        tools.sort_by(|a, b| {
            let by = match self.sort.as_str() {
                "name" => a.tool.cmp(&b.tool),
                "server" => a.server.cmp(&b.server).then_with(|| a.tool.cmp(&b.tool)),
                // Tools with no figure go last either way.
                _ => match (figure(a), figure(b)) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => return std::cmp::Ordering::Less,
                    (None, Some(_)) => return std::cmp::Ordering::Greater,
                    (None, None) => a.tool.cmp(&b.tool),
                },
            };
            if self.descending { by.reverse() } else { by }
        });
    }

    /// The link that sorts by `key` (the other way when it is the current sort).
    fn sort_link(&self, key: &str) -> String {
        let dir = if self.sort == key && !self.descending {
            "desc"
        } else {
            "asc"
        };
        let mut link = format!("/console/tools?sort={key}&dir={dir}");
        for (name, value) in [
            ("q", &self.text),
            ("server", &self.server),
            ("badge", &self.badge),
            ("tier", &self.tier),
        ] {
            if let Some(value) = value {
                link.push_str(&format!("&{name}={}", encode(value)));
            }
        }
        link
    }
}

/// The tools table for `uri`'s filters (the page without its shell).
pub(crate) fn table(host: &Host, uri: &Uri) -> Markup {
    let query = Query::of(uri);
    let all = host.latency_report();
    let servers: Vec<String> = {
        let mut servers: Vec<String> = all.iter().map(|t| t.server.clone()).collect();
        servers.sort();
        servers.dedup();
        servers
    };
    let tiers: Vec<String> = ceilings(host).into_iter().map(|c| c.tier).collect();
    let total = all.len();
    let mut tools: Vec<ToolStats> = all.into_iter().filter(|t| query.keeps(t)).collect();
    query.order(&mut tools);
    let visible = visibility(host);
    let selected = |current: &Option<String>, value: &str| current.as_deref() == Some(value);
    html! {
        form class="filters" method="get" action="/console/tools" {
            label { "Name " input type="search" name="q" value=(query.text.clone().unwrap_or_default()); }
            label { "Server " select name="server" {
                option value="" { "any" }
                @for server in &servers { option value=(server) selected[selected(&query.server, server)] { (server) } }
            } }
            label { "Badge " select name="badge" {
                option value="" { "any" }
                @for badge in ["Lightning", "Fast", "Standard", "Slow"] {
                    option value=(badge) selected[selected(&query.badge, badge)] { (badge) }
                }
            } }
            label { "Fits tier " select name="tier" {
                option value="" { "any" }
                @for tier in &tiers { option value=(tier) selected[selected(&query.tier, tier)] { (tier) } }
            } }
            input type="hidden" name="sort" value=(query.sort);
            button type="submit" { "Filter" }
        }
        p class="count" { (tools.len()) " of " (total) " tools" }
        table class="tools" {
            thead { tr {
                @for (key, title) in SORTS.iter().take(2) { th { a href=(query.sort_link(key)) { (title) } } }
                th { "Badge" }
                @for (key, title) in SORTS.iter().skip(2) { th class="num" { a href=(query.sort_link(key)) { (title) } } }
                th { "Declared" } th { "Errors" } th { "Tiers" } th { "Health" } th { "Seen by" }
            } }
            tbody {
                @for tool in &tools {
                    tr data-tool=(tool.tool) {
                        th scope="row" { a href=(format!("/console/tools/{}", encode(&tool.tool))) { (tool.tool) } }
                        td { (tool.server) }
                        td { @if let Some(badge) = tool.badge { span class=(format!("badge {}", badge.to_lowercase())) { (badge) } } }
                        td class="num" { (tool.samples) }
                        td class="num" { (ms(tool.p50_ms)) }
                        td class="num" { (ms(tool.p90_ms)) }
                        td class="num" { (ms(tool.p99_ms)) }
                        td { (declared(tool)) }
                        td class="num" { (percent(tool.error_rate)) }
                        td { (tool.tiers.join(", ")) }
                        td { span class=(format!("health {}", tool.health)) { (tool.health) } }
                        td { (seen_by(visible.as_ref(), &tool.tool).join(", ")) }
                    }
                }
            }
        }
    }
}

fn declared(tool: &ToolStats) -> String {
    match (tool.declared_p50_ms, tool.declared_max_ms) {
        (None, None) => "—".to_owned(),
        (p50, max) => format!("~{} / max {}", ms(p50), ms(max)),
    }
}

pub(crate) async fn page(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    uri: Uri,
) -> Markup {
    layout::page(
        &session,
        "/console/tools",
        "Tools",
        table(&console.shared.host, &uri),
    )
}

fn stats_of(host: &Host, name: &str) -> Result<ToolStats, ConsoleError> {
    host.latency_report()
        .into_iter()
        .find(|tool| tool.tool == name)
        .ok_or_else(|| ConsoleError::NotFound(format!("no tool named {name} in the catalog")))
}

async fn chart_of(console: &Console, name: &str) -> Result<Markup, ConsoleError> {
    let owned = name.to_owned();
    let timings = crate::ledger::tally(console, move |tally| tally.timings(&owned))
        .await?
        .unwrap_or_default();
    Ok(latency_chart(&timings, &ceilings(&console.shared.host)))
}

/// `GET /console/tools/{name}`: one tool's figures and chart.
pub(crate) async fn detail(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
) -> Result<Markup, ConsoleError> {
    let host = &console.shared.host;
    let tool = stats_of(host, &name)?;
    let chart = chart_of(&console, &name).await?;
    let visible = visibility(host);
    Ok(layout::page(
        &session,
        "/console/tools",
        &tool.tool,
        html! {
            dl class="facts" {
                dt { "Server" } dd { (tool.server) }
                dt { "Category" } dd { (tool.category) }
                dt { "Badge" } dd { (tool.badge.unwrap_or("—")) }
                dt { "Measured" } dd { "p50 " (ms(tool.p50_ms)) " · p90 " (ms(tool.p90_ms)) " · p99 " (ms(tool.p99_ms)) " over " (tool.samples) " calls" }
                dt { "Declared" } dd { (declared(&tool)) }
                dt { "Tiers judge it by" } dd { (ms(tool.effective_ms)) " (" (tool.source) ")" }
                dt { "Fits tiers" } dd { @if tool.tiers.is_empty() { "none" } @else { (tool.tiers.join(", ")) } }
                dt { "Health" } dd { (tool.health) }
                dt { "Errors / timeouts" } dd { (percent(tool.error_rate)) " / " (percent(tool.timeout_rate)) }
                dt { "Seen by" } dd { (seen_by(visible.as_ref(), &tool.tool).join(", ")) }
            }
            h2 { "Latency of its last calls" }
            figure { (chart) figcaption { "Each dot is a call (hollow: failed); dashed lines are the tier ceilings." } }
        },
    ))
}

/// `GET /console/tools/{name}/chart.svg`: the chart alone.
pub(crate) async fn chart(
    State(console): State<Console>,
    Path(name): Path<String>,
) -> Result<Response, ConsoleError> {
    stats_of(&console.shared.host, &name)?;
    let chart = chart_of(&console, &name).await?;
    Ok((
        [(header::CONTENT_TYPE, "image/svg+xml")],
        chart.into_string(),
    )
        .into_response())
}
