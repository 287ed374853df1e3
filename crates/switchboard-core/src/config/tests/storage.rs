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

/// A directory with `client.crt` (mode 644) and `client.key` (mode `key_mode`).
fn client_files(key_mode: u32) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("client.crt"), "PEM").expect("write");
    let key = dir.path().join("client.key");
    std::fs::write(&key, "PEM").expect("write");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(key_mode)).expect("chmod");
    dir
}

#[test]
fn tls_cert_and_key_are_read_relative_to_the_file_and_folded_into_the_url() {
    let dir = client_files(0o600);
    let path = dir.path().join("switchboard.toml");
    std::fs::write(
        &path,
        "[storage]\nurl = \"postgres://db/x?sslmode=require\"\ntls_cert = \"client.crt\"\n\
         tls_key = \"client.key\"\n",
    )
    .expect("write");
    let config = Config::load(&path, &env()).expect("valid");
    let url = config.storage.url.as_ref().map(SecretString::expose);
    let encoded = |name: &str| {
        let path = dir.path().join(name).display().to_string();
        percent_encoding::utf8_percent_encode(&path, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    assert_eq!(
        url,
        Some(
            format!(
                "postgres://db/x?sslmode=require&sslcert={}&sslkey={}",
                encoded("client.crt"),
                encoded("client.key")
            )
            .as_str()
        )
    );
}

#[test]
fn tls_cert_and_key_mistakes_are_located() {
    let dir = client_files(0o644);
    let cert = dir.path().join("client.crt").display().to_string();
    let key = dir.path().join("client.key").display().to_string();
    toml(
        &format!("[storage]\nurl = \"postgres://db/x\"\ntls_cert = \"{cert}\"\n"),
        &[(
            3,
            12,
            "storage.tls_cert is set but storage.tls_key is not: a client certificate needs its key",
        )],
    );
    toml(
        "[storage]\nurl = \"postgres://db/x\"\ntls_key = \"/dev/null\"\n",
        &[(3, 11, "storage.tls_key: /dev/null is not a regular file")],
    );
    // Readable by the world: refused as libpq refuses it.
    toml(
        &format!(
            "[storage]\nurl = \"postgres://db/x\"\ntls_cert = \"{cert}\"\ntls_key = \"{key}\"\n"
        ),
        &[(
            4,
            11,
            &format!("storage.tls_key: {key} has group or world access (mode 644)"),
        )],
    );
    toml(
        "[storage]\nurl = \"postgres://db/x\"\ntls_cert = \"/nonexistent/c.crt\"\n",
        &[(3, 12, "storage.tls_cert: cannot read /nonexistent/c.crt")],
    );
    toml(
        &format!("[storage]\ntls_cert = \"{cert}\"\n"),
        &[(2, 12, "storage.tls_cert is set but storage.url is not")],
    );
    toml(
        &format!(
            "[storage]\nurl = \"postgres://db/x?sslcert=/a.crt&sslkey=/a.key\"\ntls_cert = \"{cert}\"\n"
        ),
        &[(
            3,
            12,
            "storage.tls_cert and the url's sslcert both name a client certificate",
        )],
    );
}

#[test]
fn a_private_key_is_kept_as_libpq_demands() {
    use std::os::unix::fs::MetadataExt;
    let dir = client_files(0o600);
    let key = dir.path().join("client.key");
    assert_eq!(check_private_key_file(&key), Ok(()));
    let by_root = std::fs::metadata(&key).expect("metadata").uid() == 0;
    for (mode, allowed) in [
        (0o400, true),
        (0o640, by_root),
        (0o604, false),
        (0o660, false),
    ] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let checked = check_private_key_file(&key);
        assert_eq!(checked.is_ok(), allowed, "mode {mode:o}: {checked:?}");
    }
}
