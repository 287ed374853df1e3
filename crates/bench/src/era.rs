//! The two protocol eras as the benchmark clients speak them, over HTTP and stdio alike: the
//! versions, the 2025-11-25 `initialize` params, and the `_meta` every 2026-07-28 request
//! carries. Written here rather than taken from `switchboard-mcp`, so the clients that
//! measure the gateway share none of its code.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Which protocol era a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// 2025-11-25: `initialize` first, a session over HTTP.
    Legacy,
    /// 2026-07-28: stateless, `server/discover` first, `_meta` on every request.
    Modern,
}

impl Era {
    pub fn version(self) -> &'static str {
        match self {
            Self::Legacy => "2025-11-25",
            Self::Modern => "2026-07-28",
        }
    }
}

fn client_info() -> Value {
    json!({"name": "switchboard-bench", "version": "1"})
}

/// The params of a 2025-11-25 `initialize`.
pub fn initialize_params() -> Value {
    json!({"protocolVersion": Era::Legacy.version(), "capabilities": {},
           "clientInfo": client_info()})
}

/// Adds the 2026-07-28 era's per-request `_meta`: the version, the client's capabilities
/// (empty unless the request already names some) and its name.
pub fn add_modern_meta(params: &mut Map<String, Value>) {
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            Era::Modern.version().into(),
        );
        meta.entry("io.modelcontextprotocol/clientCapabilities")
            .or_insert_with(|| json!({}));
        meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
    }
}
