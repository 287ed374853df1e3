//! Writing through a symlink inside a root (regression: write_file and edit_file replaced the
//! link with a regular file): the file it points to is written, with its permissions, and the
//! link stays; a dangling link or one to a directory is refused and left as it is. And a write
//! or a move into a directory that does not exist names that directory.

use std::os::unix::fs::{PermissionsExt, symlink};

use serde_json::json;

use super::single_root::{files, run};

fn is_link(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path)
        .expect("metadata")
        .file_type()
        .is_symlink()
}

#[test]
fn writes_through_a_link_land_in_its_target_and_keep_the_link() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir(root.join("notes")).expect("notes");
    let real = root.join("notes/real.md");
    std::fs::write(&real, "draft").expect("real");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    symlink("notes/real.md", root.join("today.md")).expect("link");
    std::fs::create_dir(root.join("sub")).expect("sub");
    symlink("../notes/real.md", root.join("sub/again.md")).expect("nested link");
    let files = files(root);

    run(
        &files,
        "write_file",
        json!({"path": "today.md", "content": "written"}),
    )
    .expect("write through the link");
    assert!(is_link(&root.join("today.md")), "the link is still a link");
    assert_eq!(std::fs::read_to_string(&real).expect("real"), "written");
    let mode = std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the target keeps its permissions");

    run(
        &files,
        "edit_file",
        json!({"path": "sub/again.md", "edits": [{"oldText": "written", "newText": "edited"}]}),
    )
    .expect("edit through the link");
    assert!(is_link(&root.join("sub/again.md")));
    assert_eq!(std::fs::read_to_string(&real).expect("real"), "edited");
    let beside: Vec<_> = std::fs::read_dir(root.join("notes"))
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(beside, ["real.md"], "no temporary file is left");

    symlink("missing.md", root.join("dangling.md")).expect("dangling");
    let refused = run(
        &files,
        "write_file",
        json!({"path": "dangling.md", "content": "x"}),
    )
    .expect_err("a dangling link");
    assert!(refused.contains("does not exist"), "{refused}");
    assert!(is_link(&root.join("dangling.md")));
    assert!(!root.join("missing.md").exists());

    symlink("notes", root.join("folder.md")).expect("dir link");
    let refused = run(
        &files,
        "write_file",
        json!({"path": "folder.md", "content": "x"}),
    )
    .expect_err("a link to a directory");
    assert!(refused.contains("not a file"), "{refused}");
    assert!(is_link(&root.join("folder.md")));
}

/// Regression: writing into a missing directory said the file "does not exist".
#[test]
fn a_write_into_a_missing_directory_says_which_directory_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain.txt"), "x").expect("plain");
    let files = files(dir.path());
    let missing = run(
        &files,
        "write_file",
        json!({"path": "notes/today.md", "content": "# Notes"}),
    )
    .expect_err("no notes directory");
    assert!(
        missing.contains("its directory 'notes' does not exist")
            && missing.contains("create_directory"),
        "{missing}"
    );
    let not_dir = run(
        &files,
        "write_file",
        json!({"path": "plain.txt/today.md", "content": "x"}),
    )
    .expect_err("a file as the directory");
    assert!(
        not_dir.contains("'plain.txt' is not a directory"),
        "{not_dir}"
    );
    run(&files, "create_directory", json!({"path": "notes"})).expect("mkdir");
    run(
        &files,
        "write_file",
        json!({"path": "notes/today.md", "content": "# Notes"}),
    )
    .expect("written once the directory exists");
}

/// A move said `'a -> b' does not exist` whether the source was missing or the destination's
/// directory was: each refusal names the path that is missing.
#[test]
fn a_move_names_the_missing_source_or_destination_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("today.md"), "x").expect("today");
    let files = files(dir.path());
    let no_source = run(
        &files,
        "move_file",
        json!({"source": "nothere.md", "destination": "x.md"}),
    )
    .expect_err("no source");
    assert_eq!(no_source, "cannot move 'nothere.md': it does not exist");
    let no_directory = run(
        &files,
        "move_file",
        json!({"source": "today.md", "destination": "archive/today.md"}),
    )
    .expect_err("no archive directory");
    assert!(
        no_directory.starts_with(
            "cannot move to 'archive/today.md': its directory 'archive' does not exist"
        ),
        "{no_directory}"
    );
    run(&files, "create_directory", json!({"path": "archive"})).expect("mkdir");
    run(
        &files,
        "move_file",
        json!({"source": "today.md", "destination": "archive/today.md"}),
    )
    .expect("moved once the directory exists");
    assert!(dir.path().join("archive/today.md").exists());
}
