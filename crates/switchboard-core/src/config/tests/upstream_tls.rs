//! `[servers.ID.tls]`: files read relative to the config file in both formats, and every
//! mistake located — an http:// or stdio server, a missing file, a key others may read, a
//! certificate without its key, an unknown or empty table.

use std::os::unix::fs::PermissionsExt;

use super::problems::{json, toml};
use super::*;

/// A directory with `ca.pem`, `gw.crt` and `gw.key` (mode 600), and a config file there.
fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["ca.pem", "gw.crt", "gw.key"] {
        std::fs::write(dir.path().join(name), "PEM").expect("write");
    }
    let key = dir.path().join("gw.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    dir
}

#[test]
fn tls_files_are_read_relative_to_the_config_file_in_both_formats() {
    let dir = files();
    let toml_path = dir.path().join("switchboard.toml");
    std::fs::write(
        &toml_path,
        "[servers.ledger]\nurl = \"https://ledger.internal/mcp\"\n\
         tls = { ca = \"ca.pem\", cert = \"gw.crt\", key = \"gw.key\" }\n\n\
         [servers.public]\nurl = \"https://example.com/mcp\"\n",
    )
    .expect("write");
    let config = Config::load(&toml_path, &env()).expect("valid");
    let tls = config.servers[0].tls.clone().expect("tls");
    assert_eq!(
        tls,
        UpstreamTlsConfig {
            ca: Some(dir.path().join("ca.pem")),
            cert: Some(dir.path().join("gw.crt")),
            key: Some(dir.path().join("gw.key")),
        }
    );
    assert_eq!(config.servers[1].tls, None, "no tls: the public CAs alone");

    let json_path = dir.path().join("mcp.json");
    std::fs::write(
        &json_path,
        r#"{"mcpServers": {"ledger": {"url": "https://ledger.internal/mcp", "type": "sse",
             "tls": {"ca": "ca.pem"}}}}"#,
    )
    .expect("write");
    let config = Config::load(&json_path, &env()).expect("valid");
    let tls = config.servers[0].tls.clone().expect("tls");
    assert_eq!((tls.ca, tls.cert), (Some(dir.path().join("ca.pem")), None));
}

#[test]
fn tls_mistakes_are_located() {
    toml(
        "[servers.a]\nurl = \"http://127.0.0.1:9/mcp\"\ntls = { ca = \"/dev/null\" }\n",
        &[(
            3,
            1,
            "servers.a.tls is for https:// servers, and this one's url is http://127.0.0.1:9/mcp",
        )],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ntls = { ca = \"/dev/null\" }\n",
        &[(
            3,
            1,
            "servers.a.tls is for HTTP servers (\"url\"), and this one is not",
        )],
    );
    toml(
        "[servers.a]\nurl = \"https://h/mcp\"\ntls = { ca = \"/nonexistent/ca.pem\" }\n",
        &[(3, 14, "servers.a.tls.ca: cannot read /nonexistent/ca.pem")],
    );
    toml(
        "[servers.a]\nurl = \"https://h/mcp\"\ntls = { cert = \"/dev/null\" }\n",
        &[(
            3,
            1,
            "servers.a.tls.cert is set but servers.a.tls.key is not",
        )],
    );
    toml(
        "[servers.a]\nurl = \"https://h/mcp\"\ntls = { cafile = \"/dev/null\" }\n",
        &[(3, 9, "unknown key 'cafile' in servers.a.tls")],
    );
    toml(
        "[servers.a]\nurl = \"https://h/mcp\"\ntls = {}\n",
        &[(3, 1, "servers.a.tls names no file")],
    );
    json(
        r#"{"mcpServers": {"a": {"url": "https://h/mcp", "tls": {"ca": 7}}}}"#,
        &[(1, 61, "mcpServers.a.tls.ca must be a string")],
    );
}

#[test]
fn a_private_key_others_may_read_is_refused_naming_it() {
    let dir = files();
    let key = dir.path().join("gw.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let path = dir.path().join("switchboard.toml");
    std::fs::write(
        &path,
        "[servers.a]\nurl = \"https://h/mcp\"\ntls = { cert = \"gw.crt\", key = \"gw.key\" }\n",
    )
    .expect("write");
    let Err(errors) = Config::load(&path, &env()) else {
        panic!("a world-readable key was accepted");
    };
    let text = errors.to_string();
    assert!(
        text.contains("servers.a.tls.key") && text.contains("gw.key") && text.contains("chmod 600"),
        "{text}"
    );
}
