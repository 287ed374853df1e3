//! `instances`: a stdio server's pool size, in both formats, and every mistake at its
//! `line:column` — out of range, not an integer, on a server that is not stdio.

use super::problems::{json, toml};
use super::*;

#[test]
fn instances_default_to_one_and_are_read_in_both_formats() {
    let config = check_ok(
        "[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"x\"\ninstances = 4\n\n[servers.c]\ncommand = \"x\"\ninstances = 64\n",
        Format::Toml,
    );
    let counts: Vec<u8> = config.servers.iter().map(|s| s.instances.get()).collect();
    assert_eq!(counts, [1, 4, 64]);
    let config = check_ok(
        r#"{"mcpServers": {"a": {"command": "x", "instances": 3}}}"#,
        Format::Json,
    );
    assert_eq!(config.servers[0].instances.get(), 3);
}

#[test]
fn instances_out_of_range_or_not_an_integer_are_located_at_the_value() {
    toml(
        "[servers.a]\ncommand = \"x\"\ninstances = 0\n",
        &[(3, 13, "servers.a.instances must be from 1 to 64, found 0")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ninstances = 65\n",
        &[(3, 13, "servers.a.instances must be from 1 to 64, found 65")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ninstances = -2\n",
        &[(3, 13, "must be from 1 to 64, found -2")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ninstances = \"4\"\n",
        &[(3, 13, "must be an integer from 1 to 64, found a string")],
    );
    toml(
        "[servers.a]\ncommand = \"x\"\ninstances = 2.5\n",
        &[(3, 13, "must be an integer from 1 to 64, found 2.5")],
    );
    json(
        "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n  \"instances\": 100}}}",
        &[(
            2,
            16,
            "mcpServers.a.instances must be from 1 to 64, found 100",
        )],
    );
}

#[test]
fn instances_on_a_server_that_is_not_stdio_are_refused_at_the_key_with_a_hint() {
    let errors = Config::parse(
        "[servers.remote]\nurl = \"http://h/mcp\"\ninstances = 2\n\n[servers.clock]\nbuiltin = \"clock\"\ninstances = 2\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect_err("refused");
    let found: Vec<(usize, usize, &str, Option<&str>)> = errors
        .0
        .iter()
        .map(|p| (p.line, p.column, p.message.as_str(), p.hint.as_deref()))
        .collect();
    assert_eq!(found.len(), 2, "{errors}");
    assert_eq!((found[0].0, found[0].1), (3, 1), "{errors}");
    assert!(
        found[0]
            .2
            .contains("servers.remote.instances is for stdio servers, but this one has \"url\""),
        "{errors}"
    );
    assert!(
        found[0].3.is_some_and(|h| h.contains("load balancer")),
        "{errors}"
    );
    assert_eq!((found[1].0, found[1].1), (7, 1), "{errors}");
    assert!(found[1].2.contains("has \"builtin\""), "{errors}");
    // The VS Code form's HTTP server too, and only the transport is judged there.
    json(
        "{\"servers\": {\"h\": {\"type\": \"http\", \"url\": \"http://h/\", \"instances\": 0}}}",
        &[(1, 56, "servers.h.instances is for stdio servers")],
    );
}
