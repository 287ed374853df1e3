//! Data-driven tests of the whole config path: text in, config or located problems out.
//! Problem cases (exact line:column) are in `tests/problems.rs`.

mod auth;
mod builtins;
mod instances;
mod nul_bytes;
mod problems;
mod public_only;
mod sandbox;
mod sessions_database;
mod shared;
mod storage;
mod tasks;
mod telemetry;
mod upstream_auth;
mod upstream_tls;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::*;

/// The first ```toml example under `heading` in docs/config.md.
pub(super) fn documented_example(heading: &str) -> &'static str {
    include_str!("../../../../docs/config.md")
        .split(heading)
        .nth(1)
        .and_then(|section| section.split("```toml\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("docs/config.md has a ```toml example under '{heading}'"))
}

fn env() -> MapEnvironment {
    MapEnvironment(BTreeMap::from([
        ("HOME".into(), "/home/u".into()),
        ("TOKEN".into(), "t0k".into()),
        ("EMPTY".into(), String::new()),
    ]))
}

fn check_ok(text: &str, format: Format) -> Config {
    match Config::parse(text, Origin::Inline, format, &env()) {
        Ok(config) => config,
        Err(errors) => panic!("expected a valid config, got:\n{errors}"),
    }
}

fn stdio(command: &str, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.into(),
        args: args.iter().map(|a| (*a).into()).collect(),
        env: BTreeMap::new(),
        cwd: None,
    }
}

fn http(url: &str) -> Transport {
    Transport::Http {
        url: url.into(),
        headers: BTreeMap::new(),
    }
}

fn sse(url: &str) -> Transport {
    Transport::Sse {
        url: url.into(),
        headers: BTreeMap::new(),
    }
}

/// Parses `text` and compares `(id, transport)` of every server, in file order.
fn check_servers(text: &str, format: Format, expected: &[(&str, Transport)]) -> Config {
    let config = check_ok(text, format);
    let found: Vec<(&str, &Transport)> = config
        .servers
        .iter()
        .map(|s| (s.id.as_str(), &s.transport))
        .collect();
    let expected: Vec<(&str, &Transport)> = expected.iter().map(|(id, t)| (*id, t)).collect();
    assert_eq!(found, expected, "{text}");
    config
}

#[test]
fn native_toml() {
    let config = check_ok(
        r#"
[gateway]
separator = "."
prefix_tools = false
call_timeout = "10s"
connect_timeout = 1500
discover_timeout = "250ms"
max_message_bytes = 1048576
busy_poll = "50us"
header_timeout = "0"
max_connections = 512

[servers.fs]
command = "npx"
args = ["-y", "server-filesystem", "${HOME}/work"]
env = { TOKEN = "${TOKEN}", LEVEL = "${LEVEL:-info}" }
cwd = "/tmp"
prefix = "files"
call_timeout = "2m"
era = "legacy"
[servers.fs.tools.read_file]
name = "read"
description = "Read a file"
[servers.fs.tools.write_file]
hidden = true

[servers.remote]
url = "http://127.0.0.1:9/mcp"
transport = "sse"
headers = { Authorization = "Bearer ${TOKEN}" }

[servers.clock]
builtin = "clock"
enabled = false
prefix = ""

[aliases]
old = "files.read"
"#,
        Format::Toml,
    );
    let gateway = &config.gateway;
    assert_eq!(gateway.separator, ".");
    assert!(!gateway.prefix_tools);
    assert_eq!(gateway.call_timeout, Duration::from_secs(10));
    assert_eq!(gateway.connect_timeout, Duration::from_millis(1500));
    assert_eq!(gateway.discover_timeout, Duration::from_millis(250));
    assert_eq!(gateway.max_message_bytes, 1 << 20);
    assert_eq!(gateway.busy_poll, Duration::from_micros(50));
    assert_eq!(gateway.header_timeout, None, "\"0\" turns it off");
    assert_eq!(gateway.max_connections, 512);
    let ids: Vec<&str> = config.servers.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["fs", "remote", "clock"], "file order, not sorted");
    let fs = &config.servers[0];
    assert_eq!(
        fs.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "server-filesystem".into(),
                "/home/u/work".into()
            ],
            env: BTreeMap::from([
                ("LEVEL".into(), "info".into()),
                ("TOKEN".into(), "t0k".into())
            ]),
            cwd: Some(PathBuf::from("/tmp")),
        }
    );
    assert_eq!(fs.prefix.as_deref(), Some("files"));
    assert_eq!(fs.call_timeout, Some(Duration::from_secs(120)));
    assert_eq!(fs.era, EraPreference::Legacy);
    assert_eq!(
        fs.tools["read_file"],
        ToolOverrideConfig {
            name: Some("read".into()),
            description: Some("Read a file".into()),
            hidden: false,
            category: None,
            ..ToolOverrideConfig::default()
        }
    );
    assert!(fs.tools["write_file"].hidden);
    assert_eq!(
        config.servers[1].transport,
        Transport::Sse {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer t0k".into())])
        }
    );
    assert!(!config.servers[2].enabled);
    assert_eq!(config.servers[2].prefix.as_deref(), Some(""));
    assert_eq!(config.aliases["old"], "files.read");
    assert_eq!(config.source, None);
}

#[test]
fn an_empty_file_means_defaults_and_no_servers() {
    let config = check_ok("", Format::Toml);
    assert_eq!(config.gateway, GatewayConfig::default());
    assert!(config.servers.is_empty());
    let server = &check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml).servers[0];
    assert_eq!(server, &ServerConfig::new("a", stdio("x", &[])));
    assert_eq!(server.prefix, None);
    assert_eq!(server.era, EraPreference::Auto);
    assert!(server.enabled);
}

#[test]
fn json_shapes() {
    // Claude Desktop / Cursor, with JSONC comments and trailing commas.
    check_servers(
        r#"{
  // Claude Desktop / Cursor
  "mcpServers": {
    "fs": {"command": "npx", "args": ["a"], "env": {"A": "1"}, "cwd": "/tmp"},
    /* remote */ "web": {"url": "https://example.com/mcp", "headers": {"X": "y"},},
    "old": {"url": "http://h/sse", "type": "sse"},
    "new": {"url": "http://h/mcp", "type": "streamable-http"},
  },
}"#,
        Format::Json,
        &[
            (
                "fs",
                Transport::Stdio {
                    command: "npx".into(),
                    args: vec!["a".into()],
                    env: BTreeMap::from([("A".into(), "1".into())]),
                    cwd: Some("/tmp".into()),
                },
            ),
            (
                "web",
                Transport::Http {
                    url: "https://example.com/mcp".into(),
                    headers: BTreeMap::from([("X".into(), "y".into())]),
                },
            ),
            ("old", sse("http://h/sse")),
            ("new", http("http://h/mcp")),
        ],
    );
    // VS Code's .vscode/mcp.json.
    check_servers(
        r#"{"servers": {"s": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "h": {"type": "http", "url": "http://h/"}, "p": {"type": "stdio", "command": "x"}}}"#,
        Format::Json,
        &[
            ("s", sse("http://127.0.0.1:1/sse")),
            ("h", http("http://h/")),
            ("p", stdio("x", &[])),
        ],
    );
    // The seeds' array: `name` is a display name, `id` names the server.
    let seeds = check_servers(
        r#"{"servers": [{"id": "mem", "name": "Memory", "command": "node", "args": ["m.js"], "env": {}, "enabled": false}, {"id": "b", "command": "y"}]}"#,
        Format::Json,
        &[("mem", stdio("node", &["m.js"])), ("b", stdio("y", &[]))],
    );
    assert_eq!(seeds.servers[0].display_name.as_deref(), Some("Memory"));
    assert!(!seeds.servers[0].enabled);
    assert!(seeds.servers[1].enabled);
    // Foreign keys other clients write are accepted; `disabled` is honoured.
    let foreign = check_ok(
        r#"{"mcpServers": {"a": {"command": "x", "disabled": true, "autoApprove": [], "timeout": 5}}, "gateway": {"separator": "."}}"#,
        Format::Json,
    );
    assert!(!foreign.servers[0].enabled);
    assert_eq!(foreign.gateway.separator, ".");
}

/// A JSON file saved with a byte order mark (PowerShell's UTF-8) reads as without one.
#[test]
fn a_json_file_with_a_byte_order_mark() {
    let config = check_ok(
        "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
        Format::Json,
    );
    assert_eq!(config.servers[0].id, "a");
}

#[test]
fn substitution() {
    let cases = [
        ("${HOME}/x", "/home/u/x"),
        ("${MISSING:-fallback}", "fallback"),
        ("${MISSING:-}", ""),
        ("${HOME:-unused}", "/home/u"),
        ("[${EMPTY}]", "[]"),
        ("$${HOME}", "${HOME}"),
        ("cost $$5", "cost $5"),
        ("$HOME stays", "$HOME stays"),
        ("${TOKEN}${TOKEN}", "t0kt0k"),
        ("${MISSING:-a b:c}", "a b:c"),
        // `:-` as in the shell: an empty variable takes the default too.
        ("${EMPTY:-fallback}", "fallback"),
        ("${MISSING:-$$5}", "$5"),
        // VS Code's ${env:NAME}.
        ("${env:TOKEN}", "t0k"),
    ];
    for (input, expected) in cases {
        for format in [Format::Toml, Format::Json] {
            let text = match format {
                Format::Toml => format!("[servers.a]\ncommand = \"x\"\nargs = [{input:?}]\n"),
                Format::Json => format!(
                    "{{\"servers\": {{\"a\": {{\"command\": \"x\", \"args\": [{input:?}]}}}}}}"
                ),
            };
            let config = check_ok(&text, format);
            assert_eq!(
                config.servers[0].transport,
                stdio("x", &[expected]),
                "{input} in {format:?}"
            );
        }
    }
    // Every string value is substituted: url, headers, cwd, env, aliases.
    let config = check_ok(
        "[servers.a]\nurl = \"https://${MISSING:-h}/${TOKEN}\"\nheaders = { A = \"${TOKEN}\" }\n[aliases]\nx = \"${TOKEN}\"\n",
        Format::Toml,
    );
    assert_eq!(
        config.servers[0].transport,
        Transport::Http {
            url: "https://h/t0k".into(),
            headers: BTreeMap::from([("A".into(), "t0k".into())])
        }
    );
    assert_eq!(config.aliases["x"], "t0k");
}

#[test]
fn durations() {
    let cases = [
        ("\"500ms\"", Some(Duration::from_millis(500))),
        ("\"30s\"", Some(Duration::from_secs(30))),
        ("\"2m\"", Some(Duration::from_secs(120))),
        ("\"1.5s\"", Some(Duration::from_millis(1500))),
        ("\"${TIMEOUT:-5s}\"", Some(Duration::from_secs(5))),
        ("250", Some(Duration::from_millis(250))),
        ("0", Some(Duration::ZERO)),
        ("-1", None),
        ("1.5", None),
        ("\"30\"", None),
        ("\"soon\"", None),
        ("true", None),
    ];
    for (value, expected) in cases {
        let text = format!("[gateway]\ncall_timeout = {value}\n");
        let parsed = Config::parse(&text, Origin::Inline, Format::Toml, &env());
        assert_eq!(
            parsed.ok().map(|c| c.gateway.call_timeout),
            expected,
            "{value}"
        );
    }
}

#[test]
fn format_follows_the_extension() {
    let cases = [
        ("switchboard.toml", Format::Toml),
        ("claude_desktop_config.json", Format::Json),
        (".vscode/mcp.jsonc", Format::Json),
        ("X.JSON", Format::Json),
        ("noext", Format::Toml),
    ];
    for (path, expected) in cases {
        assert_eq!(Format::of(Path::new(path)), expected, "{path}");
    }
}

#[test]
fn load_reads_a_file_and_records_its_source() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, r#"{"mcpServers": {"a": {"command": "x"}}}"#).expect("write");
    let config = Config::load(&path, &env()).expect("valid");
    assert_eq!(config.source.as_deref(), Some(path.as_path()));
    assert_eq!(config.servers[0].transport, stdio("x", &[]));
    let missing = dir.path().join("missing.toml");
    let errors = Config::load(&missing, &env()).expect_err("missing");
    assert_eq!(errors.0.len(), 1);
    assert!(
        errors
            .to_string()
            .starts_with(&format!("{}: cannot read", missing.display()))
    );
}

/// The full example in docs/config.md is valid (and stays so).
#[test]
fn the_documented_example_is_valid() {
    let docs = include_str!("../../../../docs/config.md");
    let example = docs
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/config.md has a ```toml example");
    let config = check_ok(example, Format::Toml);
    assert!(config.servers.len() >= 3, "{config:?}");
}

#[test]
fn default_config_runs_every_builtin() {
    let config = Config::builtin_default();
    assert_eq!(config.source, None);
    assert_eq!(config.gateway, GatewayConfig::default());
    assert_eq!(config.gateway.separator, "__");
    assert_eq!(config.gateway.call_timeout, Duration::from_secs(60));
    assert_eq!(config.gateway.connect_timeout, Duration::from_secs(30));
    assert_eq!(config.gateway.discover_timeout, Duration::from_secs(2));
    assert_eq!(config.gateway.max_message_bytes, 16 * 1024 * 1024);
    assert_eq!(config.gateway.busy_poll, Duration::from_micros(100));
    assert_eq!(config.gateway.header_timeout, Some(Duration::from_secs(30)));
    assert_eq!(config.gateway.max_connections, 10_000);
    let ids: Vec<(&str, &Transport)> = config
        .servers
        .iter()
        .map(|s| (s.id.as_str(), &s.transport))
        .collect();
    let expected: Vec<(&str, Transport)> = ["clock", "dice", "files", "memory"]
        .into_iter()
        .map(|name| (name, Transport::builtin(name)))
        .collect();
    let expected: Vec<(&str, &Transport)> = expected.iter().map(|(n, t)| (*n, t)).collect();
    assert_eq!(ids, expected);
}

#[test]
fn builtin_settings_are_read_and_relative_paths_follow_the_file() {
    let text = "[servers.files]\nbuiltin = \"files\"\nroots = [\"work\", { path = \"/srv/docs\", read_only = true }]\nmax_read_bytes = 4096\n\n[servers.dice]\nbuiltin = \"dice\"\ntables_dir = \"tables\"\nseed = 7\n\n[servers.memory]\nbuiltin = \"memory\"\ndatabase = \"/var/lib/sb/memory.db\"\n";
    let origin = Origin::File(std::path::PathBuf::from("/etc/sb/switchboard.toml"));
    let config = Config::parse(text, origin, Format::Toml, &env()).expect("valid");
    let settings = |id: &str| match &config
        .servers
        .iter()
        .find(|s| s.id == id)
        .expect(id)
        .transport
    {
        Transport::Builtin { settings, .. } => settings.clone(),
        other => panic!("{other:?}"),
    };
    let files = settings("files");
    assert_eq!(
        files.roots,
        [
            RootConfig {
                path: "/etc/sb/work".into(),
                read_only: false
            },
            RootConfig {
                path: "/srv/docs".into(),
                read_only: true
            },
        ]
    );
    assert_eq!(files.max_read_bytes, Some(4096));
    assert_eq!(settings("dice").tables_dir, Some("/etc/sb/tables".into()));
    assert_eq!(settings("dice").seed, Some(7));
    assert_eq!(
        settings("memory").database,
        Some("/var/lib/sb/memory.db".into())
    );
}

/// Every prefix of a valid file (a half-written or truncated config) gives problems or a
/// config, never a panic; positions stay inside the text.
#[test]
fn truncated_files_never_panic() {
    let samples = [
        (
            "[gateway]\nseparator = \"__\"\n[servers.é]\ncommand = \"${HOME}/ü\"\nargs = [\"\\u00e9\", '''x''']\n[servers.é.tools.t]\nname = \"n\"\n",
            Format::Toml,
        ),
        (
            "{\n // c\n \"mcpServers\": {\"é\": {\"command\": \"x\\u00e9${A:-b}\", /* c */ \"args\": [1.5e3, -2, true, null],},\n \"w\": {\"url\": \"http://h\", \"type\": \"sse\"}}}",
            Format::Json,
        ),
    ];
    for (text, format) in samples {
        let lines = text.lines().count().max(1);
        for end in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            if let Err(errors) = Config::parse(&text[..end], Origin::Inline, format, &env()) {
                for problem in &errors.0 {
                    assert!(problem.line <= lines, "{problem} in {:?}", &text[..end]);
                }
            }
        }
    }
}

