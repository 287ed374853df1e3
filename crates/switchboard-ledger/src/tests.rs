//! The ledger on real SQLite files: rows and queries, the hash chain against edits and
//! deletions, retention keeping the chain verifiable, secrets kept out of the file, and a
//! SIGKILLed writer losing nothing it acknowledged.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::journal::shard_of;

pub(crate) fn entry(i: usize, agent: &str, outcome: &str) -> LedgerEntry {
    LedgerEntry {
        call_id: format!("01TEST{i:020}"),
        started_ms: 1_000_000 + i as i64,
        agent: Some(agent.to_owned()),
        subject: None,
        client_id: None,
        session: None,
        tier: None,
        exposed: format!("dice__roll{}", i % 3),
        server: Some("dice".to_owned()),
        tool: Some("roll".to_owned()),
        args_digest: None,
        args_redacted: Some(std::sync::Arc::new(json!({"expression": "1d20"}))),
        outcome: outcome.to_owned(),
        error: None,
        duration_us: 100,
        cost: 1.0,
        approval: None,
        result_bytes: Some(10),
        cached: false,
        trace_id: None,
    }
}

#[test]
fn rows_queries_and_a_verifiable_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    for i in 0..30 {
        ledger.record_entry(entry(
            i,
            if i % 2 == 0 { "npc" } else { "qa" },
            if i % 5 == 0 { "denied" } else { "ok" },
        ));
    }
    ledger.flush();
    let conn = store::open(&path).expect("reopen");
    assert_eq!(
        store::verify(&conn).expect("verify"),
        VerifyReport {
            rows: 30,
            ok: true,
            problem: None
        }
    );
    let mut told = Vec::new();
    let report = store::verify_with_progress(&conn, 10, &mut |rows, total| {
        told.push((rows, total));
    })
    .expect("verify");
    assert!(report.ok);
    assert_eq!(
        told,
        [(10, 30), (20, 30), (30, 30)],
        "progress every 10 rows"
    );
    let npc = store::query(
        &conn,
        &Filter {
            agent: Some("npc".into()),
            ..Filter::default()
        },
    )
    .expect("query");
    assert_eq!(npc.len(), 15);
    assert!(npc[0].started_ms > npc[1].started_ms, "newest first");
    let denied = store::query(
        &conn,
        &Filter {
            outcome: Some("denied".into()),
            ..Filter::default()
        },
    )
    .expect("query");
    assert_eq!(denied.len(), 6);
    let tool = store::query(
        &conn,
        &Filter {
            tool: Some("dice__roll1".into()),
            limit: 3,
            ..Filter::default()
        },
    )
    .expect("query");
    assert_eq!(tool.len(), 3);
    let since = store::query(
        &conn,
        &Filter {
            since_ms: Some(1_000_025),
            ..Filter::default()
        },
    )
    .expect("query");
    assert_eq!(since.len(), 5);
}

