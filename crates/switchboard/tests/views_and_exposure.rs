//! The Host's views and exposure modes, end to end through the `Backend` a front uses, with
//! in-process providers: what is listed and what is callable always agree.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use support::{Named, plan};
use switchboard::{AgentProfile, Host, HostOptions};
use switchboard_core::agent::{AgentPolicy, ToolPattern};
use switchboard_core::config::Exposure;
use switchboard_core::pipeline::CallError;
use switchboard_core::{CallContext, Caller, ToolCall, ToolOutcome};
use switchboard_mcp::front::Backend;

fn profile(
    name: &str,
    allow: &[&str],
    exposure: Option<Exposure>,
    pinned: &[&str],
) -> Arc<AgentProfile> {
    Arc::new(AgentProfile {
        tier: None,
        policy: Arc::new(AgentPolicy {
            name: name.to_owned(),
            allow: allow.iter().map(|g| ToolPattern::parse(g)).collect(),
            deny: vec![],
        }),
        exposure,
        pinned: pinned.iter().map(|g| ToolPattern::parse(g)).collect(),
        max_listing_tokens: None,
        max_result_tokens: None,
        scopes: Arc::from([]),
    })
}

async fn host() -> Host {
    let plans = vec![
        plan(
            Named {
                id: "dice",
                tools: &["roll", "roll_table"],
            },
            "games/dice",
        ),
        plan(
            Named {
                id: "cards",
                tools: &["draw"],
            },
            "games/cards",
        ),
        plan(
            Named {
                id: "files",
                tools: &["read_file", "write_file"],
            },
            "",
        ),
    ];
    let agents = BTreeMap::from([
        (
            "npc".to_owned(),
            profile("npc", &["dice:*", "cards__draw"], None, &[]),
        ),
        (
            "lazy".to_owned(),
            profile(
                "lazy",
                &[],
                Some(Exposure::Categories),
                &["files__read_file"],
            ),
        ),
        ("qa".to_owned(), profile("qa", &[], None, &[])),
        ("tight".to_owned(), {
            let mut tight = (*profile("tight", &[], None, &[])).clone();
            tight.max_listing_tokens = Some(1);
            Arc::new(tight)
        }),
        ("roomy".to_owned(), {
            let mut roomy = (*profile("roomy", &[], None, &[])).clone();
            roomy.max_listing_tokens = Some(1_000_000);
            Arc::new(roomy)
        }),
        ("terse".to_owned(), {
            let mut terse = (*profile("terse", &[], None, &[])).clone();
            terse.max_result_tokens = Some(50);
            Arc::new(terse)
        }),
        (
            "seeker".to_owned(),
            profile(
                "seeker",
                &["dice:*", "files:read_file"],
                Some(Exposure::Search),
                &[],
            ),
        ),
    ]);
    let options = HostOptions {
        agents,
        ..HostOptions::default()
    };
    let host = Host::start(plans, options);
    host.ready().await;
    host
}

fn caller(agent: &str, session: &str) -> Caller {
    Caller::new(Some(agent.to_owned()), Some(session.to_owned()))
}

async fn listed(host: &Host, caller: &Caller) -> Vec<String> {
    host.list_tools(caller)
        .await
        .into_iter()
        .map(|t| t.name)
        .collect()
}

async fn call(
    host: &Host,
    caller: &Caller,
    name: &str,
    arguments: Value,
) -> Result<ToolOutcome, CallError> {
    let ctx = CallContext {
        agent: caller.agent.clone(),
        session: caller.session.clone(),
        ..CallContext::default()
    };
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    host.call_tool(ctx, ToolCall::new(name, arguments)).await
}

