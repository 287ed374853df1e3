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

#[test]
fn tls_ca_is_read_relative_to_the_file_and_folded_into_the_url() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("db ca.pem"), "PEM").expect("write");
    let path = dir.path().join("switchboard.toml");
    std::fs::write(
        &path,
        "[storage]\nurl = \"postgres://db/x?sslmode=require\"\ntls_ca = \"db ca.pem\"\n",
    )
    .expect("write");
    let config = Config::load(&path, &env()).expect("valid");
    let url = config.storage.url.as_ref().map(SecretString::expose);
    let ca = dir.path().join("db ca.pem").display().to_string();
    let encoded = percent_encoding::utf8_percent_encode(&ca, percent_encoding::NON_ALPHANUMERIC);
    assert_eq!(
        url,
        Some(format!("postgres://db/x?sslmode=require&sslrootcert={encoded}").as_str())
    );
}

#[test]
fn tls_ca_mistakes_are_located() {
    toml(
        "[storage]\nurl = \"postgres://db/x\"\ntls_ca = \"/nonexistent/ca.pem\"\n",
        &[(3, 10, "storage.tls_ca: cannot read /nonexistent/ca.pem")],
    );
    toml(
        "[storage]\ntls_ca = \"/dev/null\"\n",
        &[(2, 10, "storage.tls_ca is set but storage.url is not")],
    );
    toml(
        "[storage]\nurl = \"postgres://db/x?sslrootcert=/a.pem\"\ntls_ca = \"/dev/null\"\n",
        &[(
            3,
            10,
            "storage.tls_ca and the url's sslrootcert both name a CA",
        )],
    );
}
