//! `sessions` without a `database` follows the config's `memory` database (regression: with
//! `[servers.memory] database = "campaign.db"` sessions still used the default memory.db, so
//! its summaries were not memory's).

use super::*;

fn database_of(config: &Config, id: &str) -> Option<PathBuf> {
    super::builtins::settings_of(config, id).database
}

fn parse(text: &str) -> Config {
    let origin = Origin::File(PathBuf::from("/etc/sb/switchboard.toml"));
    Config::parse(text, origin, Format::Toml, &env())
        .unwrap_or_else(|errors| panic!("expected a valid config, got:\n{errors}"))
}

#[test]
fn sessions_without_a_database_use_memorys() {
    // Sessions written before memory, too: the order of the file does not matter.
    let config = parse(
        r#"
[servers.sessions]
builtin = "sessions"

[servers.memory]
builtin = "memory"
database = "campaign.db"

[servers.transcripts]
builtin = "sessions"
database = "/srv/own.db"
"#,
    );
    assert_eq!(
        database_of(&config, "sessions"),
        Some(PathBuf::from("/etc/sb/campaign.db"))
    );
    assert_eq!(
        database_of(&config, "transcripts"),
        Some(PathBuf::from("/srv/own.db")),
        "a sessions database of its own is kept"
    );

    // No memory database configured: sessions keeps the shared default (unset here).
    let config = parse(
        "[servers.memory]\nbuiltin = \"memory\"\n\n[servers.sessions]\nbuiltin = \"sessions\"\n",
    );
    assert_eq!(database_of(&config, "sessions"), None);
}
