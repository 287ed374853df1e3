//! `switchboard tools --format mcp|openai|…|compact|toon [--catalog FILE] [--count-tokens]`:
//! a catalog as an LLM API would receive it — the live one (within an agent's view), or an
//! offline catalog file with no servers started — or its o200k_base token count.

use std::path::Path;

use switchboard_core::ToolDefinition;
use switchboard_core::offline::OfflineCatalog;
use switchboard_render::{Format, RenderTool, render, tokens};

use crate::output::print_line;

/// Prints `tools` (exposed name, definition) in `format`, or its token count.
pub fn print(
    format: Format,
    tools: &[(String, ToolDefinition)],
    count_tokens: bool,
) -> anyhow::Result<()> {
    let render_tools: Vec<RenderTool<'_>> = tools
        .iter()
        .map(|(name, definition)| RenderTool { name, definition })
        .collect();
    let text = render(format, &render_tools);
    if count_tokens {
        print_line(&tokens::count(&text).to_string())
    } else {
        print_line(text.trim_end())
    }
}

/// The tools of an offline catalog, named `<server>__<tool>` as the gateway would.
pub fn offline(path: &Path) -> anyhow::Result<Vec<(String, ToolDefinition)>> {
    Ok(offline_by_server(path)?
        .into_iter()
        .map(|(name, _, definition)| (name, definition))
        .collect())
}

/// [`offline`] with each tool's server: (name, server, definition).
pub fn offline_by_server(path: &Path) -> anyhow::Result<Vec<(String, String, ToolDefinition)>> {
    let catalog = OfflineCatalog::load(path)?;
    Ok(catalog
        .tools
        .into_iter()
        .map(|tool| {
            (
                format!("{}__{}", tool.server, tool.definition.name),
                tool.server,
                tool.definition,
            )
        })
        .collect())
}
