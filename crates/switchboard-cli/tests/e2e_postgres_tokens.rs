//! Two real `switchboard serve` gateways on one PostgreSQL (`[storage] url`) share the agents'
//! tokens: a token file's tokens imported with `switchboard token import` work on both, a token
//! made with `switchboard token create` (against the same config) works on both at once, and a
//! token revoked with `switchboard token revoke` is refused by both within a second.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

fn modern_list() -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// A migrated PostgreSQL of the test's own and a config with agent `qa` that keeps its ledger
/// and its tokens there.
fn shared_store(dir: &Path) -> (Postgres, PathBuf) {
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let config = write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\n\n[storage]\nurl = {}\n\n[agents.qa]\n\n\
             [servers.fx]\ncommand = {}\nargs = [\"echo\"]\n",
            quoted(&dir.join("ledger.db").display().to_string()),
            quoted(&postgres.url()),
            quoted(&fixture())
        ),
    );
    let migrated = run_bare(&config, &["migrate"]);
    let said = String::from_utf8_lossy(&migrated.stdout).into_owned();
    assert!(migrated.status.success(), "{said}");
    assert!(said.contains("applied migration 4: agent tokens"), "{said}");
    (postgres, config)
}

/// A token made the file way (a config without storage), for the import.
fn token_in_file(dir: &Path, file: &Path) -> String {
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    let config = write_config(
        &plain,
        &format!(
            "[gateway]\ntoken_file = {}\n\n[agents.qa]\n\n[agents.gone]\n",
            quoted(&file.display().to_string())
        ),
    );
    create_token(&config, "gone");
    create_token(&config, "qa")
}

async fn status(url: &str, token: &str) -> u16 {
    post(url, Some(token), modern_list()).await.0
}

/// `switchboard token list --json`: the ids of agent `qa`'s tokens kept in PostgreSQL.
fn shared_ids(config: &Path) -> Vec<String> {
    let list = run_bare(config, &["token", "list", "--json"]);
    assert!(
        list.status.success(),
        "{}",
        String::from_utf8_lossy(&list.stderr)
    );
    String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json line"))
        .filter(|token| token["kept"] == "postgres")
        .filter_map(|token| token["id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn tokens_are_shared_and_revoked_everywhere_within_a_second() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (postgres, config) = shared_store(dir.path());

    // A token file is imported once, before the replicas start (the unknown agent's token
    // is skipped); with a token stored, both ask for one.
    let file = dir.path().join("tokens.json");
    let imported = token_in_file(dir.path(), &file);
    let import = run_bare(&config, &["token", "import", &file.display().to_string()]);
    let said = String::from_utf8_lossy(&import.stdout).into_owned();
    assert!(import.status.success(), "{said}");
    assert!(said.contains("imported 1 token(s)"), "{said}");
    assert!(
        String::from_utf8_lossy(&import.stderr).contains("agent 'gone'"),
        "the unknown agent's token is named"
    );
    let again = run_bare(&config, &["token", "import", &file.display().to_string()]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("imported 0 token(s)"));
    let a = HttpGateway::start(&config, &[]);
    let b = HttpGateway::start(&config, &[]);
    assert_eq!(post(&a.url, None, modern_list()).await.0, 401);
    assert_eq!(post(&b.url, Some("sbt_forged"), modern_list()).await.0, 401);

    // A token made through the CLI while they run is accepted by both (within the poll).
    let made = create_token(&config, "qa");
    for gateway in [&a, &b] {
        for token in [&imported, &made] {
            assert!(
                accepted_within(&gateway.url, token, Duration::from_secs(2)).await,
                "{} accepts the token",
                gateway.url
            );
        }
    }
    let stored = postgres
        .psql(DATABASE, "SELECT string_agg(hash, ' ') FROM agent_tokens")
        .expect("the tokens");
    assert!(
        !stored.contains(&made) && !stored.contains(&imported),
        "only hashes are stored"
    );

    // Revoked (by a unique prefix of its id) while both run: both refuse it within a second.
    let ids = shared_ids(&config);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let made_hash = postgres
        .psql(
            DATABASE,
            "SELECT hash FROM agent_tokens ORDER BY created_at DESC LIMIT 1",
        )
        .expect("the newest token");
    let made_id = ids
        .iter()
        .find(|id| made_hash.starts_with(&format!("sha256${id}")))
        .expect("the made token's id")
        .clone();
    let revoke = run_bare(&config, &["token", "revoke", &made_id[..8]]);
    let revoked_at = Instant::now();
    assert!(
        revoke.status.success(),
        "{}",
        String::from_utf8_lossy(&revoke.stderr)
    );
    for gateway in [&b, &a] {
        let mut code = 200;
        while code == 200 && revoked_at.elapsed() < Duration::from_secs(3) {
            code = status(&gateway.url, &made).await;
        }
        let took = revoked_at.elapsed();
        assert_eq!(code, 401, "{} still accepts the revoked token", gateway.url);
        assert!(
            took < Duration::from_secs(1),
            "{} refused it only {took:?} after the revocation",
            gateway.url
        );
        eprintln!("revoked -> refused by {} in {took:?}", gateway.url);
        assert_eq!(
            status(&gateway.url, &imported).await,
            200,
            "the other stays"
        );
    }
    assert_eq!(
        shared_ids(&config).len(),
        1,
        "the revoked one is not listed"
    );
    let again = run_bare(&config, &["token", "revoke", &made_id]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("no token in the shared token store"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        postgres
            .psql(
                DATABASE,
                "SELECT count(*) FROM agent_tokens WHERE revoked_at IS NOT NULL"
            )
            .expect("revoked rows"),
        "1",
        "a revoked token's row is kept, marked"
    );
    drop((a, b));
}

/// Whether the gateway at `url` accepts `token` before `limit` has passed.
async fn accepted_within(url: &str, token: &str, limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        if status(url, token).await == 200 {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
