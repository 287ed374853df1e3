//! The memory tools on a real SQLite file: each tool, ranking and snippets, hostile search
//! text, concurrent callers, reopening, a migration from an older schema, and committed
//! writes surviving a SIGKILL of the writing process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn memory(dir: &Path) -> Memory {
    Memory::open(MemorySettings {
        database: dir.join("sub/memory.db"),
    })
    .expect("open")
}

async fn call(memory: &Memory, tool: &str, arguments: Value) -> Result<ToolOutcome, ToolError> {
    memory
        .call(
            tool,
            arguments.as_object().cloned().unwrap_or_default(),
            &CallContext::default(),
        )
        .await
}

#[tokio::test]
async fn entities_relations_facts_and_summaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = memory(dir.path());
    let created = call(&m, "create_entities", json!({"entities": [
        {"name": "Mira", "entityType": "npc", "observations": ["runs the tavern in Oakvale", "distrusts the guard"]},
        {"name": "Oakvale", "entityType": "town"}]})).await.expect("create");
    assert_eq!(
        created.structured_content.as_ref().expect("s")["created"],
        json!(["Mira", "Oakvale"])
    );
    let again = call(
        &m,
        "create_entities",
        json!({"entities": [{"name": "Mira", "entityType": "npc"}]}),
    )
    .await
    .expect("again");
    assert_eq!(
        again.structured_content.as_ref().expect("s")["skipped"],
        json!(["Mira"])
    );
    call(&m, "add_observations", json!({"entity": "Mira", "observations": ["owes the smith 20 gold"], "source": "session 3"})).await.expect("obs");
    let unknown = call(
        &m,
        "add_observations",
        json!({"entity": "Nobody", "observations": ["x"]}),
    )
    .await
    .expect_err("unknown");
    assert!(unknown.0.contains("unknown entity 'Nobody'"));
    call(
        &m,
        "create_relations",
        json!({"relations": [{"from": "Mira", "to": "Oakvale", "relationType": "lives_in"}]}),
    )
    .await
    .expect("rel");
    let dangling = call(
        &m,
        "create_relations",
        json!({"relations": [{"from": "Mira", "to": "Atlantis", "relationType": "visited"}]}),
    )
    .await
    .expect_err("dangling");
    assert!(dangling.0.contains("'Atlantis'"));

    let found = call(&m, "query_entities", json!({"name": "mir"}))
        .await
        .expect("query");
    let entity = &found.structured_content.as_ref().expect("s")["entities"][0];
    assert_eq!(entity["entity_type"], "npc");
    assert_eq!(entity["observations"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        entity["relations"][0],
        json!({"from": "Mira", "to": "Oakvale", "relation_type": "lives_in"})
    );
    let towns = call(&m, "query_entities", json!({"entityType": "town"}))
        .await
        .expect("towns");
    assert_eq!(
        towns.structured_content.as_ref().expect("s")["entities"][0]["name"],
        "Oakvale"
    );

    call(
        &m,
        "add_facts",
        json!({"facts": [
        {"text": "The bridge to Oakvale collapsed in the spring flood", "source": "rumour"},
        {"text": "Dragons were last seen far to the north", "subject": "Oakvale"}]}),
    )
    .await
    .expect("facts");
    let hits = call(&m, "search_facts", json!({"query": "tavern"}))
        .await
        .expect("search");
    let facts = hits.structured_content.as_ref().expect("s")["facts"].clone();
    assert_eq!(
        facts[0]["subject"], "Mira",
        "observations are searchable facts"
    );
    assert!(
        facts[0]["snippet"]
            .as_str()
            .expect("snippet")
            .contains("[tavern]")
    );
    let ranked = call(
        &m,
        "search_facts",
        json!({"query": "flood bridge collapsed"}),
    )
    .await
    .expect("ranked");
    assert!(
        ranked.structured_content.as_ref().expect("s")["facts"][0]["text"]
            .as_str()
            .expect("t")
            .starts_with("The bridge")
    );
    for hostile in [
        "foo\"bar OR (",
        "NEAR(",
        "*",
        "\"\"",
        ")))",
        "a AND OR NOT",
        "col:x",
    ] {
        let answer = call(&m, "search_facts", json!({"query": hostile})).await;
        assert!(answer.is_ok(), "{hostile}: {answer:?}");
    }

    call(
        &m,
        "put_summary",
        json!({"session_id": "s1", "summary": "The party met Mira and heard about the dragons."}),
    )
    .await
    .expect("put");
    call(
        &m,
        "put_summary",
        json!({"session_id": "s2", "summary": "A quiet day of shopping."}),
    )
    .await
    .expect("put");
    let summary = call(&m, "get_summary", json!({"session_id": "s1"}))
        .await
        .expect("get");
    assert!(summary.text_content().contains("dragons"));
    let sessions = call(&m, "search_sessions", json!({"query": "dragon"}))
        .await
        .expect("sessions");
    assert_eq!(
        sessions.structured_content.as_ref().expect("s")["sessions"][0]["session_id"],
        "s1"
    );
    assert!(
        call(&m, "get_summary", json!({"session_id": "nope"}))
            .await
            .is_err()
    );

    let deleted = call(&m, "delete_entities", json!({"names": ["Mira", "Ghost"]}))
        .await
        .expect("delete");
    assert_eq!(
        deleted.structured_content.as_ref().expect("s")["missing"],
        json!(["Ghost"])
    );
    let gone = call(&m, "search_facts", json!({"query": "tavern"}))
        .await
        .expect("search");
    assert_eq!(
        gone.structured_content.as_ref().expect("s")["facts"],
        json!([]),
        "observations go with their entity"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_and_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = Arc::new(memory(dir.path()));
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let m = m.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                call(
                    &m,
                    "add_facts",
                    json!({"facts": [{"text": format!("writer{writer} wrote fact number{i}")}]}),
                )
                .await
                .expect("write");
                call(
                    &m,
                    "search_facts",
                    json!({"query": format!("writer{writer}")}),
                )
                .await
                .expect("read");
            }
        }));
    }
    for task in tasks {
        task.await.expect("join");
    }
    drop(m);
    let reopened = memory(dir.path());
    let all = reopened.store().search_facts("wrote", 500).expect("search");
    assert_eq!(
        all.len(),
        200,
        "every write of every task is there after reopening"
    );
}

