//! The token benchmark: o200k_base tokens of one catalog in every format, as a share of the
//! OpenAI JSON a client would otherwise send, the search-mode initial context, and how long
//! rendering the compact listing takes.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use switchboard_core::offline::OfflineCatalog;
use switchboard_render::{Format, RenderTool, render, slim::slim, tokens::count};

/// The search-mode meta-tools as the gateway lists them (kept in step by the e2e tests).
fn search_mode_context() -> String {
    let tools = json!([
        {"name": "search_tools", "description": "Find tools for a task. Returns one line per match: name(params) — what it does.",
         "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "What you want to do, in words"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Most results (default 8)"}}, "required": ["query"], "additionalProperties": false}},
        {"name": "describe_tool", "description": "The full definition (input schema) of one tool found with search_tools.",
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "Tool name"}}, "required": ["name"], "additionalProperties": false}},
        {"name": "call_tool", "description": "Call a tool found with search_tools, with arguments matching its input schema.",
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "description": "Tool name"}, "arguments": {"type": "object", "description": "The tool's arguments"}}, "required": ["name"], "additionalProperties": false}}
    ]);
    tools.to_string()
}

pub fn run(catalog: &Path, json_output: bool) -> anyhow::Result<()> {
    let catalog = OfflineCatalog::load(catalog)?;
    let names: Vec<String> = catalog
        .tools
        .iter()
        .map(|t| format!("{}__{}", t.server, t.definition.name))
        .collect();
    let tools: Vec<RenderTool<'_>> = catalog
        .tools
        .iter()
        .zip(&names)
        .map(|(tool, name)| RenderTool {
            name,
            definition: &tool.definition,
        })
        .collect();
    let openai = count(&render(Format::OpenAiChat, &tools));
    let minified = {
        let definitions: Vec<&switchboard_core::ToolDefinition> =
            catalog.tools.iter().map(|t| &t.definition).collect();
        count(&serde_json::to_string(&definitions)?)
    };
    let unslimmed_openai = {
        let raw: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description(), "parameters": t.definition.input_schema}}))
            .collect();
        count(&Value::Array(raw).to_string())
    };
    let toon_full = {
        let definitions: Vec<&switchboard_core::ToolDefinition> =
            catalog.tools.iter().map(|t| &t.definition).collect();
        switchboard_render::toon::encode(&serde_json::to_value(&definitions)?)
            .map_or(0, |t| count(&t))
    };
    let slimmed_schemas = {
        let schemas: Vec<Value> = catalog
            .tools
            .iter()
            .map(|t| slim(&t.definition.input_schema))
            .collect();
        let raw: Vec<&Value> = catalog
            .tools
            .iter()
            .map(|t| &t.definition.input_schema)
            .collect();
        (
            count(&serde_json::to_string(&raw)?),
            count(&serde_json::to_string(&schemas)?),
        )
    };
    let categories: std::collections::BTreeSet<&str> =
        catalog.tools.iter().map(|t| t.category.as_str()).collect();
    let category_index = categories.iter().copied().collect::<Vec<_>>().join(", ");
    let search_context =
        count(&search_mode_context()) + count(&format!("Categories: {category_index}"));
    let mut rows: Vec<(String, usize)> = vec![
        (
            "OpenAI JSON (chat tools, schemas as served)".to_owned(),
            unslimmed_openai,
        ),
        (
            "OpenAI JSON (chat tools, slimmed schemas)".to_owned(),
            openai,
        ),
        ("minified JSON of the definitions".to_owned(), minified),
        ("TOON of the definitions".to_owned(), toon_full),
    ];
    for format in [
        Format::Mcp,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
        Format::Compact,
        Format::Toon,
    ] {
        rows.push((
            format!("render --format {}", format.name()),
            count(&render(format, &tools)),
        ));
    }
    rows.push((
        "input schemas alone, as served".to_owned(),
        slimmed_schemas.0,
    ));
    rows.push(("input schemas alone, slimmed".to_owned(), slimmed_schemas.1));
    rows.push((
        "search mode initial context (meta-tools + category index)".to_owned(),
        search_context,
    ));
    let mut timings = Vec::with_capacity(200);
    for _ in 0..200 {
        let started = Instant::now();
        let listing = switchboard_render::compact::listing(&tools);
        timings.push(started.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(listing);
    }
    timings.sort_by(f64::total_cmp);
    let median_us = timings[timings.len() / 2];
    if json_output {
        let table: Vec<Value> = rows
            .iter()
            .map(|(what, tokens)| json!({"rendering": what, "tokens": tokens, "share_of_openai_json": *tokens as f64 / unslimmed_openai as f64}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
            "tools": tools.len(), "renderings": table, "compact_listing_render_us_p50": median_us}))?
        );
    } else {
        println!("## o200k_base tokens of {} tools\n", tools.len());
        println!("{:62} {:>9} {:>9}", "rendering", "tokens", "share");
        for (what, tokens) in &rows {
            println!(
                "{what:62} {tokens:>9} {:>8.1}%",
                100.0 * *tokens as f64 / unslimmed_openai as f64
            );
        }
        println!(
            "\nrendering the compact listing of {} tools: p50 {median_us:.0} µs (200 runs)",
            tools.len()
        );
    }
    Ok(())
}