#[test]
fn agent_policies_join_allow_globs_and_capabilities() {
    use crate::agent::ToolPattern;
    let text = "[capabilities]\nread_memory = [\"memory__search_*\", \"memory:query_entities\"]\n\n[agents.npc]\nallow = [\"dice:*\"]\ncapabilities = [\"read_memory\"]\ndeny = [\"dice__roll_table\"]\nexposure = \"search\"\n\n[agents.qa]\n";
    let config = Config::parse(text, Origin::Inline, Format::Toml, &env()).expect("valid");
    let npc = config.agent_policy("npc").expect("npc");
    assert_eq!(
        npc.allow,
        [
            ToolPattern::parse("dice:*"),
            ToolPattern::parse("memory__search_*"),
            ToolPattern::parse("memory:query_entities"),
        ]
    );
    assert_eq!(npc.deny, [ToolPattern::parse("dice__roll_table")]);
    assert_eq!(
        config.agents["npc"].exposure,
        Some(crate::config::Exposure::Search)
    );
    let qa = config.agent_policy("qa").expect("qa");
    assert!(qa.allow.is_empty() && qa.deny.is_empty());
    assert!(config.agent_policy("nobody").is_none());
}

#[test]
fn categories_on_servers_and_tools() {
    let text = "[servers.dice]\nbuiltin = \"dice\"\ncategory = \"games/dice\"\n[servers.dice.tools.roll_table]\ncategory = \"games/tables\"\n";
    let config = Config::parse(text, Origin::Inline, Format::Toml, &env()).expect("valid");
    assert_eq!(config.servers[0].category.as_deref(), Some("games/dice"));
    assert_eq!(
        config.servers[0].tools["roll_table"].category.as_deref(),
        Some("games/tables")
    );
    let errors = Config::parse(
        "[servers.dice]\nbuiltin = \"dice\"\ncategory = \"games//dice\"\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect_err("empty level");
    assert!(errors.to_string().contains("3:12"), "{errors}");
}

#[test]
fn limits_costs_and_quotas() {
    let text = "[gateway]\nlimits = { per_minute = 600 }\n\n[agents.npc]\nlimits = { per_minute = 60, burst = 5, max_concurrent = 2, queue = \"2s\" }\nquota = { cost = 100, window = \"30m\" }\n\n[servers.s]\nbuiltin = \"clock\"\nlimits = { max_concurrent = 4 }\ncost = { fixed = 1, per_second = 0.5 }\n[servers.s.tools.now]\ncost = 2.5\nlimits = { per_minute = 10 }\n";
    let config = Config::parse(text, Origin::Inline, Format::Toml, &env()).expect("valid");
    assert_eq!(config.gateway.limits.per_minute, Some(600.0));
    let npc = &config.agents["npc"];
    assert_eq!(
        npc.limits,
        crate::config::LimitsConfig {
            per_minute: Some(60.0),
            burst: Some(5),
            max_concurrent: Some(2),
            queue: Some(Duration::from_secs(2)),
        }
    );
    assert_eq!(
        npc.quota,
        Some(crate::config::QuotaConfig {
            cost: 100.0,
            window: Duration::from_secs(1800)
        })
    );
    let server = &config.servers[0];
    assert_eq!(server.limits.max_concurrent, Some(4));
    assert_eq!(
        server.cost,
        Some(crate::config::CostConfig {
            fixed: 1.0,
            per_second: 0.5
        })
    );
    assert_eq!(
        server.tools["now"].cost,
        Some(crate::config::CostConfig {
            fixed: 2.5,
            per_second: 0.0
        })
    );
    assert_eq!(server.tools["now"].limits.per_minute, Some(10.0));
}

#[test]
fn tiers_latency_and_tool_latency_overrides() {
    let text = "[tiers]\ndeep = \"4s\"\nfast = 500\n\n[latency]\nquantile = \"p99\"\nwindow = 50\nmin_samples = 10\nenvironment = \"ci\"\n\n[agents.npc]\ntier = \"FAST\"\n\n[servers.s]\nbuiltin = \"clock\"\n[servers.s.tools.now]\nestimated_duration_ms = 5\nmax_duration_ms = 50\nidempotent = true\ncacheable_seconds = 1\nread_only = true\n";
    let config = Config::parse(text, Origin::Inline, Format::Toml, &env()).expect("valid");
    let tiers: Vec<(&str, u128)> = config
        .tiers
        .iter()
        .map(|t| (t.name.as_str(), t.ceiling.as_millis()))
        .collect();
    assert_eq!(tiers, [("fast", 500), ("deep", 4000)], "ordered by ceiling");
    assert_eq!(config.latency.quantile, 0.99);
    assert_eq!(
        (config.latency.window, config.latency.min_samples),
        (50, 10)
    );
    assert_eq!(config.agents["npc"].tier.as_deref(), Some("fast"));
    let now = &config.servers[0].tools["now"];
    assert_eq!(
        now.latency,
        crate::LatencyMeta::new(5, 50)
            .idempotent(true)
            .cacheable_seconds(1)
    );
    assert_eq!(now.read_only, Some(true));
    let defaults = Config::parse("", Origin::Inline, Format::Toml, &env()).expect("empty");
    assert_eq!(defaults.tiers.len(), 3);
    assert_eq!(defaults.latency.quantile, 0.9);
}

#[test]
fn manager_settings_and_defaults() {
    let defaults = Config::parse("", Origin::Inline, Format::Toml, &env()).expect("empty");
    assert_eq!(defaults.manager, ManagerConfig::default());
    let manager = &defaults.manager;
    assert_eq!(manager.registries, [DEFAULT_REGISTRY]);
    assert_eq!(manager.activation, Activation::Approval);
    assert_eq!(manager.max_concurrent, 2);
    assert_eq!(manager.registry_ttl, Duration::from_secs(600));
    assert_eq!(manager.approval_timeout, Duration::from_secs(3600));
    assert_eq!(manager.step_timeout, Duration::from_secs(900));
    assert_eq!(manager.trust, Trust::Pinned);
    assert_eq!(manager.energy.per_second, 2.0);
    assert_eq!(manager.energy.search, EnergyRange::new(20.0, 50.0));
    assert_eq!(manager.energy.remove, EnergyRange::new(2.0, 5.0));
    assert_eq!(manager.sandbox, SandboxSetting::On, "confined by default");
    assert!(
        !manager.allow_private_remotes,
        "a model's remote must be public"
    );
    assert_eq!(
        manager.install_sandbox(None),
        Some(SandboxConfig::default()),
        "the sandbox defaults without [gateway.sandbox]"
    );

    let text = "[manager]\nregistries = [\"http://127.0.0.1:8080\", \"${TOKEN_REGISTRY:-https://r.example/}\"]\ncatalogs = [\"catalog.json\", \"/srv/all.json\"]\nactivation = \"auto\"\nmax_concurrent = 4\ninstall_dir = \"servers\"\ndatabase = \"${HOME}/manager.db\"\nregistry_ttl = \"30s\"\napproval_timeout = 90000\nstep_timeout = \"2m\"\ntrust = \"auto\"\n\n[manager.energy]\nper_second = 0\nsearch = [1, 1.5]\nremove = [0, 0]\n";
    let origin = Origin::File(PathBuf::from("/etc/sb/switchboard.toml"));
    let config = Config::parse(text, origin, Format::Toml, &env()).expect("valid");
    let manager = config.manager;
    assert_eq!(
        manager.registries,
        ["http://127.0.0.1:8080", "https://r.example/"]
    );
    assert_eq!(
        manager.catalogs,
        [
            PathBuf::from("/etc/sb/catalog.json"),
            PathBuf::from("/srv/all.json")
        ]
    );
    assert_eq!(manager.activation, Activation::Auto);
    assert_eq!(manager.max_concurrent, 4);
    assert_eq!(manager.install_dir, Some(PathBuf::from("/etc/sb/servers")));
    assert_eq!(manager.database, Some(PathBuf::from("/home/u/manager.db")));
    assert_eq!(manager.registry_ttl, Duration::from_secs(30));
    assert_eq!(manager.approval_timeout, Duration::from_secs(90));
    assert_eq!(manager.step_timeout, Duration::from_secs(120));
    assert_eq!(manager.trust, Trust::Auto);
    let energy = manager.energy;
    assert_eq!(energy.per_second, 0.0);
    assert_eq!(energy.search, EnergyRange::new(1.0, 1.5));
    assert_eq!(energy.remove, EnergyRange::new(0.0, 0.0));
    assert_eq!(energy.install, EnergyConfig::default().install, "unwritten");

    let zero = Config::parse(
        "[manager]\nstep_timeout = \"0s\"\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect_err("a step must have time to run");
    assert!(
        zero.to_string()
            .contains("manager.step_timeout must be longer than zero"),
        "{zero}"
    );

    let none = check_ok("[manager]\nregistries = []\n", Format::Toml);
    assert!(
        none.manager.registries.is_empty(),
        "[] searches no registry"
    );
    let json = check_ok(
        "{\"mcpServers\": {}, \"manager\": {\"activation\": \"auto\", \"energy\": {\"add\": [1, 2]}}}",
        Format::Json,
    );
    assert_eq!(json.manager.activation, Activation::Auto);
    assert_eq!(json.manager.energy.add, EnergyRange::new(1.0, 2.0));

    let gateway = check_ok(
        "[gateway.sandbox]\nmemory = \"1GiB\"\n\n[manager]\nsandbox = true\n",
        Format::Toml,
    );
    assert_eq!(
        gateway
            .manager
            .install_sandbox(gateway.gateway.sandbox.as_ref())
            .and_then(|sandbox| sandbox.memory),
        Some(1 << 30),
        "true takes the gateway's sandbox"
    );
    let own = check_ok(
        "[gateway.sandbox]\nmemory = \"1GiB\"\n\n[manager]\nsandbox = { writable = [\"/srv/data\"], network = \"none\" }\n",
        Format::Toml,
    );
    let sandbox = own
        .manager
        .install_sandbox(own.gateway.sandbox.as_ref())
        .expect("a sandbox");
    assert_eq!(sandbox.memory, None, "a table replaces the gateway's whole");
    assert_eq!(sandbox.writable, [PathBuf::from("/srv/data")]);
    assert_eq!(sandbox.network, NetworkAccess::None);
    let off = check_ok(
        "[manager]\nsandbox = false\nallow_private_remotes = true\n",
        Format::Toml,
    );
    assert_eq!(off.manager.install_sandbox(None), None);
    assert!(off.manager.allow_private_remotes);
}

#[test]
fn the_manager_builtin_is_named_not_default() {
    let config = check_ok("[servers.manager]\nbuiltin = \"manager\"\n", Format::Toml);
    assert_eq!(config.servers[0].transport, Transport::builtin("manager"));
    assert!(
        Config::builtin_default()
            .servers
            .iter()
            .all(|server| server.id != "manager"),
        "models get the manager only when a config names it"
    );
}

#[test]
fn the_documented_manager_example_is_valid() {
    let example = crate::config::tests::documented_example("### The server manager");
    let origin = Origin::File(PathBuf::from("/etc/sb/switchboard.toml"));
    let config = Config::parse(example, origin, Format::Toml, &env()).expect("valid");
    let expected = ManagerConfig {
        catalogs: vec![PathBuf::from("/etc/sb/catalog.json")],
        install_dir: Some(PathBuf::from("/etc/sb/servers")),
        database: Some(PathBuf::from("/etc/sb/manager.db")),
        ..ManagerConfig::default()
    };
    assert_eq!(config.manager, expected, "the example shows the defaults");
    assert_eq!(config.servers[0].transport, Transport::builtin("manager"));
}
