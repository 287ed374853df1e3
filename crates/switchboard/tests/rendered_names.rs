//! A model calls a tool by the name a render showed it: the LLM-safe names of the OpenAI,
//! Anthropic and Gemini renders (`fs__read.file` → `fs__read_file_<hash>`, `9ball__rack` →
//! `_9ball__rack` for Gemini) reach their tools through `Host::call_tool`, and are recorded
//! under the tools' exposed names.

mod support;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use support::{Named, plan};
use switchboard::{Host, HostOptions};
use switchboard_core::pipeline::{CallRecord, Recorder};
use switchboard_core::{CallContext, Caller, ToolCall};
use switchboard_mcp::front::Backend;
use switchboard_render::{Format, RenderTool, render_value};

/// The tool names in one rendered listing.
fn rendered_names(format: Format, rendered: &Value) -> Vec<String> {
    let declarations = match format {
        Format::Gemini => rendered["functionDeclarations"].clone(),
        _ => rendered.clone(),
    };
    declarations
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| {
                    tool.get("function")
                        .unwrap_or(tool)
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The names calls were recorded under.
#[derive(Default)]
struct Names(Mutex<Vec<String>>);

impl Recorder for Names {
    fn record(&self, record: &CallRecord) {
        if let Ok(mut names) = self.0.lock() {
            names.push(record.name.clone());
        }
    }
}

#[tokio::test]
async fn calls_by_rendered_names_reach_their_tools() {
    let plans = vec![
        plan(
            Named {
                id: "fs",
                tools: &["read.file"],
            },
            "",
        ),
        plan(
            Named {
                id: "9ball",
                tools: &["rack"],
            },
            "",
        ),
    ];
    let recorded = Arc::new(Names::default());
    let options = HostOptions {
        recorder: recorded.clone(),
        ..HostOptions::default()
    };
    let host = Host::start(plans, options);
    host.ready().await;
    let definitions = host.list_tools(&Caller::default()).await;
    let tools: Vec<RenderTool<'_>> = definitions.iter().map(RenderTool::listed).collect();
    let mut seen = Vec::new();
    for format in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
    ] {
        let rendered = render_value(format, &tools).expect("a JSON format");
        let names = rendered_names(format, &rendered);
        assert_eq!(names.len(), 2, "{}: {rendered}", format.name());
        for name in names {
            let answer = host
                .call_tool(CallContext::default(), ToolCall::new(&name, Map::new()))
                .await;
            let outcome = answer.unwrap_or_else(|error| panic!("{name}: {error}"));
            let text = outcome.content[0]["text"].as_str().unwrap_or("").to_owned();
            assert!(
                text == "fs:read.file" || text == "9ball:rack",
                "{name} reached {text}"
            );
            seen.push(name);
        }
    }
    assert!(
        seen.iter().any(|name| name.starts_with("fs__read_file_")),
        "the dotted name was hashed: {seen:?}"
    );
    assert!(seen.iter().any(|name| name == "_9ball__rack"), "{seen:?}");
    let names = recorded
        .0
        .lock()
        .map(|names| names.clone())
        .unwrap_or_default();
    assert_eq!(names.len(), seen.len());
    assert!(
        names
            .iter()
            .all(|name| name == "fs__read.file" || name == "9ball__rack"),
        "recorded under {names:?}"
    );
}
