//! A real `switchboard serve` on a PostgreSQL that speaks TLS on 127.0.0.1
//! (`[storage] url = "…?sslmode=require"`, `tls_ca` the test's CA beside the config):
//! `switchboard migrate` creates the schema, the gateway answers calls with every one of its
//! connections encrypted (the ledger's pool, the stores, the LISTEN connections: the server's
//! `pg_stat_ssl` says so), and `switchboard audit verify` reads the chain back. Without
//! `tls_ca` the same URL is refused, naming the setting.
//!
//! With a server that lets TCP in only with a client certificate (`Postgres::start_client_cert`),
//! `tls_cert`/`tls_key` beside the config: every connection of the gateway presents it
//! (`pg_stat_ssl.client_dn`); without it the server's refusal names the settings, a key others
//! may read is a located config problem, and another pair's key stops `migrate` at start.

mod support;

use serde_json::json;
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

const CALLS: usize = 10;

/// What the command printed, both streams.
fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A config in `dir` whose ledger is `url`, with `storage` lines added to `[storage]`.
fn config(dir: &std::path::Path, url: &str, storage: &str) -> std::path::PathBuf {
    let ledger = dir.join("ledger.db").display().to_string();
    write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\n\n[storage]\nurl = {}\n{storage}\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&ledger),
            quoted(url),
            quoted(&fixture())
        ),
    )
}

/// Every client's connection but this `psql`'s, as the server sees them: (encrypted, in
/// plain text).
fn connections(postgres: &Postgres) -> (usize, usize) {
    let count = |ssl: &str| -> usize {
        let sql = format!(
            "SELECT count(*) FROM pg_stat_activity JOIN pg_stat_ssl USING (pid) \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() \
             AND ssl = {ssl}"
        );
        let answer = postgres.psql(DATABASE, &sql).expect("pg_stat_ssl");
        answer.parse().expect("a number")
    };
    (count("true"), count("false"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_on_postgres_over_tls_records_and_audit_verify_reads_it() {
    let postgres = Postgres::start_tcp(true).unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = postgres.ca_file().expect("the test CA");
    std::fs::copy(ca, dir.path().join("db-ca.pem")).expect("copy the CA");
    let url = postgres.tcp_url("sslmode=require").expect("TCP");

    // Without the CA the server's certificate is not trusted, and the setting is named.
    let said = refused(&config(dir.path(), &url, ""));
    assert!(
        said.contains("the server's certificate is not trusted")
            && said.contains("[storage] tls_ca"),
        "{said}"
    );

    // `tls_ca` relative to the config file.
    let config = config(dir.path(), &url, "tls_ca = \"db-ca.pem\"\n");
    migrate_serve_and_verify(&postgres, &config, || ()).await;
}

/// What `switchboard migrate` said when it failed with `config`.
fn refused(config: &std::path::Path) -> String {
    let output = run_bare(config, &["migrate"]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    said
}

/// `switchboard migrate`, then a gateway that answers [`CALLS`] calls with every connection
/// to PostgreSQL encrypted (`also` looks further while it runs), then `audit verify`.
async fn migrate_serve_and_verify(
    postgres: &Postgres,
    config: &std::path::Path,
    also: impl FnOnce(),
) {
    let migrated = run_bare(config, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    let mut gateway = HttpGateway::start(config, &[]);
    for i in 0..CALLS {
        let message = json!({"message": format!("tls-{i}")});
        let answer = call_tool(&gateway.url, i, "fx__echo", message).await;
        assert_eq!(answer, Ok(()), "call {i}");
    }
    let (encrypted, plain) = connections(postgres);
    assert!(encrypted > 0, "the gateway holds connections to PostgreSQL");
    assert_eq!(plain, 0, "every connection of the gateway is encrypted");
    also();
    assert!(gateway.terminate().success());

    let verified = run_bare(config, &["audit", "verify"]);
    let said = text(&verified);
    assert!(verified.status.success(), "{said}");
    assert!(said.contains(&format!("intact: {CALLS} rows")), "{said}");
}

/// The distinct subjects of the client certificates the gateway's connections presented
/// (`pg_stat_ssl.client_dn`; empty for none).
fn client_dns(postgres: &Postgres) -> String {
    let sql = "SELECT string_agg(DISTINCT coalesce(client_dn, ''), ',') FROM pg_stat_activity \
               JOIN pg_stat_ssl USING (pid) WHERE backend_type = 'client backend' \
               AND pid <> pg_backend_pid()";
    postgres.psql(DATABASE, sql).expect("pg_stat_ssl")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_authenticates_to_postgres_with_a_client_certificate() {
    use std::os::unix::fs::PermissionsExt;
    let postgres = Postgres::start_client_cert().unwrap_or_else(|error| panic!("{error}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = postgres.ca_file().expect("the test CA");
    let client = postgres.client_cert().expect("a client certificate");
    let copy = |from: &std::path::Path, to: &str| {
        std::fs::copy(from, dir.path().join(to)).expect("copy");
    };
    copy(ca, "db-ca.pem");
    copy(&client.cert, "client.crt");
    copy(&client.key, "client.key");
    copy(&client.key, "open.key");
    let open = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(dir.path().join("open.key"), open).expect("chmod");
    copy(&client.key.with_file_name("server.key"), "server.key");
    let url = postgres.tcp_url("sslmode=require").expect("TCP");
    let with = |storage: &str| {
        config(
            dir.path(),
            &url,
            &format!("tls_ca = \"db-ca.pem\"\n{storage}"),
        )
    };

    // No certificate: the server's refusal, and the settings that give one.
    let said = refused(&with(""));
    assert!(
        said.contains("connection requires a valid client certificate")
            && said.contains("[storage] tls_cert and tls_key"),
        "{said}"
    );
    // A key others may read: a config problem at its place, before any connection.
    let said = refused(&with("tls_cert = \"client.crt\"\ntls_key = \"open.key\"\n"));
    assert!(
        said.contains("switchboard.toml:8:11")
            && said.contains("has group or world access (mode 644)"),
        "{said}"
    );
    // Another pair's key: refused at start.
    let said = refused(&with(
        "tls_cert = \"client.crt\"\ntls_key = \"server.key\"\n",
    ));
    assert!(said.contains("the key is not the certificate's"), "{said}");

    let config = with("tls_cert = \"client.crt\"\ntls_key = \"client.key\"\n");
    migrate_serve_and_verify(&postgres, &config, || {
        let dns = client_dns(&postgres);
        assert_eq!(
            dns, "/CN=switchboard",
            "each connection with the certificate"
        );
    })
    .await;
}
