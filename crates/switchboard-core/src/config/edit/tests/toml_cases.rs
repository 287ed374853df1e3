//! TOML edits: a hand-written file with comments, blank lines and keys in odd order.

use super::*;

pub(super) const FILE: &str = r#"# Switchboard config — hand written.

[gateway]
separator = "__"   # keep the default

# --- servers ---

# The filesystem server.
[servers.fs]
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]   # args before command
command = "npx"
[servers.fs.tools.read_file]
name = "read"

# Remote one.
[servers.remote]
url = "http://127.0.0.1:9000/mcp"
enabled = true  # on for now
headers = { Authorization = "Bearer ${TOKEN}" }

[servers.clock]
builtin = "clock"

[aliases]
old_name = "fs__read_file"
# the end
"#;

const FS: &str = r#"# The filesystem server.
[servers.fs]
args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]   # args before command
command = "npx"
[servers.fs.tools.read_file]
name = "read"
"#;

const REMOTE: &str = r#"
# Remote one.
[servers.remote]
url = "http://127.0.0.1:9000/mcp"
enabled = true  # on for now
headers = { Authorization = "Bearer ${TOKEN}" }
"#;

fn toml(text: &str) -> Config {
    parse(text, Format::Toml)
}

#[test]
fn add_goes_after_the_last_server_table() {
    let new = add_server(FILE, Format::Toml, "github", &github()).expect("added");
    let entry = r#"
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "${TOKEN}" }
"#;
    assert_eq!(new, after(FILE, "builtin = \"clock\"\n", entry));
    let config = toml(&new);
    assert_eq!(ids(&config), ["fs", "remote", "clock", "github"]);
    let github = server(&config, "github").expect("github");
    assert_eq!(github.transport, github_transport());
    assert!(github.enabled);
}

