//! The checked-in schema matches the types, has the validator's keys, and accepts the
//! documented example.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use super::native_schema;
use crate::config::agents::AGENT_KEYS;
use crate::config::auth::AUTH_KEYS;
use crate::config::builtin::SETTINGS_KEYS;
use crate::config::hooks::HOOK_KEYS;
use crate::config::limits::LIMIT_KEYS;
use crate::config::manager::{ENERGY_KEYS, MANAGER_KEYS};
use crate::config::sandbox::SANDBOX_KEYS;
use crate::config::server::{SERVER_KEYS, TOOL_KEYS};
use crate::config::shared::SHARED_KEYS;
use crate::config::tasks::TASKS_KEYS;
use crate::config::tiers::LATENCY_KEYS;
use crate::config::upstream_auth::UPSTREAM_AUTH_KEYS;
use crate::config::validate::{GATEWAY_KEYS, ROOT_KEYS};

fn schema() -> Value {
    serde_json::from_str(&native_schema()).expect("the generated schema is JSON")
}

fn properties(schema: &Value, pointer: &str) -> BTreeSet<String> {
    schema
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

fn keys(list: &[&str], json_only: &[&str]) -> BTreeSet<String> {
    list.iter()
        .filter(|k| !json_only.contains(k))
        .map(|k| (*k).to_owned())
        .collect()
}

#[test]
fn checked_in_schema_matches_the_types() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema/switchboard.schema.json");
    let generated = native_schema();
    if std::env::var_os("SWITCHBOARD_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with the types in config/schema.rs and config/schema/; \
         run SWITCHBOARD_BLESS=1 cargo test -p switchboard-core config to update it, and commit it",
        path.display()
    );
}

/// The schema describes exactly the keys the validator accepts (minus the JSON-only ones).
#[test]
fn schema_and_validator_know_the_same_keys() {
    let schema = schema();
    let cases = [
        // The JSON client formats' keys: mcpServers, and VS Code's inputs.
        ("/properties", keys(&ROOT_KEYS, &["mcpServers", "inputs"])),
        ("/$defs/Gateway/properties", keys(&GATEWAY_KEYS, &[])),
        (
            "/$defs/Server/properties",
            keys(&SERVER_KEYS, &["type", "id"])
                .into_iter()
                .chain(SETTINGS_KEYS.iter().map(|k| (*k).to_owned()))
                .collect(),
        ),
        ("/$defs/ToolOverride/properties", keys(&TOOL_KEYS, &[])),
        ("/$defs/Agent/properties", keys(&AGENT_KEYS, &[])),
        ("/$defs/Limits/properties", keys(&LIMIT_KEYS, &[])),
        ("/$defs/HookEntry/properties", keys(&HOOK_KEYS, &[])),
        ("/$defs/Latency/properties", keys(&LATENCY_KEYS, &[])),
        ("/$defs/Manager/properties", keys(&MANAGER_KEYS, &[])),
        ("/$defs/Energy/properties", keys(&ENERGY_KEYS, &[])),
        ("/$defs/Auth/properties", keys(&AUTH_KEYS, &[])),
        ("/$defs/Shared/properties", keys(&SHARED_KEYS, &[])),
        ("/$defs/Sandbox/properties", keys(&SANDBOX_KEYS, &[])),
        ("/$defs/Tasks/properties", keys(&TASKS_KEYS, &[])),
        ("/$defs/Shared/properties", keys(&SHARED_KEYS, &[])),
        (
            "/$defs/UpstreamAuth/properties",
            keys(&UPSTREAM_AUTH_KEYS, &[]),
        ),
    ];
    for (pointer, expected) in cases {
        assert_eq!(properties(&schema, pointer), expected, "{pointer}");
    }
}

