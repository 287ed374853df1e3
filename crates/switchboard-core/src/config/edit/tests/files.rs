//! The `--dry-run` diff and the atomic write with rotated backups.

use std::fs;

use super::*;

#[test]
fn the_diff_of_an_add_shows_exactly_the_added_lines() {
    let mut old: String = (1..=8).map(|n| format!("# {n}\n")).collect();
    old.push_str("[servers.a]\ncommand = \"x\"\n\n[aliases]\nq = \"r\"\n");
    let new = add_server(&old, Format::Toml, "clock", &clock()).expect("added");
    let diff = unified_diff("switchboard.toml", &old, &new);
    assert_eq!(
        diff,
        "--- a/switchboard.toml\n+++ b/switchboard.toml\n@@ -9,5 +9,8 @@\n [servers.a]\n command = \"x\"\n \n+[servers.clock]\n+builtin = \"clock\"\n+\n [aliases]\n q = \"r\"\n"
    );
    let added: Vec<&str> = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .collect();
    assert_eq!(added.len(), 3);
    assert!(
        !diff
            .lines()
            .any(|l| l.starts_with('-') && !l.starts_with("---"))
    );
}

#[test]
fn diff_hunks_context_and_missing_newlines() {
    assert_eq!(unified_diff("f", "same\n", "same\n"), "");
    let before: String = (1..=20).map(|n| format!("{n}\n")).collect();
    let after = before
        .replacen("2\n", "two\n", 1)
        .replacen("18\n", "eighteen\n", 1);
    assert_eq!(
        unified_diff("f", &before, &after),
        "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n"
    );
    assert_eq!(
        unified_diff("f", "a\nb", "a\nc\n"),
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
    );
    assert_eq!(
        unified_diff("f", "", "x\n"),
        "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"
    );
}

#[test]
fn write_atomically_keeps_rotated_backups() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested/switchboard.toml");
    let bak = |suffix: &str| {
        dir.path()
            .join(format!("nested/switchboard.toml.bak{suffix}"))
    };
    write_atomically(&path, "one\n", 2).expect("first write");
    assert_eq!(fs::read_to_string(&path).expect("read"), "one\n");
    assert!(!bak("").exists(), "nothing to back up yet");
    for text in ["two\n", "three\n", "four\n"] {
        write_atomically(&path, text, 2).expect("write");
    }
    assert_eq!(fs::read_to_string(&path).expect("read"), "four\n");
    assert_eq!(
        fs::read_to_string(bak("")).expect("newest backup"),
        "three\n"
    );
    assert_eq!(
        fs::read_to_string(bak(".1")).expect("older backup"),
        "two\n"
    );
    assert!(!bak(".2").exists(), "only two backups are kept");
    let names: Vec<String> = fs::read_dir(dir.path().join("nested"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "no temp file is left behind: {names:?}");

    let plain = dir.path().join("plain.json");
    write_atomically(&plain, "{}", 0).expect("write");
    write_atomically(&plain, "{ }", 0).expect("write");
    assert_eq!(fs::read_to_string(&plain).expect("read"), "{ }");
    assert!(
        !dir.path().join("plain.json.bak").exists(),
        "keep = 0: no backup"
    );
}

#[cfg(unix)]
#[test]
fn write_atomically_keeps_the_mode_and_follows_links() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("switchboard.toml");
    fs::write(&path, "old\n").expect("write");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
    write_atomically(&path, "new\n", 3).expect("write");
    let mode =
        |p: &std::path::Path| fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o640);
    assert_eq!(mode(&dir.path().join("switchboard.toml.bak")), 0o640);
    assert_eq!(fs::read_to_string(&path).expect("read"), "new\n");

    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&path, &link).expect("symlink");
    write_atomically(&link, "linked\n", 3).expect("write through the link");
    assert!(
        fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&path).expect("read"), "linked\n");
    assert_eq!(
        fs::read_to_string(dir.path().join("switchboard.toml.bak.1")).expect("older backup"),
        "old\n"
    );
}
