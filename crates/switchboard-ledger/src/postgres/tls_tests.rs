//! TLS to a real PostgreSQL 15 on 127.0.0.1 (`switchboard-testkit`'s `start_tcp`): with
//! `sslmode=require` and the test CA the ledger appends over TLS and verify reads the chain
//! back; without the CA, or against a server with `ssl=off`, connecting is refused in words
//! that say why (and a certificate for another name, naming the host); `prefer` and
//! `disable` connect as libpq's would, and the unix socket stays in plain text.

use switchboard_testkit::postgres::Postgres;

use super::*;
use crate::Ledger;
use crate::postgres::tests::{entry, runtime};

fn server(tls: bool) -> Postgres {
    Postgres::start_tcp(tls).unwrap_or_else(|error| panic!("{error}"))
}

/// The server's URL over TCP with `params`.
fn url(postgres: &Postgres, params: &str) -> String {
    postgres
        .tcp_url(params)
        .unwrap_or_else(|| panic!("the server listens on TCP"))
}

/// Whether the pool's connection is encrypted, as the server sees it.
fn encrypted(pool: &Pool) -> Result<bool, LedgerError> {
    runtime().block_on(async {
        let client = connect(pool).await?;
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .map_err(pg("pg_stat_ssl"))?;
        Ok(row.get(0))
    })
}

/// What connecting through a new pool to `url` says.
fn connect_error(url: &str) -> String {
    let pool = pool(url, 1).expect("pool");
    match encrypted(&pool) {
        Ok(tls) => panic!("connected (TLS: {tls})"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn require_with_the_ca_appends_over_tls_and_verify_reads_the_chain() {
    let postgres = server(true);
    let ca = postgres.ca_file().expect("a CA").display().to_string();
    let url = url(&postgres, &format!("sslmode=require&sslrootcert={ca}"));
    appends_over_tls_and_verifies(&postgres, &url, 40);
}

/// Over `url`, encrypted: migrates, appends `rows` through a ledger and verifies the chain.
fn appends_over_tls_and_verifies(postgres: &Postgres, url: &str, rows: usize) {
    let pool = pool(url, 2).expect("pool");
    assert!(encrypted(&pool).unwrap_or_else(|e| panic!("{e}\n{}", postgres.log())));
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        migrate::migrate(&mut client).await.expect("migrate");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open_postgres(url, &dir.path().join("ledger")).expect("open");
    for i in 0..rows {
        ledger.record_entry(entry(i, "a"));
    }
    ledger.flush();
    let report = runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        verify(&mut client).await.expect("verify")
    });
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, rows);
}

#[test]
fn a_server_certificate_from_an_unknown_ca_is_refused_and_tls_ca_is_named() {
    let postgres = server(true);
    let error = connect_error(&url(&postgres, "sslmode=require"));
    assert!(
        error.contains("PostgreSQL at localhost: the server's certificate is not trusted")
            && error.contains("[storage] tls_ca"),
        "{error}"
    );
    // `prefer` verifies too: a certificate it cannot trust is no reason to go on in plain text.
    let error = connect_error(&url(&postgres, "sslmode=prefer"));
    assert!(error.contains("not trusted"), "{error}");
}

#[test]
fn require_against_a_server_without_tls_is_refused_and_prefer_goes_on_in_plain_text() {
    let postgres = server(false);
    let error = connect_error(&url(&postgres, "sslmode=require"));
    assert!(
        error.contains("the server does not offer TLS") && error.contains("sslmode=require"),
        "{error}"
    );
    let pool = pool(&url(&postgres, "sslmode=prefer"), 1).expect("pool");
    assert_eq!(encrypted(&pool).ok(), Some(false));
}

#[test]
fn a_certificate_for_another_name_is_refused_naming_the_host() {
    let postgres = server(true);
    let ca = postgres.ca_file().expect("a CA").display().to_string();
    // Connected to 127.0.0.1, but verified as the name in the URL.
    let params = format!("hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={ca}");
    let wrong = url(&postgres, &params).replace("@localhost:", "@db.example:");
    let error = connect_error(&wrong);
    assert!(
        error.contains(
            "PostgreSQL at db.example: the server's certificate is not for the name db.example"
        ),
        "{error}"
    );
}