#[test]
fn an_older_schema_is_migrated_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    let old = Store::open_at(&path, 1).expect("version 1");
    old.add_facts(&[("kept across the migration".to_owned(), None, None)])
        .expect("fact");
    drop(old);
    let current = Store::open(&path).expect("migrated");
    assert_eq!(
        current.search_facts("migration", 5).expect("search").len(),
        1
    );
    current
        .put_summary("s", "version 2 works")
        .expect("v2 table");
    drop(current);
    let conn = rusqlite::Connection::open(&path).expect("raw");
    conn.pragma_update(None, "user_version", 99).expect("bump");
    drop(conn);
    let newer = Store::open(&path).err().expect("refused");
    assert!(newer.contains("schema version 99"), "{newer}");
}

const CRASH_ENV: &str = "SWITCHBOARD_MEMORY_CRASH_DB";

#[test]
fn committed_writes_survive_sigkill() {
    if let Some(path) = std::env::var_os(CRASH_ENV) {
        // The child: write facts one by one, acknowledging each after its commit.
        let store = Store::open(Path::new(&path)).expect("child open");
        let mut out = std::io::stdout();
        for i in 0.. {
            let ids = store
                .add_facts(&[(format!("durable fact {i}"), None, None)])
                .expect("write");
            writeln!(out, "ack {}", ids[0]).expect("ack");
            out.flush().expect("flush");
        }
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.db");
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "memory::tests::committed_writes_survive_sigkill",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CRASH_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let stdout = child.stdout.take().expect("stdout");
    let mut acked = Vec::new();
    let started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        if let Some(id) = line.strip_prefix("ack ") {
            acked.push(id.parse::<i64>().expect("id"));
        }
        if acked.len() >= 200 || started.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(acked.len() >= 50, "the child wrote {} facts", acked.len());
    let store = Store::open(&path).expect("opens cleanly after the crash");
    let found = store.search_facts("durable", 10_000).expect("search");
    let ids: std::collections::BTreeSet<i64> =
        found.iter().filter_map(|f| f["id"].as_i64()).collect();
    for id in &acked {
        assert!(ids.contains(id), "acknowledged fact {id} was lost");
    }
}
