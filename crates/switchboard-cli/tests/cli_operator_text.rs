//! What operator commands print for people: `servers show` as text (JSON with `--json`),
//! `audit`'s table sized to its rows and its refusal of an unknown `--outcome` or of glob
//! syntax `--tool` does not have, `token list`'s
//! times as the other commands show them.

mod support;

use std::path::Path;

use support::*;

fn stdout(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A config of one stdio server with a literal secret in its env, and the agent `npc`.
fn config_with_a_secret(dir: &Path) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "[servers.a]\ncommand = {}\nargs = [\"echo\"]\nenv = {{ API_KEY = \"literal-secret-value\", HOME_DIR = \"${{HOME}}\", DEFAULTED = \"${{SB_UNSET_IN_TESTS:-literal-default}}\" }}\n\n[servers.dice]\nbuiltin = \"dice\"\n\n[agents.npc]\nallow = [\"*\"]\n",
            quoted(&fixture())
        ),
    )
}

/// Regression: `servers show` printed JSON without `--json`, and redacted `${VAR}`
/// references as if they were secrets.
#[test]
fn servers_show_prints_text_and_json_on_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with_a_secret(dir.path());
    let config_arg = config.display().to_string();
    let offline = stdout(&isolated(
        dir.path(),
        &["--config", &config_arg, "servers", "show", "a", "--offline"],
    ));
    assert!(!offline.trim_start().starts_with('{'), "{offline}");
    assert!(offline.contains("entry:"), "{offline}");
    assert!(offline.contains("API_KEY=[redacted]"), "{offline}");
    assert!(!offline.contains("literal-secret-value"), "{offline}");
    // A reference is not a secret: shown as written, a default it gives redacted.
    assert!(offline.contains("HOME_DIR=${HOME}"), "{offline}");
    assert!(
        offline.contains("DEFAULTED=${SB_UNSET_IN_TESTS:-[redacted]}"),
        "{offline}"
    );
    assert!(!offline.contains("literal-default"), "{offline}");
    let json = stdout(&isolated(
        dir.path(),
        &[
            "--config",
            &config_arg,
            "servers",
            "show",
            "a",
            "--offline",
            "--json",
        ],
    ));
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("--json is JSON");
    assert_eq!(parsed["entry"]["env"]["API_KEY"], "[redacted]", "{parsed}");

    let admin = dir.path().join("admin.json");
    let admin_arg = admin.display().to_string();
    let _gateway = HttpGateway::start(&config, &["--admin-file", &admin_arg]);
    let live = stdout(&run_bare(
        &config,
        &["servers", "show", "a", "--admin-file", &admin_arg],
    ));
    assert!(live.starts_with("SERVER"), "{live}");
    assert!(
        live.lines().nth(1).is_some_and(|row| row.starts_with("a ")),
        "{live}"
    );
    assert!(
        live.contains("entry:") && live.contains("command"),
        "{live}"
    );
}

/// Regression: `audit --outcome bogus` listed nothing and exited 0.
#[test]
fn audit_refuses_an_unknown_outcome_naming_the_known_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let refused = isolated(dir.path(), &["audit", "--outcome", "bogus"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'bogus'")
            && stderr.contains("invalid_arguments")
            && stderr.contains("config_refused"),
        "{stderr}"
    );
}

/// Regression: `audit --tool '['` listed nothing and exited 0: `[` (a class in other globs)
/// is no part of `--tool`'s, nor of any exposed name. An unknown name is still no error.
#[test]
fn audit_refuses_a_tool_glob_with_syntax_it_does_not_have() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, glob) in [
        (&["audit", "--tool", "["][..], "'['"),
        (
            &["audit", "export", "--tool", "files__{a,b}"][..],
            "'files__{a,b}'",
        ),
    ] {
        let refused = isolated(dir.path(), args);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("--tool {glob}")) && stderr.contains("? (one character)"),
            "{stderr}"
        );
    }
    let config = config_with_a_secret(dir.path());
    let config_arg = config.display().to_string();
    let with_config = |args: &[&str]| {
        let mut all = vec!["--config", config_arg.as_str()];
        all.extend_from_slice(args);
        stdout(&isolated(dir.path(), &all))
    };
    with_config(&["call", "dice__roll", "expression=1d6"]);
    assert!(with_config(&["audit", "--tool", "dice__r?ll"]).contains("dice__roll"));
    assert_eq!(with_config(&["audit", "--tool", "nosuch*"]), "");
}

/// Regression: the outcome column was 14 wide, so `invalid_arguments` pushed its row's
/// tool name out of line with the others.
#[test]
fn the_audit_table_lines_up_on_long_outcomes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with_a_secret(dir.path());
    let config_arg = config.display().to_string();
    stdout(&isolated(
        dir.path(),
        &[
            "--config",
            &config_arg,
            "call",
            "dice__roll",
            "expression=1d6",
        ],
    ));
    let invalid = isolated(
        dir.path(),
        &["--config", &config_arg, "call", "dice__roll", "nonsense=1"],
    );
    assert!(!invalid.status.success(), "an invalid call fails");
    let table = stdout(&isolated(dir.path(), &["--config", &config_arg, "audit"]));
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(table.contains("invalid_arguments"), "{table}");
    let columns: Vec<Option<usize>> = rows.iter().map(|row| row.find("dice__roll")).collect();
    assert!(
        columns[0].is_some() && columns[0] == columns[1],
        "the tool column moves:\n{table}"
    );
}

/// Regression: `token list` showed the raw `unix:SECONDS` the token file keeps.
#[test]
fn token_list_shows_when_a_token_was_made_as_an_age() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_with_a_secret(dir.path());
    let config_arg = config.display().to_string();
    stdout(&isolated(
        dir.path(),
        &["--config", &config_arg, "token", "create", "npc"],
    ));
    let listed = stdout(&isolated(
        dir.path(),
        &["--config", &config_arg, "token", "list"],
    ));
    assert!(!listed.contains("unix:"), "{listed}");
    assert!(listed.contains("s ago"), "{listed}");
    let json = stdout(&isolated(
        dir.path(),
        &["--config", &config_arg, "token", "list", "--json"],
    ));
    assert!(
        json.contains("\"created\":\"unix:"),
        "--json keeps the stored value: {json}"
    );
}
