//! Listings are bounded (regression: list_directory answered every entry of a directory,
//! however many): at most `max_entries` (default 1,000), with `truncated` when there are more,
//! and directory_tree reads no more of a directory than it may still show.

use serde_json::json;

use super::single_root::{files, run};

#[test]
fn list_directory_and_directory_tree_stop_at_max_entries() {
    let dir = tempfile::tempdir().expect("tempdir");
    for n in 0..30 {
        std::fs::write(dir.path().join(format!("f{n:02}.txt")), "x").expect("file");
    }
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    for n in 0..30 {
        std::fs::write(dir.path().join(format!("sub/g{n:02}.txt")), "x").expect("file");
    }
    let files = files(dir.path());
    let list = |arguments: serde_json::Value| {
        run(&files, "list_directory", arguments)
            .expect("list")
            .structured_content
            .expect("structured")
    };
    let all = list(json!({"path": "."}));
    assert_eq!(all["entries"].as_array().expect("entries").len(), 31);
    assert_eq!(all["truncated"], false);
    let some = run(
        &files,
        "list_directory",
        json!({"path": ".", "max_entries": 10}),
    )
    .expect("list");
    assert!(some.text_content().contains("raise max_entries"));
    let some = some.structured_content.expect("structured");
    assert_eq!(some["entries"].as_array().expect("entries").len(), 10);
    assert_eq!(some["truncated"], true);
    let exact = list(json!({"path": "sub", "max_entries": 30}));
    assert_eq!(
        exact["truncated"], false,
        "exactly the limit is not truncated"
    );

    let tree = run(
        &files,
        "directory_tree",
        json!({"path": "sub", "max_entries": 5}),
    )
    .expect("tree")
    .structured_content
    .expect("structured");
    assert_eq!(tree["tree"].as_array().expect("tree").len(), 5);
    assert_eq!(tree["truncated"], true);
}
