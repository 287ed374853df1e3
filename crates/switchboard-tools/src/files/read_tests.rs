//! Reading: a binary file's resource names it with a proper `file:///absolute` URI
//! (regression: `file://bin.dat`, whose "host" was the file name).

use serde_json::{Value, json};

use super::single_root::{files, run};
use super::{Files, FilesSettings, Root};

#[test]
fn a_binary_file_is_named_by_an_absolute_percent_encoded_file_uri() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("my notes");
    std::fs::create_dir_all(root.join("data")).expect("mkdir");
    std::fs::write(root.join("data/a b#1.bin"), [0u8, 1, 2]).expect("binary");
    let files = files(&root);
    let canonical = std::fs::canonicalize(&root).expect("canonical");
    let expected = format!(
        "file://{}/data/a%20b%231.bin",
        canonical.display().to_string().replace(' ', "%20")
    );
    for arguments in [
        json!({"path": "data/a b#1.bin"}),
        json!({"path": canonical.join("data/a b#1.bin")}),
    ] {
        let read = run(&files, "read_file", arguments).expect("read");
        assert_eq!(read.content[0]["resource"]["uri"], expected.as_str());
    }
    let many = run(
        &files,
        "read_multiple_files",
        json!({"paths": ["data/a b#1.bin"]}),
    )
    .expect("read many");
    let uris: Vec<&Value> = many
        .content
        .iter()
        .filter_map(|block| block.pointer("/resource/uri"))
        .collect();
    assert_eq!(uris, [&json!(expected)]);
    assert!(expected.starts_with("file:///"), "{expected}");
}

/// A read-only files provider over `root` that reads at most 1,000 bytes.
fn read_limited_to_1000_bytes(root: &std::path::Path) -> Files {
    Files::new(FilesSettings {
        roots: vec![Root {
            path: root.to_path_buf(),
            read_only: true,
        }],
        max_read_bytes: 1_000,
        max_write_bytes: 1_000,
    })
    .expect("files")
}

/// The text `read_file` answers for `arguments`.
fn read_text(files: &Files, arguments: Value) -> Result<String, String> {
    let read = run(files, "read_file", arguments)?;
    Ok(read.structured_content.expect("structured")["content"]
        .as_str()
        .expect("content")
        .to_owned())
}

/// Regression: head and tail were refused for a file over max_read_bytes; they now read only
/// the start, or a window at the end, within the limit.
#[test]
fn head_and_tail_of_a_file_over_the_read_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log: String = (1..=2_000).map(|n| format!("line {n}\n")).collect();
    std::fs::write(dir.path().join("big.log"), &log).expect("log");
    let files = read_limited_to_1000_bytes(dir.path());
    let content = |arguments: Value| read_text(&files, arguments);
    assert_eq!(
        content(json!({"path": "big.log", "head": 3})).expect("head"),
        "line 1\nline 2\nline 3\n"
    );
    assert_eq!(
        content(json!({"path": "big.log", "tail": 2})).expect("tail"),
        "line 1999\nline 2000\n"
    );
    let whole = content(json!({"path": "big.log"})).expect_err("whole file");
    assert!(
        whole.contains("over the read limit of 1000 bytes"),
        "{whole}"
    );
    for (key, which) in [("head", "first"), ("tail", "last")] {
        let too_many = content(json!({"path": "big.log", key: 500})).expect_err(key);
        assert!(
            too_many.contains(&format!("the {which} 500 lines"))
                && too_many.contains("ask for fewer"),
            "{too_many}"
        );
    }
}

/// Regression: head over the read limit failed "not UTF-8" when the limit fell inside a
/// multi-byte character of the line it cut.
#[test]
fn head_over_the_read_limit_cuts_between_lines_not_inside_a_character() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Lines of 3-byte characters: byte 1,000 falls inside one.
    let line = format!("{}\n", "語".repeat(34));
    let text: String = (0..100).map(|_| line.as_str()).collect();
    std::fs::write(dir.path().join("cjk.txt"), &text).expect("text");
    let files = read_limited_to_1000_bytes(dir.path());
    let content = read_text(&files, json!({"path": "cjk.txt", "head": 2})).expect("head");
    assert_eq!(content, line.repeat(2));
}