/// Rows in the database at `path`, waited for up to 5 s until there are `want`.
fn rows_within(path: &std::path::Path, want: usize) -> usize {
    let conn = store::open(path).expect("reopen");
    let started = Instant::now();
    loop {
        let rows = store::verify(&conn).expect("verify").rows;
        if rows >= want || started.elapsed() > Duration::from_secs(5) {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A ledger in a fresh directory, and `rows` entries recorded on a current-thread runtime,
/// which is then given `linger` to run its other tasks. Returns the runtime (still alive).
fn recorded_on_a_runtime(
    rows: usize,
    linger: Duration,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Ledger,
    tokio::runtime::Runtime,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        for i in 0..rows {
            ledger.record_entry(entry(i, "npc", "ok"));
        }
        tokio::time::sleep(linger).await;
    });
    (dir, path, ledger, runtime)
}

#[test]
fn rows_recorded_on_a_runtime_reach_the_database_without_a_flush() {
    // The ring is a task of the runtime: it has to get a turn.
    let (_dir, path, _ledger, _runtime) = recorded_on_a_runtime(10, GATHER * 4);
    assert_eq!(
        rows_within(&path, 10),
        10,
        "the deferred ring woke the writer"
    );
}

#[test]
fn rows_whose_ring_was_waiting_when_the_runtime_went_away_still_land() {
    let (_dir, path, ledger, runtime) = recorded_on_a_runtime(25, Duration::ZERO);
    // The runtime drops the task that was to ring the writer: dropping it rings.
    drop(runtime);
    assert_eq!(rows_within(&path, 25), 25);
    // And the ledger rings for later rows again, here off a runtime.
    ledger.record_entry(entry(25, "npc", "ok"));
    assert_eq!(rows_within(&path, 26), 26);
}

#[test]
fn the_writer_inserts_what_is_left_when_the_last_handle_drops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    let other = ledger.clone();
    for i in 0..10 {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
    drop(ledger);
    other.record_entry(entry(10, "npc", "ok"));
    drop(other);
    assert_eq!(rows_within(&path, 11), 11);
}

#[test]
fn a_replayed_row_is_skipped_and_does_not_extend_the_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = store::open(&dir.path().join("ledger.db")).expect("open");
    let first: Vec<_> = (0..4).map(|i| entry(i, "npc", "ok")).collect();
    assert_eq!(store::insert(&mut conn, &first).expect("insert"), 4);
    // A replay of rows 2 and 3 mixed with two new rows: only the new ones land, chained
    // to the last row that did.
    let replay: Vec<_> = [2, 4, 3, 5].map(|i| entry(i, "npc", "ok")).into();
    assert_eq!(store::insert(&mut conn, &replay).expect("insert"), 2);
    assert_eq!(
        store::verify(&conn).expect("verify"),
        VerifyReport {
            rows: 6,
            ok: true,
            problem: None
        }
    );
    let ids: Vec<String> = store::query(&conn, &Filter::default())
        .expect("query")
        .into_iter()
        .map(|row| row.call_id)
        .collect();
    assert_eq!(ids.len(), 6, "no row twice: {ids:?}");
}

#[test]
fn an_edited_or_deleted_row_is_detected_and_retention_keeps_the_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    for i in 0..10 {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
    ledger.flush();
    let mut conn = store::open(&path).expect("open");
    assert_eq!(store::prune(&mut conn, None, Some(6)).expect("prune"), 4);
    assert!(
        store::verify(&conn).expect("verify").ok,
        "pruning keeps the rest verifiable"
    );
    conn.execute(
        "UPDATE mcp_tool_invocations SET outcome = 'ok', duration_us = 1 WHERE id = 7",
        [],
    )
    .expect("edit");
    let edited = store::verify(&conn).expect("verify");
    assert_eq!(edited.problem.as_ref().map(|p| p.0), Some(7), "{edited:?}");
    assert!(edited.problem.expect("problem").1.contains("edited"));
    conn.execute(
        "UPDATE mcp_tool_invocations SET duration_us = 100 WHERE id = 7",
        [],
    )
    .expect("restore");
    conn.execute("DELETE FROM mcp_tool_invocations WHERE id = 8", [])
        .expect("delete");
    let deleted = store::verify(&conn).expect("verify");
    assert_eq!(
        deleted.problem.as_ref().map(|p| p.0),
        Some(9),
        "{deleted:?}"
    );
    assert!(deleted.problem.expect("problem").1.contains("deleted"));
}

