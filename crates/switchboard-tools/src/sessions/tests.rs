//! The session manager on a real memory database, beside the memory provider on the same
//! file: turns appended, searched and listed, summaries written by memory read here, the
//! session filter, bad arguments, and the declared tools.

use serde_json::json;

use super::*;
use crate::memory::{Memory, MemorySettings};

async fn call(
    provider: &dyn ToolProvider,
    tool: &str,
    arguments: Value,
) -> Result<ToolOutcome, ToolError> {
    provider
        .call(
            tool,
            arguments.as_object().cloned().unwrap_or_default(),
            &CallContext::default(),
        )
        .await
}

async fn structured(provider: &dyn ToolProvider, tool: &str, arguments: Value) -> Value {
    call(provider, tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
        .structured_content
        .expect("structured")
}

#[tokio::test]
async fn turns_are_appended_searched_and_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sessions = Sessions::open(SessionsSettings {
        database: dir.path().join("data/memory.db"),
    })
    .expect("open");
    for (session, speaker, text) in [
        ("s1", "DM", "You enter the tavern; Mira waves you over."),
        ("s1", "Aria", "I ask Mira about the missing caravan."),
        ("s2", "DM", "The caravan tracks lead north into the forest."),
        ("s1", "DM", "Mira says the caravan left three days ago."),
    ] {
        let added = structured(
            &sessions,
            "append_turn",
            json!({"session_id": session, "speaker": speaker, "text": text}),
        )
        .await;
        assert_eq!(added["session_id"], session);
        assert!(added["time"].as_str().expect("time").ends_with('Z'));
    }
    let fourth = structured(
        &sessions,
        "append_turn",
        json!({"session_id": "s2", "speaker": "Bram", "text": "We follow."}),
    )
    .await;
    assert_eq!(fourth["turn"], 2, "turns are numbered per session");

    let hits = structured(&sessions, "search_history", json!({"query": "caravan"})).await;
    let turns = hits["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 3);
    assert!(turns.iter().all(|t| {
        t["snippet"]
            .as_str()
            .expect("snippet")
            .contains("[caravan]")
    }));
    let only_s2 = structured(
        &sessions,
        "search_history",
        json!({"query": "caravan", "session_id": "s2"}),
    )
    .await;
    assert_eq!(only_s2["turns"].as_array().map(Vec::len), Some(1));
    assert_eq!(only_s2["turns"][0]["speaker"], "DM");
    assert_eq!(only_s2["turns"][0]["turn"], 1);
    let by_speaker = structured(
        &sessions,
        "search_history",
        json!({"query": "Aria", "limit": 1}),
    )
    .await;
    assert_eq!(
        by_speaker["turns"][0]["text"],
        "I ask Mira about the missing caravan."
    );
    for hostile in ["foo\"bar OR (", "NEAR(", "*", ")))", "col:x"] {
        assert!(
            call(&sessions, "search_history", json!({"query": hostile}))
                .await
                .is_ok(),
            "{hostile}"
        );
    }

    let listed = structured(&sessions, "list_sessions", json!({})).await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["session_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["s2", "s1"], "most recently active first");
    assert_eq!(listed["sessions"][1]["turns"], 3);
    assert_eq!(listed["sessions"][1]["has_summary"], false);

    let summary = call(&sessions, "get_summary", json!({"session_id": "s1"}))
        .await
        .expect("summary");
    let s = summary.structured_content.as_ref().expect("s");
    assert_eq!(s["summary"], Value::Null);
    assert_eq!(s["turns"], 3);
    assert!(
        s["first_turn_at"].as_str().expect("first") <= s["last_turn_at"].as_str().expect("last")
    );
    assert!(
        summary
            .text_content()
            .starts_with("no summary yet (3 turns")
    );
}

#[tokio::test]
async fn summaries_are_memorys_in_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let database = dir.path().join("memory.db");
    // Sessions first: it brings memory's schema up, and memory opens the same file after.
    let sessions = Sessions::open(SessionsSettings {
        database: database.clone(),
    })
    .expect("sessions");
    let memory = Memory::open(MemorySettings {
        database: database.clone(),
    })
    .expect("memory");
    call(
        &sessions,
        "append_turn",
        json!({"session_id": "s3", "speaker": "DM", "text": "The bridge collapses."}),
    )
    .await
    .expect("turn");
    call(
        &memory,
        "put_summary",
        json!({"session_id": "s3", "summary": "The party crossed before the bridge fell."}),
    )
    .await
    .expect("put");
    call(
        &memory,
        "put_summary",
        json!({"session_id": "s4", "summary": "Downtime in town."}),
    )
    .await
    .expect("put");
    call(
        &memory,
        "create_entities",
        json!({"entities": [{"name": "Mira", "entityType": "npc"}]}),
    )
    .await
    .expect("memory still works");

    let s3 = structured(&sessions, "get_summary", json!({"session_id": "s3"})).await;
    assert_eq!(s3["summary"], "The party crossed before the bridge fell.");
    assert_eq!(s3["turns"], 1);
    assert!(s3["summary_updated_at"].as_str().is_some());
    let s4 = structured(&sessions, "get_summary", json!({"session_id": "s4"})).await;
    assert_eq!(
        (s4["turns"].clone(), s4["first_turn_at"].clone()),
        (json!(0), Value::Null)
    );

    let listed = structured(&sessions, "list_sessions", json!({})).await;
    let mut flags: Vec<(String, bool)> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| {
            (
                s["session_id"].as_str().expect("id").to_owned(),
                s["has_summary"].as_bool().expect("flag"),
            )
        })
        .collect();
    flags.sort();
    assert_eq!(flags, [("s3".to_owned(), true), ("s4".to_owned(), true)]);

    // One store: memory's search over summaries and the turns live side by side.
    let found = structured(&memory, "search_sessions", json!({"query": "bridge"})).await;
    assert_eq!(found["sessions"][0]["session_id"], "s3");
    drop((sessions, memory));
    let reopened = Sessions::open(SessionsSettings { database }).expect("reopen");
    assert_eq!(
        structured(&reopened, "get_summary", json!({"session_id": "s3"})).await["turns"],
        1
    );
}

