//! The ledger on a real PostgreSQL 15 (started per test by `switchboard-testkit`): the
//! schema's migrations, batched appends, one chain from two concurrent writers, the fork
//! guard, the append-only trigger, verify finding tampering, and a server that goes away
//! while rows are recorded.

use std::collections::HashSet;
use std::path::Path;

use serde_json::json;
use switchboard_testkit::postgres::{DATABASE, Postgres};

use super::*;
use crate::Ledger;

fn server() -> Postgres {
    Postgres::start().unwrap_or_else(|error| panic!("{error}"))
}

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The SQLite tests' row, under a call id of `agent`'s own, and with a NUL in the error of
/// every seventh (PostgreSQL's text holds none).
pub(super) fn entry(i: usize, agent: &str) -> LedgerEntry {
    let mut entry = crate::tests::entry(i, agent, "ok");
    entry.call_id = format!("01PG{agent}{i:016}");
    entry.args_redacted = Some(std::sync::Arc::new(
        json!({"expression": "1d20", "api_key": "[REDACTED]"}),
    ));
    entry.error = i.is_multiple_of(7).then(|| "nul \0 inside".to_owned());
    entry.duration_us = 100 + i as i64;
    entry
}

/// A gateway's ledger journaling at `base`, with rows `range` of agent "a" recorded and
/// flushed.
fn recorded(postgres: &Postgres, base: &Path, range: std::ops::Range<usize>) -> Ledger {
    let ledger = Ledger::open_postgres(&postgres.url(), base).expect("open");
    for i in range {
        ledger.record_entry(entry(i, "a"));
    }
    ledger.flush();
    ledger
}

/// Applies the migrations, as `switchboard migrate` does.
fn migrated(postgres: &Postgres) -> Pool {
    let pool = pool(&postgres.url(), 2).expect("pool");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        migrate::migrate(&mut client).await.expect("migrate");
    });
    pool
}

/// A migrated server, a pool to it, and a directory for journals.
pub(super) fn fixture() -> (Postgres, Pool, tempfile::TempDir) {
    let postgres = server();
    let pool = migrated(&postgres);
    (postgres, pool, tempfile::tempdir().expect("tempdir"))
}

pub(super) fn verify_now(pool: &Pool) -> crate::VerifyReport {
    runtime().block_on(async {
        let mut client = connect(pool).await.expect("connect");
        verify(&mut client).await.expect("verify")
    })
}

pub(super) fn count(postgres: &Postgres) -> usize {
    postgres
        .psql(DATABASE, "SELECT count(*) FROM mcp_tool_invocations")
        .expect("count")
        .parse()
        .expect("a number")
}

#[test]
fn migrations_apply_from_empty_and_a_second_run_applies_none() {
    let postgres = server();
    let pool = pool(&postgres.url(), 2).expect("pool");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        let error = migrate::require_current(&client)
            .await
            .expect_err("an empty database is out of date");
        assert!(error.to_string().contains("switchboard migrate"), "{error}");
        let applied = migrate::migrate(&mut client).await.expect("first run");
        assert_eq!(
            applied.iter().map(|m| m.version).collect::<Vec<_>>(),
            migrate::MIGRATIONS
                .iter()
                .map(|m| m.version)
                .collect::<Vec<_>>()
        );
        assert!(
            migrate::migrate(&mut client)
                .await
                .expect("second run")
                .is_empty()
        );
        migrate::require_current(&client)
            .await
            .expect("current now");
    });
    assert_eq!(
        postgres
            .psql(
                DATABASE,
                "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations"
            )
            .expect("versions"),
        "1,2,3,4,5,6,7,8,9,10,11"
    );
    // A database of wave 1 (the ledger only) is told what it lacks and gets only that.
    postgres
        .psql(
            DATABASE,
            "DROP TABLE approval_grants, approvals, managed_config, agent_tokens, quota_spending, \
             latency_windows, manager_operations, manager_replicas, manager_installs, quota_sends; \
             DELETE FROM schema_migrations WHERE version >= 2",
        )
        .expect("back to version 1");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        let error = migrate::require_current(&client)
            .await
            .expect_err("version 1 is out of date");
        assert!(error.to_string().contains("2 (approvals)"), "{error}");
        let applied = migrate::migrate(&mut client).await.expect("upgrade");
        assert_eq!(
            applied.iter().map(|m| m.version).collect::<Vec<_>>(),
            [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        );
    });
    // A schema from a newer Switchboard is refused, not guessed at.
    postgres
        .psql(
            DATABASE,
            "INSERT INTO schema_migrations (version, name) VALUES (999, 'future')",
        )
        .expect("insert");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        let error = migrate::require_current(&client)
            .await
            .expect_err("too new");
        assert!(
            error.to_string().contains("newer than this Switchboard"),
            "{error}"
        );
        assert!(migrate::migrate(&mut client).await.is_err());
    });
}

