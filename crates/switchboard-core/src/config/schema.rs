//! The JSON Schema of the native config format, generated from these mirror types (which
//! exist only to describe the file; validation walks the located tree instead). The schema is
//! checked in at `schema/switchboard.schema.json`; a test fails when it drifts.

use std::collections::BTreeMap;

use schemars::JsonSchema;

/// A Switchboard config file (TOML).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct SwitchboardConfig {
    /// Gateway-wide settings.
    gateway: Option<Gateway>,
    /// The MCP servers, by id. The id is the default prefix of their tools' names.
    servers: Option<BTreeMap<String, Server>>,
    /// Old exposed tool name → current exposed name; calls to the old name still work.
    aliases: Option<BTreeMap<String, String>>,
}

/// A duration: "500ms", "30s", "2m", "1h", or an integer number of milliseconds.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Duration {
    Text(#[schemars(regex(pattern = r"^\s*[0-9.]+\s*(ms|s|m|min|h)\s*$"))] String),
    Millis(u64),
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct Gateway {
    /// Between server prefix and tool name (default "__").
    separator: Option<String>,
    /// false exposes upstream names unchanged (pass-through).
    prefix_tools: Option<bool>,
    /// Default deadline of a tool call (default 60s).
    call_timeout: Option<Duration>,
    /// Bound on starting a server and its handshake (default 30s).
    connect_timeout: Option<Duration>,
    /// How long the server/discover probe waits before falling back to initialize (default 2s).
    discover_timeout: Option<Duration>,
    /// Largest accepted JSON-RPC message (default 16 MiB).
    max_message_bytes: Option<u64>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct Server {
    /// stdio: the program to run.
    command: Option<String>,
    /// stdio: its arguments.
    args: Option<Vec<String>>,
    /// stdio: extra environment variables.
    env: Option<BTreeMap<String, String>>,
    /// stdio: working directory.
    cwd: Option<String>,
    /// HTTP: the server's URL.
    url: Option<String>,
    /// HTTP: headers sent with every request.
    headers: Option<BTreeMap<String, String>>,
    /// HTTP: "streamable-http" (default) or "sse" (the legacy HTTP+SSE transport).
    transport: Option<String>,
    /// A built-in tool provider served in-process (e.g. "clock").
    builtin: Option<String>,
    /// Prefix of exposed names (default: the server id; "" for none).
    prefix: Option<String>,
    /// "auto" (default), "legacy" or "modern".
    era: Option<String>,
    /// Deadline of this server's tool calls.
    call_timeout: Option<Duration>,
    /// false keeps the server configured but not started.
    enabled: Option<bool>,
    /// Display name.
    name: Option<String>,
    /// Per-tool overrides, by the upstream's tool name.
    tools: Option<BTreeMap<String, ToolOverride>>,
}

#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct ToolOverride {
    /// Exposed name (before prefixing).
    name: Option<String>,
    /// Replacement description.
    description: Option<String>,
    /// Hide the tool.
    hidden: Option<bool>,
}

/// The JSON Schema of the native format, pretty-printed.
pub fn native_schema() -> String {
    let schema = schemars::schema_for!(SwitchboardConfig);
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn checked_in_schema_matches_the_types() {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema/switchboard.schema.json");
        let generated = native_schema();
        if std::env::var_os("SWITCHBOARD_BLESS").is_some() {
            std::fs::write(&path, &generated).expect("write schema");
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{} is out of date; run `SWITCHBOARD_BLESS=1 cargo test -p switchboard-core config` and commit it",
            path.display()
        );
    }
}
