//! Tests of the config file editor: every edit is checked byte for byte against the original
//! text with only the entry spliced in or out, and parsed again with the config parser.
//! TOML cases are in `tests/toml_cases.rs`, JSON ones in `tests/json_cases.rs`, the diff and
//! atomic writes in `tests/files.rs`.

mod files;
mod json_cases;
mod toml_cases;

use std::collections::BTreeMap;

use super::*;
use crate::config::json::{self as jsonc, Kind};
use crate::config::{Config, MapEnvironment, Origin, ServerConfig, Transport, Trust};

fn env() -> MapEnvironment {
    MapEnvironment(BTreeMap::from([("TOKEN".into(), "t0k".into())]))
}

/// Parses with the project's own config parser; panics with its problems.
fn parse(text: &str, format: Format) -> Config {
    match Config::parse(text, Origin::Inline, format, &env()) {
        Ok(config) => config,
        Err(errors) => panic!("the edited text no longer parses:\n{errors}\n---\n{text}"),
    }
}

fn server<'c>(config: &'c Config, id: &str) -> Option<&'c ServerConfig> {
    config.servers.iter().find(|s| s.id == id)
}

fn ids(config: &Config) -> Vec<&str> {
    config.servers.iter().map(|s| s.id.as_str()).collect()
}

/// `text` with `new` put right after the first `anchor` (which must be there).
fn after(text: &str, anchor: &str, new: &str) -> String {
    let at = text.find(anchor).expect("anchor in the text") + anchor.len();
    format!("{}{new}{}", &text[..at], &text[at..])
}

/// `text` without the first `part` (which must be there).
fn without(text: &str, part: &str) -> String {
    assert!(text.contains(part), "{part:?} not in {text:?}");
    text.replacen(part, "", 1)
}

fn github() -> ServerEntry {
    ServerEntry {
        transport: EntryTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
            env: BTreeMap::from([("GITHUB_TOKEN".into(), "${TOKEN}".into())]),
            cwd: None,
        },
        enabled: None,
        trust: None,
        sandbox: None,
    }
}

fn github_transport() -> Transport {
    Transport::Stdio {
        command: "npx".into(),
        args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
        env: BTreeMap::from([("GITHUB_TOKEN".into(), "t0k".into())]),
        cwd: None,
    }
}

fn legacy_sse(enabled: Option<bool>) -> ServerEntry {
    ServerEntry {
        transport: EntryTransport::Sse {
            url: "http://127.0.0.1:9001/sse".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer ${TOKEN}".into())]),
            tls: None,
            public_only: false,
        },
        enabled,
        trust: None,
        sandbox: None,
    }
}

/// A remote held to public addresses, as the manager writes a model's.
fn public_remote() -> ServerEntry {
    ServerEntry::new(EntryTransport::Http {
        url: "https://mcp.example.com/mcp".into(),
        headers: BTreeMap::new(),
        tls: None,
        public_only: true,
    })
}

fn sse_transport() -> Transport {
    Transport::Sse {
        url: "http://127.0.0.1:9001/sse".into(),
        headers: BTreeMap::from([("Authorization".into(), "Bearer t0k".into())]),
    }
}

/// An https:// server with a private CA and a client certificate, whose files exist in `dir`
/// (the key kept by its owner alone), as `servers add --tls-*` writes it.
fn mutual_tls(dir: &std::path::Path) -> ServerEntry {
    use std::os::unix::fs::PermissionsExt;
    let path = |name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, "PEM").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        Some(path.display().to_string())
    };
    ServerEntry {
        transport: EntryTransport::Http {
            url: "https://mcp.internal.example/mcp".into(),
            headers: BTreeMap::new(),
            tls: Some(EntryTls {
                ca: path("ca.pem"),
                cert: path("gateway.crt"),
                key: path("gateway.key"),
            }),
            public_only: false,
        },
        enabled: None,
        trust: None,
        sandbox: None,
    }
}

