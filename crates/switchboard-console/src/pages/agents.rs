//! Agents: each configured agent's view (how many tools it sees, its exposure mode, its
//! tier, its approval rule), its tokens (from the config and the token file; hashes only,
//! never a token), and from the ledger its calls, denials and rate-limit refusals of the last
//! 24 hours and the quota it has used in its quota's window.

use std::collections::HashMap;

use axum::extract::{Extension, State};
use maud::{Markup, html};
use switchboard::tokens::{StoredToken, TokenFile, config_tokens};
use switchboard_core::config::{AgentConfig, Config};
use switchboard_ledger::tally::AgentTotals;

use crate::Console;
use crate::auth::Session;
use crate::error::ConsoleError;
use crate::layout;
use crate::time::now_ms;

const DAY_MS: i64 = 86_400_000;

/// A token as the page lists it: whose, when made, and its id (the first digits of its salt).
struct TokenLine {
    agent: String,
    created: Option<String>,
    id: String,
    source: &'static str,
}

/// The config's tokens and those of the shared store (with `[storage] url`) or the file.
async fn tokens(config: &Config, console: &Console) -> Result<Vec<TokenLine>, ConsoleError> {
    let (source, stored) = match &console.shared.shared_tokens {
        Some(store) => (
            "postgres",
            store.live().await.map_err(super::tokens::shared_error)?,
        ),
        None => (
            "token file",
            console
                .shared
                .token_file
                .as_deref()
                .and_then(|path| TokenFile::load(path).ok())
                .map(|file| file.tokens)
                .unwrap_or_default(),
        ),
    };
    let line = |source| {
        move |token: StoredToken| TokenLine {
            id: token.id(),
            agent: token.agent,
            created: token.created,
            source,
        }
    };
    Ok(config_tokens(config)
        .into_iter()
        .map(line("config"))
        .chain(stored.into_iter().map(line(source)))
        .collect())
}

fn exposure_of(config: &Config, agent: &AgentConfig) -> String {
    format!("{:?}", agent.exposure.unwrap_or(config.gateway.exposure)).to_lowercase()
}

pub(crate) async fn page(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
) -> Result<Markup, ConsoleError> {
    let host = console.shared.host.clone();
    let Some(config) = host.config() else {
        return Ok(layout::page(
            &session,
            "/console/agents",
            "Agents",
            html! { p class="empty" { "This gateway was not started from a configuration." } },
        ));
    };
    let now = now_ms();
    // Each agent, then callers without one; and each quota's window.
    let agents: Vec<(Option<String>, Option<i64>)> = config
        .agents
        .iter()
        .map(|(name, agent)| {
            let window = agent
                .quota
                .as_ref()
                .and_then(|quota| i64::try_from(quota.window.as_millis()).ok());
            (Some(name.clone()), window)
        })
        .chain(std::iter::once((None, None)))
        .collect();
    let (day, quotas) = crate::ledger::tally(&console, move |tally| {
        let mut day = HashMap::new();
        let mut used = HashMap::new();
        for (agent, window) in agents {
            if let (Some(name), Some(window)) = (&agent, window) {
                used.insert(name.clone(), tally.agent(Some(name), now - window).cost);
            }
            let totals = tally.agent(agent.as_deref(), now - DAY_MS);
            day.insert(agent, totals);
        }
        (day, used)
    })
    .await?
    .unwrap_or_default();
    let tokens = tokens(&config, &console).await?;
    let can_make = console.shared.token_file.is_some() || console.shared.shared_tokens.is_some();
    let empty = AgentTotals::default();
    Ok(layout::page(
        &session,
        "/console/agents",
        "Agents",
        html! {
            @if config.agents.is_empty() {
                p class="empty" { "The configuration defines no agents: every caller sees every tool." }
            }
            table class="agents" {
                thead { tr {
                    th { "Agent" } th class="num" { "Tools" } th { "Exposure" } th { "Tier" } th { "Approval" }
                    th class="num" { "Tokens" } th class="num" { "Calls (24 h)" } th class="num" { "Denied" }
                    th class="num" { "Rate-limited" } th { "Quota used" }
                } }
                tbody {
                    @for (name, agent) in &config.agents {
                        @let totals = day.get(&Some(name.clone())).unwrap_or(&empty);
                        tr data-agent=(name) {
                            th scope="row" { (name) }
                            td class="num" { (host.visible_tools(Some(name)).len()) }
                            td { (exposure_of(&config, agent)) }
                            td { (agent.tier.as_deref().unwrap_or("—")) }
                            td { (format!("{:?}", agent.approval).to_lowercase()) }
                            td class="num" { (tokens.iter().filter(|t| &t.agent == name).count()) }
                            td class="num" { (totals.calls) }
                            td class="num" { (totals.denied) }
                            td class="num" { (totals.rate_limited) }
                            td { @match &agent.quota {
                                Some(quota) => {
                                    (format!("{:.2}", quotas.get(name).copied().unwrap_or(0.0))) " of " (quota.cost)
                                    " per " (crate::time::span(quota.window))
                                },
                                None => "no quota",
                            } }
                        }
                    }
                    @if let Some(anonymous) = day.get(&None).filter(|totals| totals.calls > 0) {
                        tr { th scope="row" { em { "(no agent)" } } td class="num" { (host.visible_tools(None).len()) }
                             td { (format!("{:?}", config.gateway.exposure).to_lowercase()) } td { "—" } td { "—" } td { "—" }
                             td class="num" { (anonymous.calls) } td class="num" { (anonymous.denied) }
                             td class="num" { (anonymous.rate_limited) } td { "—" } }
                    }
                }
            }
            h2 { "Tokens" }
            p class="hint" { "Only salted hashes are kept; a token is shown once, when it is made (here, or by " code { "switchboard token create AGENT" } "). " (if console.shared.shared_tokens.is_some() { "They are kept in PostgreSQL and shared by every replica: within a second every replica refuses a revoked token and accepts a new one." } else { "A gateway that started with tokens follows the token file within a second: a revoked token is refused, a new one accepted." }) }
            @if can_make && !config.agents.is_empty() {
                div class="new-tokens" { @for name in config.agents.keys() {
                    form method="post" action=(format!("/console/agents/{name}/tokens")) {
                        (layout::csrf_field(&session))
                        button type="submit" { "New token for " (name) }
                    }
                } }
            }
            @if tokens.is_empty() { p class="empty" { "No tokens." } } @else {
                table class="tokens" {
                    thead { tr { th { "Agent" } th { "Id" } th { "Created" } th { "Kept in" } th { "" } } }
                    tbody { @for token in &tokens { tr data-token=(token.id) {
                        td { (token.agent) } td { code { (token.id) } }
                        td { (token.created.as_deref().unwrap_or("—")) } td { (token.source) }
                        td { @if token.source != "config" {
                            (layout::danger_button(&session, &format!("/console/tokens/{}/revoke", token.id), "Revoke"))
                        } }
                    } } }
                }
            }
        },
    ))
}
