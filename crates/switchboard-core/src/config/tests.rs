//! Data-driven tests of the whole config path: text in, config or located problems out.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;

fn env() -> MapEnvironment {
    MapEnvironment(BTreeMap::from([
        ("HOME".into(), "/home/u".into()),
        ("TOKEN".into(), "t0k".into()),
    ]))
}

fn ok(text: &str, format: Format) -> Config {
    match Config::parse(text, "test", format, &env()) {
        Ok(config) => config,
        Err(errors) => panic!("expected a valid config, got:\n{errors}"),
    }
}

/// Asserts the exact problems as "line:col: message-fragment".
fn problems(text: &str, format: Format, expected: &[(usize, usize, &str)]) {
    let errors = Config::parse(text, "test", format, &env()).expect_err("expected problems");
    let found: Vec<(usize, usize, String)> = errors
        .0
        .iter()
        .map(|p| (p.line, p.column, p.message.clone()))
        .collect();
    assert_eq!(found.len(), expected.len(), "{errors}");
    for ((line, column, message), (el, ec, fragment)) in found.iter().zip(expected) {
        assert_eq!((line, column), (el, ec), "{message}");
        assert!(message.contains(fragment), "'{message}' lacks '{fragment}'");
    }
}

#[test]
fn native_toml() {
    let config = ok(
        r#"
[gateway]
separator = "."
call_timeout = "10s"
connect_timeout = 1500

[servers.fs]
command = "npx"
args = ["-y", "server-filesystem", "${HOME}/work"]
env = { TOKEN = "${TOKEN}", LEVEL = "${LEVEL:-info}" }
prefix = "files"
era = "legacy"
[servers.fs.tools.read_file]
name = "read"
hidden = false

[servers.remote]
url = "http://127.0.0.1:9/mcp"
transport = "sse"
headers = { Authorization = "Bearer ${TOKEN}" }

[servers.clock]
builtin = "clock"
enabled = false

[aliases]
old = "files.read"
"#,
        Format::Toml,
    );
    assert_eq!(config.gateway.separator, ".");
    assert_eq!(config.gateway.call_timeout, Duration::from_secs(10));
    assert_eq!(config.gateway.connect_timeout, Duration::from_millis(1500));
    let ids: Vec<&str> = config.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["fs", "remote", "clock"]);
    let Transport::Stdio { args, env, .. } = &config.servers[0].transport else {
        panic!("stdio")
    };
    assert_eq!(args[2], "/home/u/work");
    assert_eq!(env["LEVEL"], "info");
    assert_eq!(config.servers[0].era, EraPreference::Legacy);
    assert_eq!(
        config.servers[0].tools["read_file"].name.as_deref(),
        Some("read")
    );
    assert_eq!(
        config.servers[1].transport,
        Transport::Sse {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer t0k".into())])
        }
    );
    assert!(!config.servers[2].enabled);
    assert_eq!(config.aliases["old"], "files.read");
}

#[test]
fn claude_desktop_vscode_and_seed_json() {
    let claude = ok(
        r#"{
  // Claude Desktop / Cursor
  "mcpServers": {
    "fs": {"command": "npx", "args": ["a"], "env": {"A": "1"}, "cwd": "/tmp"},
    "web": {"url": "https://example.com/mcp", "headers": {"X": "y"}},
  }
}"#,
        Format::Json,
    );
    assert_eq!(claude.servers.len(), 2);
    assert!(matches!(
        claude.servers[1].transport,
        Transport::Http { .. }
    ));
    let vscode = ok(
        r#"{"servers": {"s": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "p": {"type": "stdio", "command": "x"}}}"#,
        Format::Json,
    );
    assert!(matches!(vscode.servers[0].transport, Transport::Sse { .. }));
    let seeds = ok(
        r#"{"servers": [{"id": "mem", "name": "Memory", "command": "node", "args": [], "env": {}, "enabled": false}]}"#,
        Format::Json,
    );
    assert_eq!(seeds.servers[0].id, "mem");
    assert_eq!(seeds.servers[0].display_name.as_deref(), Some("Memory"));
    assert!(!seeds.servers[0].enabled);
}

#[test]
fn every_problem_is_located() {
    problems(
        "[gateway]\nseparatr = \"_\"\n\n[servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n\n[servers.b]\nbuiltin = \"clok\"\ncall_timeout = \"soon\"\n\n[servers.c]\ncommand = \"${NOPE}\"\n",
        Format::Toml,
        &[
            (2, 1, "unknown key 'separatr'"),
            (4, 1, "more than one"),
            (9, 11, "unknown built-in 'clok'"),
            (10, 16, "not a duration"),
            (13, 12, "NOPE is not set"),
        ],
    );
    problems(
        "{\"mcpServers\": {\"a b\": {\"command\": 3}}}",
        Format::Json,
        &[(1, 17, "server id 'a b'"), (1, 36, "must be a string")],
    );
    problems(
        "[servers.x]\nurl = \"ftp://h\"\n",
        Format::Toml,
        &[(2, 7, "must start with http")],
    );
    problems("[servers\n", Format::Toml, &[(1, 9, "TOML syntax error")]);
    problems(
        "{\"servers\": [{\"command\": \"x\"}]}",
        Format::Json,
        &[(1, 14, "has no \"id\"")],
    );
}

#[test]
fn hints_suggest_the_closest_key() {
    let errors = Config::parse(
        "[servers.a]\ncomand = \"x\"\n",
        "f.toml",
        Format::Toml,
        &env(),
    )
    .expect_err("typo");
    let text = errors.to_string();
    assert!(text.contains("f.toml:2:1: unknown key 'comand'"), "{text}");
    assert!(text.contains("did you mean 'command'?"), "{text}");
}

#[test]
fn durations() {
    use super::validate::parse_duration;
    assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
    assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("s"), None);
    assert_eq!(parse_duration("5 parsecs"), None);
}

#[test]
fn default_config_runs_the_clock() {
    let config = Config::builtin_default();
    assert_eq!(config.servers.len(), 1);
    assert_eq!(
        config.servers[0].transport,
        Transport::Builtin {
            name: "clock".into()
        }
    );
}