/// The ends and the columns are checked too: rows deleted from the end (the rest of the
/// chain whole), and a column the console counts or filters on changed beside its hashed
/// entry, are each found.
#[test]
fn rows_deleted_from_the_end_and_edited_columns_are_detected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    for i in 0..10 {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
    ledger.flush();
    drop(ledger);
    let conn = store::open(&path).expect("open");
    assert!(store::verify(&conn).expect("verify").ok);
    for (edit, undo) in [
        (
            "UPDATE mcp_tool_invocations SET cost = 0 WHERE id = 4",
            "UPDATE mcp_tool_invocations SET cost = (SELECT json_extract(entry, '$.cost') FROM mcp_tool_invocations WHERE id = 4) WHERE id = 4",
        ),
        (
            "UPDATE mcp_tool_invocations SET started_ms = 0 WHERE id = 4",
            "UPDATE mcp_tool_invocations SET started_ms = json_extract(entry, '$.started_ms') WHERE id = 4",
        ),
        (
            "UPDATE mcp_tool_invocations SET server = 'elsewhere' WHERE id = 4",
            "UPDATE mcp_tool_invocations SET server = json_extract(entry, '$.server') WHERE id = 4",
        ),
    ] {
        conn.execute(edit, []).expect("edit");
        let edited = store::verify(&conn).expect("verify");
        assert_eq!(
            edited.problem.as_ref().map(|p| p.0),
            Some(4),
            "{edit}: {edited:?}"
        );
        conn.execute(undo, []).expect("undo");
        assert!(store::verify(&conn).expect("verify").ok, "{undo}");
    }
    conn.execute("DELETE FROM mcp_tool_invocations WHERE id > 8", [])
        .expect("delete the last rows");
    let cut = store::verify(&conn).expect("verify");
    assert_eq!(cut.problem.as_ref().map(|p| p.0), Some(8), "{cut:?}");
    assert!(
        cut.problem
            .expect("problem")
            .1
            .contains("rows after this one were deleted")
    );
}

/// A gateway that stopped left its journal; the next open replays it before retention, so
/// the rows retention drops stay dropped, and what is kept is the newest, open after open.
#[test]
fn retention_after_a_restart_keeps_the_newest_rows_and_brings_none_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let (ledger, pruned) = Ledger::open_keeping(&path, None, Some(3)).expect("open");
    assert_eq!(pruned, 0);
    for i in 0..5 {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
    ledger.flush();
    drop(ledger);
    let kept = |path: &std::path::Path| -> Vec<String> {
        let conn = store::open(path).expect("open");
        let mut ids: Vec<String> = store::query(&conn, &Filter::default())
            .expect("query")
            .into_iter()
            .map(|row| row.call_id)
            .collect();
        ids.sort();
        ids
    };
    let newest: Vec<String> = (2..5).map(|i| entry(i, "npc", "ok").call_id).collect();
    for _ in 0..2 {
        let (ledger, _) = Ledger::open_keeping(&path, None, Some(3)).expect("reopen");
        drop(ledger);
        assert_eq!(kept(&path), newest);
        let conn = store::open(&path).expect("open");
        assert!(store::verify(&conn).expect("verify").ok);
    }
}

#[test]
fn secrets_never_land_in_the_database_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    let secret_values = [
        "hunter2-super-secret",
        "sk-live0123456789abcdef0123456789",
        "ghp_abcdefghij0123456789ABCDEFGHIJ012345",
    ];
    let arguments = json!({"password": secret_values[0], "note": "harmless", "nested": {"key": secret_values[1]}, "list": [secret_values[2]]});
    let record = CallRecord {
        arguments: arguments
            .as_object()
            .and_then(|arguments| ledger.capture_arguments(arguments)),
        ..call_record("01SECRET000000000000000000", "fs__login")
    };
    ledger.record(&record);
    ledger.flush();
    drop(ledger);
    let mut bytes = std::fs::read(&path).expect("db");
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    bytes.extend(std::fs::read(PathBuf::from(wal)).unwrap_or_default());
    // Every shard of this process's journal.
    for k in 0..journal::shard_count() {
        bytes.extend(std::fs::read(shard_of(&path, std::process::id(), k)).unwrap_or_default());
    }
    let text = String::from_utf8_lossy(&bytes);
    for secret in secret_values {
        assert!(!text.contains(secret), "{secret} reached the ledger files");
    }
    assert!(text.contains("harmless") && text.contains("[REDACTED]"));
}

const CRASH_ENV: &str = "SWITCHBOARD_LEDGER_CRASH_DB";

/// Runs this binary's `test` as a child recording into the ledger at `path` (named in `env`)
/// and printing `ack <call id>` once each row's record returned, reads its acks until there
/// are `want` or `patience` has passed, then SIGKILLs it: the ids it acknowledged and its pid.
pub(crate) fn acked_until_killed(
    test: &str,
    env: &str,
    path: &Path,
    want: usize,
    patience: Duration,
) -> (Vec<String>, u32) {
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(env, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let stdout = child.stdout.take().expect("stdout");
    let mut acked = Vec::new();
    let started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Some(id) = line.strip_prefix("ack ") {
            acked.push(id.to_owned());
        }
        if acked.len() >= want || started.elapsed() > patience {
            break;
        }
    }
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    (acked, child.id())
}

