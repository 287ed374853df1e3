//! JSON edits: the `mcpServers` form as JSONC (comments, trailing commas), plain JSON, VS Code's
//! `servers` object and the seeds' `servers` array.

use super::*;

/// Claude Desktop's shape, written by hand in JSONC.
pub(super) const JSONC: &str = r#"{
  // Claude Desktop config
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], // the sandbox
    },
    /* remote */
    "remote": {
      "url": "https://example.com/mcp",
      "disabled": false,
    },
    "clock": {
      "builtin": "clock"
    }, // built in
  },
}
"#;

const FS: &str = r#"    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], // the sandbox
    },
"#;

/// Plain JSON as Claude Desktop writes it.
const PLAIN: &str = r#"{
    "mcpServers": {
        "fs": {
            "command": "npx",
            "args": ["-y", "x"]
        },
        "web": {
            "url": "https://example.com/mcp"
        }
    }
}"#;

const VSCODE: &str = r#"{
	// .vscode/mcp.json
	"servers": {
		"fs": { "type": "stdio", "command": "npx", "args": ["x"] }
	}
}
"#;

pub(super) const SEEDS: &str = r#"{"servers": [
  {"id": "fs", "name": "Filesystem", "command": "npx", "args": [], "env": {}, "enabled": true},
  {"id": "web", "url": "https://example.com/mcp"}
]}
"#;

fn json(text: &str) -> Config {
    parse(text, Format::Json)
}

#[test]
fn add_to_jsonc_keeps_the_trailing_comma_style() {
    let new = add_server(JSONC, Format::Json, "github", &github()).expect("added");
    let entry = r#"
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {
        "GITHUB_TOKEN": "${TOKEN}"
      }
    },"#;
    assert_eq!(new, after(JSONC, "}, // built in", entry));
    let config = json(&new);
    assert_eq!(ids(&config), ["fs", "remote", "clock", "github"]);
    assert_eq!(
        server(&config, "github").expect("github").transport,
        github_transport()
    );
}

#[test]
fn add_to_plain_json_puts_a_comma_after_the_last_member() {
    let new = add_server(PLAIN, Format::Json, "legacy", &legacy_sse(Some(false))).expect("added");
    let entry = r#",
        "legacy": {
            "url": "http://127.0.0.1:9001/sse",
            "type": "sse",
            "headers": {
                "Authorization": "Bearer ${TOKEN}"
            },
            "disabled": true
        }"#;
    let anchor = "\"url\": \"https://example.com/mcp\"\n        }";
    assert_eq!(new, after(PLAIN, anchor, entry));
    let config = json(&new);
    let legacy = server(&config, "legacy").expect("legacy");
    assert_eq!(legacy.transport, sse_transport());
    assert!(!legacy.enabled);
    assert!(
        serde_json::from_str::<serde_json::Value>(&new).is_ok(),
        "still plain JSON"
    );
}

#[test]
fn add_to_vscode_writes_the_type_first_on_one_line_like_its_siblings() {
    let new = add_server(VSCODE, Format::Json, "legacy", &legacy_sse(None)).expect("added");
    let entry = ",\n\t\t\"legacy\": { \"type\": \"sse\", \"url\": \"http://127.0.0.1:9001/sse\", \"headers\": { \"Authorization\": \"Bearer ${TOKEN}\" } }";
    assert_eq!(new, after(VSCODE, "\"args\": [\"x\"] }", entry));
    assert_eq!(
        server(&json(&new), "legacy").expect("legacy").transport,
        sse_transport()
    );
    let new = add_server(&new, Format::Json, "gh", &github()).expect("added");
    assert!(
        new.contains("\"gh\": { \"type\": \"stdio\", \"command\": \"npx\""),
        "{new}"
    );
    assert_eq!(ids(&json(&new)), ["fs", "legacy", "gh"]);
}

#[test]
fn add_to_the_seeds_array_puts_the_id_first() {
    let new = add_server(
        SEEDS,
        Format::Json,
        "clock",
        &ServerEntry {
            enabled: Some(false),
            ..clock()
        },
    )
    .expect("added");
    let entry = ",\n  {\"id\": \"clock\", \"builtin\": \"clock\", \"enabled\": false}";
    assert_eq!(new, after(SEEDS, "\"https://example.com/mcp\"}", entry));
    let config = json(&new);
    assert_eq!(ids(&config), ["fs", "web", "clock"]);
    assert!(!server(&config, "clock").expect("clock").enabled);
}

