//! A call dropped at its deadline changes nothing (regression: an edit answered "did not
//! answer within 500ms" and still rewrote the file): a write whose call was cancelled stops
//! before the rename, and a memory write, a session's turn or a rules reindex held up by
//! another writer is not committed once its caller has been told it failed.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::CallContext;
use switchboard_core::upstream::ToolProvider;

use crate::cancel::run_cancellable;
use crate::files::{Files, FilesSettings, Root};
use crate::memory::{Memory, MemorySettings};
use crate::rules::{Rules, RulesSettings};
use crate::sessions::{Sessions, SessionsSettings};

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[test]
fn a_cancelled_write_leaves_the_file_and_no_temporary_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.md"), "draft").expect("notes");
    let files = Files::new(FilesSettings {
        roots: vec![Root {
            path: dir.path().to_path_buf(),
            read_only: false,
        }],
        ..FilesSettings::default()
    })
    .expect("files");
    let edit = json!({"path": "notes.md", "edits": [{"oldText": "draft", "newText": "final"}]});
    let cancelled = Arc::new(AtomicBool::new(true));
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "notes.md", "content": "replaced"}),
        ),
        ("edit_file", edit),
        (
            "move_file",
            json!({"source": "notes.md", "destination": "moved.md"}),
        ),
    ] {
        let answer = run_cancellable(cancelled.clone(), || files.dispatch(tool, &arguments(args)));
        let error = answer.expect_err(tool);
        assert!(error.contains("cancelled"), "{tool}: {error}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).expect("notes"),
        "draft"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["notes.md"], "no temporary file is left");

    // Outside a cancelled call, the same write goes through.
    let written = files.dispatch(
        "write_file",
        &arguments(json!({"path": "notes.md", "content": "replaced"})),
    );
    assert!(written.is_ok(), "{written:?}");
}

/// What `provider`'s `tool` answers to `args`, structured.
async fn structured(provider: &dyn ToolProvider, tool: &str, args: Value) -> Value {
    provider
        .call(tool, arguments(args), &CallContext::default())
        .await
        .unwrap_or_else(|error| panic!("{tool}: {error:?}"))
        .structured_content
        .unwrap_or_else(|| panic!("{tool}: a structured answer"))
}

/// Calls `tool` while another connection holds `database`'s write lock, so that the call waits
/// in SQLite's busy handler past the deadline its caller gives it; the lock is let go once the
/// caller has given up.
async fn time_out_behind_another_writer(
    provider: &dyn ToolProvider,
    database: &std::path::Path,
    tool: &str,
    args: Value,
) {
    let other = rusqlite::Connection::open(database).expect("other connection");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let ctx = CallContext::default();
    let call = provider.call(tool, arguments(args), &ctx);
    let timed_out = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(timed_out.is_err(), "{tool} waits for the other writer");
    other.execute_batch("COMMIT").expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_write_that_timed_out_is_not_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = dir.path().join("memory.db");
    let memory = Memory::open(MemorySettings {
        database: database.clone(),
    })
    .expect("memory");
    time_out_behind_another_writer(
        &memory,
        &database,
        "add_facts",
        json!({"facts": [{"text": "the bridge at Oakvale is out"}]}),
    )
    .await;

    // The store runs one call at a time: this search starts once the dropped call is over.
    let found = structured(&memory, "search_facts", json!({"query": "bridge Oakvale"})).await;
    let facts = &found["facts"];
    assert_eq!(facts, &json!([]), "nothing was committed: {facts}");
}

/// Regression: `append_turn` committed without looking at the flag, so a turn whose call had
/// been answered "did not answer within …" was still recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_turn_that_timed_out_is_not_appended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = dir.path().join("memory.db");
    let sessions = Sessions::open(SessionsSettings {
        database: database.clone(),
    })
    .expect("sessions");
    time_out_behind_another_writer(
        &sessions,
        &database,
        "append_turn",
        json!({"session_id": "s1", "speaker": "DM", "text": "The bridge at Oakvale is out."}),
    )
    .await;

    // The store runs one call at a time: this append starts once the dropped call is over,
    // and is the session's first turn.
    let appended = structured(
        &sessions,
        "append_turn",
        json!({"session_id": "s1", "speaker": "Aria", "text": "We ford the river."}),
    )
    .await;
    let turn = &appended["turn"];
    assert_eq!(turn, &json!(1), "the timed-out turn was not recorded");
}

/// Regression: `rules.reindex` ran without the flag, so a reindex whose call had been answered
/// "did not answer within …" still landed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_reindex_that_timed_out_is_not_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rules");
    std::fs::create_dir_all(&root).expect("rules dir");
    std::fs::write(root.join("old.md"), "# Old\n\nIndexed when opened.\n").expect("old");
    let database = dir.path().join("rules.db");
    let rules = Rules::open(RulesSettings {
        dirs: vec![root.clone()],
        database: database.clone(),
    })
    .expect("rules");
    std::fs::write(root.join("new.md"), "# Fresh\n\nAdded later.\n").expect("new");
    time_out_behind_another_writer(&rules, &database, "reindex", json!({})).await;

    // The index has one connection: this search starts once the dropped reindex is over.
    let found = structured(&rules, "search_rules", json!({"query": "fresh"})).await;
    let hits = &found["rules"];
    assert_eq!(
        hits,
        &json!([]),
        "the timed-out reindex was not committed: {hits}"
    );
    let files = rules.store().files().expect("files");
    assert_eq!(
        files.len(),
        1,
        "only the file indexed when opened: {files:?}"
    );
}

/// Regression: work that panicked inside `run_cancellable` left its (later raised) flag on the
/// thread, and the next work on that pool thread found itself cancelled.
#[test]
fn a_panicking_call_leaves_no_flag_on_its_thread() {
    let flag = Arc::new(AtomicBool::new(false));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_cancellable(flag.clone(), || panic!("the work failed"))
    }));
    assert!(panicked.is_err());
    // Its caller went away: the flag goes up.
    flag.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(crate::cancel::ensure_running(), Ok(()));
    let fresh = Arc::new(AtomicBool::new(false));
    assert_eq!(
        run_cancellable(fresh, crate::cancel::ensure_running),
        Ok(())
    );
}
