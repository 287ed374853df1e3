//! A real `switchboard serve` on a PostgreSQL that speaks TLS on 127.0.0.1
//! (`[storage] url = "…?sslmode=require"`, `tls_ca` the test's CA beside the config):
//! `switchboard migrate` creates the schema, the gateway answers calls with every one of its
//! connections encrypted (the ledger's pool, the stores, the LISTEN connections: the server's
//! `pg_stat_ssl` says so), and `switchboard audit verify` reads the chain back. Without
//! `tls_ca` the same URL is refused, naming the setting.

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
    let untrusting = config(dir.path(), &url, "");
    let refused = run_bare(&untrusting, &["migrate"]);
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("the server's certificate is not trusted")
            && said.contains("[storage] tls_ca"),
        "{said}"
    );

    // `tls_ca` relative to the config file.
    let config = config(dir.path(), &url, "tls_ca = \"db-ca.pem\"\n");
    let migrated = run_bare(&config, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));

    let mut gateway = HttpGateway::start(&config, &[]);
    for i in 0..CALLS {
        let message = json!({"message": format!("tls-{i}")});
        let answer = call_tool(&gateway.url, i, "fx__echo", message).await;
        assert_eq!(answer, Ok(()), "call {i}");
    }
    let (encrypted, plain) = connections(&postgres);
    assert!(encrypted > 0, "the gateway holds connections to PostgreSQL");
    assert_eq!(plain, 0, "every connection of the gateway is encrypted");
    assert!(gateway.terminate().success());

    let verified = run_bare(&config, &["audit", "verify"]);
    let said = text(&verified);
    assert!(verified.status.success(), "{said}");
    assert!(said.contains(&format!("intact: {CALLS} rows")), "{said}");
}