#[test]
fn add_writes_sse_and_disabled_and_builtins() {
    let new = add_server(FILE, Format::Toml, "legacy", &legacy_sse(Some(false))).expect("added");
    let entry = r#"
[servers.legacy]
url = "http://127.0.0.1:9001/sse"
transport = "sse"
headers = { Authorization = "Bearer ${TOKEN}" }
enabled = false
"#;
    assert_eq!(new, after(FILE, "builtin = \"clock\"\n", entry));
    let config = toml(&new);
    let legacy = server(&config, "legacy").expect("legacy");
    assert_eq!(legacy.transport, sse_transport());
    assert!(!legacy.enabled);

    let new = add_server("", Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(new, "[servers.clock]\nbuiltin = \"clock\"\n");
    assert!(matches!(
        &toml(&new).servers[0].transport,
        Transport::Builtin { name, .. } if name == "clock"
    ));
}

#[test]
fn add_writes_the_trust_after_the_transport() {
    let pinned = ServerEntry {
        trust: Some(Trust::Pinned),
        enabled: Some(false),
        ..github()
    };
    let new = add_server(FILE, Format::Toml, "github", &pinned).expect("added");
    let entry = r#"
[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "${TOKEN}" }
trust = "pinned"
enabled = false
"#;
    assert_eq!(new, after(FILE, "builtin = \"clock\"\n", entry));
    assert_eq!(
        server(&toml(&new), "github").expect("github").trust,
        Trust::Pinned
    );

    let auto = ServerEntry {
        trust: Some(Trust::Auto),
        ..clock()
    };
    let new = add_server("", Format::Toml, "clock", &auto).expect("added");
    assert_eq!(
        new,
        "[servers.clock]\nbuiltin = \"clock\"\ntrust = \"auto\"\n"
    );
    assert_eq!(toml(&new).servers[0].trust, Trust::Auto);
}

#[test]
fn add_to_a_file_without_servers_goes_at_the_end() {
    let text = "# settings only\n[gateway]\nseparator = \".\"\n# the end\n";
    let new = add_server(text, Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        format!("{text}\n[servers.clock]\nbuiltin = \"clock\"\n")
    );
    assert!(!new.contains("[servers]"), "no empty [servers] header");
    assert_eq!(ids(&toml(&new)), ["clock"]);

    let comments = "# nothing yet";
    let new = add_server(comments, Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        "# nothing yet\n\n[servers.clock]\nbuiltin = \"clock\"\n"
    );

    let explicit = "[servers]\n\n[aliases]\na = \"b\"\n";
    let new = add_server(explicit, Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        after(
            explicit,
            "[servers]\n",
            "\n[servers.clock]\nbuiltin = \"clock\"\n"
        )
    );
    assert_eq!(ids(&toml(&new)), ["clock"]);
}

#[test]
fn add_refuses_an_existing_id() {
    assert_eq!(
        add_server(FILE, Format::Toml, "remote", &clock()),
        Err(EditError::Exists("remote".into()))
    );
}

#[test]
fn remove_first_keeps_the_banner_above_it() {
    let new = remove_server(FILE, Format::Toml, "fs").expect("removed");
    // The comment attached to the header goes; the section banner above it stays.
    assert_eq!(new, without(FILE, &format!("{FS}\n")));
    let config = toml(&new);
    assert_eq!(ids(&config), ["remote", "clock"]);
    assert!(new.contains("# --- servers ---\n\n# Remote one.\n[servers.remote]"));
}

#[test]
fn remove_middle_and_last() {
    let new = remove_server(FILE, Format::Toml, "remote").expect("removed");
    assert_eq!(new, without(FILE, REMOTE));
    assert_eq!(ids(&toml(&new)), ["fs", "clock"]);

    let new = remove_server(FILE, Format::Toml, "clock").expect("removed");
    assert_eq!(
        new,
        without(FILE, "\n[servers.clock]\nbuiltin = \"clock\"\n")
    );
    assert_eq!(ids(&toml(&new)), ["fs", "remote"]);
}

#[test]
fn remove_the_only_server() {
    let text = "# my servers\n\n# a\n[servers.a]\ncommand = \"x\"\n";
    let new = remove_server(text, Format::Toml, "a").expect("removed");
    assert_eq!(new, "# my servers\n");
    assert!(toml(&new).servers.is_empty());
    assert_eq!(
        remove_server(&new, Format::Toml, "a"),
        Err(EditError::Missing("a".into()))
    );
}

#[test]
fn remove_takes_sub_tables_written_elsewhere() {
    let text = "[servers.a]\ncommand = \"x\"\n\n[servers.b]\ncommand = \"y\"\n\n[servers.a.tools.t]\nhidden = true\n";
    let new = remove_server(text, Format::Toml, "a").expect("removed");
    assert_eq!(new, "[servers.b]\ncommand = \"y\"\n");
    assert_eq!(ids(&toml(&new)), ["b"]);
}

#[test]
fn set_enabled_changes_only_the_value() {
    let new = set_enabled(FILE, Format::Toml, "remote", false).expect("set");
    assert_eq!(
        new,
        FILE.replace(
            "enabled = true  # on for now",
            "enabled = false  # on for now"
        )
    );
    assert!(!server(&toml(&new), "remote").expect("remote").enabled);

    // No key yet: added at the end of the table, before its sub-tables.
    let new = set_enabled(FILE, Format::Toml, "fs", false).expect("set");
    assert_eq!(new, after(FILE, "command = \"npx\"\n", "enabled = false\n"));
    let config = toml(&new);
    assert!(!server(&config, "fs").expect("fs").enabled);
    assert!(server(&config, "remote").expect("remote").enabled);

    let again = set_enabled(&new, Format::Toml, "fs", true).expect("set");
    assert_eq!(
        again,
        after(FILE, "command = \"npx\"\n", "enabled = true\n")
    );
    assert!(server(&toml(&again), "fs").expect("fs").enabled);

    assert_eq!(
        set_enabled(FILE, Format::Toml, "nope", true),
        Err(EditError::Missing("nope".into()))
    );
}

#[test]
fn set_enabled_follows_a_disabled_key_and_indentation() {
    let text = "[servers.a]\n  command = \"x\"\n  disabled = true # off\n[servers.b]\n    url = \"http://h/mcp\"\n";
    let new = set_enabled(text, Format::Toml, "a", true).expect("set");
    assert_eq!(
        new,
        text.replace("disabled = true # off", "disabled = false # off")
    );
    let new = set_enabled(&new, Format::Toml, "b", false).expect("set");
    assert!(
        new.ends_with("    url = \"http://h/mcp\"\n    enabled = false\n"),
        "{new}"
    );
    let config = toml(&new);
    assert!(server(&config, "a").expect("a").enabled);
    assert!(!server(&config, "b").expect("b").enabled);
}

#[test]
fn inline_and_dotted_servers() {
    let text = "servers = { a = { command = \"x\" } }\n";
    let new = add_server(text, Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        "servers = { a = { command = \"x\" }, clock = { builtin = \"clock\" } }\n"
    );
    let new = set_enabled(&new, Format::Toml, "a", false).expect("set");
    assert_eq!(
        new,
        "servers = { a = { command = \"x\", enabled = false }, clock = { builtin = \"clock\" } }\n"
    );
    assert!(!server(&toml(&new), "a").expect("a").enabled);
    let new = remove_server(&new, Format::Toml, "a").expect("removed");
    assert_eq!(ids(&toml(&new)), ["clock"]);

    let dotted = "[servers]\na.command = \"x\"\nb.url = \"http://h/mcp\"\n";
    let new = remove_server(dotted, Format::Toml, "a").expect("removed");
    assert_eq!(new, "[servers]\nb.url = \"http://h/mcp\"\n");
    let new = set_enabled(dotted, Format::Toml, "a", false).expect("set");
    assert!(!server(&toml(&new), "a").expect("a").enabled);
    assert!(new.starts_with("[servers]\na.command = \"x\"\n"), "{new}");

    // Dotted keys of one server written apart: the printer groups them, and the edit must
    // still remove the right server and keep the other whole.
    let apart =
        "[servers]\na.command = \"npx\"\nb.url = \"http://h/mcp\"\na.args = [\"-y\", \"pkg\"]\n";
    let new = remove_server(apart, Format::Toml, "b").expect("removed");
    let config = toml(&new);
    assert_eq!(ids(&config), ["a"], "{new}");
    let crate::config::Transport::Stdio { command, args, .. } =
        &server(&config, "a").expect("a").transport
    else {
        panic!("a is stdio: {new}");
    };
    assert_eq!((command.as_str(), args.len()), ("npx", 2), "{new}");
    let apart = "[servers.x]\ncommand = \"x\"\nenv.A = \"1\"\nenabled = true\nenv.B = \"2\"\n";
    let new = set_enabled(apart, Format::Toml, "x", false).expect("set");
    let x = server(&toml(&new), "x").expect("x").clone();
    assert!(!x.enabled, "{new}");
    let crate::config::Transport::Stdio { env, .. } = &x.transport else {
        panic!("x is stdio: {new}");
    };
    assert_eq!(env.len(), 2, "{new}");
}

#[test]
fn crlf_and_a_missing_final_newline_survive() {
    let text = "# cfg\r\n\r\n[servers.a]\r\ncommand = \"x\"\r\n\r\n[aliases]\r\nq = \"r\"";
    let new = add_server(text, Format::Toml, "clock", &clock()).expect("added");
    assert_eq!(
        new,
        after(
            text,
            "command = \"x\"\r\n",
            "\r\n[servers.clock]\r\nbuiltin = \"clock\"\r\n"
        )
    );
    let new = remove_server(&new, Format::Toml, "a").expect("removed");
    assert_eq!(
        new,
        "# cfg\r\n\r\n[servers.clock]\r\nbuiltin = \"clock\"\r\n\r\n[aliases]\r\nq = \"r\""
    );
    let new = set_enabled(&new, Format::Toml, "clock", false).expect("set");
    assert!(
        new.contains("builtin = \"clock\"\r\nenabled = false\r\n"),
        "{new:?}"
    );
    assert!(!server(&toml(&new), "clock").expect("clock").enabled);
}

#[test]
fn server_text_and_ids() {
    assert_eq!(server_text(FILE, Format::Toml, "fs").as_deref(), Some(FS));
    assert_eq!(
        server_text(FILE, Format::Toml, "clock").as_deref(),
        Some("[servers.clock]\nbuiltin = \"clock\"\n")
    );
    assert_eq!(server_text(FILE, Format::Toml, "nope"), None);
    assert_eq!(
        server_ids(FILE, Format::Toml).expect("ids"),
        ["fs", "remote", "clock"]
    );
    assert_eq!(
        server_ids("", Format::Toml).expect("ids"),
        Vec::<String>::new()
    );
}

#[test]
fn syntax_errors_have_places() {
    let bad = "[servers.a]\ncommand = \"x\"\nargs = [\n";
    let Err(EditError::Syntax {
        line,
        column,
        message,
    }) = server_ids(bad, Format::Toml)
    else {
        panic!("expected a syntax error");
    };
    assert!(line >= 3 && column >= 1, "{line}:{column}: {message}");
    assert!(message.starts_with("TOML syntax error"), "{message}");
    assert!(matches!(
        add_server("[servers.a\n", Format::Toml, "b", &clock()),
        Err(EditError::Syntax { line: 1, .. })
    ));
    assert!(matches!(
        add_server("servers = 3\n", Format::Toml, "b", &clock()),
        Err(EditError::Unsupported(_))
    ));
}

#[test]
fn add_writes_the_sandbox_after_the_transport() {
    let sandboxed = ServerEntry {
        sandbox: Some(Box::new(EntrySandbox {
            network: Some("none".into()),
            memory: Some("1GiB".into()),
            processes: Some(64),
            writable: vec!["/srv/work".into()],
            ..EntrySandbox::default()
        })),
        ..github()
    };
    let new = add_server("", Format::Toml, "github", &sandboxed).expect("added");
    assert!(
        new.ends_with(
            "sandbox = { memory = \"1GiB\", network = \"none\", processes = 64, writable = [\"/srv/work\"] }\n"
        ),
        "{new}"
    );
    let config = toml(&new);
    let sandbox = config
        .sandbox_of(server(&config, "github").expect("github"))
        .expect("a sandbox");
    assert_eq!(sandbox.network, crate::config::NetworkAccess::None);
    assert_eq!(sandbox.processes, Some(64));
    // Asked for with no setting: the gateway's default; asked off: none.
    for (asked, written) in [
        (EntrySandbox::default(), "sandbox = true\n"),
        (
            EntrySandbox {
                off: true,
                ..EntrySandbox::default()
            },
            "sandbox = false\n",
        ),
    ] {
        let entry = ServerEntry {
            sandbox: Some(Box::new(asked)),
            ..github()
        };
        let new = add_server("", Format::Toml, "github", &entry).expect("added");
        assert!(new.ends_with(written), "{new}");
        toml(&new);
    }
}

#[test]
fn an_https_server_is_added_with_its_tls_files() {
    let dir = tempfile::tempdir().expect("dir");
    let new = add_server("", Format::Toml, "internal", &mutual_tls(dir.path())).expect("added");
    let d = dir.path().display();
    assert!(
        new.ends_with(&format!(
            "tls = {{ ca = \"{d}/ca.pem\", cert = \"{d}/gateway.crt\", key = \"{d}/gateway.key\" }}\n"
        )),
        "{new}"
    );
    let [_, cert, key] = tls_paths(&toml(&new), "internal", dir.path());
    assert_eq!(cert, Some(dir.path().join("gateway.crt")));
    assert_eq!(key, Some(dir.path().join("gateway.key")));
}

#[test]
fn a_public_only_remote_is_added_with_its_key() {
    let new = add_server("", Format::Toml, "remote", &public_remote()).expect("added");
    assert!(new.ends_with("public_only = true\n"), "{new}");
    let config = toml(&new);
    assert!(server(&config, "remote").expect("remote").public_only);
}

/// A file listing its servers as `[[servers]]` entries (which the config reads) is refused by
/// every change saying how to write it, not answered "no such server".
#[test]
fn servers_as_an_array_of_tables_are_refused_saying_how_to_write_them() {
    let text = "[[servers]]\nid = \"a\"\ncommand = \"x\"\n";
    assert_eq!(ids(&toml(text)), ["a"], "the config reads them");
    let refused = [
        add_server(text, Format::Toml, "github", &github()),
        remove_server(text, Format::Toml, "a"),
        set_enabled(text, Format::Toml, "a", false),
    ];
    for result in refused {
        let error = result.expect_err("refused");
        assert!(
            matches!(&error, EditError::Unsupported(why) if why.contains("[servers.ID]")),
            "{error:?}"
        );
    }
    // What edits nothing (a restart) finds the server there.
    assert_eq!(
        crate::config::edit::server_ids(text, Format::Toml).expect("ids"),
        ["a"]
    );
}
