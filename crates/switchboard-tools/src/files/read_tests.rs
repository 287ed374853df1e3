//! Reading: a binary file's resource names it with a proper `file:///absolute` URI
//! (regression: `file://bin.dat`, whose "host" was the file name).

use serde_json::{Value, json};

use super::single_root::{files, run};

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
