//! Renderers: one catalog of tools, written for whichever API reads it — MCP (full, or as
//! the gateway's compact listing mode sends it), OpenAI (Chat
//! Completions, Responses, Realtime), Anthropic, Gemini — or as a compact one-line-per-tool
//! listing or TOON; plus LLM-safe names, meaning-preserving schema slimming, `$ref`/`allOf`
//! inlining for readers that do not follow them, o200k_base token
//! counts, and adaptive TOON for results. Every choice of format here was measured
//! (`cargo run -p bench --release -- tokens`).

pub mod anthropic;
pub mod compact;
pub mod gemini;
pub mod in_words;
pub mod inline;
pub mod mcp;
pub mod names;
pub mod openai;
pub mod slim;
pub mod tokens;
pub mod toon;

use std::str::FromStr;

use serde_json::Value;
use switchboard_core::ToolDefinition;

/// One tool to render: its exposed name and its definition.
#[derive(Debug, Clone, Copy)]
pub struct RenderTool<'a> {
    pub name: &'a str,
    pub definition: &'a ToolDefinition,
}

impl<'a> RenderTool<'a> {
    /// A tool under the name its definition carries (a listed definition's exposed name).
    pub fn listed(definition: &'a ToolDefinition) -> Self {
        Self {
            name: &definition.name,
            definition,
        }
    }
}

impl RenderTool<'_> {
    pub fn description(&self) -> &str {
        self.definition.description.as_deref().unwrap_or("")
    }
}

/// Every output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Mcp,
    /// MCP as the gateway's compact listing mode sends it.
    McpCompact,
    OpenAiChat,
    OpenAiResponses,
    OpenAiRealtime,
    Anthropic,
    Gemini,
    Compact,
    Toon,
}

impl Format {
    pub const ALL: [Format; 9] = [
        Self::Mcp,
        Self::McpCompact,
        Self::OpenAiChat,
        Self::OpenAiResponses,
        Self::OpenAiRealtime,
        Self::Anthropic,
        Self::Gemini,
        Self::Compact,
        Self::Toon,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::McpCompact => "mcp-compact",
            Self::OpenAiChat => "openai",
            Self::OpenAiResponses => "openai-responses",
            Self::OpenAiRealtime => "openai-realtime",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Compact => "compact",
            Self::Toon => "toon",
        }
    }
}

/// An unknown format name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown format '{0}' (known: mcp, mcp-compact, openai, openai-responses, openai-realtime, anthropic, gemini, compact, toon)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|format| format.name() == text)
            .ok_or_else(|| UnknownFormat(text.to_owned()))
    }
}

/// The JSON value of a JSON format (`None` for the text formats).
pub fn render_value(format: Format, tools: &[RenderTool<'_>]) -> Option<Value> {
    Some(match format {
        Format::Mcp => mcp::tools(tools),
        Format::McpCompact => mcp::compact_tools(tools),
        Format::OpenAiChat => openai::chat(tools),
        Format::OpenAiResponses => openai::responses(tools),
        Format::OpenAiRealtime => openai::realtime(tools),
        Format::Anthropic => anthropic::tools(tools),
        Format::Gemini => gemini::tools(tools),
        Format::Compact | Format::Toon => return None,
    })
}

/// The text the model would read: minified JSON for JSON formats.
pub fn render(format: Format, tools: &[RenderTool<'_>]) -> String {
    match format {
        Format::Compact => compact::listing(tools),
        Format::Toon => toon::listing(tools),
        json => render_value(json, tools).map_or_else(String::new, |value| value.to_string()),
    }
}
