//! The validated configuration: what the rest of Switchboard reads.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file it came from, if any.
    pub source: Option<PathBuf>,
    pub gateway: GatewayConfig,
    /// Servers in file order (the order that settles name collisions).
    pub servers: Vec<ServerConfig>,
    /// Old exposed name → current exposed name.
    pub aliases: BTreeMap<String, String>,
}

impl Config {
    /// What runs when no config file exists: the built-in tools, no external servers.
    pub fn builtin_default() -> Self {
        Self {
            source: None,
            gateway: GatewayConfig::default(),
            servers: vec![ServerConfig::new(
                "clock",
                Transport::Builtin {
                    name: "clock".to_owned(),
                },
            )],
            aliases: BTreeMap::new(),
        }
    }
}

/// `[gateway]`.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Between prefix and tool name in exposed names.
    pub separator: String,
    /// false = pass-through names (no prefix).
    pub prefix_tools: bool,
    /// Default deadline of one tool call.
    pub call_timeout: Duration,
    /// Bound on starting a server and completing its handshake.
    pub connect_timeout: Duration,
    /// How long the `server/discover` probe waits before falling back to `initialize`.
    pub discover_timeout: Duration,
    /// Largest JSON-RPC message accepted from a client or a server.
    pub max_message_bytes: usize,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            separator: "__".to_owned(),
            prefix_tools: true,
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            discover_timeout: Duration::from_secs(2),
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

/// One `[servers.ID]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub id: String,
    pub display_name: Option<String>,
    pub enabled: bool,
    pub transport: Transport,
    /// None = the id; Some("") = no prefix.
    pub prefix: Option<String>,
    pub call_timeout: Option<Duration>,
    pub era: EraPreference,
    /// Per-tool overrides, by the upstream's tool name.
    pub tools: BTreeMap<String, ToolOverrideConfig>,
}

impl ServerConfig {
    pub fn new(id: &str, transport: Transport) -> Self {
        Self {
            id: id.to_owned(),
            display_name: None,
            enabled: true,
            transport,
            prefix: None,
            call_timeout: None,
            era: EraPreference::Auto,
            tools: BTreeMap::new(),
        }
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Sse {
        url: String,
        headers: BTreeMap<String, String>,
    },
    Builtin {
        name: String,
    },
}

/// Which protocol era to speak with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    #[default]
    Auto,
    Legacy,
    Modern,
}

/// `[servers.ID.tools.TOOL]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverrideConfig {
    pub name: Option<String>,
    pub description: Option<String>,
    pub hidden: bool,
}
