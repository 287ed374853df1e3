//! One-off commands behave like the gateway they stand in for: `switchboard call` records
//! its call in the ledger and closes it as a stopping gateway does — the row is on record
//! and no journal is left for the next start to replay — on success and on error alike.

mod support;

use std::path::Path;

use support::*;

/// The ledger's journal files in `dir` (a closed ledger leaves none).
fn journals(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the state dir")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".journal"))
        .collect()
}

#[test]
fn call_writes_its_row_and_leaves_no_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = dir.path().join("ledger.db");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[servers.clock]\nbuiltin = \"clock\"\n",
            quoted(&ledger.display().to_string())
        ),
    );
    let config = config.display().to_string();

    let called = isolated(dir.path(), &["--config", &config, "call", "clock__now"]);
    assert!(
        called.status.success(),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert_eq!(journals(dir.path()), Vec::<String>::new(), "after a call");

    // An error path closes the ledger too.
    let unknown = isolated(dir.path(), &["--config", &config, "call", "clock__nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        journals(dir.path()),
        Vec::<String>::new(),
        "after a failed call"
    );

    let audit = isolated(
        dir.path(),
        &["--config", &config, "audit", "--json", "--limit", "0"],
    );
    let rows = stdout_json(&audit);
    let seen: Vec<(&str, &str)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row["exposed"].as_str().unwrap_or(""),
                row["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [("clock__nope", "unknown_tool"), ("clock__now", "ok")],
        "{rows}"
    );
    assert_eq!(rows[1]["server"], "clock", "{rows}");
}