/// Migration 8 names the agent of the server manager's rows already there (from their JSON).
#[test]
fn migration_8_fills_in_the_agent_of_existing_operations() {
    let postgres = server();
    let pool = pool(&postgres.url(), 1).expect("pool");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        migrate::migrate(&mut client).await.expect("migrate");
    });
    postgres
        .psql(
            DATABASE,
            "ALTER TABLE manager_operations DROP COLUMN agent; \
             DROP INDEX IF EXISTS manager_operations_finished; \
             DELETE FROM schema_migrations WHERE version = 8; \
             INSERT INTO manager_operations (id, created_ms, state, body, replica) VALUES \
             ('01A', 1, 'queued', '{\"request\": {\"agent\": \"npc\"}, \"note\": \"nul \\u0000\"}', 'r'), \
             ('01B', 2, 'completed', '{\"request\": {\"agent\": null}}', 'r')",
        )
        .expect("a database of version 7 with rows");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        let applied = migrate::migrate(&mut client).await.expect("upgrade");
        assert_eq!(applied.iter().map(|m| m.version).collect::<Vec<_>>(), [8]);
    });
    assert_eq!(
        postgres
            .psql(
                DATABASE,
                "SELECT string_agg(id || '=' || coalesce(agent, '-'), ' ' ORDER BY id) \
                 FROM manager_operations"
            )
            .expect("agents"),
        "01A=npc 01B=-"
    );
}

/// Migration 9 names the server id each open install or add of the manager adds (from their
/// JSON, derived from the registry name as `switchboard::manager::server_id_for` does).
#[test]
fn migration_9_fills_in_the_server_open_operations_add() {
    let postgres = server();
    let pool = pool(&postgres.url(), 1).expect("pool");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        migrate::migrate(&mut client).await.expect("migrate");
    });
    let work = |id: &str, state: &str, work: &str| {
        format!(
            "('{id}', 1, '{state}', '{{\"request\": {{\"work\": {work}}}, \"e\": \"\\u0000\"}}', 'r')"
        )
    };
    let rows = [
        work(
            "01A",
            "queued",
            r#"{"op": "install", "name": "io.github.o/My Server.v2", "server": null}"#,
        ),
        work(
            "01B",
            "in_progress",
            r#"{"op": "install", "name": "x/y", "server": "given"}"#,
        ),
        work("01C", "queued", r#"{"op": "add", "server": "added"}"#),
        work("01D", "completed", r#"{"op": "install", "name": "x/done"}"#),
        work("01E", "queued", r#"{"op": "test", "server": "s"}"#),
        work("01F", "queued", r#"{"op": "install", "name": "a/--é--"}"#),
    ];
    postgres
        .psql(
            DATABASE,
            &format!(
                "ALTER TABLE manager_operations DROP COLUMN adds; \
                 DELETE FROM schema_migrations WHERE version = 9; \
                 INSERT INTO manager_operations (id, created_ms, state, body, replica) VALUES {}",
                rows.join(", ")
            ),
        )
        .expect("a database of version 8 with rows");
    runtime().block_on(async {
        let mut client = connect(&pool).await.expect("connect");
        let applied = migrate::migrate(&mut client).await.expect("upgrade");
        assert_eq!(applied.iter().map(|m| m.version).collect::<Vec<_>>(), [9]);
    });
    assert_eq!(
        postgres
            .psql(
                DATABASE,
                "SELECT string_agg(id || '=' || coalesce(adds, '-'), ' ' ORDER BY id) \
                 FROM manager_operations"
            )
            .expect("adds"),
        "01A=my-server-v2 01B=given 01C=added 01D=- 01E=- 01F=server"
    );
}

#[test]
fn a_gateway_on_an_unmigrated_database_refuses_to_start_and_names_migrate() {
    let postgres = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let error = Ledger::open_postgres(&postgres.url(), &dir.path().join("ledger"))
        .err()
        .expect("refused");
    assert!(matches!(error, LedgerError::Schema(_)), "{error:?}");
    assert!(
        error.to_string().contains("run `switchboard migrate`"),
        "{error}"
    );
}

#[test]
fn batches_append_to_one_verifiable_chain_and_replays_add_nothing() {
    let (postgres, pool, dir) = fixture();
    let base = dir.path().join("ledger");
    let _ledger = recorded(&postgres, &base, 0..1_500);
    assert_eq!(count(&postgres), 1_500);
    let report = verify_now(&pool);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 1_500);
    // Rows with a NUL in a column are stored (cleaned) and still verify.
    assert_eq!(
        postgres
            .psql(
                DATABASE,
                "SELECT count(*) FROM mcp_tool_invocations WHERE error LIKE 'nul%'"
            )
            .expect("count"),
        "215"
    );
    // Every call id already on record is skipped, and the chain is not extended for it.
    let mut store = PostgresStore::open(&postgres.url()).expect("store");
    let again: Vec<LedgerEntry> = (1_490..1_510).map(|i| entry(i, "a")).collect();
    assert_eq!(
        crate::journal::append_entries(&mut store, &again).expect("append"),
        10
    );
    assert_eq!(count(&postgres), 1_510);
    assert!(verify_now(&pool).ok);
    // What readers see: newest first, filtered.
    let found = runtime().block_on(async {
        let client = connect(&pool).await.expect("connect");
        query(
            &client,
            &Filter {
                tool: Some("dice__roll1".into()),
                limit: 3,
                ..Filter::default()
            },
        )
        .await
        .expect("query")
    });
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|e| e.exposed == "dice__roll1"));
    assert!(found[0].started_ms > found[1].started_ms);
}