#[tokio::test]
async fn listing_and_calling_agree_for_every_agent_and_tool() {
    let host = host().await;
    let every_tool = [
        "cards__draw",
        "dice__roll",
        "dice__roll_table",
        "files__read_file",
        "files__write_file",
    ];
    for agent in ["npc", "qa", "stranger"] {
        let who = caller(agent, "s");
        let visible = listed(&host, &who).await;
        let json: Vec<Value> = serde_json::from_str(&host.tools_json(&who).await).expect("json");
        assert_eq!(
            json.len(),
            visible.len(),
            "{agent}: tools_json agrees with list_tools"
        );
        for tool in every_tool {
            let answer = call(&host, &who, tool, json!({})).await;
            assert_eq!(
                answer.is_ok(),
                visible.iter().any(|v| v == tool),
                "{agent} × {tool}: listed iff callable ({answer:?})"
            );
            if let Err(error) = answer {
                assert_eq!(
                    error,
                    CallError::UnknownTool {
                        name: tool.to_owned()
                    }
                );
            }
        }
    }
    assert_eq!(
        listed(&host, &caller("npc", "s")).await,
        ["cards__draw", "dice__roll", "dice__roll_table"]
    );
    assert_eq!(listed(&host, &caller("qa", "s")).await.len(), 5);
    assert!(listed(&host, &caller("stranger", "s")).await.is_empty());
    // No agent named: everything.
    assert_eq!(listed(&host, &Caller::default()).await.len(), 5);
}

#[tokio::test]
async fn categories_load_per_session_and_announce_the_change() {
    let host = host().await;
    let one = caller("lazy", "one");
    let other = caller("lazy", "other");
    assert_eq!(
        listed(&host, &one).await,
        [
            "list_categories",
            "load_category",
            "unload_category",
            "files__read_file"
        ],
        "meta-tools and the pinned tool only"
    );
    let categories = call(&host, &one, "list_categories", json!({}))
        .await
        .expect("list");
    let names: Vec<&str> =
        categories.structured_content.as_ref().expect("structured")["categories"]
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
    assert_eq!(names, ["files", "games", "games/cards", "games/dice"]);

    let mut version = host.listing_version(&one);
    let loaded = call(&host, &one, "load_category", json!({"name": "games"}))
        .await
        .expect("load");
    assert!(!loaded.is_error, "{loaded:?}");
    assert!(
        version.has_changed().expect("open"),
        "loading announces a list change"
    );
    version.mark_unchanged();
    let now = listed(&host, &one).await;
    assert!(
        now.contains(&"dice__roll".to_owned()) && now.contains(&"cards__draw".to_owned()),
        "{now:?}"
    );
    assert!(
        !listed(&host, &other)
            .await
            .contains(&"dice__roll".to_owned()),
        "another session is unaffected"
    );

    // A tool in the view is callable whether or not its category is loaded; an unknown
    // category is a readable error.
    assert!(call(&host, &other, "dice__roll", json!({})).await.is_ok());
    let unknown = call(&host, &one, "load_category", json!({"name": "gmaes"}))
        .await
        .expect("answer");
    assert!(
        unknown.is_error && unknown.text_content().contains("games/dice"),
        "{unknown:?}"
    );

    let unloaded = call(&host, &one, "unload_category", json!({"name": "games"}))
        .await
        .expect("unload");
    assert!(!unloaded.is_error);
    assert!(version.has_changed().expect("open"));
    assert!(!listed(&host, &one).await.contains(&"dice__roll".to_owned()));
    // Meta-tools exist only in their mode.
    let full = call(&host, &caller("qa", "s"), "list_categories", json!({})).await;
    assert_eq!(
        full,
        Err(CallError::UnknownTool {
            name: "list_categories".into()
        })
    );
}