#[test]
fn acknowledged_rows_survive_a_sigkill() {
    if let Some(path) = std::env::var_os(CRASH_ENV) {
        let ledger = Ledger::open(Path::new(&path)).expect("child open");
        let mut out = std::io::stdout();
        for i in 0.. {
            let row = entry(i, "npc", "ok");
            let id = row.call_id.clone();
            ledger.record_entry(row);
            writeln!(out, "ack {id}").expect("ack");
            out.flush().expect("flush");
        }
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.db");
    let (acked, _) = acked_until_killed(
        "tests::acknowledged_rows_survive_a_sigkill",
        CRASH_ENV,
        &path,
        5_000,
        Duration::from_secs(20),
    );
    assert!(acked.len() >= 100, "{} acknowledged", acked.len());
    let ledger = Ledger::open(&path).expect("opens cleanly and replays its journal");
    ledger.flush();
    let conn = store::open(&path).expect("open");
    assert!(store::verify(&conn).expect("verify").ok);
    let stored: std::collections::HashSet<String> = store::query(&conn, &Filter::default())
        .expect("query")
        .into_iter()
        .map(|e| e.call_id)
        .collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged row {id} was lost");
    }
}

#[test]
fn gateways_opening_one_ledger_at_once_replay_an_orphaned_journal_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.db");
    // A journal left by a process that is gone (no such pid can be running).
    let orphan = shard_of(&path, u32::MAX - 1, 0);
    let mut lines = Vec::new();
    for i in 0..50 {
        lines.extend(serde_json::to_vec(&entry(i, "npc", "ok")).expect("json"));
        lines.push(b'\n');
    }
    std::fs::write(&orphan, lines).expect("orphan journal");
    drop(store::open(&path).expect("create"));

    let start = std::sync::Arc::new(std::sync::Barrier::new(8));
    let openers: Vec<_> = (0..8)
        .map(|_| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                Ledger::open(&path).map(|ledger| ledger.flush())
            })
        })
        .collect();
    for opener in openers {
        let opened = opener.join().expect("thread");
        assert!(opened.is_ok(), "a concurrent open failed: {opened:?}");
    }
    assert!(!orphan.exists(), "the orphaned journal was not removed");
    let conn = store::open(&path).expect("open");
    let rows = store::query(&conn, &Filter::default()).expect("query");
    assert_eq!(rows.len(), 50, "each orphaned row is stored exactly once");
}

/// A successful call's record, named and nothing else.
fn call_record(call_id: &str, name: &str) -> CallRecord {
    CallRecord {
        call_id: call_id.into(),
        name: name.into(),
        target: None,
        agent: None,
        principal: None,
        session: None,
        tier: None,
        arguments: None,
        started: std::time::SystemTime::now(),
        duration: Duration::from_micros(5),
        status: switchboard_core::pipeline::CallStatus::Ok,
        cost: 0.0,
        approval: None,
        error: None,
        result_bytes: None,
        cached: false,
        trace_id: None,
    }
}