/// The `tls` a parsed config gives server `id`, as the three paths.
fn tls_paths(config: &Config, id: &str, dir: &std::path::Path) -> [Option<std::path::PathBuf>; 3] {
    let tls = server(config, id)
        .and_then(|server| server.tls.clone())
        .expect("a tls table");
    assert_eq!(tls.ca.as_deref(), Some(dir.join("ca.pem").as_path()));
    [tls.ca, tls.cert, tls.key]
}

fn clock() -> ServerEntry {
    ServerEntry {
        transport: EntryTransport::Builtin {
            name: "clock".into(),
        },
        enabled: None,
        trust: None,
        sandbox: None,
    }
}

#[test]
fn entries_round_trip_through_serde() {
    let entry = legacy_sse(Some(false));
    let json = serde_json::to_value(&entry).expect("serializes");
    assert_eq!(json["transport"]["kind"], "sse");
    assert!(json.get("trust").is_none(), "None is not written");
    let back: ServerEntry = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, entry);
    let minimal: ServerEntry =
        serde_json::from_str(r#"{"transport": {"kind": "stdio", "command": "x"}}"#)
            .expect("defaults");
    assert_eq!(
        minimal.transport,
        EntryTransport::Stdio {
            command: "x".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None
        }
    );
    assert_eq!(minimal.enabled, None);
    assert_eq!(minimal.trust, None);
    let pinned = ServerEntry {
        trust: Some(Trust::Pinned),
        ..clock()
    };
    let json = serde_json::to_value(&pinned).expect("serializes");
    assert_eq!(json["trust"], "pinned");
    let back: ServerEntry = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, pinned);
}

/// Every prefix of some real files, through every operation: errors, never panics.
#[test]
fn no_input_makes_it_panic() {
    let files = [
        (toml_cases::FILE, Format::Toml),
        (json_cases::JSONC, Format::Json),
        (json_cases::SEEDS, Format::Json),
        ("{\"a\": \"\\u00e9\\", Format::Json),
        ("[servers.é]\ncommand = \"ü\"\n", Format::Toml),
    ];
    for (file, format) in files {
        for cut in (0..=file.len()).filter(|&n| file.is_char_boundary(n)) {
            let text = &file[..cut];
            for id in ["fs", "remote", "clock", "new"] {
                let ids_after = |new: &str| {
                    server_ids(new, format)
                        .unwrap_or_else(|e| panic!("{e} in the edit of {text:?}:\n{new}"))
                };
                if let Ok(new) = add_server(text, format, id, &github()) {
                    assert!(ids_after(&new).iter().any(|i| i == id), "{new}");
                }
                if let Ok(new) = remove_server(text, format, id) {
                    assert!(!ids_after(&new).iter().any(|i| i == id), "{new}");
                }
                for enabled in [false, true] {
                    if let Ok(new) = set_enabled(text, format, id, enabled) {
                        ids_after(&new);
                    }
                }
                let _ = server_text(text, format, id);
            }
            let _ = server_ids(text, format);
            let _ = unified_diff("f", text, file);
        }
    }
}

#[test]
fn json_spans_of_keys_values_and_commas() {
    let text = "{\"a\": [1, \"\\nabcdefghi\u{e9}\",], /* c */ \"b\": null}";
    let root = jsonc::scan(text).expect("scans").expect("a value");
    let Kind::Object(members) = &root.kind else {
        panic!("an object: {root:?}")
    };
    let places: Vec<_> = members
        .iter()
        .map(|m| (m.key_start, m.value.start, m.value.end, m.comma))
        .collect();
    assert_eq!(places, [(1, 6, 27, Some(27)), (37, 42, 46, None)]);
    let Kind::Array(elements) = &members[0].value.kind else {
        panic!("an array")
    };
    assert_eq!(
        elements[1].value.kind,
        Kind::String("\nabcdefghi\u{e9}".into())
    );
    assert_eq!(elements[1].comma, Some(25));
    assert_eq!(jsonc::scan(" // only a comment\n"), Ok(None));
}