#[test]
fn add_writes_the_trust_in_every_form() {
    let pinned = |entry: ServerEntry| ServerEntry {
        trust: Some(Trust::Pinned),
        ..entry
    };
    let new = add_server(JSONC, Format::Json, "github", &pinned(github())).expect("added");
    let entry = r#"
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {
        "GITHUB_TOKEN": "${TOKEN}"
      },
      "trust": "pinned"
    },"#;
    assert_eq!(new, after(JSONC, "}, // built in", entry));
    assert_eq!(
        server(&json(&new), "github").expect("github").trust,
        Trust::Pinned
    );

    let new = add_server(VSCODE, Format::Json, "legacy", &pinned(legacy_sse(None))).expect("added");
    let entry = ",\n\t\t\"legacy\": { \"type\": \"sse\", \"url\": \"http://127.0.0.1:9001/sse\", \"headers\": { \"Authorization\": \"Bearer ${TOKEN}\" }, \"trust\": \"pinned\" }";
    assert_eq!(new, after(VSCODE, "\"args\": [\"x\"] }", entry));
    assert_eq!(
        server(&json(&new), "legacy").expect("legacy").trust,
        Trust::Pinned
    );

    let disabled = ServerEntry {
        enabled: Some(false),
        ..pinned(clock())
    };
    let new = add_server(SEEDS, Format::Json, "clock", &disabled).expect("added");
    let entry = ",\n  {\"id\": \"clock\", \"builtin\": \"clock\", \"trust\": \"pinned\", \"enabled\": false}";
    assert_eq!(new, after(SEEDS, "\"https://example.com/mcp\"}", entry));
    let clock = json(&new);
    let clock = server(&clock, "clock").expect("clock");
    assert_eq!((clock.trust, clock.enabled), (Trust::Pinned, false));
}

#[test]
fn add_to_empty_files_and_files_without_servers() {
    let new = add_server("", Format::Json, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        "{\n  \"mcpServers\": {\n    \"clock\": {\n      \"builtin\": \"clock\"\n    }\n  }\n}\n"
    );
    assert_eq!(ids(&json(&new)), ["clock"]);

    let commented = "// nothing yet";
    let new = add_server(commented, Format::Json, "clock", &clock()).expect("added");
    assert!(
        new.starts_with("// nothing yet\n{\n  \"mcpServers\""),
        "{new}"
    );
    assert_eq!(ids(&json(&new)), ["clock"]);

    let settings = "{\n  \"gateway\": {\"separator\": \".\"} // dots\n}\n";
    let new = add_server(settings, Format::Json, "clock", &clock()).expect("added");
    let entry = "\n  \"mcpServers\": {\n    \"clock\": {\n      \"builtin\": \"clock\"\n    }\n  }";
    let expected = after(settings, "// dots", entry).replacen("\"} // dots", "\"}, // dots", 1);
    assert_eq!(new, expected);
    assert_eq!(ids(&json(&new)), ["clock"]);

    let new = add_server("{}", Format::Json, "clock", &clock()).expect("added");
    assert_eq!(ids(&json(&new)), ["clock"]);
    let new = add_server(r#"{"mcpServers": {}}"#, Format::Json, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        "{\"mcpServers\": {\n  \"clock\": {\n    \"builtin\": \"clock\"\n  }\n}}"
    );
    assert_eq!(ids(&json(&new)), ["clock"]);
}