#[test]
fn an_oauth_callers_subject_and_client_are_recorded_and_old_rows_hash_as_before() {
    let plain = entry(1, "npc", "ok");
    assert!(
        !plain.canonical().contains("subject") && !plain.canonical().contains("client_id"),
        "a row without a principal keeps the JSON (and hash) rows had before"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let ledger = Ledger::open(&path).expect("open");
    ledger.record_entry(plain);
    let record = CallRecord {
        agent: Some("reader".into()),
        principal: Some(switchboard_core::Principal {
            subject: Some("alice".into()),
            client_id: Some("client-r".into()),
            scopes: vec!["mcp".into()],
            token: Some(switchboard_core::SubjectToken::new(
                "eyJ.the-callers-token.sig",
            )),
        }),
        ..call_record("01OAUTH0000000000000000000", "fx__echo")
    };
    ledger.record(&record);
    ledger.flush();
    let conn = store::open(&path).expect("reopen");
    assert!(store::verify(&conn).expect("verify").ok);
    let rows = store::query(&conn, &Filter::default()).expect("query");
    let oauth = rows
        .iter()
        .find(|row| row.call_id == record.call_id)
        .expect("the OAuth call's row");
    assert_eq!(oauth.subject.as_deref(), Some("alice"));
    assert_eq!(oauth.client_id.as_deref(), Some("client-r"));
    assert_eq!(oauth.agent.as_deref(), Some("reader"));
    assert!(
        !oauth.canonical().contains("the-callers-token"),
        "the token the principal holds for token exchange is never recorded"
    );
}

#[test]
fn keyset_pages_walk_every_matching_row_once_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ledger.db");
    let mut conn = store::open(&path).expect("open");
    let entries: Vec<LedgerEntry> = (0..25)
        .map(|i| {
            let mut row = entry(
                i,
                if i % 2 == 0 { "npc" } else { "qa" },
                if i % 5 == 0 { "denied" } else { "ok" },
            );
            row.cost = 0.5;
            row
        })
        .collect();
    store::insert(&mut conn, &entries).expect("insert");
    let mut query = browse::PageQuery {
        agent: Some("npc".into()),
        limit: 4,
        ..browse::PageQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = browse::page(&conn, &query).expect("page");
        assert!(page.rows.len() <= 4);
        seen.extend(page.rows.iter().map(|row| row.entry.started_ms));
        match page.next_before {
            Some(before) => query.before = Some(before),
            None => break,
        }
    }
    let expected: Vec<i64> = (0..25)
        .rev()
        .filter(|i| i % 2 == 0)
        .map(|i| 1_000_000 + i)
        .collect();
    assert_eq!(seen, expected, "every npc row once, newest first");

    let first = browse::page(
        &conn,
        &browse::PageQuery {
            tool: Some("dice__roll1".into()),
            outcome: Some("ok".into()),
            since_ms: Some(1_000_010),
            limit: 100,
            ..browse::PageQuery::default()
        },
    )
    .expect("filtered");
    assert!(first.next_before.is_none());
    assert!(
        first
            .rows
            .iter()
            .all(|row| row.entry.exposed == "dice__roll1"
                && row.entry.outcome == "ok"
                && row.entry.started_ms >= 1_000_010)
    );
    assert_eq!(
        first.rows.len(),
        4,
        "13, 16, 19, 22 (10 and 25 are not ok/in range)"
    );

    // A row's place in the chain: its previous hash is the row before's hash.
    let newest = browse::row(&conn, 25).expect("row").expect("present");
    let before = browse::row(&conn, 24).expect("row").expect("present");
    assert_eq!(newest.prev_hash, before.row_hash);
    assert!(browse::row(&conn, 99).expect("row").is_none());

    let upto = browse::last_id(&conn).expect("last id");
    let (exported, _) =
        browse::export_page(&conn, &browse::PageQuery::default(), 0, upto, 100).expect("export");
    let ids: Vec<i64> = exported.iter().map(|row| row.id).collect();
    assert_eq!(ids, (1..=25).collect::<Vec<i64>>(), "oldest first");
}

#[test]
fn an_export_ends_at_the_rows_there_were_when_it_began() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = store::open(&dir.path().join("ledger.db")).expect("open");
    assert_eq!(browse::last_id(&conn).expect("empty"), 0);
    let batch = |from: usize| -> Vec<LedgerEntry> {
        (from..from + 10).map(|i| entry(i, "npc", "ok")).collect()
    };
    store::insert(&mut conn, &batch(0)).expect("insert");
    let upto = browse::last_id(&conn).expect("last id");
    assert_eq!(upto, 10);
    let query = browse::PageQuery::default();
    let (first, last) = browse::export_page(&conn, &query, 0, upto, 4).expect("page");
    assert_eq!(first.len(), 4);
    // Calls go on while the export is downloaded: their rows are not part of it.
    store::insert(&mut conn, &batch(10)).expect("insert more");
    let mut after = last.expect("a last id");
    let mut ids: Vec<i64> = first.iter().map(|row| row.id).collect();
    while let (rows, Some(last)) = browse::export_page(&conn, &query, after, upto, 4).expect("page")
    {
        ids.extend(rows.iter().map(|row| row.id));
        after = last;
    }
    assert_eq!(ids, (1..=10).collect::<Vec<i64>>());
}

