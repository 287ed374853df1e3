//! `[storage]`: absent by default, a PostgreSQL URL read in both formats with `${VAR}`
//! substituted, and every wrong URL reported at its place without echoing it.

use super::problems::toml;
use super::*;

#[test]
fn storage_is_absent_by_default_and_read_in_both_formats() {
    let config = check_ok("[servers.a]\ncommand = \"x\"\n", Format::Toml);
    assert_eq!(config.storage, StorageConfig::default());
    let config = check_ok(
        "[storage]\nurl = \"postgres://sb:${TOKEN}@db.internal:5433/switchboard\"\n",
        Format::Toml,
    );
    let url = config.storage.url.as_ref().map(SecretString::expose);
    assert_eq!(url, Some("postgres://sb:t0k@db.internal:5433/switchboard"));
    assert!(
        !format!("{config:?}").contains("t0k"),
        "the URL is a secret"
    );
    let config = check_ok(
        r#"{"storage": {"url": "postgresql://sb@/switchboard?host=/run/postgresql"}, "mcpServers": {}}"#,
        Format::Json,
    );
    assert!(config.storage.url.is_some());
    assert_eq!(
        config.storage.ledger_unavailable,
        LedgerUnavailable::Refuse,
        "the ledger is the system of record by default"
    );
    let config = check_ok(
        "[storage]\nurl = \"postgres://db/x\"\nledger_unavailable = \"journal\"\n",
        Format::Toml,
    );
    assert_eq!(
        config.storage.ledger_unavailable,
        LedgerUnavailable::Journal
    );
}

#[test]
fn storage_mistakes_are_located() {
    toml(
        "[storage]\nurl = \"mysql://db/switchboard\"\n",
        &[(2, 7, "storage.url has the scheme 'mysql'")],
    );
    toml(
        "[storage]\nurl = \"db.internal/switchboard\"\n",
        &[(2, 7, "storage.url must start with postgres://")],
    );
    toml(
        "[storage]\nurl = \"postgres://db.internal\"\n",
        &[(2, 7, "storage.url names no database")],
    );
    toml(
        "[storage]\nurl = \"postgres:///switchboard\"\n",
        &[(2, 7, "storage.url names no host")],
    );
    toml(
        "[storage]\nurl = \"postgres://db:port/x\"\n",
        &[(2, 7, "storage.url does not parse as a URL: the port 'port'")],
    );
    toml(
        "[storage]\nurl = \"postgres://db/x y\"\n",
        &[(
            2,
            7,
            "storage.url does not parse as a URL: it holds white space",
        )],
    );
    toml(
        "[storage]\nurl = \"postgres://db/x\"\nledger_unavailable = \"queue\"\n",
        &[(3, 22, "storage.ledger_unavailable 'queue' is not known")],
    );
    toml(
        "[storage]\nurll = \"postgres://db/x\"\n",
        &[(2, 1, "unknown key 'urll' in storage")],
    );
}
