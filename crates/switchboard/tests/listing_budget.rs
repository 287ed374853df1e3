//! `max_listing_tokens` is compared with what `switchboard tools --format mcp|mcp-compact
//! --count-tokens` counts: a budget of exactly that count fits the listing, one token less
//! does not.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use support::plan_of;
use switchboard::{AgentProfile, Host, HostOptions, ListingMode};
use switchboard_core::agent::AgentPolicy;
use switchboard_core::upstream::{ToolError, ToolProvider};
use switchboard_core::{CallContext, Caller, ToolDefinition, ToolOutcome};
use switchboard_mcp::front::Backend;
use switchboard_render::{Format, RenderTool, render, tokens};

/// Tools with long descriptions and verbose schemas, so the compact listing is much smaller.
struct Wordy;

impl ToolProvider for Wordy {
    fn name(&self) -> &str {
        "wordy"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        ["census", "weather", "atlas"]
            .iter()
            .map(|tool| {
                ToolDefinition::new(
                    *tool,
                    format!(
                        "Query the U.S. {tool} data by county. {}",
                        "It answers with rows of figures, one per county and year. ".repeat(6)
                    ),
                    json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                           "properties": {"county": {"type": "string", "title": "County", "description": ""},
                                          "year": {"type": "integer", "default": null}},
                           "required": []}),
                )
            })
            .collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _arguments: Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move { Ok(ToolOutcome::text(tool.to_owned())) })
    }
}

fn budget(name: &str, max: usize) -> (String, Arc<AgentProfile>) {
    let profile = AgentProfile {
        tier: None,
        policy: Arc::new(AgentPolicy {
            name: name.to_owned(),
            allow: vec![],
            deny: vec![],
        }),
        exposure: None,
        pinned: vec![],
        max_listing_tokens: Some(u64::try_from(max).expect("small")),
        max_result_tokens: None,
        scopes: Arc::from([]),
    };
    (name.to_owned(), Arc::new(profile))
}

async fn start(agents: BTreeMap<String, Arc<AgentProfile>>) -> Host {
    let options = HostOptions {
        agents,
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan_of("wordy", Arc::new(Wordy))], options);
    host.ready().await;
    host
}

#[tokio::test]
async fn budgets_compare_what_the_mcp_renders_count() {
    let probe = start(BTreeMap::new()).await;
    let definitions = probe.list_tools(&Caller::default()).await;
    assert_eq!(definitions.len(), 3);
    let tools: Vec<RenderTool<'_>> = definitions.iter().map(RenderTool::listed).collect();
    let full = tokens::count(&render(Format::Mcp, &tools));
    let compact = tokens::count(&render(Format::McpCompact, &tools));
    assert!(compact < full, "{compact} vs {full}");

    let host = start(BTreeMap::from([
        budget("full", full),
        budget("under_full", full - 1),
        budget("compact", compact),
        budget("under_compact", compact - 1),
    ]))
    .await;
    let mode = |agent: &str| host.listing_mode(&Caller::new(Some(agent.to_owned()), None));
    assert_eq!(mode("full"), ListingMode::Full);
    assert_eq!(mode("under_full"), ListingMode::Compact);
    assert_eq!(mode("compact"), ListingMode::Compact);
    assert_ne!(mode("under_compact"), ListingMode::Compact);
}