#[test]
fn the_tally_reads_only_new_rows_and_keeps_its_window() {
    const BASE: i64 = 1_800_000_000_000;
    const MINUTE: i64 = 60_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = store::open(&dir.path().join("ledger.db")).expect("open");
    let entries: Vec<LedgerEntry> = (0..25)
        .map(|i| {
            let mut row = entry(
                i,
                if i % 2 == 0 { "npc" } else { "qa" },
                if i % 5 == 0 { "denied" } else { "ok" },
            );
            row.started_ms = BASE + i as i64 * MINUTE;
            row.duration_us = 1_000 + i as i64;
            row.cost = 0.5;
            row
        })
        .collect();
    store::insert(&mut conn, &entries).expect("insert");
    let day = 24 * 60 * MINUTE;
    let mut tally = tally::Tally::default();
    assert_eq!(
        tally.refresh(&conn, BASE + 30 * MINUTE, day).expect("read"),
        25
    );
    let qa = tally.agent(Some("qa"), 0);
    assert_eq!((qa.calls, qa.denied, qa.rate_limited), (12, 2, 0));
    assert!((qa.cost - 6.0).abs() < 1e-9);
    assert_eq!(
        tally.agent(Some("qa"), BASE + 20 * MINUTE).calls,
        2,
        "21 and 23"
    );
    assert_eq!(tally.agent(None, 0).calls, 0);
    let dice = tally.server("dice", 0);
    assert_eq!(dice.calls, 20, "denied calls never reached the server");
    assert_eq!((dice.failed, dice.last_error_ms), (0, None));
    assert_eq!(dice.last_ok_ms, Some(BASE + 24 * MINUTE));
    let timings = tally.timings("dice__roll0");
    assert_eq!(
        timings.iter().map(|t| t.duration_us).collect::<Vec<_>>(),
        vec![1_003, 1_006, 1_009, 1_012, 1_018, 1_021, 1_024],
        "its calls that reached the server, oldest first"
    );

    // Only what was written since is read.
    let mut failed = entry(99, "qa", "tool_error");
    failed.started_ms = BASE + 40 * MINUTE;
    failed.error = Some("boom".into());
    store::insert(&mut conn, &[failed]).expect("insert");
    assert_eq!(
        tally.refresh(&conn, BASE + 41 * MINUTE, day).expect("read"),
        1
    );
    let dice = tally.server("dice", BASE + 35 * MINUTE);
    assert_eq!((dice.calls, dice.failed), (1, 1), "the window's calls");
    assert_eq!(dice.last_error_ms, Some(BASE + 40 * MINUTE));
    assert_eq!(dice.last_error.as_deref(), Some("boom"));
    assert_eq!(
        tally.refresh(&conn, BASE + 42 * MINUTE, day).expect("read"),
        0
    );

    // The window moves on: minutes before it are forgotten.
    tally
        .refresh(&conn, BASE + day + 10 * MINUTE, day)
        .expect("read");
    assert_eq!(
        tally.agent(Some("qa"), 0).calls,
        7 + 1,
        "11..23 odd, and 99"
    );
    // A longer window reads back again.
    tally
        .refresh(&conn, BASE + day + 10 * MINUTE, 2 * day)
        .expect("read");
    assert_eq!(tally.agent(Some("qa"), 0).calls, 13);
}

#[test]
fn metrics_count_appends_and_the_queue_empties_once_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(&dir.path().join("ledger.db")).expect("open");
    for i in 0..3 {
        ledger.record_entry(entry(i, "npc", "ok"));
    }
    ledger.flush();
    assert_eq!(ledger.queue_depth(), 0);
    let mut out = Exposition::new();
    ledger.write_metrics(&mut out);
    let text = out.finish();
    assert!(
        text.contains("\nswitchboard_ledger_append_seconds_count 3\n"),
        "{text}"
    );
    assert!(
        text.contains("\nswitchboard_ledger_queue_depth 0\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE switchboard_ledger_append_seconds histogram\n"));
}