#[tokio::test]
async fn search_mode_finds_describes_and_calls_within_the_view() {
    let host = host().await;
    let seeker = caller("seeker", "s");
    assert_eq!(
        listed(&host, &seeker).await,
        ["search_tools", "describe_tool", "call_tool"]
    );
    let found = call(
        &host,
        &seeker,
        "search_tools",
        json!({"query": "roll the dice"}),
    )
    .await
    .expect("search");
    let names: Vec<&str> = found.structured_content.as_ref().expect("structured")["tools"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(names.first(), Some(&"dice__roll"), "{names:?}");
    assert!(
        found
            .text_content()
            .starts_with("dice__roll(): The roll tool"),
        "{}",
        found.text_content()
    );
    let files = call(
        &host,
        &seeker,
        "search_tools",
        json!({"query": "write a file"}),
    )
    .await
    .expect("search");
    let text = files.text_content();
    assert!(
        !text.contains("files__write_file"),
        "outside the view: {text}"
    );
    let described = call(
        &host,
        &seeker,
        "describe_tool",
        json!({"name": "dice__roll"}),
    )
    .await
    .expect("describe");
    assert_eq!(
        described.structured_content.as_ref().expect("schema")["name"],
        "dice__roll"
    );
    let hidden = call(
        &host,
        &seeker,
        "describe_tool",
        json!({"name": "files__write_file"}),
    )
    .await
    .expect("answer");
    assert!(hidden.is_error);
    let ran = call(
        &host,
        &seeker,
        "call_tool",
        json!({"name": "dice__roll", "arguments": {}}),
    )
    .await
    .expect("call");
    assert_eq!(ran.text_content(), "dice:roll");
    let refused = call(
        &host,
        &seeker,
        "call_tool",
        json!({"name": "files__write_file"}),
    )
    .await
    .expect("answer");
    assert!(
        refused.is_error
            && refused
                .text_content()
                .contains("unknown tool 'files__write_file'")
    );
}

/// A cut result's structured copy, over the budget itself, goes with the rest of the text;
/// a small one stays.
#[tokio::test]
async fn a_cut_results_structured_content_keeps_within_the_budget() {
    let host = host().await;
    let terse = caller("terse", "s");
    let long: String = (0..300).map(|i| format!("word{i} ")).collect();
    let cut = call(
        &host,
        &terse,
        "dice__roll",
        json!({"text": long, "structured": true}),
    )
    .await
    .expect("ok");
    assert!(cut.text_content().contains("[… truncated"), "cut");
    assert_eq!(cut.structured_content, None, "the structured copy went too");
    let small = call(
        &host,
        &terse,
        "dice__roll",
        json!({"text": "short", "structured": true}),
    )
    .await
    .expect("ok");
    assert_eq!(small.structured_content, Some(json!({"text": "short"})));
}

/// An embedded text resource counts against the budget: over it, the resource's text joins
/// the result's text (headed by its URI) and is cut with it; the image stays.
#[tokio::test]
async fn an_embedded_text_resource_is_cut_to_the_budget_too() {
    let host = host().await;
    let terse = caller("terse", "s");
    let long: String = (0..300).map(|i| format!("word{i} ")).collect();
    let cut = call(&host, &terse, "dice__roll", json!({"resource": long}))
        .await
        .expect("ok");
    let answer = serde_json::to_value(&cut).expect("serializes");
    let types: Vec<&str> = answer["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|block| block["type"].as_str())
        .collect();
    assert_eq!(types, ["text", "image"], "{answer}");
    let text = cut.text_content();
    assert!(
        text.starts_with("dice:roll\n[resource note://long]\nword0 ") && text.len() < 400,
        "{text}"
    );
    assert!(text.contains("[… truncated"), "{text}");
    let small = call(&host, &terse, "dice__roll", json!({"resource": "short"}))
        .await
        .expect("ok");
    let answer = serde_json::to_value(&small).expect("serializes");
    assert_eq!(
        answer["content"][1]["resource"]["text"], "short",
        "{answer}"
    );
}

#[tokio::test]
async fn large_results_are_cut_and_the_rest_is_read_with_read_more() {
    let host = host().await;
    let terse = caller("terse", "s");
    let long: String = (0..300).map(|i| format!("word{i} ")).collect();
    assert!(
        !listed(&host, &terse)
            .await
            .contains(&"read_more".to_owned())
    );
    let mut version = host.listing_version(&terse);
    version.mark_unchanged();
    let cut = call(&host, &terse, "dice__roll", json!({"text": long}))
        .await
        .expect("ok");
    let text = cut.text_content();
    assert!(
        text.len() < 400,
        "cut to about 50 tokens: {} bytes",
        text.len()
    );
    let marker = text.split("[… truncated: about ").nth(1).expect("a marker");
    let answer = serde_json::to_value(&cut).expect("serializes");
    let call_id = answer["_meta"]["switchboard.dev/call"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(
        marker.contains(&format!("read_more(call_id=\"{call_id}\", offset=")),
        "{marker}"
    );
    assert!(
        version.has_changed().expect("open"),
        "read_more appears with a list change"
    );
    assert!(
        listed(&host, &terse)
            .await
            .contains(&"read_more".to_owned())
    );
    let mut whole = text
        .split("\n[… truncated")
        .next()
        .expect("head")
        .to_owned();
    let mut offset: u64 = marker
        .split("offset=")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse().ok())
        .expect("offset");
    loop {
        let more = call(
            &host,
            &terse,
            "read_more",
            json!({"call_id": call_id, "offset": offset}),
        )
        .await
        .expect("more");
        let piece = more.text_content();
        match piece.split_once("\n[… truncated") {
            Some((head, rest)) => {
                whole.push_str(head);
                offset = rest
                    .split("offset=")
                    .nth(1)
                    .and_then(|r| r.split(')').next())
                    .and_then(|n| n.parse().ok())
                    .expect("offset");
            }
            None => {
                whole.push_str(&piece);
                break;
            }
        }
    }
    assert_eq!(
        whole,
        format!("dice:roll{long}"),
        "the pieces add up to the whole result"
    );
    let stranger = call(
        &host,
        &caller("qa", "other"),
        "read_more",
        json!({"call_id": call_id, "offset": 0}),
    )
    .await;
    assert!(
        stranger.is_err(),
        "read_more is not listed, so not callable, for another session"
    );
}

#[tokio::test]
async fn a_listing_is_fitted_into_the_agents_token_budget() {
    let host = host().await;
    assert_eq!(
        host.listing_mode(&caller("roomy", "s")),
        switchboard::ListingMode::Full
    );
    assert_eq!(listed(&host, &caller("roomy", "s")).await.len(), 5);
    assert_eq!(
        host.listing_mode(&caller("tight", "s")),
        switchboard::ListingMode::Search
    );
    assert_eq!(
        listed(&host, &caller("tight", "s")).await,
        ["search_tools", "describe_tool", "call_tool"],
        "nothing fits in 1 token, so search mode is chosen"
    );
    let found = call(
        &host,
        &caller("tight", "s"),
        "search_tools",
        json!({"query": "roll"}),
    )
    .await
    .expect("search");
    assert!(!found.is_error, "the fitted mode's meta-tools answer");
}

/// Server `timed` with five tools of 20 ms to 9 s declared.
fn timed_plan() -> switchboard::ServerPlan {
    let timed = Timed(&[
        ("instant", 20),
        ("quick", 400),
        ("medium", 1_200),
        ("slow", 3_500),
        ("glacial", 9_000),
    ]);
    let mut plan = plan(
        Named {
            id: "unused",
            tools: &[],
        },
        "",
    );
    plan.spec.id = switchboard_core::ServerId::new("timed");
    plan.spec.endpoint = switchboard_mcp::upstream::Endpoint::InProcess(Arc::new(timed));
    plan.prefix = "timed".into();
    plan
}

/// A provider whose tools declare their latency (`name:max_ms`).
struct Timed(&'static [(&'static str, u64)]);