#[test]
fn add_refuses_existing_ids_in_every_form() {
    for (text, id) in [(JSONC, "remote"), (VSCODE, "fs"), (SEEDS, "web")] {
        assert_eq!(
            add_server(text, Format::Json, id, &clock()),
            Err(EditError::Exists(id.into()))
        );
    }
    assert!(matches!(
        add_server("[1]", Format::Json, "a", &clock()),
        Err(EditError::Unsupported(_))
    ));
    assert!(matches!(
        add_server(r#"{"servers": 3}"#, Format::Json, "a", &clock()),
        Err(EditError::Unsupported(_))
    ));
}

#[test]
fn remove_first_middle_last_from_jsonc() {
    let new = remove_server(JSONC, Format::Json, "fs").expect("removed");
    assert_eq!(new, without(JSONC, FS));
    assert_eq!(ids(&json(&new)), ["remote", "clock"]);

    // A comment above the entry is not part of it and stays.
    let new = remove_server(JSONC, Format::Json, "remote").expect("removed");
    let remote = "    \"remote\": {\n      \"url\": \"https://example.com/mcp\",\n      \"disabled\": false,\n    },\n";
    assert_eq!(new, without(JSONC, remote));
    assert_eq!(ids(&json(&new)), ["fs", "clock"]);

    let new = remove_server(JSONC, Format::Json, "clock").expect("removed");
    let clock = "    \"clock\": {\n      \"builtin\": \"clock\"\n    }, // built in\n";
    assert_eq!(new, without(JSONC, clock));
    assert_eq!(ids(&json(&new)), ["fs", "remote"]);
}

#[test]
fn remove_from_plain_json_drops_the_separating_comma() {
    let new = remove_server(PLAIN, Format::Json, "web").expect("removed");
    let web = "        \"web\": {\n            \"url\": \"https://example.com/mcp\"\n        }\n";
    let expected = without(PLAIN, web).replacen("        },\n", "        }\n", 1);
    assert_eq!(new, expected);
    assert!(serde_json::from_str::<serde_json::Value>(&new).is_ok());
    assert_eq!(ids(&json(&new)), ["fs"]);

    let new = remove_server(PLAIN, Format::Json, "fs").expect("removed");
    assert!(serde_json::from_str::<serde_json::Value>(&new).is_ok());
    assert_eq!(ids(&json(&new)), ["web"]);

    let only = remove_server(&new, Format::Json, "web").expect("removed");
    assert_eq!(only, "{\n    \"mcpServers\": {\n    }\n}");
    assert!(json(&only).servers.is_empty());
}

#[test]
fn remove_from_one_line_objects_and_arrays() {
    let line =
        r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"command": "z"}}}"#;
    for (id, expected) in [
        (
            "a",
            r#"{"mcpServers": {"b": {"command": "y"}, "c": {"command": "z"}}}"#,
        ),
        (
            "b",
            r#"{"mcpServers": {"a": {"command": "x"}, "c": {"command": "z"}}}"#,
        ),
        (
            "c",
            r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}"#,
        ),
    ] {
        let new = remove_server(line, Format::Json, id).expect("removed");
        assert_eq!(new, expected);
        json(&new);
    }
    let new = remove_server(SEEDS, Format::Json, "fs").expect("removed");
    assert_eq!(
        new,
        "{\"servers\": [\n  {\"id\": \"web\", \"url\": \"https://example.com/mcp\"}\n]}\n"
    );
    assert_eq!(ids(&json(&new)), ["web"]);
    let new = remove_server(SEEDS, Format::Json, "web").expect("removed");
    assert_eq!(ids(&json(&new)), ["fs"]);
    assert_eq!(
        remove_server(SEEDS, Format::Json, "nope"),
        Err(EditError::Missing("nope".into()))
    );
}

#[test]
fn set_enabled_in_every_form() {
    // An existing "disabled" key: only its value changes.
    let new = set_enabled(JSONC, Format::Json, "remote", false).expect("set");
    assert_eq!(
        new,
        JSONC.replace("\"disabled\": false", "\"disabled\": true")
    );
    assert!(!server(&json(&new), "remote").expect("remote").enabled);

    // No key: "disabled": true is added, like the other keys; enabling then flips it.
    let new = set_enabled(JSONC, Format::Json, "clock", false).expect("set");
    assert_eq!(
        new,
        after(
            JSONC,
            "\"builtin\": \"clock\"",
            ",\n      \"disabled\": true"
        )
    );
    assert!(!server(&json(&new), "clock").expect("clock").enabled);
    let back = set_enabled(&new, Format::Json, "clock", true).expect("set");
    assert!(server(&json(&back), "clock").expect("clock").enabled);

    // Enabling a server without either key changes nothing.
    assert_eq!(
        set_enabled(JSONC, Format::Json, "fs", true).expect("set"),
        JSONC
    );

    let new = set_enabled(VSCODE, Format::Json, "fs", false).expect("set");
    assert_eq!(
        new,
        VSCODE.replace(
            "\"args\": [\"x\"] }",
            "\"args\": [\"x\"], \"disabled\": true }"
        )
    );
    assert!(!json(&new).servers[0].enabled);

    let new = set_enabled(SEEDS, Format::Json, "fs", false).expect("set");
    assert_eq!(
        new,
        SEEDS.replace("\"enabled\": true", "\"enabled\": false")
    );
    let new = set_enabled(&new, Format::Json, "web", false).expect("set");
    assert_eq!(
        new,
        SEEDS
            .replace("\"enabled\": true", "\"enabled\": false")
            .replace("/mcp\"}", "/mcp\", \"enabled\": false}")
    );
    let config = json(&new);
    assert!(!server(&config, "fs").expect("fs").enabled);
    assert!(!server(&config, "web").expect("web").enabled);
    assert_eq!(
        set_enabled(SEEDS, Format::Json, "nope", false),
        Err(EditError::Missing("nope".into()))
    );
}

