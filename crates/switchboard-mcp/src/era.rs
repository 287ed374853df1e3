//! The two protocol eras and what distinguishes them on the wire.
//!
//! * **Legacy** (up to 2025-11-25): an `initialize` handshake fixes the version and the
//!   capabilities for the connection (and, over HTTP, a session).
//! * **Modern** (2026-07-28): stateless. `server/discover` replaces the handshake, and every
//!   request carries the protocol version and client capabilities in `_meta`.

use serde_json::{Map, Value, json};

pub const MODERN_VERSION: &str = "2026-07-28";
pub const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// Legacy versions this gateway speaks, newest first.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The log level a modern request asks for; without it no log message may reach the client.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The HTTP header that carries the protocol version (after `initialize` in the legacy era,
/// on every request in the modern one).
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// The `_meta` keys every modern request must carry that `meta` lacks, in order.
pub fn missing_envelope_keys(meta: &Map<String, Value>) -> Vec<&'static str> {
    [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|key| !meta.contains_key(*key))
        .collect()
}

/// Which era a connection speaks, and at which version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    Legacy { version: String },
    Modern,
}

impl Era {
    pub fn version(&self) -> &str {
        match self {
            Self::Legacy { version } => version,
            Self::Modern => MODERN_VERSION,
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Self::Legacy { .. } => "legacy",
            Self::Modern => "modern",
        }
    }

    /// Whether `version` is one this gateway speaks as a legacy peer.
    pub fn is_legacy_version(version: &str) -> bool {
        LEGACY_VERSIONS.contains(&version)
    }
}

/// Adds the modern era's per-request context to `params._meta`.
pub fn add_modern_meta(params: &mut Map<String, Value>, client_info: &Value, capabilities: &Value) {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            META_PROTOCOL_VERSION.into(),
            Value::String(MODERN_VERSION.into()),
        );
        // A request relaying its client's input round already names that client's capabilities.
        meta.entry(META_CLIENT_CAPABILITIES)
            .or_insert_with(|| capabilities.clone());
        meta.insert(META_CLIENT_INFO.into(), client_info.clone());
    }
}

/// The identity Switchboard presents to upstream servers.
pub fn client_info() -> Value {
    json!({"name": "switchboard", "version": env!("CARGO_PKG_VERSION")})
}
