//! `sandbox`: a stdio server's sandbox and `[gateway.sandbox]`, in both formats — which one
//! applies to which server, and every mistake at its `line:column`.

use std::time::Duration;

use super::problems::{json, toml};
use super::*;
use crate::config::{NetworkAccess, SandboxConfig};

#[test]
fn a_server_table_is_read_with_every_key() {
    let config = check_ok(
        "[servers.a]\ncommand = \"x\"\n[servers.a.sandbox]\nmemory = \"1GiB\"\ncpu = \"10m\"\nfiles = 256\nprocesses = 64\ninherit_env = true\nreadable = [\"/data\"]\nwritable = [\"/tmp/a\"]\nnetwork = \"loopback\"\nuser = \"nobody\"\n",
        Format::Toml,
    );
    let sandbox = config.sandbox_of(&config.servers[0]).expect("sandboxed");
    assert_eq!(
        sandbox,
        SandboxConfig {
            memory: Some(1 << 30),
            cpu: Some(Duration::from_secs(600)),
            files: Some(256),
            processes: Some(64),
            inherit_env: true,
            readable: vec!["/data".into()],
            writable: vec!["/tmp/a".into()],
            network: NetworkAccess::Loopback,
            user: Some("nobody".to_owned()),
        }
    );
}

#[test]
fn the_gateway_default_applies_to_stdio_servers_unless_they_choose() {
    let config = check_ok(
        "[gateway.sandbox]\nmemory = \"512MiB\"\n\n[servers.plain]\ncommand = \"x\"\n\n[servers.off]\ncommand = \"x\"\nsandbox = false\n\n[servers.on]\ncommand = \"x\"\nsandbox = true\n\n[servers.own]\ncommand = \"x\"\nsandbox = { files = 10 }\n\n[servers.remote]\nurl = \"http://h/mcp\"\n\n[servers.clock]\nbuiltin = \"clock\"\n",
        Format::Toml,
    );
    let memory: Vec<Option<Option<u64>>> = config
        .servers
        .iter()
        .map(|s| config.sandbox_of(s).map(|b| b.memory))
        .collect();
    assert_eq!(
        memory,
        [
            Some(Some(512 << 20)),
            None,
            Some(Some(512 << 20)),
            Some(None),
            None,
            None
        ]
    );
    let own = config.sandbox_of(&config.servers[3]).expect("own");
    assert_eq!(own.files, Some(10));
    assert!(
        !own.inherit_env,
        "a sandbox keeps the environment by default"
    );
    // true without a gateway default: a sandbox of defaults.
    let config = check_ok(
        "[servers.a]\ncommand = \"x\"\nsandbox = true\n",
        Format::Toml,
    );
    assert_eq!(
        config.sandbox_of(&config.servers[0]),
        Some(SandboxConfig::default())
    );
    let config = check_ok(
        r#"{"mcpServers": {"a": {"command": "x", "sandbox": {"memory": 4096, "network": "none"}}}}"#,
        Format::Json,
    );
    let sandbox = config.sandbox_of(&config.servers[0]).expect("sandboxed");
    assert_eq!(
        (sandbox.memory, sandbox.network),
        (Some(4096), NetworkAccess::None)
    );
}

#[test]
fn bad_values_are_located_at_the_value() {
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { memory = \"lots\" }\n",
        &[(3, 22, "servers.a.sandbox.memory is not a size")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { cpu = \"0s\" }\n",
        &[(3, 19, "servers.a.sandbox.cpu must be more than zero")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { network = \"lan\" }\n",
        &[(
            3,
            23,
            "must be \"none\", \"loopback\" or \"any\", found 'lan'",
        )],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { processes = 0 }\n",
        &[(
            3,
            25,
            "servers.a.sandbox.processes must be a positive integer",
        )],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { user = \"root\" }\n",
        &[(3, 20, "would run the server with every privilege")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = { user = \"no body\" }\n",
        &[(3, 20, "is not a user name")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\nsandbox = \"on\"\n",
        &[(
            3,
            11,
            "servers.a.sandbox must be a table, true or false, found a string",
        )],
    );
    toml(
        "[gateway.sandbox]\nmemroy = \"1G\"\n",
        &[(2, 1, "unknown key 'memroy' in [gateway.sandbox]")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n  \"sandbox\": {\"files\": -1}}}}",
        &[(
            2,
            24,
            "mcpServers.a.sandbox.files must be a positive integer",
        )],
    );
}

#[test]
fn a_sandbox_on_a_server_that_is_not_stdio_is_refused_at_the_key() {
    toml(
        "[servers.remote]\nurl = \"http://h/mcp\"\nsandbox = true\n",
        &[(
            3,
            1,
            "servers.remote.sandbox is for stdio servers, but this one has \"url\"",
        )],
    );
    toml(
        "[servers.clock]\nbuiltin = \"clock\"\n[servers.clock.sandbox]\nfiles = 3\n",
        &[(
            3,
            16,
            "servers.clock.sandbox is for stdio servers, but this one has \"builtin\"",
        )],
    );
    // Turning it off is harmless anywhere.
    check_ok(
        "[servers.remote]\nurl = \"http://h/mcp\"\nsandbox = false\n",
        Format::Toml,
    );
}