#[tokio::test]
async fn bad_arguments_are_clear_tool_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sessions = Sessions::open(SessionsSettings {
        database: dir.path().join("memory.db"),
    })
    .expect("open");
    let long = "x".repeat(201);
    for (tool, arguments, expected) in [
        (
            "append_turn",
            json!({"speaker": "DM", "text": "hi"}),
            "'session_id' is required",
        ),
        (
            "append_turn",
            json!({"session_id": "s", "speaker": "  ", "text": "hi"}),
            "'speaker' must not be empty",
        ),
        (
            "append_turn",
            json!({"session_id": 7, "speaker": "DM", "text": "hi"}),
            "'session_id' must be a string, not a number",
        ),
        (
            "append_turn",
            json!({"session_id": long, "speaker": "DM", "text": "hi"}),
            "'session_id' is longer than 200 characters",
        ),
        ("search_history", json!({}), "'query' is required"),
        (
            "search_history",
            json!({"query": "x", "limit": 0}),
            "'limit' must be a whole number from 1 to 100",
        ),
        (
            "search_history",
            json!({"query": "x", "session_id": "nope"}),
            "session 'nope' has no turns",
        ),
        (
            "get_summary",
            json!({"session_id": "nope"}),
            "no session 'nope'",
        ),
        (
            "list_sessions",
            json!({"limit": "ten"}),
            "'limit' must be a whole number",
        ),
        (
            "drop_tables",
            json!({}),
            "sessions has no tool 'drop_tables'",
        ),
    ] {
        let error = call(&sessions, tool, arguments).await.expect_err(tool);
        assert!(error.0.contains(expected), "{tool}: {}", error.0);
    }
    let listed = call(&sessions, "list_sessions", json!({}))
        .await
        .expect("empty");
    assert_eq!(listed.text_content(), "no sessions yet");
}

#[test]
fn tools_declare_standard_latency_and_effects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sessions = Sessions::open(SessionsSettings {
        database: dir.path().join("memory.db"),
    })
    .expect("open");
    assert_eq!(sessions.name(), "sessions");
    let tools = sessions.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "append_turn",
            "search_history",
            "get_summary",
            "list_sessions"
        ]
    );
    for tool in &tools {
        let latency =
            switchboard_core::LatencyMeta::from_meta(tool.meta.as_ref()).expect("latency");
        assert_eq!(
            (latency.estimated_duration_ms, latency.max_duration_ms),
            (Some(200), Some(6_000)),
            "the bound covers SQLite's 5 s busy timeout"
        );
        let annotations = tool.annotations.as_ref().expect("annotations");
        let reads = tool.name != "append_turn";
        assert_eq!(annotations.read_only_hint, Some(reads));
        assert_eq!(annotations.idempotent_hint, Some(reads));
        assert_eq!(annotations.destructive_hint, Some(false));
        assert!(tool.output_schema.is_some());
    }
    assert_eq!(
        SessionsSettings::default().database,
        crate::memory::default_database_path()
    );
}
