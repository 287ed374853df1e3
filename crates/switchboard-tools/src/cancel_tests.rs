//! A call dropped at its deadline changes nothing (regression: an edit answered "did not
//! answer within 500ms" and still rewrote the file): a write whose call was cancelled stops
//! before the rename, and a memory write held up by another writer is not committed once its
//! caller has been told it failed.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::CallContext;
use switchboard_core::upstream::ToolProvider;

use crate::cancel::run_cancellable;
use crate::files::{Files, FilesSettings, Root};
use crate::memory::{Memory, MemorySettings};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_write_that_timed_out_is_not_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = dir.path().join("memory.db");
    let memory = Memory::open(MemorySettings {
        database: database.clone(),
    })
    .expect("memory");
    // Another writer holds the database: the call waits in SQLite's busy handler past the
    // deadline the caller gives it.
    let other = rusqlite::Connection::open(&database).expect("other connection");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let ctx = CallContext::default();
    let call = memory.call(
        "add_facts",
        arguments(json!({"facts": [{"text": "the bridge at Oakvale is out"}]})),
        &ctx,
    );
    let timed_out = tokio::time::timeout(Duration::from_millis(300), call).await;
    assert!(timed_out.is_err(), "the call waits for the other writer");
    other.execute_batch("COMMIT").expect("release");

    // The store runs one call at a time: this search starts once the dropped call is over.
    let found = memory
        .call(
            "search_facts",
            arguments(json!({"query": "bridge Oakvale"})),
            &ctx,
        )
        .await
        .expect("search");
    let facts = &found.structured_content.expect("structured")["facts"];
    assert_eq!(facts, &json!([]), "nothing was committed: {facts}");
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
