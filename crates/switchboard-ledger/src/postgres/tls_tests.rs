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
    let pool = pool(&url, 2).expect("pool");
    assert!(encrypted(&pool).unwrap_or_else(|e| panic!("{e}\n{}", postgres.log())));
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        migrate::migrate(&mut client).await.expect("migrate");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open_postgres(&url, &dir.path().join("ledger")).expect("open");
    for i in 0..40 {
        ledger.record_entry(entry(i, "a"));
    }
    ledger.flush();
    let report = runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        verify(&mut client).await.expect("verify")
    });
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 40);
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