#[test]
fn crlf_files_stay_crlf() {
    let text = "{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\"\r\n    }\r\n  }\r\n}\r\n";
    let new = add_server(text, Format::Json, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        text.replace(
            "    }\r\n  }",
            "    },\r\n    \"clock\": {\r\n      \"builtin\": \"clock\"\r\n    }\r\n  }"
        )
    );
    let back = remove_server(&new, Format::Json, "clock").expect("removed");
    assert_eq!(back, text);
}

#[test]
fn server_text_ids_and_syntax_errors() {
    assert_eq!(
        server_text(JSONC, Format::Json, "fs").as_deref(),
        Some(FS.trim_start().trim_end_matches([',', '\n']))
    );
    assert_eq!(
        server_text(SEEDS, Format::Json, "web").as_deref(),
        Some(r#"{"id": "web", "url": "https://example.com/mcp"}"#)
    );
    assert_eq!(server_text(JSONC, Format::Json, "nope"), None);
    assert_eq!(server_text("{", Format::Json, "fs"), None);
    assert_eq!(
        server_ids(JSONC, Format::Json).expect("ids"),
        ["fs", "remote", "clock"]
    );
    assert_eq!(server_ids(VSCODE, Format::Json).expect("ids"), ["fs"]);
    assert_eq!(server_ids(SEEDS, Format::Json).expect("ids"), ["fs", "web"]);
    assert_eq!(
        server_ids(" // x\n", Format::Json).expect("ids"),
        Vec::<String>::new()
    );

    let bad = "{\n  \"mcpServers\": {\n    \"a\": tru\n  }\n}";
    assert_eq!(
        add_server(bad, Format::Json, "b", &clock()),
        Err(EditError::Syntax {
            line: 3,
            column: 10,
            message: "JSON syntax error: expected a value".into()
        })
    );
    for bad in [
        "{",
        "{\"a\" 1}",
        "{\"a\": 1 \"b\": 2}",
        "/* open",
        "{\"a\": \"x",
        "{} x",
        "\"\\q\"",
    ] {
        assert!(
            matches!(server_ids(bad, Format::Json), Err(EditError::Syntax { .. })),
            "{bad}"
        );
    }
    assert!(server_ids(&"[".repeat(10_000), Format::Json).is_err());
}

#[test]
fn add_writes_the_sandbox_in_json_too() {
    let sandboxed = ServerEntry {
        sandbox: Some(Box::new(EntrySandbox {
            network: Some("none".into()),
            files: Some(256),
            inherit_env: true,
            readable: vec!["/srv/data".into()],
            ..EntrySandbox::default()
        })),
        ..github()
    };
    let new = add_server(JSONC, Format::Json, "github", &sandboxed).expect("added");
    assert!(
        new.contains(
            r#""sandbox": {"network": "none", "files": 256, "inherit_env": true, "readable": ["/srv/data"]}"#
        ),
        "{new}"
    );
    let config = json(&new);
    let sandbox = config
        .sandbox_of(server(&config, "github").expect("github"))
        .expect("a sandbox");
    assert_eq!(sandbox.network, crate::config::NetworkAccess::None);
    assert_eq!(sandbox.files, Some(256));
    assert!(sandbox.inherit_env);
}

#[test]
fn an_https_server_is_added_with_its_tls_files() {
    let dir = tempfile::tempdir().expect("dir");
    let new = add_server(JSONC, Format::Json, "internal", &mutual_tls(dir.path())).expect("added");
    let d = dir.path().display();
    assert!(
        new.contains(&format!(
            r#""tls": {{"ca": "{d}/ca.pem", "cert": "{d}/gateway.crt", "key": "{d}/gateway.key"}}"#
        )),
        "{new}"
    );
    let [_, cert, _] = tls_paths(&json(&new), "internal", dir.path());
    assert_eq!(cert, Some(dir.path().join("gateway.crt")));
}

#[test]
fn a_public_only_remote_is_added_with_its_key() {
    let new = add_server(JSONC, Format::Json, "asked", &public_remote()).expect("added");
    assert!(new.contains(r#""public_only": true"#), "{new}");
    let config = json(&new);
    assert!(server(&config, "asked").expect("asked").public_only);
}