#[test]
fn two_writers_appending_at_once_make_one_chain() {
    let (postgres, pool, dir) = fixture();
    // Two gateways' ledgers: each its own connections, writer thread and journal.
    let first = Ledger::open_postgres(&postgres.url(), &dir.path().join("one")).expect("one");
    let second = Ledger::open_postgres(&postgres.url(), &dir.path().join("two")).expect("two");
    std::thread::scope(|scope| {
        for (ledger, agent) in [(&first, "one"), (&second, "two")] {
            for part in 0..2 {
                scope.spawn(move || {
                    for i in 0..600 {
                        ledger.record_entry(entry(part * 1_000 + i, agent));
                        if i % 50 == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        }
    });
    first.flush();
    second.flush();
    assert_eq!(count(&postgres), 2_400);
    let report = verify_now(&pool);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.rows, 2_400);
    // Both replicas' rows are interleaved in the one chain, and the ids have no gap.
    let replicas = postgres
        .psql(
            DATABASE,
            "SELECT count(DISTINCT agent), min(id), max(id) FROM mcp_tool_invocations",
        )
        .expect("replicas");
    assert_eq!(replicas, "2|1|2400");
    let ids: HashSet<String> = postgres
        .psql(DATABASE, "SELECT call_id FROM mcp_tool_invocations")
        .expect("ids")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 2_400, "no call is on record twice");
}

#[test]
fn a_fork_is_refused_and_rows_can_be_neither_changed_nor_removed() {
    let (postgres, pool, dir) = fixture();
    let _ledger = recorded(&postgres, &dir.path().join("ledger"), 0..5);
    // A second successor of row 2 (a writer that read a stale head) is refused.
    let fork = postgres.psql(
        DATABASE,
        "INSERT INTO mcp_tool_invocations (id, call_id, started_ms, exposed, outcome, duration_us,
           cost, cached, entry, prev_hash, row_hash, replica)
         SELECT 99, 'forked', 0, 'x', 'ok', 0, 0, false, '{}', prev_hash, 'other', 'rogue'
         FROM mcp_tool_invocations WHERE id = 3",
    );
    let error = fork.expect_err("a fork is refused").to_string();
    assert!(error.contains("ledger_one_successor"), "{error}");
    for statement in [
        "UPDATE mcp_tool_invocations SET outcome = 'denied' WHERE id = 2",
        "DELETE FROM mcp_tool_invocations WHERE id = 5",
        "TRUNCATE mcp_tool_invocations",
    ] {
        let error = postgres
            .psql(DATABASE, statement)
            .expect_err(statement)
            .to_string();
        assert!(error.contains("append-only"), "{statement}: {error}");
    }
    assert_eq!(count(&postgres), 5);
    assert!(verify_now(&pool).ok);
}

#[test]
fn verify_names_the_first_tampered_row() {
    let (postgres, pool, dir) = fixture();
    let _ledger = recorded(&postgres, &dir.path().join("ledger"), 0..20);
    // Only a superuser who switches the triggers off can edit a row.
    let bypass = "SET session_replication_role = replica;";
    postgres
        .psql(
            DATABASE,
            &format!("{bypass} UPDATE mcp_tool_invocations SET outcome = 'denied' WHERE id = 7"),
        )
        .expect("tamper");
    let report = verify_now(&pool);
    assert!(!report.ok);
    let (id, what) = report.problem.expect("a problem");
    assert_eq!(id, 7);
    assert!(what.contains("columns do not match"), "{what}");
    postgres
        .psql(DATABASE, &format!("{bypass} UPDATE mcp_tool_invocations SET outcome = 'ok', entry = replace(entry, '\"ok\"', '\"denied\"') WHERE id = 7"))
        .expect("tamper the entry");
    let (id, what) = verify_now(&pool).problem.expect("a problem");
    assert_eq!(
        (id, what.contains("hash does not match")),
        (7, true),
        "{what}"
    );
    postgres
        .psql(
            DATABASE,
            &format!("{bypass} DELETE FROM mcp_tool_invocations WHERE id >= 7"),
        )
        .expect("delete the tail");
    let (id, what) = verify_now(&pool).problem.expect("a problem");
    assert_eq!(id, 7, "{what}");
    assert!(what.contains("head names row 20"), "{what}");
}

#[test]
fn rows_recorded_while_postgres_is_down_land_once_when_it_is_back() {
    let (postgres, pool, dir) = fixture();
    let ledger = recorded(&postgres, &dir.path().join("ledger"), 0..100);
    postgres.stop().expect("stop");
    for i in 100..300 {
        ledger.record_entry(entry(i, "a"));
    }
    assert!(
        !ledger.flush_within(std::time::Duration::from_millis(300)),
        "nothing can be written while the server is down"
    );
    assert!(ledger.queue_depth() > 0, "the rows are held, not dropped");
    postgres.resume().expect("resume");
    assert!(
        ledger.flush_within(std::time::Duration::from_secs(20)),
        "{}",
        postgres.log()
    );
    assert_eq!(count(&postgres), 300);
    let report = verify_now(&pool);
    assert!(report.ok, "{report:?}");
    assert_eq!(ledger.queue_depth(), 0);
}

#[test]
fn a_journal_left_by_a_dead_gateway_is_replayed_into_postgres_once() {
    let (postgres, pool, dir) = fixture();
    let base = dir.path().join("ledger");
    let ledger = recorded(&postgres, &base, 0..10);
    drop(ledger);
    // A gateway killed before its writer ran: rows 5..15 journaled, 10..15 never inserted.
    let orphan = crate::journal::shard_of(&base, u32::MAX - 1, 0);
    let lines: String = (5..15)
        .map(|i| format!("{}\n", entry(i, "a").canonical()))
        .collect();
    std::fs::write(&orphan, lines).expect("journal");
    let ledger = Ledger::open_postgres(&postgres.url(), &base).expect("reopen");
    assert!(!orphan.exists(), "the replayed journal is removed");
    assert_eq!(count(&postgres), 15);
    assert!(verify_now(&pool).ok);
    drop(ledger);
}

/// Walks every page of `query` with `page`, newest first: the ids seen.
fn walk(
    mut page: impl FnMut(&crate::browse::PageQuery) -> crate::browse::Page,
    query: &crate::browse::PageQuery,
) -> Vec<i64> {
    let mut query = query.clone();
    let mut ids = Vec::new();
    loop {
        let found = page(&query);
        ids.extend(found.rows.iter().map(|row| row.id));
        match found.next_before {
            Some(before) => query.before = Some(before),
            None => return ids,
        }
    }
}

#[test]
fn console_pages_on_postgres_match_those_on_sqlite() {
    use crate::browse::{self as sqlite_browse, PageQuery};
    let (postgres, pool, dir) = fixture();
    let sqlite = Ledger::open(&dir.path().join("ledger.db")).expect("sqlite");
    let shared = Ledger::open_postgres(&postgres.url(), &dir.path().join("pg")).expect("pg");
    for i in 0..45 {
        let agent = if i % 3 == 0 { "b" } else { "a" };
        sqlite.record_entry(entry(i, agent));
        shared.record_entry(entry(i, agent));
    }
    sqlite.flush();
    shared.flush();
    let conn = crate::store::open(&dir.path().join("ledger.db")).expect("open");
    let runtime = runtime();
    let client = runtime.block_on(connect(&pool)).expect("connect");
    let queries = [
        PageQuery {
            limit: 7,
            ..PageQuery::default()
        },
        PageQuery {
            agent: Some("b".into()),
            limit: 4,
            ..PageQuery::default()
        },
        PageQuery {
            tool: Some("dice__roll?".into()),
            outcome: Some("ok".into()),
            limit: 10,
            ..PageQuery::default()
        },
        PageQuery {
            tool: Some("*roll1".into()),
            since_ms: Some(1_000_010),
            until_ms: Some(1_000_040),
            limit: 3,
            ..PageQuery::default()
        },
        PageQuery {
            agent: Some("a".into()),
            tool: Some("dice__%".into()),
            limit: 5,
            ..PageQuery::default()
        },
    ];
    for query in &queries {
        let on_sqlite = walk(
            |q| sqlite_browse::page(&conn, q).expect("sqlite page"),
            query,
        );
        let on_postgres = walk(
            |q| runtime.block_on(browse::page(&client, q)).expect("pg page"),
            query,
        );
        assert_eq!(on_postgres, on_sqlite, "{query:?}");
        let upto = runtime.block_on(browse::last_id(&client)).expect("last id");
        let (rows, _) = runtime
            .block_on(browse::export_page(&client, query, 0, upto, 1_000))
            .expect("export");
        let exported: Vec<i64> = rows.iter().map(|row| row.id).collect();
        let mut expected = on_sqlite.clone();
        expected.reverse();
        assert_eq!(exported, expected, "the export is oldest first: {query:?}");
    }
    let all = walk(
        |q| runtime.block_on(browse::page(&client, q)).expect("page"),
        &queries[0],
    );
    assert_eq!(all, (1..=45).rev().collect::<Vec<i64>>());
    let row = runtime
        .block_on(browse::row(&client, 2))
        .expect("row")
        .expect("row 2");
    let first = runtime
        .block_on(browse::row(&client, 1))
        .expect("row")
        .expect("row 1");
    assert_eq!(row.prev_hash, first.row_hash);
    assert_eq!(row.entry, entry(1, "a"));
    assert!(
        runtime
            .block_on(browse::row(&client, 999))
            .expect("row")
            .is_none()
    );
}

#[test]
fn running_figures_from_postgres_match_those_from_sqlite() {
    use crate::tally::Tally;
    let (postgres, pool, dir) = fixture();
    let sqlite = Ledger::open(&dir.path().join("ledger.db")).expect("sqlite");
    let shared = Ledger::open_postgres(&postgres.url(), &dir.path().join("pg")).expect("pg");
    let record = |range: std::ops::Range<usize>| {
        for i in range {
            let outcome = match i % 5 {
                0 => "tool_error",
                1 => "denied",
                _ => "ok",
            };
            let mut row = crate::tests::entry(i, if i % 2 == 0 { "a" } else { "b" }, outcome);
            row.error = (outcome == "tool_error").then(|| format!("boom {i}"));
            sqlite.record_entry(row.clone());
            shared.record_entry(row);
        }
        sqlite.flush();
        shared.flush();
    };
    let conn = crate::store::open(&dir.path().join("ledger.db")).expect("open");
    let runtime = runtime();
    let client = runtime.block_on(connect(&pool)).expect("connect");
    let (mut on_sqlite, mut on_postgres) = (Tally::default(), Tally::default());
    let (now, keep) = (1_000_000 + 3_600_000, 3_600_000 - 5);
    for range in [0..40, 40..70] {
        record(range);
        on_sqlite.refresh(&conn, now, keep).expect("sqlite refresh");
        let plan = on_postgres.plan(now, keep);
        let (rows, last_id) = runtime
            .block_on(browse::tally_rows(&client, &plan))
            .expect("rows");
        on_postgres.apply(&plan, rows.clone(), last_id);
        // Applying the same rows again (a refresh that ran meanwhile) changes nothing.
        on_postgres.apply(&plan, rows, last_id);
        for agent in [Some("a"), Some("b"), None] {
            assert_eq!(
                on_postgres.agent(agent, 0),
                on_sqlite.agent(agent, 0),
                "{agent:?}"
            );
        }
        assert_eq!(on_postgres.server("dice", 0), on_sqlite.server("dice", 0));
        assert_eq!(
            on_postgres.timings("dice__roll1"),
            on_sqlite.timings("dice__roll1")
        );
    }
    // The first 5 ms of the window were cut: rows 0..4 are not counted.
    assert_eq!(on_postgres.agent(Some("a"), 0).calls, 32);
    assert!(on_postgres.server("dice", 0).failed > 0);
}