impl switchboard_core::upstream::ToolProvider for Timed {
    fn name(&self) -> &str {
        "timed"
    }

    fn tools(&self) -> Vec<switchboard_core::ToolDefinition> {
        self.0
            .iter()
            .map(|(name, max)| {
                let mut definition =
                    switchboard_core::ToolDefinition::new(*name, "d", json!({"type": "object"}));
                switchboard_core::LatencyMeta::new(max / 4, *max).write_into(&mut definition.meta);
                definition
            })
            .collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _arguments: serde_json::Map<String, Value>,
        _ctx: &'a CallContext,
    ) -> futures::future::BoxFuture<'a, Result<ToolOutcome, switchboard_core::upstream::ToolError>>
    {
        Box::pin(async move { Ok(ToolOutcome::text(tool)) })
    }
}

#[tokio::test]
async fn permission_matrix_agents_tools_and_tiers_list_and_call_alike() {
    use switchboard_core::tier::Tier;
    let plan = timed_plan();
    let mut voice = (*profile("voice", &["timed:*"], None, &[])).clone();
    voice.tier = Some("fast".into());
    let mut partial = (*profile("partial", &["timed__quick", "timed__slow"], None, &[])).clone();
    partial.tier = None;
    let options = HostOptions {
        agents: BTreeMap::from([
            ("voice".to_owned(), Arc::new(voice)),
            ("partial".to_owned(), Arc::new(partial)),
            ("all".to_owned(), profile("all", &[], None, &[])),
        ]),
        tiers: [("fast", 500), ("standard", 1_500), ("deep", 4_000)]
            .map(|(name, ms)| Tier {
                name: name.into(),
                ceiling: std::time::Duration::from_millis(ms),
            })
            .to_vec(),
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan], options);
    host.ready().await;
    let tools = [
        "timed__instant",
        "timed__quick",
        "timed__medium",
        "timed__slow",
        "timed__glacial",
    ];
    let expected = |agent: &str, tier: Option<&str>| -> Vec<&str> {
        let permitted: Vec<&str> = match agent {
            "partial" => vec!["timed__quick", "timed__slow"],
            _ => tools.to_vec(),
        };
        let tier = tier.or(if agent == "voice" { Some("fast") } else { None });
        let ceiling = match tier {
            Some("fast") => 500,
            Some("standard") => 1_500,
            Some("deep") => 4_000,
            Some(_) => 0,
            None => u64::MAX,
        };
        let max = |tool: &str| match tool {
            "timed__instant" => 20,
            "timed__quick" => 400,
            "timed__medium" => 1_200,
            "timed__slow" => 3_500,
            _ => 9_000,
        };
        permitted
            .into_iter()
            .filter(|t| max(t) <= ceiling)
            .collect()
    };
    for agent in ["voice", "partial", "all"] {
        for tier in [
            None,
            Some("fast"),
            Some("standard"),
            Some("deep"),
            Some("nonsense"),
        ] {
            let who = Caller::new(Some(agent.to_owned()), Some(format!("{agent}-{tier:?}")))
                .with_tier(tier.map(str::to_owned));
            let mut listed = listed(&host, &who).await;
            listed.sort();
            let mut want: Vec<String> = expected(agent, tier)
                .into_iter()
                .map(str::to_owned)
                .collect();
            want.sort();
            assert_eq!(listed, want, "{agent} in tier {tier:?}");
            for tool in tools {
                let ctx = CallContext {
                    agent: Some(agent.to_owned()),
                    session: who.session.clone(),
                    tier: tier.map(str::to_owned),
                    ..CallContext::default()
                };
                let answer = host
                    .call_tool(ctx, ToolCall::new(tool, Default::default()))
                    .await;
                assert_eq!(
                    answer.is_ok(),
                    want.contains(&tool.to_owned()),
                    "{agent} × {tool} × {tier:?}: visible = callable"
                );
            }
        }
    }
    // An operator changes a session's tier: its listing changes and it hears about it.
    let session = Caller::new(Some("all".into()), Some("ops".into()));
    let mut version = host.listing_version(&session);
    version.mark_unchanged();
    host.set_session_tier("ops", Some("fast".into()))
        .await
        .expect("no shared store to refuse it");
    assert!(version.has_changed().expect("open"));
    assert_eq!(
        listed(&host, &session).await,
        ["timed__instant", "timed__quick"]
    );
    host.set_agent_tier("all", Some("standard".into()));
    assert_eq!(
        listed(
            &host,
            &Caller::new(Some("all".into()), Some("other".into()))
        )
        .await
        .len(),
        3
    );
}

