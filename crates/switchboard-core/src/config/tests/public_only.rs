//! `public_only` on a server: read on HTTP and SSE servers in both formats, false unless set,
//! and a located problem on a stdio or built-in server or with a value that is not a boolean.

use super::problems::{json, toml};
use super::*;

fn parse(text: &str, format: Format) -> Config {
    Config::parse(text, Origin::Inline, format, &env()).expect("valid")
}

#[test]
fn public_only_is_read_on_http_and_sse_servers_and_is_false_unless_set() {
    let config = parse(
        "[servers.remote]\nurl = \"https://mcp.example.com/mcp\"\npublic_only = true\n\n\
         [servers.legacy]\nurl = \"https://mcp.example.com/sse\"\ntransport = \"sse\"\n\
         public_only = true\n\n[servers.plain]\nurl = \"https://mcp.example.com/mcp\"\n",
        Format::Toml,
    );
    let public_only: Vec<(&str, bool)> = config
        .servers
        .iter()
        .map(|server| (server.id.as_str(), server.public_only))
        .collect();
    assert_eq!(
        public_only,
        [("remote", true), ("legacy", true), ("plain", false)]
    );
    let config = parse(
        r#"{"mcpServers": {"remote": {"url": "https://mcp.example.com/mcp", "public_only": true}}}"#,
        Format::Json,
    );
    assert!(config.servers[0].public_only);
}

#[test]
fn public_only_on_a_server_without_a_url_is_located() {
    toml(
        "[servers.a]\ncommand = \"x\"\npublic_only = true\n",
        &[(
            3,
            1,
            "servers.a.public_only is for HTTP servers (\"url\"), and this one is not",
        )],
    );
    toml(
        "[servers.a]\nbuiltin = \"clock\"\npublic_only = true\n",
        &[(3, 1, "servers.a.public_only is for HTTP servers")],
    );
    toml(
        "[servers.a]\nurl = \"https://h/mcp\"\npublic_only = \"yes\"\n",
        &[(3, 15, "servers.a.public_only must be true or false")],
    );
    json(
        r#"{"mcpServers": {"a": {"command": "x", "public_only": true}}}"#,
        &[(1, 39, "mcpServers.a.public_only is for HTTP servers")],
    );
}