#[test]
fn disable_and_the_unix_socket_stay_in_plain_text_on_a_tls_server() {
    let postgres = server(true);
    let plain = pool(&url(&postgres, "sslmode=disable"), 1).expect("pool");
    assert_eq!(encrypted(&plain).ok(), Some(false));
    // `prefer` (the default) over the socket: the server offers no TLS there.
    let socket = pool(&postgres.url(), 1).expect("pool");
    assert_eq!(encrypted(&socket).ok(), Some(false));
}

#[test]
fn a_missing_ca_file_is_named_before_connecting() {
    let Err(error) = pool(
        "postgres://u@localhost/db?sslrootcert=/nonexistent/ca.pem",
        1,
    ) else {
        panic!("a missing CA file was accepted");
    };
    let error = error.to_string();
    assert!(
        error.contains("/nonexistent/ca.pem") && error.contains("tls_ca"),
        "{error}"
    );
}

/// Why a pool of `url` is not even made (before connecting).
fn refused_at_once(url: &str) -> String {
    match pool(url, 1) {
        Ok(_) => panic!("a pool was made"),
        Err(error) => error.to_string(),
    }
}

/// The URL of a [`Postgres::start_client_cert`] server with the test CA and `extra`.
fn cert_url(postgres: &Postgres, extra: &str) -> String {
    let ca = postgres.ca_file().expect("a CA").display().to_string();
    url(
        postgres,
        &format!("sslmode=require&sslrootcert={ca}{extra}"),
    )
}

/// `&sslcert=…&sslkey=…` for these files.
fn cert_params(cert: &std::path::Path, key: &std::path::Path) -> String {
    format!("&sslcert={}&sslkey={}", cert.display(), key.display())
}

#[test]
fn with_a_client_certificate_the_ledger_appends_and_without_one_is_refused() {
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let client = postgres
        .client_cert()
        .expect("a client certificate")
        .clone();
    let url = cert_url(&postgres, &cert_params(&client.cert, &client.key));
    appends_over_tls_and_verifies(&postgres, &url, 20);

    // Without the certificate the server says why, and the settings are named.
    let error = connect_error(&cert_url(&postgres, ""));
    assert!(
        error.contains("connection requires a valid client certificate")
            && error.contains("[storage] tls_cert"),
        "{error}"
    );
}

#[test]
fn a_client_certificate_from_another_ca_is_refused_by_the_server() {
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-keyout", "k.pem", "-out", "c.pem", "-days", "1"])
        .args(["-subj", "/CN=switchboard"])
        .current_dir(dir.path())
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{made:?}");
    let params = cert_params(&dir.path().join("c.pem"), &dir.path().join("k.pem"));
    let error = connect_error(&cert_url(&postgres, &params));
    assert!(
        error.contains("the server refused our client certificate")
            && error.contains("[storage] tls_cert"),
        "{error}"
    );
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused_before_connecting() {
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let client = postgres.client_cert().expect("a client certificate");
    // The server's key: a real key, of another pair.
    let other = client.key.with_file_name("server.key");
    let error = refused_at_once(&cert_url(&postgres, &cert_params(&client.cert, &other)));
    assert!(
        error.contains("the key is not the certificate's") && error.contains("tls_key"),
        "{error}"
    );
}

#[test]
fn a_key_others_may_read_is_refused_like_libpq_does() {
    use std::os::unix::fs::PermissionsExt;
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let client = postgres.client_cert().expect("a client certificate");
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("client.key");
    std::fs::copy(&client.key, &key).expect("copy the key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let error = refused_at_once(&cert_url(&postgres, &cert_params(&client.cert, &key)));
    assert!(
        error.contains("has group or world access (mode 644)") && error.contains("chmod 600"),
        "{error}"
    );
}

#[test]
fn a_client_certificate_for_another_user_is_refused_naming_the_settings() {
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let other = postgres
        .issue_client_cert("intruder", "intruder")
        .expect("a client-certificate server")
        .unwrap_or_else(|error| panic!("{error}"));
    let error = connect_error(&cert_url(&postgres, &cert_params(&other.cert, &other.key)));
    assert!(
        error.contains("certificate authentication failed for user \"switchboard\"")
            && error.contains("[storage] tls_cert and tls_key (CN = the user)"),
        "{error}"
    );
}