#[test]
fn the_documented_example_satisfies_the_schema() {
    let docs = include_str!("../../../../../docs/config.md");
    let example = docs
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/config.md has a ```toml example");
    let instance: Value = toml::from_str(example).expect("the example is TOML");
    let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let manager = crate::config::tests::documented_example("### The server manager");
    let instance: Value = toml::from_str(manager).expect("the example is TOML");
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let auth = crate::config::tests::documented_example("### Authorization");
    let instance: Value = toml::from_str(auth).expect("the example is TOML");
    assert!(validator.is_valid(&instance), "the [auth] example");
    for bad in [
        "activation = \"manual\"",
        "registries = [\"ftp://x\"]",
        "max_concurrent = 0",
        "energy = { search = [1, 2, 3] }",
        "energy = { add = [-1, 2] }",
        "energy = { serch = [1, 2] }",
        "sandbox = \"yes\"",
        "sandbox = { mem = 1 }",
        "allow_private_remotes = \"yes\"",
    ] {
        let bad: Value = toml::from_str(&format!("[manager]\n{bad}\n")).expect("TOML");
        assert!(!validator.is_valid(&bad), "{bad}");
    }
    let section = docs
        .split("### Built-in servers")
        .nth(1)
        .expect("docs/config.md has a Built-in servers section");
    let examples: Vec<&str> = section
        .split("### ")
        .next()
        .unwrap_or_default()
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect();
    assert_eq!(
        examples.len(),
        2,
        "the built-ins' example and the json backend's"
    );
    for example in examples {
        let instance: Value = toml::from_str(example).expect("the example is TOML");
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{}: {e}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }
    for good in [
        "builtin = \"music\"\nplayer = [\"paplay\", \"{path}\"]\nmoods = { a = \"x\", b = [\"y\"] }",
        "builtin = \"images\"\nbackend = \"automatic1111\"\nstyles = { s = { params = { n = 1 } } }",
        "builtin = \"web\"\nmax_redirects = 0\ntimeout = 1500",
        "command = \"x\"\ninstances = 4",
        "command = \"x\"\nsandbox = false",
        "command = \"x\"\nsandbox = { memory = \"1GiB\", cpu = \"10m\", files = 256, processes = 64, writable = [\"/tmp/x\"], network = \"loopback\", user = \"nobody\" }",
    ] {
        let good: Value = toml::from_str(&format!("[servers.x]\n{good}\n")).expect("TOML");
        assert!(validator.is_valid(&good), "{good}");
    }
    for bad in [
        "builtin = \"web\"\nbackend = \"serxng\"",
        "builtin = \"music\"\nplayer = \"vlc\"",
        "builtin = \"music\"\nplayer = []",
        "builtin = \"music\"\nmoods = { a = 1 }",
        "builtin = \"web\"\nmax_bytes = 0",
        "builtin = \"web\"\nmax_redirects = -1",
        "builtin = \"web\"\njson = { results = \"r\", title = \"t\" }",
        "builtin = \"web\"\njson = { results = \"r\", title = \"t\", url = \"u\", extra = \"e\" }",
        "builtin = \"images\"\nstyles = { s = { sufix = \"x\" } }",
        "builtin = \"images\"\nstyles = { s = { params = [1] } }",
        "builtin = \"images\"\ntimeout = \"soon\"",
        "builtin = \"rules\"\ndirs = \"rules\"",
        "command = \"x\"\ninstances = 0",
        "command = \"x\"\nsandbox = { memory = \"lots\" }",
        "command = \"x\"\nsandbox = { network = \"some\" }",
        "command = \"x\"\nsandbox = { processes = 0 }",
        "command = \"x\"\nsandbox = { mem = 1 }",
        "command = \"x\"\ninstances = 65",
        "url = \"http://h\"\ninstances = 2",
    ] {
        let bad: Value = toml::from_str(&format!("[servers.x]\n{bad}\n")).expect("TOML");
        assert!(!validator.is_valid(&bad), "{bad}");
    }
    let bad: Value = toml::from_str(
        "[gateway]\nseparatr = \"_\"\n[servers.\"a b\"]\nera = \"new\"\ncall_timeout = \"soon\"\n",
    )
    .expect("TOML");
    assert_eq!(
        validator.iter_errors(&bad).count(),
        4,
        "every mistake is caught"
    );
}