/// The listing budget is fitted per view: an agent whose fast tier fits in full still gets
/// a smaller listing where it sees every tool, whichever it listed first.
#[tokio::test]
async fn a_listing_budget_is_fitted_to_each_view_of_an_agent() {
    use switchboard_core::tier::Tier;
    let plan = timed_plan();
    let mut fitted = (*profile("fitted", &[], None, &[])).clone();
    fitted.max_listing_tokens = Some(150);
    let options = HostOptions {
        agents: BTreeMap::from([("fitted".to_owned(), Arc::new(fitted))]),
        tiers: vec![Tier {
            name: "fast".into(),
            ceiling: std::time::Duration::from_millis(500),
        }],
        ..HostOptions::default()
    };
    let host = Host::start(vec![plan], options);
    host.ready().await;
    let fast = Caller::new(Some("fitted".into()), Some("a".into())).with_tier(Some("fast".into()));
    let everything = Caller::new(Some("fitted".into()), Some("b".into()));
    assert_eq!(
        listed(&host, &fast).await.len(),
        2,
        "two tools in the fast tier"
    );
    assert_eq!(host.listing_mode(&fast), switchboard::ListingMode::Full);
    assert_ne!(
        host.listing_mode(&everything),
        switchboard::ListingMode::Full,
        "five tools do not fit where two did"
    );
}
